"""Edge data through ingest: a DGLGraph's edata and an edge list's weight column land in CSC order."""
from __future__ import annotations

import numpy as np
import pytest

import bgl
from bgl.errors import IngestError

import torch

try:
    import dgl
except ImportError:  # the current stack: the edge-list cases run, the DGLGraph ones skip
    dgl = None
needs_dgl = pytest.mark.skipif(dgl is None, reason="ingests a DGLGraph: needs DGL (the pinned lane)")


def pair_values(store, name):
    """{(src, dst): edge data row} of a store."""
    dst = np.repeat(np.arange(store.num_nodes), np.diff(store.indptr))
    vals = np.asarray(store.edge_array(name))
    return {(int(s), int(d)): vals[p] for p, (s, d) in enumerate(zip(store.indices, dst))}


@needs_dgl
def test_dglgraph_edata_follows_its_edges(tmp_path):
    rng = np.random.default_rng(3)
    n, e = 200, 3000
    src, dst = rng.integers(0, n, e), rng.integers(0, n, e)
    g = dgl.graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=n)
    g.edata["w"] = torch.from_numpy(rng.random(e).astype(np.float32))
    g.edata["f"] = torch.from_numpy(rng.random((e, 3)))
    store = bgl.ingest(g, tmp_path / "s", remove_self_loops=False)
    assert sorted(store.edata) == ["f", "w"]
    assert store.edge_array("f").shape == (store.num_edges, 3)
    first = {}
    for i in range(e):  # a de-duplicated edge keeps its first occurrence's data
        first.setdefault((int(src[i]), int(dst[i])), i)
    assert len(first) == store.num_edges
    w, f = pair_values(store, "w"), pair_values(store, "f")
    for pair, i in first.items():
        assert w[pair] == g.edata["w"][i].item()
        assert np.array_equal(f[pair], g.edata["f"][i].numpy())


@needs_dgl
def test_symmetrized_edges_share_their_weight(tmp_path):
    g = dgl.graph((torch.tensor([0, 1, 2]), torch.tensor([1, 2, 3])), num_nodes=4)
    g.edata["w"] = torch.tensor([0.25, 0.5, 0.75])
    store = bgl.ingest(g, tmp_path / "s", symmetrize=True)
    w = pair_values(store, "w")
    for (s, d), value in {(0, 1): 0.25, (1, 2): 0.5, (2, 3): 0.75}.items():
        assert w[(s, d)] == w[(d, s)] == value


def test_small_fill_buffer_gives_the_same_store(tmp_path):
    """Many buckets (several passes over the stream) place edge data exactly as one bucket does."""
    from bgl.sources import csc_build

    rng = np.random.default_rng(5)
    src, dst = rng.integers(0, 500, 20000), rng.integers(0, 500, 20000)
    w = rng.random(20000)
    one = csc_build.build_csc(csc_build.array_chunks(src, dst, chunk=3000), 500, np.dtype(np.int32), tmp_path,
                              symmetrize=True, remove_self_loops=True, dedupe=True, track_positions=True)
    pos_one = np.concatenate([p for _, p in one.iter_positions()])
    (tmp_path / "many").mkdir()
    many = csc_build.build_csc(csc_build.array_chunks(src, dst, chunk=3000), 500, np.dtype(np.int32),
                               tmp_path / "many", symmetrize=True, remove_self_loops=True, dedupe=True,
                               track_positions=True, fill_bytes=4096)
    pos_many = np.concatenate([p for _, p in many.iter_positions()])
    assert np.array_equal(w[pos_one], w[pos_many])
    ids = np.concatenate([i for _, i in many.iter_indices()])
    rows = np.repeat(np.arange(500), np.diff(many.indptr))
    # each stored entry's input edge is that very edge (either direction)
    assert np.all(((src[pos_many] == ids) & (dst[pos_many] == rows)) | ((dst[pos_many] == ids) & (src[pos_many] == rows)))


def test_edge_list_weight_column(tmp_path):
    path = tmp_path / "g.txt"
    path.write_text("# Directed graph\n0 1 0.5\n1 2 2e-1 extra\n2 0 3\n0 1 9\n3 0 -1.25\n")
    store = bgl.ingest(path, tmp_path / "s", edge_weight_column=2)
    assert store.edge_array("weight").dtype == np.float32
    assert pair_values(store, "weight") == {(0, 1): 0.5, (1, 2): np.float32(0.2), (2, 0): 3.0, (3, 0): -1.25}


def test_cli_edge_weight_column(tmp_path):
    from bgl.cli import main

    (tmp_path / "g.tsv").write_text("0\t1\t7\t0.5\n1\t0\t8\t1.5\n")
    assert main(["ingest", str(tmp_path / "g.tsv"), str(tmp_path / "s"), "--edge-weight-column", "3",
                 "--no-progress"]) == 0
    assert pair_values(bgl.open_store(tmp_path / "s"), "weight") == {(0, 1): 0.5, (1, 0): 1.5}


@pytest.mark.parametrize("text, col, match", [
    ("0 1 0.5\n1 2 abc\n", 2, r"g.txt:2: edge weight column missing or not a decimal number: '1 2 abc'"),
    ("0 1 0.5\n", 3, r"g.txt:1: edge weight column missing"),
    ("0 1 1.5x\n", 2, r"g.txt:1: edge weight"),
])
def test_bad_weight_column_names_the_line(tmp_path, text, col, match):
    (tmp_path / "g.txt").write_text(text)
    with pytest.raises(IngestError, match=match):
        bgl.ingest(tmp_path / "g.txt", tmp_path / "s", edge_weight_column=col)
    assert not (tmp_path / "s").exists()


def test_weight_column_must_follow_the_ids(tmp_path):
    (tmp_path / "g.txt").write_text("0 1 0.5\n")
    with pytest.raises(IngestError, match="edge_weight_column must be an int >= 2.*got 1"):
        bgl.ingest(tmp_path / "g.txt", tmp_path / "s", edge_weight_column=1)


@needs_dgl
def test_missing_dgl_edge_key(tmp_path):
    from bgl.sources.readers.dgl_graph import read_dgl_graph

    g = dgl.graph((torch.tensor([0]), torch.tensor([1])))
    with pytest.raises(IngestError, match=r"no edge data \['w'\]"):
        read_dgl_graph(g, edge_keys=["w"])


@needs_dgl
def test_info_lists_edge_arrays(tmp_path, capsys):
    from bgl.cli import main

    g = dgl.graph((torch.tensor([0, 1]), torch.tensor([1, 0])))
    g.edata["w"] = torch.tensor([1.0, 2.0])
    g.edata["f"] = torch.zeros(2, 3)
    bgl.ingest(g, tmp_path / "s")
    assert main(["info", str(tmp_path / "s")]) == 0
    assert "edge data    w (float32), f (float32 x 3)" in capsys.readouterr().out
