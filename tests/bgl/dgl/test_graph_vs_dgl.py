"""The graph object and the transforms of ``bgl.dgl`` against real DGL 2.1 on the same inputs:
structure queries, edge orders, typed graphs and blocks, transforms, and the errors DGL raises."""
from __future__ import annotations

import pytest
import torch

dgl = pytest.importorskip("dgl", reason="needs DGL (pinned lane) to compare against")

import bgl.dgl as bdgl  # noqa: E402

N, E = 30, 90


def _pair(lib, hub_edges, **kw):
    src, dst = hub_edges(N, E)
    return lib.graph((src, dst), num_nodes=N, **kw)


def _same(a, b):
    if isinstance(a, tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype, (a.dtype, b.dtype)
        assert torch.equal(a, b), (a, b)
    else:
        assert a == b, (a, b)


@pytest.mark.parametrize("idtype", [torch.int32, torch.int64])
def test_structure_queries_match_dgl(hub_edges, idtype):
    g, d = _pair(bdgl, hub_edges, idtype=idtype), _pair(dgl, hub_edges, idtype=idtype)
    ids = torch.tensor([0, 1, 2, 5, 29], dtype=idtype)
    for call in (lambda x: x.num_nodes(), lambda x: x.num_edges(), lambda x: x.idtype,
                 lambda x: x.ntypes, lambda x: x.etypes, lambda x: x.canonical_etypes,
                 lambda x: x.in_degrees(), lambda x: x.out_degrees(), lambda x: x.in_degrees(ids),
                 lambda x: x.in_degrees(0), lambda x: x.out_degrees(1),
                 lambda x: x.edges(), lambda x: x.edges(form="all"), lambda x: x.edges(form="eid"),
                 lambda x: x.edges(order="srcdst"), lambda x: x.find_edges(torch.tensor([0, 7, 89], dtype=idtype)),
                 lambda x: x.in_edges(ids, form="all"), lambda x: x.out_edges(ids),
                 lambda x: x.has_edges_between(torch.tensor([0, 1, 3], dtype=idtype), torch.tensor([0, 2, 3], dtype=idtype)),
                 lambda x: x.predecessors(0), lambda x: x.successors(1), lambda x: x.nodes()):
        _same(call(g), call(d))
    src, dst = d.edges()
    _same(g.edge_ids(src[:10], dst[:10]), d.edge_ids(src[:10], dst[:10]))
    # "srcdst" orders parallel edges arbitrarily in DGL; bgl keeps them in edge-id order
    s, t, eid = g.edges(form="all", order="srcdst")
    _same(g.find_edges(eid), (s, t))
    assert sorted(eid.tolist()) == list(range(E))


def _typed(lib, hub_edges):
    s1, d1 = hub_edges(20, 60, seed=2)
    s2, d2 = hub_edges(10, 30, seed=3)
    return lib.heterograph({("user", "follows", "user"): (s1, d1), ("item", "bought-by", "user"): (s2, d2),
                            ("user", "buys", "item"): (d2, s2)}, num_nodes_dict={"user": 25, "item": 10})


def test_typed_graph_matches_dgl(hub_edges):
    g, d = _typed(bdgl, hub_edges), _typed(dgl, hub_edges)
    for call in (lambda x: x.ntypes, lambda x: x.etypes, lambda x: x.canonical_etypes, lambda x: x.num_nodes(),
                 lambda x: x.num_nodes("item"), lambda x: x.num_edges(), lambda x: x.num_edges("buys"),
                 lambda x: x.in_degrees(etype="follows"), lambda x: x.out_degrees(etype=("user", "buys", "item")),
                 lambda x: x.edges(etype="bought-by"), lambda x: x["buys"].srctypes, lambda x: x["buys"].dsttypes,
                 lambda x: x["buys"].num_src_nodes(), lambda x: x["buys"].num_dst_nodes(), lambda x: x.is_homogeneous):
        _same(call(g), call(d))
    feats = torch.randn(25, 2)
    g.nodes["user"].data["x"], d.nodes["user"].data["x"] = feats, feats
    _same(g["follows"].ndata["x"], d["follows"].ndata["x"])
    _same(g["buys"].srcdata["x"], d["buys"].srcdata["x"])


def test_blocks_match_dgl(hub_edges):
    src, dst = hub_edges(N, E, num_dst=8)
    b, d = (lib.create_block((src, dst), num_src_nodes=N, num_dst_nodes=8) for lib in (bdgl, dgl))
    for call in (lambda x: x.is_block, lambda x: x.num_src_nodes(), lambda x: x.num_dst_nodes(),
                 lambda x: x.num_nodes(), lambda x: x.srctypes, lambda x: x.dsttypes, lambda x: x.ntypes,
                 lambda x: x.in_degrees(), lambda x: x.out_degrees(), lambda x: x.edges(order="srcdst"),
                 lambda x: x.srcnodes(), lambda x: x.dstnodes()):
        _same(call(b), call(d))
    data = {("a", "r", "b"): (torch.tensor([0, 1]), torch.tensor([0, 0])),
            ("b", "s", "a"): (torch.tensor([0]), torch.tensor([1]))}
    b, d = bdgl.create_block(data), dgl.create_block(data)
    for call in (lambda x: x.srctypes, lambda x: x.dsttypes, lambda x: x.ntypes, lambda x: x.num_src_nodes("a"),
                 lambda x: x.num_dst_nodes("a"), lambda x: x["r"].num_dst_nodes(), lambda x: x.canonical_etypes):
        _same(call(b), call(d))


TRANSFORMS = {
    "add_self_loop": lambda lib, g: lib.add_self_loop(g),
    "remove_self_loop": lambda lib, g: lib.remove_self_loop(g),
    "to_bidirected": lambda lib, g: lib.to_bidirected(g),
    "add_reverse_edges": lambda lib, g: lib.add_reverse_edges(g, copy_edata=True),
    "to_simple": lambda lib, g: lib.to_simple(g),
    "to_simple_copy": lambda lib, g: lib.to_simple(g, copy_edata=True, return_counts="n"),
    "reverse": lambda lib, g: lib.reverse(g, copy_edata=True),
    "node_subgraph": lambda lib, g: lib.node_subgraph(g, torch.tensor([5, 0, 1, 2, 9, 11])),
    "node_subgraph_mask": lambda lib, g: lib.node_subgraph(g, torch.arange(N) % 3 == 0),
    "edge_subgraph": lambda lib, g: lib.edge_subgraph(g, torch.tensor([4, 0, 17, 33])),
    "method_subgraph": lambda lib, g: g.subgraph(torch.tensor([0, 1, 2, 3])),
}


@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_transforms_match_dgl(hub_edges, name):
    outs = []
    for lib in (bdgl, dgl):
        g = _pair(lib, hub_edges)
        g.ndata["x"] = torch.arange(N, dtype=torch.float32)
        g.edata["w"] = torch.arange(E, dtype=torch.float32) * 2
        outs.append(TRANSFORMS[name](lib, g))
    got, want = outs
    _same(got.num_nodes(), want.num_nodes())
    _same(got.edges(form="all"), want.edges(form="all"))
    assert set(got.ndata) == set(want.ndata) and set(got.edata) == set(want.edata)
    for k in want.ndata:
        _same(got.ndata[k], want.ndata[k])
    for k in want.edata:
        _same(got.edata[k], want.edata[k])


def test_to_simple_writeback_and_homogeneous_match_dgl(hub_edges):
    _same(bdgl.to_simple(_pair(bdgl, hub_edges), writeback_mapping=True)[1],
          dgl.to_simple(_pair(dgl, hub_edges), writeback_mapping=True)[1])
    g, d = _typed(bdgl, hub_edges), _typed(dgl, hub_edges)
    for x in (g, d):
        x.nodes["user"].data["h"] = torch.arange(25.0)
        x.nodes["item"].data["h"] = -torch.arange(10.0)
    hg, hd = bdgl.to_homogeneous(g, ndata=["h"]), dgl.to_homogeneous(d, ndata=["h"])
    _same(hg.edges(), hd.edges())
    for k in hd.ndata:
        _same(hg.ndata[k], hd.ndata[k])
    for k in hd.edata:
        _same(hg.edata[k], hd.edata[k])
    back_g = bdgl.to_heterogeneous(hg, g.ntypes, g.etypes)
    back_d = dgl.to_heterogeneous(hd, d.ntypes, d.etypes)
    for cet in d.canonical_etypes:
        _same(back_g.edges(etype=cet), back_d.edges(etype=cet))


BAD = {
    "feature rows": lambda lib: lib.graph(([0, 1], [1, 2])).ndata.__setitem__("x", torch.ones(4)),
    "edge feature rows": lambda lib: lib.graph(([0, 1], [1, 2])).edata.__setitem__("x", torch.ones(3)),
    "num_nodes too small": lambda lib: lib.graph(([0, 5], [1, 2]), num_nodes=3),
    "src/dst lengths": lambda lib: lib.graph(([0, 1], [1])),
    "unknown etype": lambda lib: lib.graph(([0], [1])).edges["nope"],
    "unknown ntype": lambda lib: lib.graph(([0], [1])).nodes["nope"],
    "ambiguous etype": lambda lib: lib.heterograph({("a", "r", "b"): ([0], [0]), ("b", "r", "a"): ([0], [0])})
    .num_edges("r"),
    "find_edges range": lambda lib: lib.graph(([0], [1])).find_edges(torch.tensor([3])),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_raises_where_dgl_does(case):
    with pytest.raises(dgl.DGLError):
        BAD[case](dgl)
    with pytest.raises(bdgl.DGLError) as info:
        BAD[case](bdgl)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("fmt", ["coo", "csr", "csc"])
def test_adj_tensors_match_dgl(hub_edges, fmt):
    _same(_pair(bdgl, hub_edges).adj_tensors(fmt), _pair(dgl, hub_edges).adj_tensors(fmt))


def test_bgl_ingest_stores_a_bgl_dgl_graph_as_it_stores_dgls(hub_edges, tmp_path):
    import numpy as np

    import bgl

    stores = []
    for lib in (bdgl, dgl):
        g = _pair(lib, hub_edges)
        g.ndata["feat"] = torch.arange(N * 2, dtype=torch.float32).view(N, 2)
        g.ndata["label"] = torch.arange(N) % 3
        stores.append(bgl.ingest(g, tmp_path / lib.__name__))
    ours, theirs = stores
    assert (ours.num_nodes, ours.num_edges) == (theirs.num_nodes, theirs.num_edges)
    for name in ("indptr", "indices"):
        assert np.array_equal(np.asarray(getattr(ours, name)), np.asarray(getattr(theirs, name))), name
