"""``g.filter_nodes`` / ``g.filter_edges``, ``edge_type_subgraph`` / ``node_type_subgraph``, ``g.local_var()`` and
``g.is_multigraph`` of ``bgl.dgl`` against real DGL 2.1 on the same graphs (ids, types, shared frames)."""
from __future__ import annotations

import pytest
import torch

dgl = pytest.importorskip("dgl", reason="needs DGL (pinned lane) to compare against")

import bgl.dgl as bdgl  # noqa: E402


def _graph(lib, parallel: bool = True):
    gen = torch.Generator().manual_seed(0)
    src, dst = torch.randint(0, 15, (40,), generator=gen), torch.randint(0, 15, (40,), generator=gen)
    if not parallel:
        keys = torch.unique(src * 15 + dst)
        src, dst = keys // 15, keys % 15
    g = lib.graph((src, dst), num_nodes=15)
    g.ndata["x"] = torch.randn(15, generator=gen)
    g.edata["w"] = torch.randn(src.shape[0], generator=gen)
    return g


def _typed(lib):
    gen = torch.Generator().manual_seed(1)
    a, b, c = (torch.randint(0, 6, (20,), generator=gen) for _ in range(3))
    g = lib.heterograph({("user", "rates", "item"): (a, b), ("item", "rated-by", "user"): (b, a),
                         ("user", "follows", "user"): (a, c), ("tag", "on", "item"): (c % 3, b)},
                        num_nodes_dict={"user": 6, "item": 6, "tag": 3})
    g.nodes["user"].data["x"] = torch.randn(6, generator=gen)
    g.edges["rates"].data["w"] = torch.randn(20, generator=gen)
    return g


def test_filters_match_dgl():
    ours, theirs = _graph(bdgl), _graph(dgl)
    for g_nodes in ((lambda g: g.filter_nodes(lambda n: n.data["x"] > 0)),
                    (lambda g: g.filter_nodes(lambda n: n.data["x"] > 0, torch.tensor([0, 3, 5, 9])))):
        assert torch.equal(g_nodes(ours), g_nodes(theirs))
    for g_edges in ((lambda g: g.filter_edges(lambda e: e.data["w"] > e.src["x"])),
                    (lambda g: g.filter_edges(lambda e: e.dst["x"] < 0, torch.tensor([1, 2, 30])))):
        assert torch.equal(g_edges(ours), g_edges(theirs))


@pytest.mark.parametrize("pick", [
    lambda lib, g: lib.edge_type_subgraph(g, ["rates", "rated-by"]),
    lambda lib, g: g.edge_type_subgraph([("user", "follows", "user")]),
    lambda lib, g: lib.node_type_subgraph(g, ["user", "item"]),
    lambda lib, g: g.node_type_subgraph(["tag", "item"]),
])
def test_type_subgraphs_match_dgl_and_share_frames(pick):
    ours, theirs = _typed(bdgl), _typed(dgl)
    a, b = pick(bdgl, ours), pick(dgl, theirs)
    # the same relations; DGL lists them in the order asked for, bgl.dgl's graphs keep theirs sorted
    assert a.ntypes == b.ntypes and sorted(a.canonical_etypes) == sorted(b.canonical_etypes)
    for nt in a.ntypes:
        assert a.num_nodes(nt) == b.num_nodes(nt)
        assert sorted(a.nodes[nt].data.keys()) == sorted(b.nodes[nt].data.keys())
    for c in a.canonical_etypes:
        assert all(torch.equal(x, y) for x, y in zip(a.edges(etype=c), b.edges(etype=c)))
        assert sorted(a.edges[c].data.keys()) == sorted(b.edges[c].data.keys())
    nt = a.ntypes[0]
    for sub, parent in ((a, ours), (b, theirs)):
        sub.nodes[nt].data["new"] = torch.zeros(sub.num_nodes(nt))
        assert "new" in parent.nodes[nt].data  # DGL's type subgraphs share the parent's frames


def test_local_var_and_is_multigraph_match_dgl():
    for lib in (bdgl, dgl):
        g = _graph(lib)
        local = g.local_var()
        local.ndata["h"] = torch.ones(15)
        local.ndata["x"] = torch.zeros(15)
        assert "h" not in g.ndata and float(g.ndata["x"].abs().sum()) > 0
        local.edata["w"].mul_(0)  # an in-place edit of a shared tensor shows in both
        assert float(g.edata["w"].abs().sum()) == 0
    assert _graph(bdgl).is_multigraph == _graph(dgl).is_multigraph
    assert _graph(bdgl, parallel=False).is_multigraph == _graph(dgl, parallel=False).is_multigraph is False


