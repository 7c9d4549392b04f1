"""The streamed engine input: ParHIP file equals a brute-force symmetrization; weights; errors."""
from __future__ import annotations

import numpy as np
import pytest

from bgl.partition import bgl_part, parhip, partition_graph
from bgl.partition.graph_input import GraphInput
from bgl.store import write_store

from .conftest import csc_from_edges


def brute_force(indptr, indices, n, crossings=None):
    """{(a, b): weight} of the undirected graph, both directions, no self-loops: every stored
    edge u -> v (repeats included: the sampler draws each stored copy) adds crossings[v]."""
    dst = np.repeat(np.arange(n), np.diff(indptr))
    edges = {}
    for u, v in zip(indices.tolist(), dst.tolist()):
        if u == v:
            continue
        w = 0.0 if crossings is None else crossings[v]
        for key in ((v, u), (u, v)):
            edges[key] = edges.get(key, 0.0) + w
    return edges


def file_edges(path):
    r = parhip.read_parhip(path)
    xadj, adj = r["xadj"], r["adjncy"]
    n = xadj.size - 1
    src = np.repeat(np.arange(n), np.diff(xadj))
    w = r["adjwgt"] if r["adjwgt"] is not None else np.ones(adj.size, np.int32)
    return {(int(a), int(b)): int(c) for a, b, c in zip(src, adj, w)}, r


def directed_store(tmp_path, seed=0, n=120, m=700, name="d"):
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    src[:20] = dst[:20]  # self-loops to drop
    ip, ix = np.zeros(n + 1, np.int64), None
    order = np.argsort(dst, kind="stable")  # keep repeated edges: the writer must dedupe
    ix = src[order]
    np.cumsum(np.bincount(dst, minlength=n), out=ip[1:])
    train = np.sort(rng.choice(n, n // 2, replace=False))
    return write_store(tmp_path / name, ip, ix, splits={"train": train}, name=name)


@pytest.mark.parametrize("chunk", [7, 1 << 24])
def test_directed_store_symmetrized_like_brute_force(tmp_path, monkeypatch, chunk):
    monkeypatch.setattr(parhip, "CHUNK_EDGES", chunk)  # many chunks: dedupe across chunk borders
    store = directed_store(tmp_path)
    g = GraphInput.from_store(store)
    assert not g.symmetric
    rng = np.random.default_rng(1)
    cross = rng.random(g.num_nodes) * 3
    nw = rng.integers(1, 9, g.num_nodes).astype(np.int32)
    f = parhip.write_parhip(g, tmp_path / "g.parhip", symmetric=False, node_weights=nw, crossings=cross,
                            weight_scale=0.5, weight_levels=5)
    got, r = file_edges(f.path)
    want = brute_force(np.asarray(store.indptr), np.asarray(store.indices), g.num_nodes, cross)
    assert set(got) == set(want)
    assert f.num_edges == len(want) and f.nbytes == parhip.parhip_bytes(g.num_nodes, len(want), True, True)
    for k, w in want.items():
        assert got[k] == 1 + min(4, int(w / 0.5)), k
        assert got[k] == got[(k[1], k[0])], "weights must be symmetric"
    assert np.array_equal(r["vwgt"], nw)
    assert np.all(np.diff(r["xadj"]) >= 0)


def test_symmetric_store_skips_transpose_and_matches(planted, tmp_path):
    g = GraphInput.from_store(planted)
    sym = GraphInput(g.num_nodes, g.num_edges, g.indptr, g.indices, g.is_train, g.indices_file,
                     g.indices_offset, True)
    cross = bgl_part.sampler_crossings(g, (15, 10, 5))
    a = parhip.write_parhip(sym, tmp_path / "a", symmetric=True, crossings=cross, weight_scale=1.0)
    b = parhip.write_parhip(g, tmp_path / "b", symmetric=False, crossings=cross, weight_scale=1.0)
    ea, _ = file_edges(a.path)
    eb, _ = file_edges(b.path)
    assert ea == eb and a.nbytes == b.nbytes


def test_kaminpar_reads_the_file(planted, tmp_path):
    kaminpar = pytest.importorskip("kaminpar")
    g = GraphInput.from_store(planted)
    f = parhip.write_parhip(g, tmp_path / "g", symmetric=False, node_weights=np.full(g.num_nodes, 2, np.int32),
                            crossings=np.ones(g.num_nodes))
    kg = kaminpar.load_graph(str(f.path), kaminpar.GraphFileFormat.PARHIP, compress=True)
    assert (kg.n(), kg.m()) == (g.num_nodes, f.num_edges)
    assert kg.is_node_weighted() and kg.is_edge_weighted()


def test_bad_node_weights_refused(planted, tmp_path):
    g = GraphInput.from_store(planted)
    with pytest.raises(ValueError, match="node_weights"):
        parhip.write_parhip(g, tmp_path / "g", symmetric=False, node_weights=np.zeros(g.num_nodes, np.int32))


def test_sampler_crossings_match_a_direct_count():
    """One hop, fanout 2: a training node of in-degree 4 draws each in-edge with p = 1/2."""
    n = 6
    ip, ix = csc_from_edges(n, np.array([1, 2, 3, 4, 5]), np.array([0, 0, 0, 0, 1]))
    is_train = np.zeros(n)
    is_train[[0, 1]] = 1.0
    g = GraphInput(n, ix.size, ip, ix, is_train)
    c = bgl_part.sampler_crossings(g, (2,))
    assert np.allclose(c, [0.5, 1.0, 0, 0, 0, 0])
    # two hops: node 1 is visited again via 0's draw (p = 1/2) and stays in its own frontier
    c2 = bgl_part.sampler_crossings(g, (2, 2))
    assert np.isclose(c2[1], 1.0 + 1.0 + 0.5)


def test_interrupted_engine_leaves_nothing(planted, tmp_path, monkeypatch):
    kaminpar = pytest.importorskip("kaminpar")

    def crash(*a, **k):
        raise KeyboardInterrupt("simulated crash while the engine loads")

    monkeypatch.setattr(kaminpar, "load_graph", crash)
    with pytest.raises(KeyboardInterrupt):
        partition_graph(planted, "bgl", 2, tmp_path / "p", measure_samples=False)
    assert list(tmp_path.iterdir()) == []
