"""What the SpMM / SDDMM autograd graphs keep, the cause of bgl's peak above DGL's on small blocks.

- For 2-D features the fused SpMM's autograd node sits right on its input and output, with no
  same-shape view node between: a gradient that leaves through such a view keeps the view's base
  alive, and GINConv's peak on a PubMed block read 1.29x DGL's (1.00x without the views, measured
  with bench/dgl_nn.py).
- ``u_add_v`` never reads its operands in backward; saving them kept GATv2's ``fc_dst`` output
  alive until backward (1.36x DGL's peak).  ``u_mul_v`` does read them.
Runs in both lanes."""
from __future__ import annotations

import pytest
import torch

import bgl.dgl as bdgl
from bgl.dgl.ops import gsddmm, gspmm

SRC = torch.tensor([0, 1, 2, 3, 4, 0, 2])
DST = torch.tensor([0, 0, 1, 1, 2, 2, 2])


def block():
    return bdgl.create_block((SRC, DST), num_src_nodes=5, num_dst_nodes=3)


# the fused kernels' cases (u_mul_e + max takes the generic chunked path)
@pytest.mark.parametrize("op,rhs,reduce_op", [
    ("copy_lhs", None, "sum"), ("copy_lhs", None, "mean"), ("copy_lhs", None, "max"),
    ("mul", "edge", "sum"), ("mul", "edge", "mean"), ("mul", "edge-2d", "sum"), ("mul", "edge-2d", "mean")])
def test_spmm_on_2d_features_has_no_view_node(op, rhs, reduce_op):
    x = torch.randn(5, 4, requires_grad=True)
    w = {None: None, "edge": torch.rand(7), "edge-2d": torch.rand(7, 1)}[rhs]
    out = gspmm(block(), op, reduce_op, x, w)
    node = out.grad_fn
    if reduce_op == "max":  # the zero-in-degree fill (masked_fill) is DGL's too; look below it
        node = node.next_functions[0][0] if node.name().startswith("MaskedFill") else node
    assert "View" not in node.name(), node.name()
    feeds = [fn for fn, _ in node.next_functions if fn is not None]
    assert any(type(fn).__name__ == "AccumulateGrad" and fn.variable is x for fn in feeds), \
        [fn.name() for fn in feeds]


def _saved_storages(fn) -> list:
    saved = []

    def pack(t):
        saved.append(t.untyped_storage().data_ptr())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn()
    return saved, out


def test_u_add_v_keeps_no_operand():
    a, b = torch.randn(5, 2, 3, requires_grad=True), torch.randn(3, 2, 3, requires_grad=True)
    saved, out = _saved_storages(lambda: gsddmm(block(), "add", a, b, "u", "v"))
    assert a.untyped_storage().data_ptr() not in saved and b.untyped_storage().data_ptr() not in saved
    weights = torch.randn(out.shape)
    (out * weights).sum().backward()
    torch.testing.assert_close(a.grad, torch.zeros(5, 2, 3).index_add_(0, SRC, weights))
    torch.testing.assert_close(b.grad, torch.zeros(3, 2, 3).index_add_(0, DST, weights))


def test_u_mul_v_still_keeps_its_operands():
    a, b = torch.randn(5, 3, requires_grad=True), torch.randn(3, 3, requires_grad=True)
    saved, out = _saved_storages(lambda: gsddmm(block(), "mul", a, b, "u", "v"))
    assert a.untyped_storage().data_ptr() in saved and b.untyped_storage().data_ptr() in saved
    weights = torch.randn(out.shape)
    (out * weights).sum().backward()
    torch.testing.assert_close(a.grad, torch.zeros(5, 3).index_add_(0, SRC, weights * b[DST].detach()))
    torch.testing.assert_close(b.grad, torch.zeros(3, 3).index_add_(0, DST, weights * a[SRC].detach()))
