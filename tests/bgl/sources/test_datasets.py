"""Ingest of the real datasets in /work/shared/datasets, checked against their PROVENANCE.md
counts and against an independent scipy / numpy reading of the same files."""
from __future__ import annotations

import gzip
import os
import pickle
import warnings
from pathlib import Path

import numpy as np
import pytest

from bgl.sources.datasets import detect_format, ingest
from bgl.errors import IngestError

SHARED = Path(os.environ.get("BGL_SHARED_DATASETS", "/work/shared/datasets"))
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason=f"{SHARED} not present")
sp = pytest.importorskip("scipy.sparse")


def csc_reference(src, dst, n, symmetrize, drop_loops=True):
    """Independent COO -> CSC (sorted, de-duplicated) with scipy."""
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    if symmetrize:
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    if drop_loops:
        keep = src != dst
        src, dst = src[keep], dst[keep]
    a = sp.csc_matrix((np.ones(src.size), (src, dst)), shape=(n, n))  # column v = in-neighbours of v
    a.sum_duplicates()
    a.sort_indices()
    return a.indptr.astype(np.int64), a.indices.astype(np.int64)


def assert_csc(store, indptr, indices):
    np.testing.assert_array_equal(store.indptr, indptr)
    np.testing.assert_array_equal(store.indices, indices)


def assert_default_split(store):
    """Disjoint, covering every labelled node, ~60/20/20 within each class."""
    tr, va, te = store.train_idx, store.val_idx, store.test_idx
    allids = np.concatenate([tr, va, te])
    assert np.unique(allids).size == allids.size
    np.testing.assert_array_equal(np.sort(allids), np.flatnonzero(np.asarray(store.label) >= 0))
    for c in range(store.num_classes):
        size = int((store.label == c).sum())
        assert abs(int((store.label[tr] == c).sum()) - 0.6 * size) <= 1
        assert abs(int((store.label[va] == c).sum()) - 0.2 * size) <= 1


def load_npz_csr(z, prefix):
    return sp.csr_matrix((z[f"{prefix}_data"], z[f"{prefix}_indices"], z[f"{prefix}_indptr"]),
                         shape=tuple(z[f"{prefix}_shape"]))


# ----------------------------------------------------------------- gnn-benchmark
def test_cora_default_dataset_matches_provenance_and_scipy(cora_store):
    from bgl.data import default_dataset_path

    s = cora_store
    assert (s.num_nodes, s.num_edges) == (2708, 2 * 5278)  # PROVENANCE.md: 5,278 undirected edges
    assert (s.feat_dim, s.num_classes) == (1433, 7)
    z = np.load(str(default_dataset_path()), allow_pickle=False)
    adj = load_npz_csr(z, "adj").tocoo()
    assert_csc(s, *csc_reference(adj.row, adj.col, 2708, symmetrize=True))
    np.testing.assert_array_equal(s.feat, load_npz_csr(z, "attr").toarray())
    assert s.feat.dtype == np.float32 and float(s.feat.sum()) == 49216  # binary, 49,216 nonzeros
    np.testing.assert_array_equal(s.label, z["labels"])
    assert_default_split(s)
    assert s.meta.extra["split_source"] == "stratified-60/20/20"


def test_default_split_is_seeded(tmp_path):
    from bgl.data import default_dataset_path

    a = ingest(default_dataset_path(), tmp_path / "a", seed=1)
    b = ingest(default_dataset_path(), tmp_path / "b", seed=1)
    c = ingest(default_dataset_path(), tmp_path / "c", seed=2)
    np.testing.assert_array_equal(a.train_idx, b.train_idx)
    assert not np.array_equal(a.train_idx, c.train_idx)
    np.testing.assert_array_equal(a.indices, c.indices)  # the seed only touches the split


@needs_shared
def test_citeseer_npz(tmp_path):
    s = ingest(SHARED / "citeseer.npz", tmp_path / "cs")
    assert (s.num_nodes, s.num_edges, s.feat_dim, s.num_classes) == (3312, 2 * 4536, 3703, 6)
    assert float(s.feat.sum()) == 105165
    z = np.load(SHARED / "citeseer.npz", allow_pickle=False)
    adj = load_npz_csr(z, "adj").tocoo()
    assert_csc(s, *csc_reference(adj.row, adj.col, 3312, symmetrize=True))
    assert_default_split(s)


@needs_shared
def test_pubmed_csr_npz_with_synthetic_features(tmp_path):
    path = SHARED / "pubmed_adj_labels.npz"
    assert detect_format(path) == "csr-npz"
    s = ingest(path, tmp_path / "pm", feat_dim=12, seed=3)
    assert (s.num_nodes, s.num_edges, s.num_classes) == (19717, 88648, 3)
    assert np.bincount(s.label).tolist() == [4103, 7875, 7739]
    z = np.load(path)
    a = sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"])).tocoo()
    assert_csc(s, *csc_reference(a.row, a.col, 19717, symmetrize=True))
    assert s.feat.shape == (19717, 12) and s.feat.dtype == np.float32
    assert s.meta.extra["synthetic_features"] is True
    # Synthetic features carry the class (centroid + noise), so class means are far apart.
    means = np.stack([s.feat[s.label == c].mean(0) for c in range(3)])
    assert np.linalg.norm(means[0] - means[1]) > 1.0
    assert_default_split(s)


