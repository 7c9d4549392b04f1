"""Graph-transformer blocks (bgl/dgl/nn/graph_transformer, bgl/dgl/graph_encodings) against DGL 2.1: each
module with DGL's weights (its state dict loaded strictly, so the parameter names are DGL's) gives DGL's
outputs and gradients; shortest distances and paths, random-walk and Laplacian encodings equal DGL's
(eigenvectors up to sign).  In the current lane (no DGL) bgl's side still runs."""
from __future__ import annotations

import importlib.util

import pytest
import torch

import bgl.dgl as bdgl
import bgl.dgl.nn as bnn

HAS_DGL = importlib.util.find_spec("dgl") is not None


def _dgl_nn():
    import dgl.nn.pytorch as dnn

    return dnn


def _run(module, inputs, grads=True):
    """Outputs, input grads and parameter grads of ``module`` on copies of ``inputs`` (floats need grad)."""
    module.eval()
    xs = [x.clone().requires_grad_(x.is_floating_point()) if torch.is_tensor(x) else x for x in inputs]
    outs = module(*xs)
    outs = outs if isinstance(outs, tuple) else (outs,)
    if not grads:
        return outs, [], {}
    gen = torch.Generator().manual_seed(7)
    sum(((o * torch.randn(o.shape, generator=gen)).nan_to_num().sum()) for o in outs).backward()
    grads = [x.grad for x in xs if torch.is_tensor(x) and x.requires_grad]
    return outs, grads, {n: p.grad for n, p in module.named_parameters() if p.grad is not None}


def _check(ours, make_theirs, *inputs, dgl_grads=True):
    mine = _run(ours, inputs, grads=dgl_grads)
    assert all(torch.isfinite(o).all() for o in mine[0])
    if not HAS_DGL:
        return
    theirs = make_theirs(_dgl_nn())
    theirs.load_state_dict(ours.state_dict())  # strict: DGL's parameter names
    ref = _run(theirs, inputs, grads=dgl_grads)
    for a, b in zip(mine[0] + tuple(mine[1]), ref[0] + tuple(ref[1])):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    assert mine[2].keys() == ref[2].keys()
    for name in ref[2]:
        torch.testing.assert_close(mine[2][name], ref[2][name], atol=1e-5, rtol=1e-5, msg=name)


B, N, H, F = 2, 5, 2, 8


