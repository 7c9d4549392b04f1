"""What the SpMM / SDDMM autograd graphs keep, the cause of bgl's peak above DGL's on small blocks.

- For 2-D features the fused SpMM's autograd node sits right on its input and output, with no
  same-shape view node between: a gradient that leaves through such a view keeps the view's base
  alive, and GINConv's peak on a PubMed block read 1.29x DGL's (1.00x without the views, measured
  with bench/dgl/nn.py).
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


@pytest.mark.parametrize("op", ["add", "sub"])
@pytest.mark.parametrize("targets", [("u", "v"), ("v", "u"), ("u", "u"), ("v", "v")])
@pytest.mark.parametrize("threads", [1, 2])
def test_node_add_sub_backward_sums_edge_rows_per_node(op, targets, threads, monkeypatch):
    """GATv2's ``u_add_v``: the gradient of each operand is its nodes' sums of edge-gradient rows
    (the SpMM kernel over the CSR / CSC, rows split over threads), equal to a scatter-add; on a
    graph whose CSC order is not its edge-id order (so the kernel reads edge ids)."""
    from bgl.dgl.ops import cpu_rows

    monkeypatch.setattr(cpu_rows, "SPLIT_EDGES", 8)  # several row ranges even on this small graph
    gen = torch.Generator().manual_seed(4)
    src, dst = torch.randint(0, 9, (60,), generator=gen), torch.randint(0, 9, (60,), generator=gen)
    graph = bdgl.graph((src, dst), num_nodes=9)
    a, b = torch.randn(9, 2, 3, generator=gen), torch.randn(9, 2, 3, generator=gen)
    weights = torch.randn(60, 2, 3, generator=gen)
    ends = {"u": src, "v": dst}
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        leaves = [a.clone().requires_grad_(), b.clone().requires_grad_()]
        out = gsddmm(graph, op, *leaves, *targets)
        (out * weights).sum().backward()
    finally:
        torch.set_num_threads(previous)
    sign = 1.0 if op == "add" else -1.0
    torch.testing.assert_close(out, a[ends[targets[0]]] + sign * b[ends[targets[1]]])
    torch.testing.assert_close(leaves[0].grad, torch.zeros(9, 2, 3).index_add_(0, ends[targets[0]], weights))
    torch.testing.assert_close(leaves[1].grad, torch.zeros(9, 2, 3).index_add_(0, ends[targets[1]], sign * weights))
    assert leaves[0].grad._base is None and leaves[1].grad._base is None


@pytest.mark.parametrize("kernels", [True, False])
@pytest.mark.parametrize("reduce_op", ["sum", "mean"])
@pytest.mark.parametrize("weighted", [False, True])
def test_dst_scale_rides_in_the_spmm(kernels, reduce_op, weighted, monkeypatch):
    """``message_reduce(..., dst_scale=s)`` (GraphConv's right / both norm) equals the reduction
    times ``s`` per dst row, in values and gradients, on the numba kernel and the torch CSR path."""
    from bgl.dgl.ops import cpu_rows
    from bgl.dgl.ops.spmm import message_reduce

    monkeypatch.setattr(cpu_rows, "USE_KERNELS", kernels)
    gen = torch.Generator().manual_seed(6)
    x = torch.randn(5, 4, generator=gen)
    w = torch.rand(7, 1, generator=gen) if weighted else None
    scale = torch.rand(3, generator=gen) + 0.5
    upstream = torch.randn(3, 4, generator=gen)
    results = []
    for fused in (True, False):
        leaves = [x.clone().requires_grad_()] + ([w.clone().requires_grad_()] if weighted else [])
        rel = block()._relation(None)
        op = "mul" if weighted else "copy_lhs"
        if fused:
            out = message_reduce(rel, op, reduce_op, leaves[0], leaves[1] if weighted else None, dst_scale=scale)
        else:
            out = gspmm(block(), op, reduce_op, leaves[0], leaves[1] if weighted else None) * scale.unsqueeze(1)
        (out * upstream).sum().backward()
        results.append([out.detach(), *(t.grad for t in leaves)])
    for a, b in zip(*results):
        torch.testing.assert_close(a, b)


def test_dst_scale_refused_for_max():
    from bgl.dgl.ops.spmm import message_reduce

    with pytest.raises(bdgl.DGLError, match="dst_scale scales a sum or mean, not 'max'"):
        message_reduce(block()._relation(None), "copy_lhs", "max", torch.randn(5, 2), None, dst_scale=torch.ones(3))