def _edges_state(g):
    out = {"nodes": {nt: g.num_nodes(nt) for nt in g.ntypes}}
    for c in g.canonical_etypes:
        out[c] = [t.tolist() for t in g.edges(etype=c)]
        out[(c, "data")] = {k: v.tolist() for k, v in sorted(g.edges[c].data.items())}
    for nt in g.ntypes:
        out[(nt, "data")] = {k: v.tolist() for k, v in sorted(g.nodes[nt].data.items())}
    return out


@pytest.mark.parametrize("pick", [
    lambda lib, g: lib.in_subgraph(g, torch.tensor([2, 0, 7])),
    lambda lib, g: lib.in_subgraph(g, torch.tensor([2, 0, 7]), relabel_nodes=True),
    lambda lib, g: g.out_subgraph(torch.tensor([3, 1]), relabel_nodes=True, store_ids=False),
    lambda lib, g: lib.out_subgraph(g, torch.tensor([4])),
    lambda lib, g: lib.sampling.select_topk(g, 2, "w"),
    lambda lib, g: lib.sampling.select_topk(g, 3, "w", nodes=torch.tensor([5, 1]), ascending=True),
    lambda lib, g: lib.sampling.select_topk(g, 1, "w", edge_dir="out"),
])
def test_edges_of_nodes_match_dgl(pick):
    """in_subgraph / out_subgraph / select_topk: the same edges in the same order, ids and fields as DGL's."""
    ours, theirs = _graph(bdgl), _graph(dgl)
    assert _edges_state(pick(bdgl, ours)) == _edges_state(pick(dgl, theirs))


@pytest.mark.parametrize("pick", [
    lambda lib, g: lib.in_subgraph(g, {"item": torch.tensor([1, 4]), "user": torch.tensor([0])}),
    lambda lib, g: lib.out_subgraph(g, {"user": torch.tensor([2, 5])}, relabel_nodes=True),
    lambda lib, g: lib.sampling.select_topk(g, {("user", "rates", "item"): 1, ("item", "rated-by", "user"): 2,
                                                 ("user", "follows", "user"): 1, ("tag", "on", "item"): 1}, "w",
                                            nodes={"item": torch.tensor([0, 2, 3])}),
])
def test_typed_edges_of_nodes_match_dgl(pick):
    ours, theirs = _typed(bdgl), _typed(dgl)
    for g in (ours, theirs):  # a distinct weight on every relation's edges
        for i, c in enumerate(g.canonical_etypes):
            g.edges[c].data["w"] = torch.randperm(20, generator=torch.Generator().manual_seed(i)).float()
    assert _edges_state(pick(bdgl, ours)) == _edges_state(pick(dgl, theirs))


def test_feature_casts_and_astype_match_dgl():
    ours, theirs = _graph(bdgl), _graph(dgl)
    for g in (ours, theirs):
        g.ndata["label"] = torch.arange(15)
    for cast in ("to_half", "to_double", "to_float"):
        a, b = getattr(bdgl, cast)(ours), getattr(dgl, cast)(theirs)
        for key in ("x", "label"):
            assert a.ndata[key].dtype == b.ndata[key].dtype and torch.equal(a.ndata[key], b.ndata[key])
        assert a.edata["w"].dtype == b.edata["w"].dtype and torch.equal(a.edata["w"], b.edata["w"])
    assert ours.ndata["x"].dtype == torch.float32  # the graph itself keeps its features
    a, b = ours.astype(torch.int32), theirs.astype(torch.int32)
    assert a.idtype == b.idtype == torch.int32 and all(torch.equal(x, y) for x, y in zip(a.edges(), b.edges()))


def test_rand_graph_is_a_simple_graph_of_the_size_asked():
    torch.manual_seed(3)
    g = bdgl.rand_graph(50, 400)
    torch.manual_seed(3)
    again = bdgl.rand_graph(50, 400)
    assert (g.num_nodes(), g.num_edges()) == (dgl.rand_graph(50, 400).num_nodes(), dgl.rand_graph(50, 400).num_edges())
    s, d = g.edges()
    assert torch.unique(s * 50 + d).shape[0] == 400 and all(torch.equal(x, y) for x, y in zip(g.edges(), again.edges()))
    assert bdgl.rand_graph(4, 16).num_edges() == 16  # every pair
    with pytest.raises(bdgl.DGLError, match="num_edges"):
        bdgl.rand_graph(3, 10)


@pytest.mark.parametrize("kwargs", [{}, {"transpose": True}, {"scipy_fmt": "csr"}, {"scipy_fmt": "coo", "transpose": True}])
def test_adj_external_matches_dgl(kwargs):
    for make, extra in ((_graph, {}), (_typed, {"etype": "rates"})):
        a, b = make(bdgl).adj_external(**kwargs, **extra), make(dgl).adj_external(**kwargs, **extra)
        if "scipy_fmt" in kwargs:
            assert type(a) is type(b) and (a != b).nnz == 0 and a.dtype == b.dtype
        else:
            assert torch.equal(a._indices(), b._indices()) and torch.equal(a._values(), b._values())
            assert a.shape == b.shape