def _bias_mask(seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(B, N, F, generator=gen)
    bias = torch.randn(B, N, N, H, generator=gen)
    mask = torch.rand(B, N, N, generator=gen) < 0.3
    mask[:, :, 0] = False  # no row masked whole (DGL gives NaN there too)
    return x, bias, mask


@pytest.mark.parametrize("bias_type", ["add", "mul"])
def test_biased_mha_matches_dgl(bias_type):
    x, bias, mask = _bias_mask()
    ours = bnn.BiasedMHA(F, H, attn_bias_type=bias_type)
    _check(ours, lambda d: d.BiasedMHA(F, H, attn_bias_type=bias_type), x, bias, mask)


@pytest.mark.parametrize("norm_first", [False, True])
def test_graphormer_layer_matches_dgl(norm_first):
    x, bias, mask = _bias_mask(1)
    ours = bnn.GraphormerLayer(F, 16, H, norm_first=norm_first)
    _check(ours, lambda d: d.GraphormerLayer(F, 16, H, norm_first=norm_first), x, bias, mask)


@pytest.mark.parametrize("direction", ["both", "in"])
def test_degree_encoder_matches_dgl(direction):
    shape = (2, B, N) if direction == "both" else (B, N)
    deg = torch.randint(-1, 7, shape, generator=torch.Generator().manual_seed(2))
    ours = bnn.DegreeEncoder(4, F, direction=direction)
    _check(ours, lambda d: d.DegreeEncoder(4, F, direction=direction), deg)
    with pytest.raises(AssertionError):
        ours(deg[0] if direction == "both" else deg[None])


def test_spatial_and_path_encoders_match_dgl():
    gen = torch.Generator().manual_seed(3)
    dist = torch.randint(-1, 6, (B, N, N), generator=gen)
    _check(bnn.SpatialEncoder(3, H), lambda d: d.SpatialEncoder(3, H), dist)
    path = torch.randn(B, N, N, 3, 4, generator=gen)
    _check(bnn.PathEncoder(3, 4, H), lambda d: d.PathEncoder(3, 4, H), dist, path)


@pytest.mark.parametrize("typed", [False, True])
def test_spatial_encoder_3d_matches_dgl(typed):
    gen = torch.Generator().manual_seed(4)
    coord = torch.randn(B, N, 3, generator=gen)
    ntype = torch.randint(0, 5, (B, N), generator=gen) if typed else None
    ours = bnn.SpatialEncoder3d(4, H, max_node_type=5)
    with torch.no_grad():  # gamma / beta away from DGL's constant start, so the typed rows matter
        ours.gamma.weight.uniform_(0.5, 1.5, generator=gen)
        ours.beta.weight.uniform_(-0.5, 0.5, generator=gen)
    _check(ours, lambda d: d.SpatialEncoder3d(4, H, max_node_type=5), coord, ntype)


@pytest.mark.parametrize("model_type, kw", [("Transformer", {"n_head": 2, "num_post_layer": 1}),
                                            ("DeepSet", {"batch_norm": True, "num_post_layer": 2})])
def test_lap_pos_encoder_matches_dgl(model_type, kw):
    gen = torch.Generator().manual_seed(5)
    k = 4
    vecs, vals = torch.randn(N, k, generator=gen), torch.rand(N, k, generator=gen)
    vecs[:, -1], vals[:, -1] = float("nan"), float("nan")  # a padded slot
    ours = bnn.LapPosEncoder(model_type, 3, k, F, **kw)
    # DGL's DeepSet zeroes its padded rows in place after a ReLU: its backward fails, so outputs only
    _check(ours, lambda d: d.LapPosEncoder(model_type, 3, k, F, **kw), vals, vecs,
           dgl_grads=model_type == "Transformer")
    if model_type == "DeepSet":
        _run(ours, (vals, vecs))  # bgl's backward runs
    with pytest.raises(ValueError):
        bnn.LapPosEncoder("MLP", 1, k, F)


@pytest.mark.parametrize("edge_update", [True, False])
def test_egt_layer_matches_dgl(edge_update):
    gen = torch.Generator().manual_seed(6)
    x, e = torch.randn(B, N, F, generator=gen), torch.randn(B, N, N, 3, generator=gen)
    mask = torch.where(torch.rand(B, N, N, generator=gen) < 0.3, -1e4, 0.0)
    ours = bnn.EGTLayer(F, 3, H, num_virtual_nodes=1, edge_update=edge_update)
    _check(ours, lambda d: d.EGTLayer(F, 3, H, num_virtual_nodes=1, edge_update=edge_update), x, e, mask)


def _check_paths(src, dst, dist, paths, roots):
    """Each reachable pair's path is a chain of ``dist`` edges from its root to its node, -1 padded."""
    for r, row_d, row_p in zip(roots, dist, paths):
        for j, (d, p) in enumerate(zip(row_d.tolist(), row_p)):
            hops = p[: max(d, 0)]
            assert (p[max(d, 0):] == -1).all() and (hops >= 0).all()
            if d > 0:
                assert src[hops[0]] == r and dst[hops[-1]] == j and torch.equal(src[hops[1:]], dst[hops[:-1]])


# sparse (scipy's Dijkstra in DGL: equal-length ties, parallel edges, unreachable nodes) and dense (its Floyd-Warshall)
@pytest.mark.parametrize("n, e, seed", [(12, 20, 0), (7, 30, 1)])
def test_shortest_dist_matches_dgl(hub_edges, n, e, seed):
    src, dst = hub_edges(n, e, seed)
    g = bdgl.graph((src, dst), num_nodes=n)
    dist, paths = bdgl.shortest_dist(g, return_paths=True)
    reach = torch.eye(n, dtype=torch.bool)  # breadth-first reference by boolean matrix powers
    adj = torch.zeros(n, n, dtype=torch.bool)
    adj[src, dst] = True
    expected = torch.where(reach, 0, -1)
    for step in range(1, n):
        nxt = (reach.float() @ adj.float() > 0) | reach
        expected[nxt & ~reach] = step
        reach = nxt
    assert torch.equal(dist, expected) and paths.shape == (n, n, int(dist.max()))
    _check_paths(src, dst, dist, paths, range(n))
    d3, p3 = bdgl.shortest_dist(g, root=3, return_paths=True)
    assert torch.equal(bdgl.shortest_dist(g, root=3), d3) and torch.equal(d3, dist[3])
    _check_paths(src, dst, d3[None], p3[None], [3])
    if HAS_DGL:
        import dgl

        theirs = dgl.graph((src, dst), num_nodes=n)
        refs = dgl.shortest_dist(theirs, return_paths=True), dgl.shortest_dist(theirs, root=3, return_paths=True)
        for mine, ref in zip(((dist, paths), (d3, p3)), refs):
            assert torch.equal(mine[0], ref[0]) and torch.equal(mine[1], ref[1])


def _ring_with_chords(n=9, seed=0):
    """A bidirected ring with two random chords: connected, distinct Laplacian eigenvalues."""
    gen = torch.Generator().manual_seed(seed)
    s, d = torch.arange(n), (torch.arange(n) + 1) % n
    s, d = torch.cat([s, torch.randint(0, n, (2,), generator=gen)]), torch.cat([d, torch.randint(0, n, (2,), generator=gen)])
    return torch.cat([s, d]), torch.cat([d, s])


@pytest.mark.parametrize("k", [3, 12])  # k < N (DGL: ARPACK), k >= N (dense, padded)
def test_lap_pe_matches_dgl_up_to_sign(k):
    src, dst = _ring_with_chords()
    g = bdgl.graph((src, dst))
    pe, val = bdgl.lap_pe(g, k, padding=True, return_eigval=True)
    m = min(k, g.num_nodes() - 1)
    assert pe.shape == (9, k) and pe.dtype == val.dtype == torch.float32 and val[m:].isnan().all()
    torch.testing.assert_close(pe[:, :m].T @ pe[:, :m], torch.eye(m), atol=1e-5, rtol=0)  # orthonormal
    with pytest.warns(UserWarning):
        assert bdgl.laplacian_pe(g, k).shape == (9, k)
    t = bdgl.transforms.LapPE(k, feat_name="pe", eigval_name="ev")(g)
    assert t is g and g.ndata["pe"].shape == g.ndata["ev"].shape == (9, k)
    if HAS_DGL:
        import dgl

        ref, ref_val = dgl.lap_pe(dgl.graph((src, dst)), k, padding=True, return_eigval=True)
        torch.testing.assert_close(val, ref_val, atol=1e-5, rtol=0, equal_nan=True)
        sign = torch.sign((pe * ref).sum(0))
        torch.testing.assert_close(pe * torch.where(sign == 0, 1.0, sign), ref, atol=1e-5, rtol=0)


@pytest.mark.parametrize("weighted", [False, True])
def test_random_walk_pe_matches_dgl(hub_edges, weighted):
    src, dst = hub_edges(10, 30, 2)
    g = bdgl.graph((src, dst), num_nodes=10)
    g.edata["w"] = torch.rand(30, 1, generator=torch.Generator().manual_seed(3)) + 0.1
    name = "w" if weighted else None
    pe = bdgl.random_walk_pe(g, 4, eweight_name=name)
    adj = torch.zeros(10, 10, dtype=torch.float64).index_put_((src, dst), torch.ones(30, dtype=torch.float64),
                                                              accumulate=True)
    if not weighted:  # a step's probabilities, and the return probabilities of its powers
        step = adj / adj.sum(1, keepdim=True).clamp(min=1e-30)
        ref = torch.stack([torch.linalg.matrix_power(step, t).diagonal() for t in range(1, 5)], -1).float()
        torch.testing.assert_close(pe, ref)
    assert torch.equal(bdgl.RandomWalkPE(4, eweight_name=name)(g).ndata["PE"], pe)
    if HAS_DGL:
        import dgl

        theirs = dgl.graph((src, dst), num_nodes=10)
        theirs.edata["w"] = g.edata["w"]
        torch.testing.assert_close(pe, dgl.random_walk_pe(theirs, 4, eweight_name=name))


def test_encodings_refuse_typed_graphs():
    g = bdgl.heterograph({("a", "r", "b"): ([0], [1]), ("b", "s", "a"): ([1], [0])})
    for fn in (bdgl.shortest_dist, lambda g: bdgl.lap_pe(g, 2), lambda g: bdgl.random_walk_pe(g, 2)):
        with pytest.raises(bdgl.DGLError):
            fn(g)


def _graph_pair(n=8, seed=8):
    """A bidirected random graph with node n-1 isolated (no in-edges): bgl.dgl's, and a maker of DGL's."""
    gen = torch.Generator().manual_seed(seed)
    s, d = torch.randint(0, n - 1, (12,), generator=gen), torch.randint(0, n - 1, (12,), generator=gen)
    src, dst = torch.cat([s, d]), torch.cat([d, s])

    def theirs():
        import dgl

        return dgl.graph((src, dst), num_nodes=n)
    return bdgl.graph((src, dst), num_nodes=n), theirs, src.numel()


def test_dgnconv_matches_dgl():
    g, theirs_g, e = _graph_pair()
    gen = torch.Generator().manual_seed(9)
    x, ef, eig = torch.randn(8, 6, generator=gen), torch.randn(e, 2, generator=gen), torch.randn(8, 3, generator=gen)
    aggs, scalers = ["mean", "max", "dir1-av", "dir1-dx", "dir3-av"], ["identity", "amplification"]
    ours = bnn.DGNConv(6, 6, aggs, scalers, 1.2, num_towers=2, edge_feat_size=2)

    class OnGraph(torch.nn.Module):  # the graph bound, so _check passes only tensors
        def __init__(self, conv, graph):
            super().__init__()
            self.conv, self.graph = conv, graph

        def forward(self, *xs):
            return self.conv(self.graph() if callable(self.graph) else self.graph, *xs)
    _check(OnGraph(ours, g), lambda d: OnGraph(d.DGNConv(6, 6, aggs, scalers, 1.2, num_towers=2, edge_feat_size=2),
                                               theirs_g), x, ef, eig)


def test_group_rev_res_matches_dgl_and_rebuilds_its_input():
    g, theirs_g, _ = _graph_pair()
    x = torch.randn(8, 6, generator=torch.Generator().manual_seed(10))
    ours = bnn.GroupRevRes(bnn.GraphConv(2, 2, allow_zero_in_degree=True), groups=3)
    xin = x.clone().requires_grad_()
    out = ours(g, xin)
    assert xin.untyped_storage().nbytes() == 0  # released until backward, as DGL's
    with torch.no_grad():
        assert torch.equal(ours(g, x), out)  # no backward to come: the input is kept
    kept = out.detach().clone()  # backward releases the output's memory in turn (DGL's too)
    out.sum().backward()
    torch.testing.assert_close(xin.detach(), x)  # rebuilt from the output
    assert xin.grad.shape == x.shape and out.untyped_storage().nbytes() == 0
    if HAS_DGL:
        import dgl.nn.pytorch as dnn

        theirs = dnn.GroupRevRes(dnn.GraphConv(2, 2, allow_zero_in_degree=True), groups=3)
        theirs.load_state_dict(ours.state_dict())
        xd = x.clone().requires_grad_()
        ref = theirs(theirs_g(), xd)
        torch.testing.assert_close(kept, ref, atol=1e-5, rtol=1e-5)
        ref.sum().backward()
        torch.testing.assert_close(xin.grad, xd.grad, atol=1e-5, rtol=1e-5)
        for (name, p), q in zip(ours.named_parameters(), theirs.parameters()):
            torch.testing.assert_close(p.grad, q.grad, atol=1e-5, rtol=1e-5, msg=name)
