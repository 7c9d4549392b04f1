"""bgl.dgl.nn's dropout (the layers' ``feat_drop`` / ``attn_drop`` / ``dropout``): ``nn.Dropout``'s contract
with a hashed CPU mask (bgl/dgl/nn/dropout.py).  What a user relies on: the kept share is 1 - p and the
kept elements are scaled by 1 / (1 - p) (expectation unchanged); the backward passes the gradient
through the same elements; ``torch.manual_seed`` decides the masks, whatever the thread count; a second
derivative works; evaluation, p = 0 and non-CPU-float inputs are ``nn.Dropout``'s own."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from bgl.dgl.nn import GATConv, RelGraphConv, SAGEConv, dropout
from bgl.dgl.nn.dropout import Dropout


@pytest.fixture
def hashed(monkeypatch):
    """The hashed draw, whatever this torch (it is the default from torch 2.5, where no DGL runs)."""
    monkeypatch.setattr(dropout, "HASHED", True)


@pytest.mark.parametrize("p", [0.1, 0.5, 0.6, 0.9])
def test_kept_share_and_scale_are_nn_dropouts(p, hashed):
    torch.manual_seed(0)
    x = torch.rand(300_001) + 1.0  # odd length: the last element's hash is half used
    y = Dropout(p).train()(x)
    kept = y != 0
    n = x.numel()
    sd = (p * (1 - p) / n) ** 0.5
    assert abs(kept.float().mean().item() - (1 - p)) < 5 * sd
    torch.testing.assert_close(y[kept], x[kept] / (1 - p))
    # neighbours are not correlated (pairs share one hash): P(both kept) is (1 - p)^2
    both = (kept[:-1:2] & kept[1::2]).float().mean().item()
    assert abs(both - (1 - p) ** 2) < 6 * ((1 - p) ** 2 / (n / 2)) ** 0.5


def test_backward_passes_the_gradient_through_the_kept_elements_and_differentiates_again(hashed):
    torch.manual_seed(1)
    x = torch.randn(257, 130, dtype=torch.float64, requires_grad=True)
    drop = Dropout(0.4).train()
    y = drop(x)
    scale = (y / x.detach()).detach()  # 0 or 1 / (1 - p) per element
    assert set(torch.unique(scale.round(decimals=6)).tolist()) == {0.0, round(1 / 0.6, 6)}
    g = torch.randn_like(x)
    (gx,) = torch.autograd.grad(y, x, g)
    torch.testing.assert_close(gx, g * scale)
    small = x[:5, :7].detach().clone().requires_grad_()
    assert torch.autograd.gradcheck(lambda t: _seeded(drop, t), (small,))
    assert torch.autograd.gradgradcheck(lambda t: _seeded(drop, t), (small,))


def _seeded(drop, t):
    torch.manual_seed(5)
    return drop(t)


def test_masks_follow_torch_manual_seed_not_the_thread_count(hashed):
    x = torch.randn(400_000)
    before = torch.get_num_threads()
    try:
        outs = []
        for threads in (1, 2, 1):
            torch.set_num_threads(threads)
            torch.manual_seed(7)
            outs.append(Dropout(0.5).train()(x))
        torch.manual_seed(8)
        other = Dropout(0.5).train()(x)
    finally:
        torch.set_num_threads(before)
    assert torch.equal(outs[0], outs[1]) and torch.equal(outs[0], outs[2])
    assert not torch.equal(outs[0], other)


def test_evaluation_zero_p_and_other_dtypes_are_nn_dropouts_own(hashed):
    x = torch.randn(50, 8)
    assert torch.equal(Dropout(0.5).eval()(x), x)
    assert torch.equal(Dropout(0.0).train()(x), x)
    half = x.to(torch.bfloat16)
    torch.manual_seed(3)
    ours = Dropout(0.5).train()(half)
    torch.manual_seed(3)
    theirs = nn.Dropout(0.5).train()(half)
    assert torch.equal(ours, theirs)
    assert repr(Dropout(0.3)) == repr(nn.Dropout(0.3))
    assert isinstance(Dropout(0.3), nn.Dropout)


def test_the_layers_hold_it_under_dgls_names_and_no_state_dict_entry():
    gat, sage, rel = GATConv(4, 2, 2, feat_drop=0.5, attn_drop=0.5), SAGEConv(4, 2, "mean", feat_drop=0.5), \
        RelGraphConv(4, 2, 3, dropout=0.5)
    for module in (gat.feat_drop, gat.attn_drop, sage.feat_drop, rel.dropout):
        assert isinstance(module, Dropout) and module.p == 0.5
    for layer in (gat, sage, rel):
        assert not any("drop" in key for key in layer.state_dict())


def test_where_a_dgl_release_runs_the_masks_are_nn_dropouts_own():
    """On torch < 2.5 (DGL's stacks) a seeded bgl.dgl layer drops what DGL's nn.Dropout drops; from 2.5
    the hashed draw is the default."""
    version = tuple(int(v) for v in torch.__version__.split("+")[0].split(".")[:2])
    assert dropout.HASHED == (version >= (2, 5))
    if dropout.HASHED:
        return
    x = torch.randn(1000, 16)
    torch.manual_seed(11)
    ours = Dropout(0.6).train()(x)
    torch.manual_seed(11)
    assert torch.equal(ours, nn.Dropout(0.6).train()(x))
