"""DGL 2.1's ``dgl.transforms`` objects built in bgl/dgl/transform_classes/ against real DGL 2.1 on the same graphs:
the deterministic ones (``KHopGraph``, ``LineGraph``, ``AddMetaPaths``, ``ToLevi``, ``PPR``, ``HeatKernel``,
``GDC``, ``SIGNDiffusion``, ``SVDPE``, ``reorder_graph``) structure, edge order, features and errors; the random
ones (``DropNode``, ``AddEdge``, ``NodeShuffle``, ``FeatMask``) draw for draw under the same torch seed, and by
their definition in the current lane; and the ``dgl.transforms`` namespace."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import torch

import bgl.dgl as bdgl
from bgl.dgl.base import DGLError

HAS_DGL = importlib.util.find_spec("dgl") is not None
needs_dgl = pytest.mark.skipif(not HAS_DGL, reason="needs DGL (pinned lane) to compare against")


def _homogeneous(lib, bidirected=False, seed=1, n=9, e=30):
    gen = torch.Generator().manual_seed(seed)
    src, dst = torch.randint(0, n - 1, (e,), generator=gen), torch.randint(0, n - 1, (e,), generator=gen)
    if bidirected:
        src, dst = torch.cat([src, dst]), torch.cat([dst, src])
    g = lib.graph((src, dst), num_nodes=n)  # node n - 1 isolated
    g.ndata["x"] = torch.rand(n, 3, generator=gen)
    g.edata["w"] = torch.rand(src.shape[0], generator=gen)
    return g


def _typed(lib):
    gen = torch.Generator().manual_seed(0)
    a, p = torch.randint(0, 5, (12,), generator=gen), torch.randint(0, 6, (12,), generator=gen)
    v = torch.randint(0, 3, (6,), generator=gen)
    g = lib.heterograph({("author", "writes", "paper"): (a, p), ("paper", "written-by", "author"): (p, a),
                         ("paper", "in", "venue"): (torch.arange(6), v)},
                        num_nodes_dict={"author": 5, "paper": 6, "venue": 3})
    g.nodes["author"].data["x"] = torch.rand(5, 2, generator=gen)
    g.nodes["paper"].data["x"] = torch.rand(6, 2, generator=gen)
    g.edges["writes"].data["w"] = torch.rand(12, generator=gen)
    return g


META = {"ap": [("author", "writes", "paper"), ("paper", "written-by", "author")],
        "av": [("author", "writes", "paper"), ("paper", "in", "venue")]}
DETERMINISTIC = {  # name: (transform from a transforms namespace, graph builder)
    "KHopGraph": (lambda T: T.KHopGraph(2), _homogeneous),
    "LineGraph": (lambda T: T.LineGraph(), _homogeneous),
    "LineGraph no backtracking": (lambda T: T.LineGraph(backtracking=False), _homogeneous),
    "AddMetaPaths": (lambda T: T.AddMetaPaths(META), _typed),
    "AddMetaPaths new edges only": (lambda T: T.AddMetaPaths(META, keep_orig_edges=False), _typed),
    "ToLevi": (lambda T: T.ToLevi(), lambda lib: lib.transforms.add_self_loop(_homogeneous(lib))),  # no isolated node
    "PPR": (lambda T: T.PPR(), _homogeneous),
    "PPR eps": (lambda T: T.PPR(alpha=0.2, eweight_name="w", eps=0.02), _homogeneous),
    "HeatKernel bidirected": (lambda T: T.HeatKernel(t=1.5, eweight_name="h"), lambda lib: _homogeneous(lib, True)),
    "HeatKernel": (lambda T: T.HeatKernel(eps=0.05), _homogeneous),  # SciPy's expm against torch's
    "GDC": (lambda T: T.GDC([0.3, 0.2, 0.1], avg_degree=3), _homogeneous),
    "SIGNDiffusion raw": (lambda T: T.SIGNDiffusion(2, "x", eweight_name="w"), _homogeneous),
    "SIGNDiffusion rw": (lambda T: T.SIGNDiffusion(2, "x", eweight_name="w", diffuse_op="rw"), _homogeneous),
    "SIGNDiffusion rw mean": (lambda T: T.SIGNDiffusion(2, "x", diffuse_op="rw"), _homogeneous),
    "SIGNDiffusion gcn": (lambda T: T.SIGNDiffusion(3, "x", diffuse_op="gcn"), _homogeneous),
    "SIGNDiffusion ppr": (lambda T: T.SIGNDiffusion(2, "x", "y", eweight_name="w", diffuse_op="ppr"), _homogeneous),
}


@needs_dgl
@pytest.mark.parametrize("name", sorted(DETERMINISTIC))
def test_deterministic_objects_match_dgl(name, graph_state, states_close):
    import dgl

    make, build = DETERMINISTIC[name]
    ours, theirs = build(bdgl), build(dgl)
    out_ours, out_theirs = make(bdgl.transforms)(ours), make(dgl.transforms)(theirs)
    assert out_ours.ntypes == out_theirs.ntypes and out_ours.idtype == out_theirs.idtype
    states = graph_state(out_ours), graph_state(out_theirs)
    if name == "KHopGraph":  # a product of adjacencies: DGL's edge order is SciPy's (docs/from-dgl.md)
        for state in states:
            state[("_N", "_E", "_N")] = sorted(zip(*state[("_N", "_E", "_N")]))
    states_close(*states)
    states_close(graph_state(ours), graph_state(theirs))  # in-place writes (SIGNDiffusion) alike


def test_dense_diffusions_by_their_definition():
    g = _homogeneous(bdgl)
    n, (src, dst) = g.num_nodes(), g.edges()
    adj = torch.zeros(n, n)
    adj[dst, src] = g.edata["w"]
    expected = 0.3 * torch.eye(n) + 0.2 * adj + 0.1 * adj @ adj
    out = bdgl.transforms.GDC([0.3, 0.2, 0.1], avg_degree=n + 1)(g)  # avg_degree > N: every entry kept
    s, d = out.edges()
    assert out.num_edges() == n * n and torch.equal(d * n + s, torch.arange(n * n))  # row-major: by dst, then src
    torch.testing.assert_close(out.edata["w"], expected[d, s])
    assert out.ndata["x"] is g.ndata["x"]
    ppr = bdgl.transforms.PPR(alpha=0.2, eps=0.05)(g)
    full = 0.2 * torch.inverse(torch.eye(n) - 0.8 * adj)
    assert ppr.num_edges() == int((full >= 0.05).sum()) and bool((ppr.edata["w"] >= 0.05).all())
    with pytest.raises(DGLError, match="diffuse_op"):
        bdgl.transforms.SIGNDiffusion(2, diffuse_op="heat")


RANDOM = {
    "DropNode": lambda T: T.DropNode(0.4),
    "DropNode p=0": lambda T: T.DropNode(0.0),
    "AddEdge": lambda T: T.AddEdge(0.5),
    "NodeShuffle": lambda T: T.NodeShuffle(),
    "FeatMask": lambda T: T.FeatMask(0.5, node_feat_names=["x"], edge_feat_names=["w2"]),
}


@needs_dgl
@pytest.mark.parametrize("name", sorted(RANDOM))
@pytest.mark.parametrize("idtype", [torch.int64, torch.int32])
def test_random_objects_draw_as_dgl_does(name, idtype, graph_state, states_close):
    import dgl

    states = []
    for lib in (bdgl, dgl):
        g = _typed(lib).astype(idtype)
        g.edges["in"].data["w2"] = torch.arange(12.0).view(6, 2)
        before = graph_state(g)
        torch.manual_seed(7)
        out = RANDOM[name](lib.transforms)(g)
        assert out.idtype == idtype
        states.append((graph_state(out), graph_state(g) == before))
    states_close(states[0][0], states[1][0])
    assert states[0][1] == states[1][1]  # the input left as it was, or edited in place (FeatMask), alike


def test_random_objects_by_their_definition():
    """Current lane: kept items a subset with their fields, the drop rate within 8 standard deviations."""
    n = 4000
    g = bdgl.graph((torch.arange(n - 1), torch.arange(1, n)), num_nodes=n)
    g.ndata["x"] = torch.arange(n)
    g.edata["e"] = torch.arange(n - 1)
    torch.manual_seed(0)
    out = bdgl.transforms.DropNode(0.3)(g)
    kept = out.ndata["x"]
    assert bool((kept[1:] > kept[:-1]).all()) and abs(n - kept.shape[0] - 0.3 * n) < 8 * (n * 0.21) ** 0.5
    s, d = out.edges()  # an edge survives exactly when both its ends do, its field with it
    assert torch.equal(kept[d.long()] - kept[s.long()], torch.ones_like(s).long())
    assert out.num_edges() == int((kept[1:] - kept[:-1] == 1).sum()) and torch.equal(out.edata["e"], kept[s.long()])
    assert g.num_nodes() == n
    grown = bdgl.transforms.AddEdge(0.25)(g)
    assert grown.num_edges() == n - 1 + int((n - 1) * 0.25) and torch.equal(grown.edata["e"][: n - 1], g.edata["e"])
    shuffled = bdgl.transforms.NodeShuffle()(g)
    assert torch.equal(torch.sort(shuffled.ndata["x"]).values, g.ndata["x"]) and shuffled.edges()[0] is not None
    h = bdgl.graph(([0], [1]))
    h.ndata["f"] = torch.ones(2, 4000)
    assert bdgl.transforms.FeatMask(0.3, ["f"])(h) is h
    masked = int((h.ndata["f"][0] == 0).sum())
    assert torch.equal(h.ndata["f"][0], h.ndata["f"][1]) and abs(masked - 1200) < 8 * (4000 * 0.21) ** 0.5


def _svd_pe(lib, **kw):
    g = lib.graph(([0, 0, 1, 2, 3, 3, 4, 1], [1, 2, 2, 3, 0, 4, 0, 4]), num_nodes=6)
    np.random.seed(3)
    return lib.transforms.SVDPE(**kw)(g).ndata[kw.get("feat_name", "svd_pe")]


@pytest.mark.parametrize("kw", [dict(k=3, random_flip=False), dict(k=3), dict(k=8, padding=True, feat_name="p")])
def test_svd_pe_matches_dgl_up_to_each_singular_pair_sign(kw):
    ours = _svd_pe(bdgl, **kw)
    k, n = kw["k"], 6
    assert ours.shape == (n, 2 * k) and ours.dtype == torch.float32
    if k > n:
        assert bool((ours[:, 2 * n:] == 0).all())
    if HAS_DGL:
        import dgl

        theirs = _svd_pe(dgl, **kw)
        m = min(n, k)
        for i in range(m):  # a singular pair (u_i, v_i) is defined up to one sign
            sign = 1.0 if torch.allclose(ours[:, i], theirs[:, i], atol=1e-5) else -1.0
            torch.testing.assert_close(ours[:, [i, m + i]] * sign, theirs[:, [i, m + i]], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(ours[:, 2 * m:], theirs[:, 2 * m:])
    with pytest.raises(ValueError, match="got 7 and 6"):
        bdgl.svd_pe(bdgl.graph(([0], [5])), 7)


def test_transforms_namespace_is_the_top_level():
    """Every name of DGL's dgl.transforms that bgl.dgl has resolves there to the same object; one it lacks
    raises bgl.dgl's refusal; a name DGL's namespace does not have is an AttributeError."""
    from bgl.dgl.transform_classes import DGL_TRANSFORMS

    T = bdgl.transforms
    for name in ("add_edges", "add_nodes", "remove_nodes", "compact_graphs", "khop_adj", "khop_graph", "line_graph",
                 "laplacian_lambda_max", "metapath_reachable_graph", "to_block", "to_bfloat16", "to_simple_graph",
                 "Compose", "DropEdge", "PPR", "SVDPE", "svd_pe", "reorder_graph", "AddSelfLoop", "add_self_loop"):
        assert getattr(T, name) is getattr(bdgl, name), name
    for name in sorted(DGL_TRANSFORMS):
        assert hasattr(T, name) == hasattr(bdgl, name), name
    with pytest.raises(AttributeError, match="graph"):
        T.graph  # noqa: B018
    if HAS_DGL:
        import dgl

        assert DGL_TRANSFORMS == {n for n in dir(dgl.transforms) if not n.startswith("_")} - {"functional", "module"}
