"""DGL's Cora without downloading: the embedded copy (``bgl.data``'s ``cora.npz``) in Planetoid's layout.

The embedded file (gnn-benchmark's ``cora.npz``) holds the same 2,708 papers, 1,433 binary word
features, 7 classes and 5,278 undirected citations as the Planetoid files DGL downloads, in
another node order, another class numbering, and without the GCN split.  ``cora_planetoid.npz``
(beside it; how it was made and checked: ``data/PROVENANCE.md``) holds the correspondence:

* ``node_ids`` int16 [2708]: the Planetoid id of each embedded node;
* ``class_ids`` int8 [7]: the Planetoid class of each embedded class;
* ``edge_order`` int16 [10556]: DGL's edge ids, as positions into the embedded edges in both
  directions sorted by (destination, source) in Planetoid ids;
* ``test_ids`` int16 [1000]: the test nodes (train and val are the first 140 and next 500 ids).

With it, :func:`embedded_cora` returns exactly what ``dgl.data.CoraGraphDataset`` builds from its
download: the same edges in the same order, row-normalised features, labels and masks.
"""
from __future__ import annotations

from importlib.resources import files

import numpy as np

from .citation_layout import NUM_VAL, CitationArrays, row_normalised

NUM_TRAIN = 140  # Planetoid Cora's labelled training nodes (20 per class)


def _csr_rows(data: np.ndarray, indices: np.ndarray, indptr: np.ndarray, shape) -> np.ndarray:
    out = np.zeros(tuple(int(s) for s in shape), np.float32)
    row = np.repeat(np.arange(int(shape[0])), np.diff(indptr))
    out[row, indices] = data
    return out


def embedded_cora() -> CitationArrays:
    """DGL's ``CoraGraphDataset`` arrays (``reverse_edge=True``), from the files shipped in ``bgl.data``."""
    pkg = files("bgl.data")
    with (pkg / "cora.npz").open("rb") as f, np.load(f, allow_pickle=False) as z:
        attr = _csr_rows(z["attr_data"], z["attr_indices"], z["attr_indptr"], z["attr_shape"])
        adj_rows = np.repeat(np.arange(int(z["adj_shape"][0])), np.diff(z["adj_indptr"]))
        adj_cols = z["adj_indices"].astype(np.int64)
        labels = z["labels"].astype(np.int64)
    with (pkg / "cora_planetoid.npz").open("rb") as f, np.load(f, allow_pickle=False) as m:
        node_ids, class_ids = m["node_ids"].astype(np.int64), m["class_ids"].astype(np.int64)
        edge_order, test_ids = m["edge_order"].astype(np.int64), m["test_ids"].astype(np.int64)
    n = node_ids.shape[0]
    feat = np.empty_like(attr)
    feat[node_ids] = attr
    label = np.empty(n, np.int64)
    label[node_ids] = class_ids[labels]
    # Both directions, self-loops dropped, duplicates merged, in Planetoid ids sorted by (dst, src).
    src = node_ids[np.concatenate([adj_rows, adj_cols])]
    dst = node_ids[np.concatenate([adj_cols, adj_rows])]
    keep = src != dst
    pairs = np.unique(dst[keep] * n + src[keep])
    src, dst = (pairs % n)[edge_order], (pairs // n)[edge_order]
    masks = np.zeros((3, n), bool)
    masks[0, :NUM_TRAIN] = True
    masks[1, NUM_TRAIN:NUM_TRAIN + NUM_VAL] = True
    masks[2, test_ids] = True
    return CitationArrays(src=src, dst=dst, num_nodes=n, feat=row_normalised(feat), label=label,
                          train_mask=masks[0], val_mask=masks[1], test_mask=masks[2],
                          num_classes=int(class_ids.shape[0]))