# ----------------------------------------------------------------- Planetoid
def _pickle(path):
    with open(path, "rb") as f, warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # old scipy.sparse.csr module path
        return pickle.load(f, encoding="latin1")  # trusted local test data; scipy reads the CSR


@needs_shared
def test_planetoid_cora_keeps_standard_split(tmp_path, cora_store):
    d = SHARED / "planetoid"
    assert detect_format(d / "ind.cora") == "planetoid"
    s = ingest(d, tmp_path / "pc", name="cora")
    assert (s.num_nodes, s.num_edges, s.feat_dim, s.num_classes) == (2708, 10556, 1433, 7)
    assert (s.train_idx.size, s.val_idx.size, s.test_idx.size) == (140, 500, 1000)
    np.testing.assert_array_equal(s.train_idx, np.arange(140))
    np.testing.assert_array_equal(s.val_idx, np.arange(140, 640))
    test_index = np.loadtxt(d / "ind.cora.test.index", dtype=np.int64)
    np.testing.assert_array_equal(s.test_idx, np.sort(test_index))
    allx, tx, ty = (_pickle(d / f"ind.cora.{p}") for p in ("allx", "tx", "ty"))
    np.testing.assert_array_equal(s.feat[:1708], allx.toarray())
    np.testing.assert_array_equal(s.feat[test_index], tx.toarray())
    np.testing.assert_array_equal(s.label[test_index], ty.argmax(1))
    graph = _pickle(d / "ind.cora.graph")
    src = np.array([u for u, vs in graph.items() for _ in vs])
    dst = np.array([v for vs in graph.values() for v in vs])
    assert src.size == 10858  # PROVENANCE.md: adjacency-list entries
    assert_csc(s, *csc_reference(src, dst, 2708, symmetrize=True))
    # Same graph as the gnn-benchmark file, in another node order.
    np.testing.assert_array_equal(np.sort(s.in_degrees()), np.sort(cora_store.in_degrees()))
    assert sorted(np.bincount(s.label)) == sorted(np.bincount(cora_store.label))


@needs_shared
def test_planetoid_citeseer_test_index_gaps(tmp_path):
    d = SHARED / "planetoid"
    s = ingest(d / "ind.citeseer", tmp_path / "pcs")
    assert (s.num_nodes, s.num_edges, s.feat_dim, s.num_classes) == (3327, 9104, 3703, 6)
    test_index = np.loadtxt(d / "ind.citeseer.test.index", dtype=np.int64)
    gaps = np.setdiff1d(np.arange(test_index.min(), test_index.max() + 1), test_index)
    assert gaps.size == 15
    assert (s.label[gaps] == -1).all() and not s.feat[gaps].any()
    assert not np.isin(gaps, np.concatenate([s.train_idx, s.val_idx, s.test_idx])).any()
    np.testing.assert_array_equal(s.feat[test_index], _pickle(d / "ind.citeseer.tx").toarray())


@needs_shared
def test_planetoid_directory_with_two_datasets_needs_a_name(tmp_path):
    with pytest.raises(IngestError, match="choose one with name="):
        ingest(SHARED / "planetoid", tmp_path / "x")
    assert os.listdir(tmp_path) == []


@needs_shared
def test_planetoid_refuses_foreign_pickles(tmp_path):
    # A pickle naming any class outside the Planetoid set is refused before anything runs.
    src = Path(SHARED / "planetoid")
    for p in ("x", "y", "tx", "ty", "allx", "ally", "test.index"):
        (tmp_path / f"ind.evil.{p}").write_bytes((src / f"ind.cora.{p}").read_bytes())
    (tmp_path / "ind.evil.graph").write_bytes(pickle.dumps(os.system))
    with pytest.raises(IngestError, match=r"refusing to unpickle (posix|os)\.system"):
        ingest(tmp_path, tmp_path / "out")
    assert not (tmp_path / "out").exists()


# ----------------------------------------------------------------- SNAP edge list
@needs_shared
def test_slashdot_full_file_counts(tmp_path):
    """PROVENANCE.md: 82,168 nodes and 948,464 directed edges (self-loops and all)."""
    s = ingest(SHARED / "soc-Slashdot0902.txt.gz", tmp_path / "sd", remove_self_loops=False, dedupe=False)
    assert (s.num_nodes, s.num_edges) == (82168, 948464)
    assert s.meta.extra["symmetrize"] is False


@needs_shared
def test_slashdot_slice_against_numpy(tmp_path):
    with gzip.open(SHARED / "soc-Slashdot0902.txt.gz", "rb") as f:
        head = b"".join(f.readline() for _ in range(30003))  # 3 comment lines + 30,000 edges
    sliced = tmp_path / "slice.txt.gz"
    with gzip.open(sliced, "wb") as f:
        f.write(head)
    ref = np.loadtxt(sliced, dtype=np.int64, comments="#")
    n = int(ref.max()) + 1
    for sym in (False, True):
        # small text blocks so lines straddle block boundaries
        s = ingest(sliced, tmp_path / f"s{sym}", symmetrize=sym, feat_dim=4, num_classes=3, chunk_bytes=4096)
        assert s.num_nodes == n
        assert_csc(s, *csc_reference(ref[:, 0], ref[:, 1], n, symmetrize=sym))
        assert s.feat.shape == (n, 4) and s.label.max() < 3
        assert_default_split(s)
    assert sorted(os.listdir(tmp_path)) == ["sFalse", "sTrue", "slice.txt.gz"]  # no scratch left
