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
