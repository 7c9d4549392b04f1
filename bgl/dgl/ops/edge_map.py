"""The autograd engine under every builtin: a binary op per edge, kept per edge or reduced per node.

Operands are node or edge tensors plus a per-edge index into them (``None``: the tensor is
already one row per edge, in edge-id order).  Messages are built a chunk of edges at a time
(``CHUNK_ELEMENTS`` values), so a reduction never holds an E x F message tensor, and backward
passes save only the operands and the index arrays, never a gathered copy: memory per edge is
that of DGL's fused kernels (the index arrays) plus one chunk.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np
import torch

from bgl.dgl.ops import cpu_alloc
from bgl.dgl.ops._kernels import edge_binary, scatter_add_rows
from bgl.dgl.ops.cpu_rows import kernels_for, run_edges

CHUNK_ELEMENTS = 1 << 20  # values per message chunk: 4 MiB of float32

OPS = ("add", "sub", "mul", "div", "dot", "copy_lhs", "copy_rhs")


def _rows(data: Optional[torch.Tensor], index: Optional[torch.Tensor], start: int, stop: int):
    if data is None:
        return None
    if index is None:
        return data[start:stop]
    return data.index_select(0, index[start:stop])


def apply_op(op: str, a, b):
    """``a <op> b`` on broadcast-ready rows (``dot``: over the last dimension, kept as size 1)."""
    if op == "copy_lhs":
        return a
    if op == "copy_rhs":
        return b
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if op == "div":
        return a / b
    return (a * b).sum(-1, keepdim=True)


def op_grads(op: str, grad, a, b):
    """(d out / d a, d out / d b) times ``grad``, each still in the broadcast output shape."""
    if op == "copy_lhs":
        return grad, None
    if op == "copy_rhs":
        return None, grad
    if op == "add":
        return grad, grad
    if op == "sub":
        return grad, -grad
    if op == "mul" or op == "dot":
        return grad * b, grad * a
    return grad / b, -grad * a / (b * b)


def sum_to(grad: torch.Tensor, shape) -> torch.Tensor:
    """Sum ``grad`` [n, *out] over the feature dims that ``shape`` [n, *in] broadcast (size 1)."""
    dims = [d for d in range(1, grad.dim()) if shape[d] == 1 and grad.shape[d] != 1]
    return grad.sum(dims, keepdim=True) if dims else grad


def _chunk(feature_shape) -> int:
    per_row = 1
    for s in feature_shape:
        per_row *= max(int(s), 1)
    return max(1, CHUNK_ELEMENTS // per_row)


def reshaped(t: torch.Tensor, shape) -> torch.Tensor:
    """``t.reshape(shape)``, but ``t`` itself when it has that shape already.

    Not a no-op for memory: with a same-shape view around the SpMM, autograd summed a block's two
    ``feat`` gradients (the SpMM's and the dst slice's) into a third tensor, +1 x feat at the peak
    (GINConv on a PubMed block: 1.29x DGL's peak; 1.0x without the views)."""
    return t if tuple(t.shape) == tuple(shape) else t.reshape(shape)


def flat_rows(t: torch.Tensor) -> torch.Tensor:
    """``t`` [n, *f] as [n, prod(f)], the numba kernels' layout (a view when ``t`` is contiguous,
    ``t`` itself when it is 2-D).  The width is spelled out because ``reshape(n, -1)`` is ambiguous
    when ``n`` is 0: a graph without edges, or a block without source nodes."""
    return reshaped(t, (t.shape[0], math.prod(t.shape[1:])))


def index_add(target: torch.Tensor, index: torch.Tensor, rows: torch.Tensor) -> None:
    """``target.index_add_(0, index, rows)``; on the CPU (float32 / float64) the numba loop."""
    if kernels_for(target) and target.is_contiguous() and rows.dtype == target.dtype:
        scatter_add_rows(index.numpy(), flat_rows(rows.detach().contiguous()).numpy(), flat_rows(target).numpy())
    else:
        target.index_add_(0, index, rows)


def _scatter_rows(target, index, start, stop, rows):
    if index is None:
        target[start:stop] += rows
    else:
        index_add(target, index[start:stop], rows)


_OP_CODES = {"add": 0, "sub": 1, "mul": 2, "div": 3, "dot": 4}
_NO_INDEX = {}


def _index_array(index):
    if index is not None:
        return index.numpy()
    return _NO_INDEX.setdefault("empty", np.empty(0, np.int64))


def edge_kernel(op, lhs, rhs, li, ri, out) -> bool:
    """SDDMM of two same-shape CPU operands in one numba pass over the edges (what GAT's
    ``u_add_v`` and link prediction's ``u_dot_v`` are); False when the pair needs broadcasting."""
    if op not in _OP_CODES or lhs is None or rhs is None or lhs.shape[1:] != rhs.shape[1:] \
            or not kernels_for(out) or lhs.dtype != out.dtype or rhs.dtype != out.dtype:
        return False
    lhs2 = flat_rows(lhs.detach().contiguous())
    rhs2 = flat_rows(rhs.detach().contiguous())
    run_edges(edge_binary, out.shape[0], _index_array(li), _index_array(ri), lhs2.numpy(), rhs2.numpy(),
              _OP_CODES[op], flat_rows(out).numpy())
    return True


_READS_OPERANDS = ("mul", "div", "dot")  # the ops whose gradients read lhs / rhs


def _zeros_like_saved(saved) -> torch.Tensor:
    shape, dtype, device = saved
    return torch.zeros(shape, dtype=dtype, device=device)


class EdgeOpSum(torch.autograd.Function):
    """``out[e] = op(lhs[li[e]], rhs[ri[e]])`` (``dst`` None: one row per edge, DGL's SDDMM) or
    ``out[v] = sum over e with dst[e] = v`` of it (DGL's SpMM with ``sum``)."""

    @staticmethod
    def forward(ctx, op, lhs, rhs, li, ri, dst, num_edges, num_out, out_shape):
        ref = lhs if lhs is not None else rhs
        rows = num_edges if dst is None else num_out
        out = (cpu_alloc.empty if dst is None else cpu_alloc.zeros)((rows, *out_shape), ref.dtype, ref.device)
        # add / sub / copy gradients never read the operands: keep only their shapes, not the
        # tensors (GATv2's u_add_v would otherwise hold fc_dst's whole output until backward)
        reads = op in _READS_OPERANDS
        ctx.save_for_backward(lhs if reads else None, rhs if reads else None, li, ri, dst)
        ctx.shapes = [None if t is None else (t.shape, t.dtype, t.device) for t in (lhs, rhs)]
        ctx.op, ctx.num_edges = op, num_edges
        if dst is None and edge_kernel(op, lhs, rhs, li, ri, out):
            return out
        step = _chunk(out_shape)
        for start in range(0, num_edges, step):
            stop = min(start + step, num_edges)
            msg = apply_op(op, _rows(lhs, li, start, stop), _rows(rhs, ri, start, stop))
            if dst is None:
                out[start:stop] = msg
            else:
                index_add(out, dst[start:stop], msg.expand(stop - start, *out_shape))
        return out

    @staticmethod
    def backward(ctx, grad_out):
        lhs, rhs, li, ri, dst = ctx.saved_tensors
        op, num_edges = ctx.op, ctx.num_edges
        (lhs_shape, rhs_shape) = (None if s is None else s[0] for s in ctx.shapes)
        want_l = lhs_shape is not None and ctx.needs_input_grad[1]
        want_r = rhs_shape is not None and ctx.needs_input_grad[2]
        grad_l = _zeros_like_saved(ctx.shapes[0]) if want_l else None
        grad_r = _zeros_like_saved(ctx.shapes[1]) if want_r else None
        step = _chunk(grad_out.shape[1:])
        for start in range(0, num_edges if (want_l or want_r) else 0, step):
            stop = min(start + step, num_edges)
            g = grad_out[start:stop] if dst is None else grad_out.index_select(0, dst[start:stop])
            ga, gb = op_grads(op, g, _rows(lhs, li, start, stop), _rows(rhs, ri, start, stop))
            if want_l:
                _scatter_rows(grad_l, li, start, stop, sum_to(ga, (0, *lhs_shape[1:])))
            if want_r:
                _scatter_rows(grad_r, ri, start, stop, sum_to(gb, (0, *rhs_shape[1:])))
        return None, grad_l, grad_r, None, None, None, None, None, None


class EdgeOpCompare(torch.autograd.Function):
    """``out[v] = max`` (or ``min``) over the in-edges of ``v`` of ``op(lhs, rhs)``, ``-inf`` /
    ``inf`` where ``v`` has none (as DGL's ``gspmm``); the gradient goes to the edge reaching the
    extreme, per feature; among tied edges the last in edge-id order when ``last_wins``, else the
    first (as DGL picks it: :mod:`.ties`)."""

    @staticmethod
    def forward(ctx, op, reduce_op, lhs, rhs, li, ri, dst, num_edges, num_out, out_shape, last_wins=True):
        ref = lhs if lhs is not None else rhs
        fill = float("-inf") if reduce_op == "max" else float("inf")
        out = torch.full((num_out, *out_shape), fill, dtype=ref.dtype, device=ref.device)
        how = "amax" if reduce_op == "max" else "amin"
        step = _chunk(out_shape)
        view = (-1,) + (1,) * len(out_shape)
        for start in range(0, num_edges, step):
            stop = min(start + step, num_edges)
            msg = apply_op(op, _rows(lhs, li, start, stop), _rows(rhs, ri, start, stop)).expand(stop - start, *out_shape)
            where = dst[start:stop].long().view(view).expand_as(msg)
            out.scatter_reduce_(0, where, msg, how, include_self=True)
        # the tied positions reduced by amax (last) or by amin with a fill past every edge (first)
        none = -1 if last_wins else num_edges
        arg = torch.full((num_out, *out_shape), none, dtype=torch.int64, device=ref.device)
        for start in range(0, num_edges, step):
            stop = min(start + step, num_edges)
            msg = apply_op(op, _rows(lhs, li, start, stop), _rows(rhs, ri, start, stop)).expand(stop - start, *out_shape)
            rows = dst[start:stop].long()
            hit = msg == out.index_select(0, rows)
            pos = torch.arange(start, stop, device=ref.device).view(view).expand_as(msg)
            pos = torch.where(hit, pos, torch.full_like(pos, none))
            arg.scatter_reduce_(0, rows.view(view).expand_as(msg), pos, "amax" if last_wins else "amin",
                                include_self=True)
        if not last_wins:
            arg.masked_fill_(arg == num_edges, -1)
        ctx.save_for_backward(lhs, rhs, li, ri, arg)
        ctx.op, ctx.num_edges = op, num_edges
        return out

    @staticmethod
    def backward(ctx, grad_out):
        lhs, rhs, li, ri, arg = ctx.saved_tensors
        op, num_edges = ctx.op, ctx.num_edges
        if num_edges == 0:  # no edge reached an output: nothing to gather the arg edges from
            zero = [None if t is None or not ctx.needs_input_grad[i] else torch.zeros_like(t)
                    for t, i in ((lhs, 2), (rhs, 3))]
            return None, None, zero[0], zero[1], None, None, None, None, None, None, None
        reached = arg >= 0
        edge = arg.clamp(min=0)
        grad = grad_out * reached
        if op == "dot":  # the extreme is per output value; the operands' last dim is summed into it
            edge = edge.expand(*edge.shape[:-1], lhs.shape[-1])

        def at(data, index):
            if data is None:
                return None, None
            rows = edge if index is None else index.long()[edge.flatten()].view(edge.shape)
            return data.expand(data.shape[0], *edge.shape[1:]).gather(0, rows), rows

        (a, rows_l), (b, rows_r) = at(lhs, li), at(rhs, ri)
        ga, gb = op_grads(op, grad, a, b)
        grads = []
        for data, g, rows, i in ((lhs, ga, rows_l, 2), (rhs, gb, rows_r, 3)):
            if data is None or not ctx.needs_input_grad[i]:
                grads.append(None)
                continue
            full = torch.zeros((data.shape[0], *edge.shape[1:]), dtype=g.dtype, device=g.device)
            full.scatter_add_(0, rows, g)
            grads.append(sum_to(full, data.shape))
        return None, None, grads[0], grads[1], None, None, None, None, None, None, None
