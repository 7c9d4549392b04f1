"""Every ingest format on small generated inputs, and every kind of bad input:
a clear IngestError naming the problem, and nothing left on disk."""
from __future__ import annotations

import gzip
import os
from pathlib import Path

import numpy as np
import pytest

from bgl.sources.datasets import detect_format, ingest
from bgl.errors import IngestError


def edges_of(store):
    """(src, dst) pairs of a CSC store, as a set."""
    dst = np.repeat(np.arange(store.num_nodes), np.diff(store.indptr))
    return set(zip(np.asarray(store.indices).tolist(), dst.tolist()))


def only(tmp_path, *names):
    assert sorted(os.listdir(tmp_path)) == sorted(names), "ingest left files behind"


# ----------------------------------------------------------------- edge lists
EDGE_TEXT = (
    "# a SNAP-style header\n"
    "% and a MatrixMarket-style comment\n"
    "0\t1\n"
    "\n"
    "1 2 0.5 1234567\n"  # weight and timestamp columns are ignored
    "2,0\r\n"
    "  3   3\n"  # self-loop
    "0 1\n"  # duplicate
    "4 0"  # no final newline
)


@pytest.mark.parametrize("chunk_bytes", [1 << 20, 7])
def test_edgelist_syntax(tmp_path, chunk_bytes):
    (tmp_path / "g.txt").write_text(EDGE_TEXT)
    s = ingest(tmp_path / "g.txt", tmp_path / "s", chunk_bytes=chunk_bytes)
    assert s.num_nodes == 5
    assert edges_of(s) == {(0, 1), (1, 2), (2, 0), (4, 0)}
    k = ingest(tmp_path / "g.txt", tmp_path / "k", remove_self_loops=False, dedupe=False, chunk_bytes=chunk_bytes)
    assert k.num_edges == 6 and (3, 3) in edges_of(k)
    y = ingest(tmp_path / "g.txt", tmp_path / "y", symmetrize=True, num_nodes=9)
    assert y.num_nodes == 9 and edges_of(y) == {(0, 1), (1, 0), (1, 2), (2, 1), (2, 0), (0, 2), (4, 0), (0, 4)}


def test_edgelist_gzip_detected_by_content(tmp_path):
    with gzip.open(tmp_path / "g.edges", "wt") as f:
        f.write("0 1\n1 2\n")
    assert detect_format(tmp_path / "g.edges") == "edgelist"
    assert edges_of(ingest(tmp_path / "g.edges", tmp_path / "s")) == {(0, 1), (1, 2)}


@pytest.mark.parametrize("chunk_bytes", [1 << 20, 16])
@pytest.mark.parametrize("line, message", [
    ("5 x", r"g.txt:4: malformed line \(expected two integer node ids\): '5 x'"),
    ("5", r"g.txt:4: malformed line \(only one column"),
    ("5 1.5", r"g.txt:4: malformed line"),
    ("5 -7", r"g.txt:4: negative node id -7: '5 -7'"),
    ("-2 1", r"g.txt:4: negative node id -2"),
    ("1 12345678901234567890", r"g.txt:4: node id with more than 18 digits"),
])
def test_edgelist_bad_line_reports_line_number(tmp_path, line, message, chunk_bytes):
    (tmp_path / "g.txt").write_text(f"# header\n0 1\n1 2\n{line}\n2 3\n")
    with pytest.raises(IngestError, match=message):
        ingest(tmp_path / "g.txt", tmp_path / "out", chunk_bytes=chunk_bytes)
    only(tmp_path, "g.txt")


def test_edgelist_id_beyond_declared_node_count(tmp_path):
    (tmp_path / "g.txt").write_text("0 1\n1 2\n2 3\n")
    with pytest.raises(IngestError, match=r"g.txt:3: node id 3 >= num_nodes 3"):
        ingest(tmp_path / "g.txt", tmp_path / "out", num_nodes=3)
    only(tmp_path, "g.txt")


