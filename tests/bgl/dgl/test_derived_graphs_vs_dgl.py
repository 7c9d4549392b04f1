"""Graphs derived from adjacency (bgl/dgl/derived_graphs.py) against DGL 2.1 on the same random graphs (hubs,
parallel edges, self-loops, isolated nodes): line graphs edge for edge, k-hop matrices and graphs,
metapath-reachable graphs, Laplacian eigenvalues, blocks as graphs, bfloat16 features; plus the
definitions themselves (current lane)."""
from __future__ import annotations

import importlib.util

import pytest
import torch

import bgl.dgl as bdgl
from bgl.dgl.base import DGLError

HAS_DGL = importlib.util.find_spec("dgl") is not None
needs_dgl = pytest.mark.skipif(not HAS_DGL, reason="needs DGL (pinned lane) to compare against")


def _pair(hub_edges, seed=0, n=30, e=90):
    src, dst = hub_edges(n, e, seed)
    return src, dst, n


def _edges(g, **kw):
    return tuple(t.tolist() for t in g.edges(order="eid", **kw))


@pytest.mark.parametrize("backtracking", [True, False])
def test_line_graph_has_an_edge_per_pair_of_consecutive_edges(hub_edges, backtracking):
    src, dst, n = _pair(hub_edges)
    g = bdgl.graph((src, dst), num_nodes=n)
    g.edata["w"] = torch.randn(src.shape[0])
    lg = bdgl.line_graph(g, backtracking=backtracking, shared=True)
    s, d = lg.edges(order="eid")
    assert lg.num_nodes() == g.num_edges() and torch.equal(lg.ndata["w"], g.edata["w"])
    expected = sorted((a, b) for a in range(src.shape[0]) for b in range(src.shape[0])
                      if dst[a] == src[b] and a != b and (backtracking or dst[b] != src[a]))
    assert sorted(zip(s.tolist(), d.tolist())) == expected
    if HAS_DGL:
        import dgl

        theirs = dgl.line_graph(dgl.graph((src, dst), num_nodes=n), backtracking=backtracking)
        assert _edges(lg) == _edges(theirs) and lg.idtype == theirs.idtype
        assert _edges(g.line_graph(backtracking=backtracking)) == _edges(theirs)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_khop_matrices_and_graphs_count_walks(hub_edges, k):
    src, dst, n = _pair(hub_edges, seed=1, n=12, e=30)
    g = bdgl.graph((src, dst), num_nodes=n)
    g.ndata["x"] = torch.randn(n, 2)
    adj = torch.zeros(n, n)
    adj.index_put_((src, dst), torch.ones(src.shape[0]), accumulate=True)
    expected = torch.linalg.matrix_power(adj, k)
    assert torch.equal(bdgl.khop_adj(g, k), expected)
    kg = bdgl.khop_graph(g, k)
    assert torch.equal(kg.ndata["x"], g.ndata["x"]) and kg.num_edges() == int(expected.sum())
    if HAS_DGL:
        import dgl

        dg = dgl.graph((src, dst), num_nodes=n)
        assert torch.equal(bdgl.khop_adj(g, k), dgl.khop_adj(dg, k))
        theirs = dgl.khop_graph(dg, k)
        ours = _edges(kg)
        assert kg.idtype == theirs.idtype
        if k == 1:
            assert ours == _edges(theirs)  # the adjacency as stored, edge for edge
        else:  # a product: DGL's order is SciPy's (documented); the same multiset of edges
            assert sorted(zip(*ours)) == sorted(zip(*_edges(theirs)))


def _typed(lib, seed):
    gen = torch.Generator().manual_seed(seed)
    pa = (torch.randint(0, 9, (25,), generator=gen), torch.randint(0, 6, (25,), generator=gen))
    ps = (torch.randint(0, 6, (14,), generator=gen), torch.randint(0, 4, (14,), generator=gen))
    g = lib.heterograph({("author", "writes", "paper"): pa, ("paper", "written-by", "author"): (pa[1], pa[0]),
                         ("paper", "in", "subject"): ps}, {"author": 9, "paper": 6, "subject": 4})
    g.nodes["author"].data["h"] = torch.randn(9, 3, generator=gen)
    g.nodes["subject"].data["s"] = torch.randn(4, generator=gen)
    return g


@pytest.mark.parametrize("metapath", [["writes", "written-by"], ["writes", "in"], ["writes"]])
def test_metapath_reachable_graph_joins_the_path(metapath):
    g = _typed(bdgl, 0)
    out = bdgl.metapath_reachable_graph(g, metapath)
    canonical = [g.to_canonical_etype(e) for e in metapath]
    reach = None
    for c in canonical:
        a = torch.zeros(g.num_nodes(c[0]), g.num_nodes(c[2]))
        a[g.edges(etype=c)] = 1
        reach = a if reach is None else reach @ a
    assert sorted(zip(*_edges(out))) == sorted(zip(*(t.tolist() for t in reach.nonzero(as_tuple=True))))
    if HAS_DGL:
        import dgl

        theirs = dgl.metapath_reachable_graph(_typed(dgl, 0), metapath)
        assert out.canonical_etypes == theirs.canonical_etypes and out.ntypes == theirs.ntypes
        assert _edges(out) == _edges(theirs) and out.idtype == theirs.idtype
        for nt in theirs.ntypes:
            assert sorted(out.nodes[nt].data) == sorted(theirs.nodes[nt].data)
            for k, v in theirs.nodes[nt].data.items():
                assert torch.equal(out.nodes[nt].data[k], v)


