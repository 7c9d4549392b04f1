"""``dgl.bipartite_from_scipy`` / ``bipartite_from_networkx`` in ``bgl.dgl`` against real DGL 2.1 (skipped without
it; bgl's side still runs): node counts per side, edges in DGL's order (COO / CSR / CSC storage order, NetworkX's
order or its edge-id attribute), the fields, the idtype, and DGL's errors."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import bgl.dgl as bdgl

nx = pytest.importorskip("networkx")
sp = pytest.importorskip("scipy.sparse")
try:
    import dgl
except ImportError:  # the current lane: bgl's side only
    dgl = None

LIBS = [bdgl] if dgl is None else [bdgl, dgl]


def _state(g):
    return (g.ntypes, g.canonical_etypes, [g.num_nodes(nt) for nt in g.ntypes], [t.tolist() for t in g.edges()],
            g.idtype, {k: v.tolist() for k, v in g.edata.items()},
            {nt: {k: v.tolist() for k, v in g.nodes[nt].data.items()} for nt in g.ntypes})


def test_bipartite_from_scipy_is_dgls():
    # a duplicate entry (2, 1) and an explicit zero: kept by COO, summed by tocsr / tocsc
    m = sp.coo_matrix((np.array([0.5, 0.0, 2.0, 3.0]), (np.array([2, 0, 1, 2]), np.array([1, 3, 0, 1]))), shape=(4, 5))
    seen = []
    for lib in LIBS:
        seen.append([_state(lib.bipartite_from_scipy(mat, "u", "e", "v", eweight_name="w", idtype=idtype))
                     for mat, idtype in ((m, torch.int32), (m.tocsr(), None), (m.tocsc(), torch.int64))])
        with pytest.raises(lib.DGLError):
            lib.bipartite_from_scipy(m, "u", "e", "u")
    assert seen[0][0][2:4] == ([4, 5], [[2, 0, 1, 2], [1, 3, 0, 1]]) and seen[0][2][3] == [[1, 2, 0], [0, 1, 3]]
    assert all(s == seen[0] for s in seen)


def _nx_bipartite():
    g = nx.DiGraph()
    g.add_nodes_from(["c", "a", "b"], bipartite=0, x=1.0)
    g.add_nodes_from([3, 1], bipartite=1, y=2.0)
    g.nodes["a"]["x"] = 5.0
    g.add_edge("c", 3, w=1.0, id=1)
    g.add_edge("a", 1, w=2.0, id=0)
    g.add_edge("a", 3, w=3.0, id=2)
    return g


def test_bipartite_from_networkx_is_dgls():
    seen = []
    for lib in LIBS:
        g = _nx_bipartite()
        out = [_state(lib.bipartite_from_networkx(g, "u", "e", "v", u_attrs=["x"], e_attrs=["w"], v_attrs=["y"],
                                                  **kw)) for kw in ({}, {"edge_id_attr_name": "id"})]
        multi = nx.MultiDiGraph()
        multi.add_nodes_from([0, 1], bipartite=0)
        multi.add_nodes_from([2], bipartite=1)
        multi.add_edges_from([(1, 2), (0, 2), (1, 2)])
        out.append(_state(lib.bipartite_from_networkx(multi, "u", "e", "v", idtype=torch.int32)))
        seen.append(out)
        bad_edge, no_side, bad_side = g.copy(), g.copy(), g.copy()
        bad_edge.add_edge(3, "c")
        no_side.add_node("z")
        bad_side.add_node("z", bipartite=2)
        for graph, kw, error in ((nx.Graph(), {}, lib.DGLError), (bad_edge, {}, lib.DGLError),
                                 (no_side, {}, lib.DGLError), (bad_side, {}, ValueError),
                                 (g, {"edge_id_attr_name": "nope"}, lib.DGLError)):
            with pytest.raises(error):
                lib.bipartite_from_networkx(graph, "u", "e", "v", **kw)
    # sides sorted: a, b, c -> 0, 1, 2 and 1, 3 -> 0, 1
    assert seen[0][0][3] == [[2, 0, 0], [1, 0, 1]] and seen[0][1][3] == [[0, 2, 0], [0, 1, 1]]
    assert seen[0][0][6] == {"u": {"x": [5.0, 1.0, 1.0]}, "v": {"y": [2.0, 2.0]}}
    assert all(s == seen[0] for s in seen)
