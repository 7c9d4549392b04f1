"""Raw Planetoid files (``ind.NAME.*``) for tests, written as the originals are: Python pickles of
scipy CSR matrices, numpy one-hot arrays and a dict of adjacency lists, plus the test-id text file.

Not a test module: ``test_data.py`` and ``tests/examples/test_from_dgl.py`` load it by path
(:func:`load`).  Needs scipy (a test dependency).
"""
from __future__ import annotations

import importlib.util
import pickle
from pathlib import Path

import numpy as np

DGL_FOLDERS = {"cora": ("cora_v2", "cora_v2_d697a464"), "citeseer": ("citeseer", "citeseer_d6836239"),
               "pubmed": ("pubmed", "pubmed_35464cad")}


def load():
    """This module, imported by path (tests run with ``--import-mode=importlib``)."""
    spec = importlib.util.spec_from_file_location("planetoid_files", Path(__file__))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_planetoid(folder: Path, file_name: str, feat: np.ndarray, label: np.ndarray, num_classes: int,
                    adjacency: dict, num_train: int, test_order: np.ndarray, num_labelled: int) -> Path:
    """Write ``folder/ind.<file_name>.*``; returns the ``ind.<file_name>`` prefix.

    ``feat`` [n, F] raw (unnormalised) features and ``label`` [n] of nodes ``0..n-1``; the files put
    rows ``0..num_labelled-1`` in ``allx`` / ``ally``, the first ``num_train`` of those in ``x`` / ``y``,
    and node ``test_order[j]`` in row ``j`` of ``tx`` / ``ty`` (as Planetoid's files are laid out).
    ``adjacency`` is written as given (its key and list order matter to DGL).
    """
    import scipy.sparse as sp

    folder.mkdir(parents=True, exist_ok=True)
    onehot = np.zeros((label.shape[0], num_classes), np.int32)
    has = label >= 0
    onehot[np.flatnonzero(has), label[has]] = 1
    parts = {
        "x": sp.csr_matrix(feat[:num_train]), "y": onehot[:num_train],
        "allx": sp.csr_matrix(feat[:num_labelled]), "ally": onehot[:num_labelled],
        "tx": sp.csr_matrix(feat[test_order]), "ty": onehot[test_order],
        "graph": adjacency,
    }
    prefix = folder / f"ind.{file_name}"
    for part, obj in parts.items():
        with open(f"{prefix}.{part}", "wb") as f:
            pickle.dump(obj, f, protocol=4)
    Path(f"{prefix}.test.index").write_text("".join(f"{int(i)}\n" for i in test_order))
    return prefix


def random_dataset(rng: np.random.Generator, n: int = 600, num_feats: int = 9, num_classes: int = 4,
                   gaps: int = 0) -> dict:
    """A small dataset with what the real ones have and more: float (TF-IDF-like) and all-zero feature
    rows, self-loops, repeated and one-directional adjacency entries, shuffled dict keys and test
    order; ``gaps`` test-range ids left out of the test files (CiteSeer's isolated nodes)."""
    feat = (rng.random((n, num_feats)) * (rng.random((n, num_feats)) < 0.4)).astype(np.float32)
    feat[rng.choice(n, 3, replace=False)] = 0.0
    label = rng.integers(0, num_classes, n)
    num_labelled = n // 2  # (DGL marks 500 validation nodes after the training ones: n >= num_train + 500)
    test_ids = np.arange(num_labelled, n)
    if gaps:
        test_ids = np.setdiff1d(test_ids, rng.choice(test_ids[1:-1], gaps, replace=False))
    keys = rng.permutation(n)
    adjacency = {}
    for u in keys:
        nbrs = rng.integers(0, n, rng.integers(0, 5)).tolist()
        if rng.random() < 0.1:
            nbrs.append(int(u))  # self-loop
        if nbrs and rng.random() < 0.2:
            nbrs.append(nbrs[0])  # repeated entry
        adjacency[int(u)] = nbrs
    return {"feat": feat, "label": label, "num_classes": num_classes, "adjacency": adjacency,
            "num_train": min(10, num_labelled), "test_order": rng.permutation(test_ids), "num_labelled": num_labelled}


def write_cora_raw(raw_dir: Path) -> Path:
    """The embedded Cora as raw files where DGL 2.1 looks (``raw_dir/cora_v2_<hash>/``), so DGL and
    ``bgl.dgl.data`` read the same files; returns ``raw_dir``.  Its features are 0/1 rows scaled by
    DGL's row normalisation, so the raw rows are the nonzero pattern."""
    from bgl.dgl.data.embedded_cora import embedded_cora

    cora = embedded_cora()
    order = np.lexsort((cora.dst, cora.src))
    adjacency: dict = {}
    for u, v in zip(cora.src[order].tolist(), cora.dst[order].tolist()):
        adjacency.setdefault(u, []).append(v)
    dgl_name, folder = DGL_FOLDERS["cora"]
    test_ids = np.flatnonzero(cora.test_mask)
    write_planetoid(Path(raw_dir) / folder, dgl_name, (cora.feat > 0).astype(np.float32), cora.label,
                    cora.num_classes, adjacency, int(cora.train_mask.sum()), test_ids, int(test_ids.min()))
    return Path(raw_dir)
