"""PyG's layers on bgl blocks through ``bgl.dgl.nn.to_pyg`` (both lanes: PyG is in each)."""
from __future__ import annotations

import pytest
import torch

import bgl.dgl
import bgl.dgl.nn as dglnn
from bgl.blocks import Block

pyg_nn = pytest.importorskip("torch_geometric.nn", reason="PyTorch Geometric is not installed")

TOL = dict(atol=1e-5, rtol=1e-5)


def test_pyg_sageconv_on_a_block_equals_ours(build, block_edges):
    """PyG's SAGEConv (lin_l on the neighbour mean, lin_r on the root) with our SAGEConv's weights."""
    e = block_edges
    torch.manual_seed(0)
    ours = dglnn.SAGEConv(5, 3, "mean")
    theirs = pyg_nn.SAGEConv(5, 3, aggr="mean")
    with torch.no_grad():
        theirs.lin_l.weight.copy_(ours.fc_neigh.weight)
        theirs.lin_l.bias.copy_(ours.fc_self.bias)
        theirs.lin_r.weight.copy_(ours.fc_self.weight)
    block = build.bgl(e)
    x = torch.randn(e.num_src, 5)
    (x_src, x_dst), edge_index, size = dglnn.to_pyg(block, x)
    assert size == (e.num_src, e.num_dst) and edge_index.dtype == torch.int64
    assert x_dst.data_ptr() == x.data_ptr()  # a view, not a copy
    torch.testing.assert_close(theirs((x_src, x_dst), edge_index, size=size), ours(block, x), **TOL)


def test_core_block_gives_the_same_edges(build, block_edges):
    """A core bgl Block (CSC arrays) converts like the bgl.dgl block with the same edges."""
    e = block_edges
    order = torch.sort(e.dst, stable=True).indices
    indptr = torch.zeros(e.num_dst + 1, dtype=torch.int64)
    indptr[1:] = torch.cumsum(torch.bincount(e.dst, minlength=e.num_dst), 0)
    core = Block(src_ids=torch.arange(e.num_src) + 100, num_dst=e.num_dst, indptr=indptr, indices=e.src[order])
    x = torch.randn(e.num_src, 2)
    _, edge_index, size = dglnn.to_pyg(core, x)
    assert size == (e.num_src, e.num_dst)
    assert torch.equal(edge_index, torch.stack([e.src[order], e.dst[order]]))


def test_refuses_typed_blocks_and_short_features(build, block_edges):
    with pytest.raises(ValueError, match=r"slice a typed block first: block\[etype\]"):
        dglnn.to_pyg(build.typed_block(bgl.dgl, 3), torch.randn(30, 2))
    with pytest.raises(ValueError, match="block has 30 src / 12 dst nodes but features have 29 src"):
        dglnn.to_pyg(build.bgl(block_edges), torch.randn(29, 2))
