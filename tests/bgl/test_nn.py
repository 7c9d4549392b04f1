"""bgl.nn.SAGEConv / SAGE against dgl.nn.SAGEConv on the same blocks and weights.

bgl.nn is what trains without DGL, so its own checks run in both lanes of ``make test``; the
comparisons with ``dgl.nn`` skip where DGL is not installed.
"""
from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from bgl.blocks import Block
from bgl.nn import SAGE, SAGEConv, aggregate

os.environ.setdefault("DGLBACKEND", "pytorch")
try:
    import dgl
    import dgl.nn as dglnn
except ImportError:  # the current stack: no DGL
    dgl = dglnn = None
needs_dgl = pytest.mark.skipif(dgl is None, reason="compares with dgl.nn.SAGEConv: needs DGL (the pinned lane)")


def random_block_pair(num_src: int, num_dst: int, avg_degree: float, seed: int,
                      zero_in_degree: int = 3):
    """The same random bipartite CSC as a bgl Block and as a dgl block.

    The first ``zero_in_degree`` dst nodes get no in-edges, the case DGL
    answers with a zero neighbour mean.
    """
    rng = np.random.default_rng(seed)
    deg = rng.poisson(avg_degree, num_dst).astype(np.int64)
    deg[:zero_in_degree] = 0
    indptr = np.zeros(num_dst + 1, np.int64)
    np.cumsum(deg, out=indptr[1:])
    indices = rng.integers(0, num_src, int(indptr[-1]))
    dst = np.repeat(np.arange(num_dst), deg)
    src_ids = torch.from_numpy(rng.permutation(10 * num_src)[:num_src].astype(np.int64))
    block = Block(src_ids=src_ids, num_dst=num_dst, indptr=torch.from_numpy(indptr),
                  indices=torch.from_numpy(indices))
    if dgl is None:
        return block, None
    dgl_block = dgl.create_block((torch.from_numpy(indices), torch.from_numpy(dst)),
                                 num_src_nodes=num_src, num_dst_nodes=num_dst)
    return block, dgl_block


@needs_dgl
@pytest.mark.parametrize("aggregator", ["mean", "gcn", "pool"])
@pytest.mark.parametrize("in_feats,out_feats", [(12, 5), (5, 12)])  # both sides of lin_before_mp
def test_sageconv_matches_dgl(aggregator, in_feats, out_feats):
    torch.manual_seed(0)
    block, dgl_block = random_block_pair(num_src=60, num_dst=25, avg_degree=4, seed=1)
    ref = dglnn.SAGEConv(in_feats, out_feats, aggregator)
    ours = SAGEConv(in_feats, out_feats, aggregator)
    ours.load_state_dict(ref.state_dict())  # same parameter names, strict load
    with torch.no_grad():  # a non-zero bias so that bias handling is compared too
        for name, p in ref.named_parameters():
            if name.endswith("bias"):
                p.uniform_(-1, 1)
        ours.load_state_dict(ref.state_dict())

    x_ref = torch.randn(60, in_feats, requires_grad=True)
    x_ours = x_ref.detach().clone().requires_grad_(True)
    want, got = ref(dgl_block, x_ref), ours(block, x_ours)
    assert got.shape == (25, out_feats)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)

    (want ** 2).sum().backward()
    (got ** 2).sum().backward()
    torch.testing.assert_close(x_ours.grad, x_ref.grad, atol=1e-5, rtol=1e-5)
    ref_grads = dict(ref.named_parameters())
    for name, p in ours.named_parameters():
        torch.testing.assert_close(p.grad, ref_grads[name].grad, atol=1e-5, rtol=1e-5)


def test_zero_in_degree_dst_gets_only_self_term():
    block, _ = random_block_pair(num_src=30, num_dst=10, avg_degree=3, seed=2, zero_in_degree=4)
    x = torch.randn(30, 6)
    mean = aggregate(block, x, "mean")
    assert torch.all(mean[:4] == 0)
    conv = SAGEConv(6, 3)
    out = conv(block, x)
    torch.testing.assert_close(out[:4], conv.fc_self(x[:4]))


@needs_dgl
def test_pair_input_matches_dgl():
    torch.manual_seed(0)
    block, dgl_block = random_block_pair(num_src=40, num_dst=15, avg_degree=5, seed=3)
    ref = dglnn.SAGEConv((8, 4), 6, "mean")
    ours = SAGEConv((8, 4), 6, "mean")
    ours.load_state_dict(ref.state_dict())
    xs, xd = torch.randn(40, 8), torch.randn(15, 4)
    torch.testing.assert_close(ours(block, (xs, xd)), ref(dgl_block, (xs, xd)), atol=1e-5, rtol=1e-5)


class DglSage(torch.nn.Module):
    """DGL's examples/pytorch/graphsage/node_classification.py model."""

    def __init__(self, widths):
        super().__init__()
        self.layers = torch.nn.ModuleList(dglnn.SAGEConv(a, b, "mean") for a, b in zip(widths, widths[1:]))
        self.dropout = torch.nn.Dropout(0.5)

    def forward(self, blocks, x):
        h = x
        for i, (layer, block) in enumerate(zip(self.layers, blocks)):
            h = layer(block, h)
            if i != len(self.layers) - 1:
                h = self.dropout(torch.relu(h))
        return h


@needs_dgl
def test_sage_model_matches_dgl_example_model():
    torch.manual_seed(0)
    # Layer 0: 80 src -> 40 dst, layer 1: 40 src -> 12 dst (dst of one = src of the next).
    b0, d0 = random_block_pair(num_src=80, num_dst=40, avg_degree=5, seed=4)
    b1, d1 = random_block_pair(num_src=40, num_dst=12, avg_degree=5, seed=5)
    ref = DglSage([16, 32, 7]).eval()
    ours = SAGE(16, 32, 7, num_layers=2, dropout=0.5).eval()
    ours.load_state_dict(ref.state_dict())
    x = torch.randn(80, 16)
    got, want = ours([b0, b1], x), ref([d0, d1], x)
    assert got.shape == (12, 7)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def test_bad_arguments_raise_clear_errors():
    with pytest.raises(ValueError, match="lstm"):
        SAGEConv(4, 4, "lstm")
    with pytest.raises(ValueError, match="num_layers"):
        SAGE(4, 4, 2, num_layers=0)
    block, _ = random_block_pair(num_src=10, num_dst=5, avg_degree=2, seed=6)
    with pytest.raises(ValueError, match="2 blocks"):
        SAGE(4, 4, 2, num_layers=3)([block, block], torch.randn(10, 4))
    with pytest.raises(ValueError, match="5 dst"):
        SAGEConv(4, 4)(block, (torch.randn(10, 4), torch.randn(3, 4)))
