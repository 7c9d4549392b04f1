"""DGL's generalized SDDMM: one value per edge from its source, destination and edge features.

The result is E x F by nature; the backward pass keeps only the operands and the COO index
arrays (no gathered copies), a chunk of edges at a time (:mod:`.edge_map`).  ``add`` / ``sub`` of
two same-shape node operands on the CPU (GATv2's ``u_add_v``) has its own backward: each
operand's gradient is a sum of edge rows per node, i.e. the fused SpMM kernel over the cached CSR
(``u``) or CSC (``v``) reading edge rows, split over the CPU threads by rows (a scatter over
edges is one thread, since two edges may share a target row).
"""
from __future__ import annotations

from typing import Optional

import torch
from torch.autograd.function import once_differentiable

import numpy as np

from bgl.dgl.base import DGLError
from bgl.dgl.ops import cpu_alloc
from bgl.dgl.ops._kernels import spmm_weighted
from bgl.dgl.ops.cpu_rows import kernels_for, run_rows
from bgl.dgl.ops.edge_map import OPS, EdgeOpSum, edge_kernel, flat_rows
from bgl.dgl.ops.operands import Operands, check_rows
from bgl.dgl.relation import Relation

TARGETS = {"u": "u", "src": "u", "v": "v", "dst": "v", "e": "e", "edge": "e"}


def edge_message(rel: Relation, op: str, lhs: Optional[torch.Tensor], rhs: Optional[torch.Tensor],
                 lhs_target: str = "u", rhs_target: str = "v", eids: Optional[torch.Tensor] = None) -> torch.Tensor:
    """``op(lhs, rhs)`` for every edge (or only edges ``eids``), rows in edge-id order.

    Parameters
    ----------
    rel : the relation; op : add/sub/mul/div/dot/copy_lhs/copy_rhs
    lhs, rhs : tensors [rows, *feature] on ``"u"`` (source), ``"v"`` (destination) or ``"e"``
    eids : optional int tensor [k] of edges to compute (edge data is then read at those rows)

    Returns
    -------
    tensor [E or k, *broadcast feature shape]
    """
    if op not in OPS:
        raise DGLError(f"Binary operator {op!r} is not supported; use one of {OPS}.")
    lt, rt = TARGETS.get(lhs_target), TARGETS.get(rhs_target)
    if lt is None or rt is None:
        raise DGLError(f"Target must be one of u/v/e, got {lhs_target!r} and {rhs_target!r}.")
    src, dst = rel.coo()
    counts = {"u": rel.num_src, "v": rel.num_dst, "e": rel.num_edges}
    names = {"u": "source node", "v": "destination node", "e": "edge"}
    for data, target in ((lhs, lt), (rhs, rt)):
        if data is not None:
            check_rows(data, counts[target], names[target])
    if eids is None:
        index = {"u": src, "v": dst, "e": None}
        num = rel.num_edges
    else:
        eids = eids.to(src.device).long()
        index = {"u": src.index_select(0, eids), "v": dst.index_select(0, eids), "e": eids}
        num = int(eids.shape[0])
    ops = Operands(op, lhs, rhs)
    if eids is None and _node_add_sub(op, ops.lhs, ops.rhs, lt, rt):
        return ops.finish(NodeAddSub.apply(rel, op, lt, rt, ops.lhs, ops.rhs))
    out = EdgeOpSum.apply(op, ops.lhs, ops.rhs, index[lt], index[rt], None, num, 0, ops.out_shape)
    return ops.finish(out)


def _node_add_sub(op: str, lhs, rhs, lt: str, rt: str) -> bool:
    """Whether ``op(lhs, rhs)`` is what :class:`NodeAddSub` takes: add / sub of two same-shape CPU
    node operands (float32 / float64)."""
    return (op in ("add", "sub") and lt in ("u", "v") and rt in ("u", "v") and lhs is not None
            and rhs is not None and lhs.shape[1:] == rhs.shape[1:] and lhs.dtype == rhs.dtype
            and kernels_for(lhs) and kernels_for(rhs))


def sum_edge_rows(adj, rows: torch.Tensor, shape) -> torch.Tensor:
    """``out[r] = sum of rows[e]`` over the edges e of adjacency row r: ``shape`` [num_rows, *f]
    from ``rows`` [E, prod(f)].

    The fused SpMM kernel with the edge ids as its gathered "source" rows (positions that are
    edge ids already get an ``arange``).  Made in its final shape, not viewed into it: a gradient
    that is a view keeps its base alive through autograd's accumulation."""
    indptr, indices = adj.indptr.numpy(), adj.indices.numpy()
    positions = (np.arange(indices.shape[0], dtype=indices.dtype) if adj.eids is None
                 else adj.eids.numpy())
    out = cpu_alloc.empty(tuple(shape), rows.dtype)
    x = rows.numpy()
    run_rows(spmm_weighted, indptr, positions, np.empty(0, indices.dtype), x, np.empty((0, 1), x.dtype),
             np.empty(0, x.dtype), out.numpy().reshape(shape[0], rows.shape[1]))
    return out


class NodeAddSub(torch.autograd.Function):
    """``out[e] = lhs[end_l(e)] +/- rhs[end_r(e)]`` (ends: ``u`` source, ``v`` destination) on the
    CPU; backward sums the output gradient's edge rows per node (:func:`sum_edge_rows`), keeping
    nothing of the operands but their shapes."""

    @staticmethod
    def forward(ctx, rel: Relation, op: str, lt: str, rt: str, lhs, rhs):
        src, dst = rel.coo()
        ends = {"u": src, "v": dst}
        out = cpu_alloc.empty((rel.num_edges, *lhs.shape[1:]), lhs.dtype)
        edge_kernel(op, lhs, rhs, ends[lt], ends[rt], out)
        ctx.rel, ctx.op, ctx.targets, ctx.shapes = rel, op, (lt, rt), (lhs.shape, rhs.shape)
        return out

    @staticmethod
    @once_differentiable  # the backward runs numba / no-grad kernels: a second derivative is refused, not wrong
    def backward(ctx, grad):
        rel = ctx.rel
        rows = flat_rows(grad.contiguous())
        grads = []
        for i, (target, shape) in enumerate(zip(ctx.targets, ctx.shapes)):
            if not ctx.needs_input_grad[4 + i]:
                grads.append(None)
                continue
            summed = sum_edge_rows(rel.csr() if target == "u" else rel.csc(), rows, shape)
            grads.append(summed.neg_() if (i == 1 and ctx.op == "sub") else summed)
        return None, None, None, None, grads[0], grads[1]