def test_edgelist_truncated_gzip(tmp_path):
    data = gzip.compress(b"".join(b"%d %d\n" % (i, i + 1) for i in range(20000)))
    (tmp_path / "g.txt.gz").write_bytes(data[: len(data) // 2])
    with pytest.raises(IngestError, match="truncated or corrupt"):
        ingest(tmp_path / "g.txt.gz", tmp_path / "out")
    only(tmp_path, "g.txt.gz")
    damaged = bytearray(data)
    damaged[len(data) // 2 : len(data) // 2 + 40] = bytes(40)  # corrupt the middle, keep the end
    (tmp_path / "g.txt.gz").write_bytes(bytes(damaged))
    with pytest.raises(IngestError, match="truncated or corrupt"):
        ingest(tmp_path / "g.txt.gz", tmp_path / "out")
    only(tmp_path, "g.txt.gz")


def test_edgelist_without_edges(tmp_path):
    (tmp_path / "g.txt").write_text("# nothing here\n")
    with pytest.raises(IngestError, match="no edges found"):
        ingest(tmp_path / "g.txt", tmp_path / "out")
    s = ingest(tmp_path / "g.txt", tmp_path / "iso", num_nodes=4)  # isolated nodes are a valid graph
    assert (s.num_nodes, s.num_edges) == (4, 0)


# ----------------------------------------------------------------- npz errors
def test_truncated_npz(tmp_path):
    from bgl.data import default_dataset_path

    data = Path(default_dataset_path()).read_bytes()
    (tmp_path / "cora.npz").write_bytes(data[: len(data) // 3])
    with pytest.raises(IngestError, match=r"cora.npz: not a valid npz file .*zip archive.*truncated"):
        ingest(tmp_path / "cora.npz", tmp_path / "out")
    only(tmp_path, "cora.npz")


def _csr_npz(path, n=6, feat_rows=None, labels=None, **extra):
    rng = np.random.default_rng(0)
    indptr = np.array([0, 2, 3, 3, 5, 6, 6][: n + 1])
    indices = np.array([1, 2, 0, 4, 5, 3])
    arrays = dict(data=np.ones(6), indices=indices, indptr=indptr, shape=np.array([n, n]), **extra)
    if feat_rows is not None:
        arrays["feat"] = rng.standard_normal((feat_rows, 3)).astype(np.float32)
    if labels is not None:
        arrays["labels"] = np.asarray(labels)
    np.savez(path, **arrays)


def test_csr_npz_direction_and_node_data(tmp_path):
    _csr_npz(tmp_path / "g.npz", feat_rows=6, labels=[0, 1, 0, 1, 0, 1])
    s = ingest(tmp_path / "g.npz", tmp_path / "s", symmetrize=False)
    # CSR row i lists j for edge i -> j
    assert edges_of(s) == {(0, 1), (0, 2), (1, 0), (3, 4), (3, 5), (4, 3)}
    assert s.feat.shape == (6, 3) and s.num_classes == 2


@pytest.mark.parametrize("kwargs, message", [
    (dict(feat_rows=5), r"feature row count mismatch: 5 feature rows for 6 nodes"),
    (dict(labels=[0, 1, 2]), r"label row count mismatch"),
    (dict(labels=[0, 1, -3, 0, 0, 0]), r"label -3 < -1"),
    (dict(shape_override=[6, 7]), r"adjacency must be square"),
])
def test_csr_npz_bad_node_data(tmp_path, kwargs, message):
    shape = kwargs.pop("shape_override", None)
    _csr_npz(tmp_path / "g.npz", **kwargs)
    if shape is not None:
        z = dict(np.load(tmp_path / "g.npz"))
        z["shape"] = np.array(shape)
        np.savez(tmp_path / "g.npz", **z)
    with pytest.raises(IngestError, match=message):
        ingest(tmp_path / "g.npz", tmp_path / "out")
    only(tmp_path, "g.npz")


def test_csr_npz_out_of_range_column(tmp_path):
    np.savez(tmp_path / "g.npz", data=np.ones(2), indices=np.array([1, 9]), indptr=np.array([0, 1, 2]),
             shape=np.array([2, 2]))
    with pytest.raises(IngestError, match=r"column index 9 outside \[0, 2\)"):
        ingest(tmp_path / "g.npz", tmp_path / "out")
    only(tmp_path, "g.npz")


def test_conflicting_options(tmp_path):
    _csr_npz(tmp_path / "g.npz", feat_rows=6, labels=[0, 1, 0, 1, 0, 1])
    with pytest.raises(IngestError, match="3-dim features; --feat-dim 8 conflicts"):
        ingest(tmp_path / "g.npz", tmp_path / "out", feat_dim=8)
    with pytest.raises(IngestError, match="2 classes; --num-classes 5 conflicts"):
        ingest(tmp_path / "g.npz", tmp_path / "out", num_classes=5)
    only(tmp_path, "g.npz")


def test_unknown_sources(tmp_path):
    with pytest.raises(IngestError, match="no such file"):
        ingest(tmp_path / "missing.txt", tmp_path / "out")
    (tmp_path / "data.bin").write_bytes(b"\x00")
    with pytest.raises(IngestError, match="cannot tell the format"):
        ingest(tmp_path / "data.bin", tmp_path / "out")
    with pytest.raises(IngestError, match="unknown format 'parquet'"):
        ingest(tmp_path / "data.bin", tmp_path / "out", format="parquet")
    with pytest.raises(IngestError, match="holds no OGB raw layout, Planetoid ind.* files or typed edge lists"):
        ingest(tmp_path, tmp_path / "out")
    only(tmp_path, "data.bin")


def test_existing_output_needs_overwrite(tmp_path):
    (tmp_path / "g.txt").write_text("0 1\n")
    ingest(tmp_path / "g.txt", tmp_path / "s")
    (tmp_path / "g.txt").write_text("0 1\n1 2\n")
    with pytest.raises(FileExistsError, match="overwrite"):
        ingest(tmp_path / "g.txt", tmp_path / "s")
    assert edges_of(ingest(tmp_path / "g.txt", tmp_path / "s", overwrite=True)) == {(0, 1), (1, 2)}
    only(tmp_path, "g.txt", "s")


# ----------------------------------------------------------------- OGB raw layout
def _write_gz(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as f:
        f.write(text)


@pytest.fixture
def ogb_dir(tmp_path):
    """A tiny ogbn-style directory: 40 nodes, 150 edges, 6-dim features, 4 classes, one split."""
    rng = np.random.default_rng(7)
    n, root = 40, tmp_path / "ogbn-tiny"
    e = rng.integers(0, n, (150, 2))
    x = rng.standard_normal((n, 6)).astype(np.float32)
    y = rng.integers(0, 4, n).astype(float)
    y[[3, 9]] = np.nan  # unlabelled nodes, as in ogbn-papers100M
    _write_gz(root / "raw/edge.csv.gz", "".join(f"{a},{b}\n" for a, b in e))
    _write_gz(root / "raw/num-node-list.csv.gz", f"{n}\n")
    _write_gz(root / "raw/node-feat.csv.gz", "".join(",".join(repr(float(v)) for v in row) + "\n" for row in x))
    _write_gz(root / "raw/node-label.csv.gz", "".join(("nan" if np.isnan(v) else str(int(v))) + "\n" for v in y))
    perm = rng.permutation(np.setdiff1d(np.arange(n), [3, 9]))
    for name, ids in (("train", perm[:20]), ("valid", perm[20:28]), ("test", perm[28:])):
        _write_gz(root / f"split/time/{name}.csv.gz", "".join(f"{i}\n" for i in ids))
    return root, e, x, y, perm


def test_ogb_raw_layout(ogb_dir, tmp_path):
    root, e, x, y, perm = ogb_dir
    assert detect_format(root) == "ogb"
    s = ingest(root, tmp_path / "s")
    assert s.num_nodes == 40 and s.meta.extra["symmetrize"] is True
    ref = {(int(a), int(b)) for a, b in e if a != b} | {(int(b), int(a)) for a, b in e if a != b}
    assert edges_of(s) == ref
    np.testing.assert_array_equal(s.feat, x)
    np.testing.assert_array_equal(s.label, np.where(np.isnan(y), -1, y).astype(np.int64))
    np.testing.assert_array_equal(s.train_idx, np.sort(perm[:20]))
    np.testing.assert_array_equal(s.val_idx, np.sort(perm[20:28]))
    np.testing.assert_array_equal(s.test_idx, np.sort(perm[28:]))


def test_ogb_feature_row_count_mismatch(ogb_dir, tmp_path):
    root, _, x, _, _ = ogb_dir
    _write_gz(root / "raw/node-feat.csv.gz", "".join(",".join(map(str, row)) + "\n" for row in x[:-1]))
    with pytest.raises(IngestError, match=r"node-feat.csv.gz: feature row count mismatch: 39 rows for 40 nodes"):
        ingest(root, tmp_path / "out")
    only(tmp_path, "ogbn-tiny")


def test_ogb_bad_values(ogb_dir, tmp_path):
    root, e, _, _, _ = ogb_dir
    _write_gz(root / "raw/node-feat.csv.gz", "0.5,abc,1,1,1,1\n" * 40)
    with pytest.raises(IngestError, match=r"node-feat.csv.gz:1: not a number"):
        ingest(root, tmp_path / "out")
    _write_gz(root / "raw/edge.csv.gz", "0,1\n1,40\n")
    with pytest.raises(IngestError, match=r"edge.csv.gz:2: node id 40 >= num_nodes 40"):
        ingest(root, tmp_path / "out")
    only(tmp_path, "ogbn-tiny")


def test_ogb_column_without_final_newline(ogb_dir, tmp_path):
    root, _, _, _, perm = ogb_dir
    # the last line lacks "\n": one more value than newlines, still one value per line
    _write_gz(root / "split/time/train.csv.gz", "\n".join(str(i) for i in perm[:20]))
    s = ingest(root, tmp_path / "s")
    np.testing.assert_array_equal(s.train_idx, np.sort(perm[:20]))
    # two values on one line is an error, whatever the newline count
    _write_gz(root / "split/time/train.csv.gz", "1\n2,3\n4")
    with pytest.raises(IngestError, match=r"train.csv.gz: expected one value per line"):
        ingest(root, tmp_path / "out")


@pytest.mark.parametrize("bad_line", ["", " \t", " "])
def test_ogb_blank_line_in_split_is_an_error_not_node_minus_one(ogb_dir, tmp_path, bad_line):
    root, _, _, _, perm = ogb_dir
    # numpy's text parser reads an empty field as -1: it must never reach the store as a node id
    _write_gz(root / "split/time/train.csv.gz", f"{perm[0]}\n{bad_line}\n{perm[1]}\n")
    with pytest.raises(IngestError, match=r"train.csv.gz:2: empty value"):
        ingest(root, tmp_path / "out")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("block", [b"", b"\n", b"1\n\n2\n", b" \n\t\r\n3", b"1,2\n \n\x0b\n4 \n", b"\n\n5",
                                   b"a\r\n\r\nb\r\n", b"  x  "])
def test_count_nonblank_lines_matches_bytes_strip(block):
    from bgl.sources.readers.ogb import _count_nonblank_lines

    assert _count_nonblank_lines(block) == sum(1 for ln in block.split(b"\n") if ln.strip())


# ----------------------------------------------------------------- DGLGraph
def test_dgl_graph(tmp_path):
    dgl = pytest.importorskip("dgl")
    import torch

    g = dgl.rand_graph(80, 400)
    g.ndata["feat"] = torch.randn(80, 5)
    g.ndata["label"] = torch.randint(0, 4, (80,))
    mask = torch.zeros(80, dtype=torch.bool)
    mask[:30] = True
    g.ndata["train_mask"], g.ndata["val_mask"], g.ndata["test_mask"] = mask, ~mask & (torch.arange(80) < 50), torch.arange(80) >= 50
    assert detect_format(g) == "dgl"
    s = ingest(g, tmp_path / "s")
    simple = dgl.to_simple(dgl.remove_self_loop(g))
    for v in range(80):  # CSC row v = DGL's in-neighbours of v
        assert s.indices[s.indptr[v]:s.indptr[v + 1]].tolist() == sorted(simple.in_edges(v)[0].tolist())
    np.testing.assert_array_equal(s.feat, g.ndata["feat"].numpy())
    np.testing.assert_array_equal(s.label, g.ndata["label"].numpy())
    np.testing.assert_array_equal(s.train_idx, np.arange(30))
    np.testing.assert_array_equal(s.test_idx, np.arange(50, 80))
    b = ingest(g, tmp_path / "b", symmetrize=True)
    bi = dgl.to_bidirected(dgl.remove_self_loop(g))
    np.testing.assert_array_equal(b.indptr[1:] - b.indptr[:-1], bi.in_degrees().numpy())
    assert edges_of(b) == set(zip(*(t.tolist() for t in bi.edges())))


# ----------------------------------------------------------------- R-MAT
def test_rmat_store_is_deterministic_and_clean(tmp_path):
    s = ingest("rmat:10", tmp_path / "a", feat_dim=4, num_classes=3, edge_factor=8)
    again = ingest("rmat:10", tmp_path / "b", feat_dim=4, num_classes=3, edge_factor=8, chunk_edges=777)
    other = ingest("rmat", tmp_path / "c", scale=10, edge_factor=8, seed=1)
    np.testing.assert_array_equal(s.indices, again.indices)  # chunking never changes the graph
    np.testing.assert_array_equal(s.feat, again.feat)
    assert not np.array_equal(s.indptr, other.indptr)
    assert s.num_nodes == 1024 and 0 < s.num_edges <= 2 * 8 * 1024
    e = edges_of(s)
    assert len(e) == s.num_edges  # no duplicates
    assert all((b, a) in e for a, b in e) and all(a != b for a, b in e)
    deg = s.in_degrees()
    assert deg.max() > 8 * deg.mean()  # R-MAT's skew, unlike a uniform random graph
    assert s.feat.shape == (1024, 4) and s.num_classes == 3
    assert s.meta.extra["generated_edges"] == 8 * 1024


def test_rmat_quadrant_probabilities():
    from bgl.sources import _rmat_kernels as K

    scale, m = 12, 200_000
    src, dst = np.empty(m, np.int64), np.empty(m, np.int64)
    K.rmat_edges(0, m, scale, 0.57, 0.76, 0.95, 5, np.arange(1 << scale), src, dst)
    half = 1 << (scale - 1)
    top_left = np.mean((src < half) & (dst < half))
    bottom_right = np.mean((src >= half) & (dst >= half))
    assert abs(top_left - 0.57) < 0.01 and abs(bottom_right - 0.05) < 0.01
    assert src.max() < (1 << scale) and src.min() >= 0


def test_rmat_bad_parameters(tmp_path):
    with pytest.raises(IngestError, match="rmat:SCALE"):
        ingest("rmat:big", tmp_path / "x")
    with pytest.raises(IngestError, match="scale must be in"):
        ingest("rmat:0", tmp_path / "x")
    with pytest.raises(IngestError, match="sum to 1"):
        ingest("rmat:4", tmp_path / "x", abcd=(0.5, 0.5, 0.5, 0.5))
    only(tmp_path)


def test_options_that_do_not_apply_are_named(tmp_path):
    from bgl.data import default_dataset_path

    with pytest.raises(IngestError, match=r"option\(s\) \['num_nodes'\] do not apply to format 'gnn-benchmark'"):
        ingest(default_dataset_path(), tmp_path / "x", num_nodes=5)
    with pytest.raises(IngestError, match=r"\['split'\] do not apply to format 'rmat'"):
        ingest("rmat:4", tmp_path / "x", split="time")
    only(tmp_path)
