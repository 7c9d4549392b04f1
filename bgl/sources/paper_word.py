"""A real heterogeneous graph from a citation store's bag-of-words features: papers and words.

Cora's and CiteSeer's node features are word-occurrence vectors, so each paper
already names its words.  :func:`paper_word_store` makes the typed graph the
R-GCN literature trains on such data:

* ``("paper", "cites", "paper")``: the store's edges as they are;
* ``("paper", "has", "word")`` and ``("word", "in", "paper")``: one edge per
  non-zero feature entry (and its reverse);
* paper features, labels and splits from the store; words carry no features
  (a model gives them an embedding, as DGL's R-GCN example does for featureless types).

The feature matrix is read in row chunks (``np.nonzero`` per chunk), so memory is
the non-zero entries, not a dense copy.
"""
from __future__ import annotations

import os

import numpy as np

from ..store import GraphStore
from .hetero import schema_of, write_typed_store

ROW_CHUNK = 1 << 14


def paper_word_edges(feat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(paper ids, word ids) of every non-zero entry of ``feat`` [papers, words], row-major order."""
    papers, words = [], []
    for lo in range(0, feat.shape[0], ROW_CHUNK):
        p, w = np.nonzero(np.asarray(feat[lo:lo + ROW_CHUNK]))
        papers.append(p.astype(np.int64) + lo)
        words.append(w.astype(np.int64))
    return np.concatenate(papers), np.concatenate(words)


def paper_word_store(store, out_dir, *, overwrite: bool = False):
    """Write the paper-word typed store of a citation store with bag-of-words features; returns it.

    Parameters
    ----------
    store : GraphStore | store directory (str or path), untyped, with bag-of-words features
    out_dir : the typed store to write (complete or absent, as every store write)
    """
    if isinstance(store, (str, os.PathLike)):
        store = GraphStore(store)
    elif not isinstance(store, GraphStore):
        raise TypeError(f"store must be a GraphStore or a store directory, got {type(store).__name__}")
    if store.is_typed or store.feat is None:
        raise ValueError(f"{store.path}: needs an untyped store with bag-of-words features")
    n, num_words = store.num_nodes, store.feat_dim
    dst = np.repeat(np.arange(n, dtype=np.int64), np.diff(store.indptr))
    src = np.asarray(store.indices, np.int64)
    p, w = paper_word_edges(store.feat)
    if p.size == 0:
        raise ValueError(f"{store.path}: the features have no non-zero entry, so no paper has a word")
    schema = schema_of({"paper": n, "word": num_words},
                       [("paper", "cites", "paper"), ("paper", "has", "word"), ("word", "in", "paper")])
    splits = {"paper": {name: np.asarray(ids) for name, ids in store.splits.items()}}
    labels = {"paper": np.asarray(store.label)} if store.label is not None else {}
    return write_typed_store(out_dir, schema, [(src, dst), (p, w), (w, p)], feats={"paper": np.asarray(store.feat)},
                             labels=labels, splits=splits, name=f"{store.meta.name or store.path.name}-paper-word",
                             extra={"source": str(store.path), "built": "paper-word"}, overwrite=overwrite)
