"""bgl.dgl.graph_utils' subgraph, readout, merge, product and edge-op utilities against DGL 2.1 on the same
small graphs (pinned lane): k-hop subgraphs and seed maps, top-k per graph of a batch, merges, weighted adjacency
products and sums (values and gradients), the top-level edge ops; DGL's values as literals where the current lane
can check them without DGL."""
from __future__ import annotations

import importlib.util

import pytest
import torch

import bgl.dgl as bdgl
from bgl.dgl.base import DGLError

HAS_DGL = importlib.util.find_spec("dgl") is not None
SRC, DST = [0, 0, 1, 2, 3, 4, 4, 1, 0], [1, 2, 2, 3, 1, 0, 5, 3, 3]


def _libs():
    if not HAS_DGL:
        return [bdgl]
    import dgl

    return [bdgl, dgl]


def _state(g):
    return {"n": {nt: g.num_nodes(nt) for nt in g.ntypes},
            "e": {c: tuple(t.tolist() for t in g.edges(etype=c, order="eid")) for c in g.canonical_etypes},
            "ed": {c: {k: v.tolist() for k, v in g.edges[c].data.items()} for c in g.canonical_etypes},
            "nd": {nt: {k: v.tolist() for k, v in g.nodes[nt].data.items()} for nt in g.ntypes}}


def test_khop_subgraphs_seed_maps_and_errors():
    out = []
    for lib in _libs():
        g = lib.graph((torch.tensor(SRC), torch.tensor(DST)), num_nodes=7)
        g.ndata["x"] = torch.arange(7.0)
        g.edata["w"] = torch.arange(9.0)
        res = []
        for func, seeds, k in ((lib.khop_in_subgraph, 3, 1), (lib.khop_out_subgraph, [4, 0], 2),
                               (lib.khop_in_subgraph, torch.tensor([5, 1]), 2)):
            sg, inv = func(g, seeds, k)
            res.append((_state(sg), inv.tolist(), inv.dtype))
        res.append(_state(lib.khop_in_subgraph(g, 2, 1, relabel_nodes=False, store_ids=False)))
        res.append(_state(g.khop_out_subgraph(2, 1, relabel_nodes=False)))
        hg = lib.heterograph({("u", "f", "i"): ([0, 1], [1, 2]), ("i", "b", "u"): ([2, 1], [0, 1])})
        sg, inv = lib.khop_out_subgraph(hg, {"u": [0]}, 2)
        res.append((_state(sg), {k: v.tolist() for k, v in inv.items()}))
        for bad in (torch.tensor([0], dtype=torch.int32), 9):
            with pytest.raises(Exception) as err:
                lib.khop_in_subgraph(g, bad, 1)
            res.append(type(err.value).__name__)
        out.append(res)
    assert out[0][0][1] == [3] and out[0][1][1] == [4, 0] and out[0][-2:] == ["DGLError", "DGLError"]
    assert out[0][3]["n"] == {"_N": 7} and out[0][3]["ed"] == {("_N", "_E", "_N"): {"w": [0.0, 1.0, 2.0]}}
    if HAS_DGL:
        assert out[0] == out[1]


def _batch(lib):
    gs = [lib.graph(([0, 1], [1, 2])), lib.graph(([0], [1]))]
    bg = lib.batch(gs)
    bg.ndata["h"] = torch.tensor([[1.0, 5], [3, 2], [2, 9], [7, 1], [0, 4]])
    bg.edata["w"] = torch.tensor([[3.0, 0], [1, 1], [2, 5]])
    return bg


@pytest.mark.parametrize("descending,sortby", [(True, None), (False, 1)])
def test_topk_nodes_and_edges_per_graph(descending, sortby):
    out = []
    for lib in _libs():
        bg = _batch(lib)
        v, i = lib.topk_nodes(bg, "h", 3, descending=descending, sortby=sortby)
        ve, ie = lib.topk_edges(bg, "w", 2, descending=descending, sortby=sortby)
        out.append((v.tolist(), i.tolist(), i.dtype, ve.tolist(), ie.tolist()))
        bg.ndata["z"] = torch.zeros(5, 2, 2)
        with pytest.raises(DGLError if lib is bdgl else Exception):
            lib.topk_nodes(bg, "z", 2)
    if descending:
        assert out[0][0] == [[[3.0, 9.0], [2.0, 5.0], [1.0, 2.0]], [[7.0, 4.0], [0.0, 1.0], [0.0, 0.0]]]
    else:
        assert out[0][1] == [[1, 0, 2], [0, 1, 2]]
    if HAS_DGL:
        assert out[0] == out[1]


