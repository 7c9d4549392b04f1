"""``dgl.reorder_graph`` (bgl/dgl/transform_classes/reorder.py) against real DGL 2.1 on the same graph: node and
edge order, features, stored ids, the errors; ``"metis"`` (an order DGL calls non-deterministic) by its definition."""
from __future__ import annotations

import importlib.util

import pytest
import torch

import bgl.dgl as bdgl

HAS_DGL = importlib.util.find_spec("dgl") is not None


def _graph(lib, hub_edges, idtype=torch.int64):
    src, dst = hub_edges(20, 60, 4)
    g = lib.graph((src, dst), num_nodes=20, idtype=idtype)
    g.ndata["x"] = torch.arange(40.0).view(20, 2)
    g.edata["w"] = torch.rand(60, generator=torch.Generator().manual_seed(0))
    return g


NODES = list(reversed(range(20)))
EDGES = [(i * 7) % 60 for i in range(60)]
CASES = {
    "rcmk src": dict(node_permute_algo="rcmk"),
    "rcmk dst int32": dict(node_permute_algo="rcmk", edge_permute_algo="dst"),
    "keep nodes, dst, no ids": dict(edge_permute_algo="dst", store_ids=False),
    "custom both": dict(node_permute_algo="custom", edge_permute_algo="custom",
                        permute_config={"nodes_perm": NODES, "edges_perm": EDGES}),
    "custom nodes tensor": dict(node_permute_algo="custom", permute_config={"nodes_perm": torch.tensor(NODES)}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_reorder_graph_matches_dgl(name, hub_edges, graph_state):
    idtype = torch.int32 if "int32" in name else torch.int64
    g = _graph(bdgl, hub_edges, idtype)
    ours = bdgl.reorder_graph(g, **CASES[name])
    assert ours.idtype == idtype and sorted(g.edata) == ["w"]  # the input untouched
    old = ours.edata["_ID" if CASES[name].get("store_ids", True) else "__orig__"].long()
    assert torch.equal(ours.edata["w"], g.edata["w"][old])  # each edge's field travels with it
    if HAS_DGL:
        import dgl

        theirs = dgl.reorder_graph(_graph(dgl, hub_edges, idtype), **CASES[name])
        assert graph_state(ours) == graph_state(theirs) and ours.idtype == theirs.idtype


def test_reorder_graph_method_metis_and_errors(hub_edges):
    g = _graph(bdgl, hub_edges)
    out = g.reorder_graph(node_permute_algo="metis", edge_permute_algo="dst", permute_config={"k": 3})
    old_node, old_edge = out.ndata["_ID"].long(), out.edata["_ID"].long()
    assert torch.equal(torch.sort(old_node).values, torch.arange(20)) and torch.equal(out.ndata["x"], g.ndata["x"][old_node])
    s, d = out.edges()
    src, dst = g.edges()
    assert torch.equal(old_node[s.long()], src[old_edge]) and torch.equal(old_node[d.long()], dst[old_edge])
    assert bool((d[1:] >= d[:-1]).all())
    errors = {"Only homogeneous": (bdgl.heterograph({("a", "r", "b"): ([0], [0]), ("b", "s", "a"): ([0], [0])}), {}),
              "Unexpected node_permute_algo": (g, dict(node_permute_algo="bfs")),
              "Unexpected edge_permute_algo": (g, dict(edge_permute_algo="eid")),
              "'k' is required": (g, dict(node_permute_algo="metis")),
              "no 'nodes_perm'": (g, dict(node_permute_algo="custom", permute_config={})),
              r"Length of 'nodes_perm' \(3\)": (g, dict(node_permute_algo="custom", permute_config={"nodes_perm": [0, 1, 2]})),
              "no 'edges_perm'": (g, dict(edge_permute_algo="custom"))}
    for message, (graph, kwargs) in errors.items():
        with pytest.raises(bdgl.DGLError, match=message):
            bdgl.reorder_graph(graph, **kwargs)
        if HAS_DGL:
            import dgl

            dgl_graph = _graph(dgl, hub_edges) if graph is g else dgl.heterograph(
                {("a", "r", "b"): ([0], [0]), ("b", "s", "a"): ([0], [0])})
            with pytest.raises(dgl.DGLError, match=message):
                dgl.reorder_graph(dgl_graph, **kwargs)
