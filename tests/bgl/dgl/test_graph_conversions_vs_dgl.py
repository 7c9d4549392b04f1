"""dgl.from_scipy, dgl.from_networkx, g.to_networkx and g.adj against real DGL (pinned lane): edge order, node
counts, idtype, fields and their dtypes, errors; DGL's results written out for the DGL-free lane."""
from __future__ import annotations

import importlib

import numpy as np
import pytest
import torch

sp = pytest.importorskip("scipy.sparse")


def _state(g) -> tuple:
    return (g.num_nodes(), [t.tolist() for t in g.edges()], g.idtype,
            {k: (v.tolist(), v.dtype) for k, v in sorted(g.edata.items())},
            {k: (v.tolist(), v.dtype) for k, v in sorted(g.ndata.items())})


def _scipy_cases(dgl) -> list:
    m = sp.csr_matrix((np.array([1.0, 0.0, 3.0, 4.0]), np.array([2, 0, 1, 1]), np.array([0, 2, 2, 4])), shape=(3, 3))
    c = sp.coo_matrix((np.array([5, 6, 7]), (np.array([2, 0, 2]), np.array([1, 1, 1]))), shape=(4, 4))
    return [_state(dgl.from_scipy(m, eweight_name="w")),
            _state(dgl.from_scipy(m.tocsc(), eweight_name="w", idtype=torch.int32)),
            _state(dgl.from_scipy(c, eweight_name="w")), _state(dgl.from_scipy(c.tolil()))]


def _networkx_cases(dgl) -> list:
    nx = pytest.importorskip("networkx")
    G = nx.DiGraph()
    G.add_nodes_from([(3, {"x": 1.0}), (1, {"x": 2.0}), (2, {"x": 3.0})])
    G.add_edge(3, 1, w=0.5, eid=1)
    G.add_edge(1, 2, w=1.5, eid=0)
    G.add_edge(2, 3, w=2.5, eid=2)
    U = nx.Graph()
    U.add_edges_from([(0, 2), (1, 2), (2, 3)])
    nx.set_node_attributes(U, {i: torch.tensor([i, i]) for i in range(4)}, "f")
    M = nx.MultiDiGraph()
    M.add_edges_from([(0, 1), (0, 1), (1, 0)])
    g = dgl.graph((torch.tensor([0, 1, 1]), torch.tensor([1, 2, 1])), num_nodes=4)
    g.ndata["h"] = torch.arange(4.0).view(4, 1)
    g.edata["e"] = torch.tensor([1, 2, 3])
    back = g.to_networkx(node_attrs=["h"], edge_attrs=["e"])
    return [_state(dgl.from_networkx(G, node_attrs=["x"], edge_attrs=["w"])),
            _state(dgl.from_networkx(G, edge_attrs=["w"], edge_id_attr_name="eid")),
            _state(dgl.from_networkx(U, node_attrs=["f"])), _state(dgl.from_networkx(M)),
            type(back).__name__, [(n, a["h"].tolist()) for n, a in back.nodes(data=True)],
            [(u, v, k, a["id"], a["e"].tolist()) for u, v, k, a in back.edges(data=True, keys=True)]]


def _errors(dgl) -> list:
    nx = pytest.importorskip("networkx")
    G = nx.DiGraph([(0, 1)])
    calls = [lambda: dgl.from_scipy(sp.coo_matrix((2, 3))), lambda: dgl.from_networkx(G, edge_id_attr_name="no"),
             lambda: dgl.from_networkx(nx.Graph([(0, 1)]), edge_attrs=["w"]),
             lambda: dgl.from_networkx(G, edge_attrs=["zz"])]
    out = []
    for call in calls:
        with pytest.raises(Exception) as info:
            call()
        out.append((type(info.value).__name__, str(info.value)[:60]))
    return out


def _adj_cases(dgl) -> list:
    g = dgl.graph((torch.tensor([0, 2, 1, 2]), torch.tensor([1, 0, 2, 0])), num_nodes=4)
    h = dgl.heterograph({("a", "r", "b"): (torch.tensor([0, 1]), torch.tensor([2, 0])),
                         ("b", "s", "a"): (torch.tensor([1]), torch.tensor([0]))})
    h.edges["r"].data["w"] = torch.tensor([5.0, 6.0])
    mats = [g.adj(), g.adjacency_matrix(), h.adj("r", eweight_name="w"), h.adj(("b", "s", "a"))]
    return [(m.indices().tolist(), m.val.tolist(), m.val.dtype, m.shape, type(m).__name__) for m in mats]


@pytest.mark.parametrize("cases", [_scipy_cases, _networkx_cases, _errors, _adj_cases])
def test_matches_dgl(cases):
    pytest.importorskip("dgl", reason="needs DGL (pinned lane) to compare against")
    assert cases(importlib.import_module("bgl.dgl")) == cases(importlib.import_module("dgl"))


def test_conversions_without_dgl():
    """DGL's results, written out (the current lane has no DGL)."""
    import bgl.dgl as dgl

    csr, csc, coo, lil = _scipy_cases(dgl)
    assert csr[1] == [[0, 0, 2, 2], [2, 0, 1, 1]] and csr[3]["w"] == ([1.0, 0.0, 3.0, 4.0], torch.float64)
    assert csc[1] == [[0, 2, 2, 0], [0, 1, 1, 2]] and csc[2] == torch.int32
    assert coo[0] == 4 and coo[3]["w"] == ([5, 6, 7], torch.int64) and lil[1] == [[0, 2], [1, 1]]
    ours = _networkx_cases(dgl)
    assert ours[0][1] == [[2, 0, 1], [0, 1, 2]] and ours[0][4]["x"] == ([2.0, 3.0, 1.0], torch.float32)
    assert ours[1][1] == [[0, 2, 1], [1, 0, 2]] and ours[1][3]["w"][0] == [1.5, 0.5, 2.5]
    assert ours[2][1] == [[0, 2, 2, 2, 1, 3], [2, 0, 1, 3, 2, 2]] and ours[3][1] == [[0, 0, 1], [1, 1, 0]]
    assert ours[6] == [(0, 1, 0, 0, 1), (1, 2, 0, 1, 2), (1, 1, 0, 2, 3)]
    assert [e[0] for e in _errors(dgl)] == ["DGLError", "DGLError", "DGLError", "KeyError"]
    assert _adj_cases(dgl)[2] == ([[0, 1], [2, 0]], [5.0, 6.0], torch.float32, (2, 3), "SparseMatrix")