def test_merge_and_random_bipartite():
    out = []
    for lib in _libs():
        a = lib.graph(([0, 1], [1, 2]))
        a.ndata["x"], a.edata["w"] = torch.tensor([1.0, 2, 3]), torch.tensor([5.0, 6])
        b = lib.graph(([3, 0], [0, 0]), num_nodes=5)
        b.ndata["x"], b.ndata["y"], b.edata["w"] = torch.tensor([7.0, 8, 9, 10, 11]), torch.ones(5, 2), torch.ones(2)
        c = lib.graph(([0], [1]))
        c.ndata["y"] = torch.full((2, 2), 3.0)
        c.edata["w"] = torch.zeros(1)
        merged = _state(lib.merge([a, b, c]))
        with pytest.raises(Exception):
            lib.merge([])
        torch.manual_seed(0)
        r = lib.rand_bipartite("u", "e", "v", 3, 4, 12, idtype=torch.int32)
        pairs = sorted(zip(*(t.tolist() for t in r.edges())))
        out.append((merged, (r.canonical_etypes, r.num_nodes("u"), r.num_nodes("v"), r.idtype, pairs)))
        with pytest.raises(Exception):
            lib.rand_bipartite("u", "e", "v", 2, 2, 5)
    assert out[0][0]["nd"]["_N"]["y"][:3] == [[3.0, 3.0], [3.0, 3.0], [1.0, 1.0]]
    assert len(set(out[0][1][4])) == 12
    if HAS_DGL:
        assert out[0] == out[1]


def _sorted_entries(g, name):
    s, d = g.edges(order="eid")
    return sorted(zip(s.tolist(), d.tolist(), g.edata[name].detach().tolist()))


def test_adj_product_and_sum_graphs_values_and_gradients():
    out = []
    for lib in _libs():
        wa = torch.tensor([1.0, 2, 3, 4, 0.5], requires_grad=True)
        wb = torch.tensor([1.0, 1, 5, 0.5], requires_grad=True)
        a = lib.graph(([0, 0, 1, 2, 0], [1, 2, 2, 1, 1]))  # a parallel edge: weights add up
        a.edata["w"] = wa
        b = lib.graph(([1, 2, 2, 1], [0, 0, 1, 1]))
        b.edata["w"] = wb
        prod = lib.adj_product_graph(a, b, "w")
        total = lib.adj_sum_graph([a, b], "w")
        (prod.edata["w"] ** 2).sum().backward()
        (total.edata["w"] ** 3).sum().backward()
        ua = lib.heterograph({("u", "r", "i"): ([0, 1], [0, 1])})
        ua.edata["w"] = torch.tensor([2.0, 3])
        ib = lib.heterograph({("i", "s", "t"): ([0, 1, 1], [2, 0, 2])})
        ib.edata["w"] = torch.tensor([1.0, 4, 5])
        het = lib.adj_product_graph(ua, ib, "w", etype="via")
        out.append((_sorted_entries(prod, "w"), _sorted_entries(total, "w"), wa.grad.tolist(), wb.grad.tolist(),
                    het.canonical_etypes, {nt: het.num_nodes(nt) for nt in het.ntypes}, _sorted_entries(het, "w")))
        with pytest.raises(ValueError):
            lib.adj_sum_graph([], "w")
    assert out[0][0][0] == (0, 0, 3.5)
    if HAS_DGL:
        assert out[0] == out[1]


def test_top_level_edge_ops_and_ops_copy_e():
    x, y = torch.randn(7, 3), torch.randn(7, 3)
    out = []
    for lib in _libs():
        g = lib.graph((torch.tensor(SRC), torch.tensor(DST)), num_nodes=7)
        res = [lib.copy_u(g, x), lib.copy_v(g, y), lib.ops.copy_e(g, y)]
        res += [getattr(lib, f"u_{op}_v")(g, x, y) for op in ("add", "sub", "mul", "div", "dot")]
        hg = lib.heterograph({("a", "r", "b"): ([0, 1], [2, 0]), ("b", "s", "a"): ([1], [1])})
        res.append(lib.u_mul_v(hg, x[:2], y[:3], etype="r"))
        out.append(res)
    assert torch.equal(out[0][0], x[SRC]) and out[0][2] is y
    if HAS_DGL:  # division: DGL's kernel may round differently in the last bit
        assert all(torch.allclose(m, t, rtol=1e-6, atol=0) and m.shape == t.shape for m, t in zip(*out))