def test_a_metapath_that_does_not_chain_is_refused():
    with pytest.raises(DGLError, match="ending at 'paper' is followed by one starting at 'author'"):
        bdgl.metapath_reachable_graph(_typed(bdgl, 0), ["writes", "writes"])


def test_laplacian_lambda_max_per_graph_of_a_batch(hub_edges):
    parts = []
    for seed in (0, 1):
        src, dst, n = _pair(hub_edges, seed=seed, n=15, e=40)
        parts.append((src, dst, n))
    ours = bdgl.laplacian_lambda_max(bdgl.batch([bdgl.to_bidirected(bdgl.graph((s, d), num_nodes=n))
                                                  for s, d, n in parts]))
    for value, (s, d, n) in zip(ours, parts):  # the definition, densely
        g = bdgl.to_bidirected(bdgl.graph((s, d), num_nodes=n))
        a = torch.zeros(n, n, dtype=torch.float64)
        src, dst = g.edges()
        a.index_put_((dst, src), torch.ones(g.num_edges(), dtype=torch.float64), accumulate=True)
        norm = g.in_degrees().clamp(min=1).double() ** -0.5
        lap = torch.eye(n, dtype=torch.float64) - norm[:, None] * a * norm[None, :]
        assert value == pytest.approx(float(torch.linalg.eigvalsh(lap).max()), abs=1e-8)
    if HAS_DGL:
        import dgl

        theirs = dgl.laplacian_lambda_max(dgl.batch([dgl.to_bidirected(dgl.graph((s, d), num_nodes=n))
                                                     for s, d, n in parts]))
        assert ours == pytest.approx(theirs, abs=1e-8)


def test_block_to_graph_renames_the_sides_and_keeps_the_data():
    g = _typed(bdgl, 2)
    seeds = {"paper": torch.tensor([0, 2, 3]), "subject": torch.tensor([1])}
    block = bdgl.to_block(bdgl.in_subgraph(g, seeds), seeds)
    block.srcnodes["author"].data["h"] = torch.randn(block.num_src_nodes("author"), 3)
    out = bdgl.block_to_graph(block)
    assert sorted(out.ntypes) == sorted([t + "_src" for t in block.srctypes] + [t + "_dst" for t in block.dsttypes])
    for s, e, d in block.canonical_etypes:
        assert _edges(out, etype=(s + "_src", e, d + "_dst")) == _edges(block, etype=(s, e, d))
    assert torch.equal(out.nodes["author_src"].data["h"], block.srcnodes["author"].data["h"])
    with pytest.raises(DGLError, match="takes a block"):
        bdgl.block_to_graph(g)
    if HAS_DGL:
        import dgl

        dg = _typed(dgl, 2)
        dblock = dgl.to_block(dgl.in_subgraph(dg, seeds), seeds)
        theirs = dgl.block_to_graph(dblock)
        assert sorted(out.canonical_etypes) == sorted(theirs.canonical_etypes)
        for c in theirs.canonical_etypes:
            assert _edges(out, etype=c) == _edges(theirs, etype=c)


def test_bfloat16_features_and_the_zero_initializer():
    g = bdgl.graph(([0, 1], [1, 2]))
    g.ndata["x"], g.ndata["i"] = torch.randn(3, 2), torch.arange(3)
    h = bdgl.to_bfloat16(g)
    assert h.ndata["x"].dtype == torch.bfloat16 and h.ndata["i"] is g.ndata["i"] and g.ndata["x"].dtype == torch.float32
    g.set_n_initializer(bdgl.init.zero_initializer)
    g.add_nodes(2)
    assert g.ndata["x"][3:].abs().sum() == 0
    with pytest.raises(NotImplementedError, match="set_n_initializer"):
        g.set_n_initializer(lambda shape, dtype, ctx, rng: torch.ones(shape, dtype=dtype))
    assert bdgl.__version__ == "2.1.0"
    if HAS_DGL:
        import dgl

        assert torch.equal(bdgl.init.zero_initializer((2, 3), torch.float32, torch.device("cpu"), None),
                           dgl.init.zero_initializer((2, 3), torch.float32, torch.device("cpu"), None))


def test_laplacian_lambda_max_without_scipy_agrees(hub_edges, monkeypatch):
    src, dst, n = _pair(hub_edges, seed=3, n=15, e=40)
    g = bdgl.to_bidirected(bdgl.graph((src, dst), num_nodes=n))
    with_scipy = bdgl.laplacian_lambda_max(g)
    monkeypatch.setitem(__import__("sys").modules, "scipy.sparse.linalg", None)  # its import now fails
    assert bdgl.laplacian_lambda_max(g) == pytest.approx(with_scipy, abs=1e-8)
