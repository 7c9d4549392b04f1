"""DGL's generalized SpMM: a message per edge reduced over each destination's in-edges.

``copy_u`` and ``u_mul_e`` with one weight per edge (or per edge and head, as GAT's attention)
reduced by ``sum`` / ``mean`` are one fused SpMM over the relation's cached CSC (backward: the
cached CSR), and ``copy_u`` / ``copy_e`` with ``max`` / ``min`` one pass that also records the
arg edge: numba kernels on the CPU (:mod:`._kernels`), torch's CSR matmul on a GPU.  Neither
gathers an E x F tensor.  Every other pair runs through :mod:`.edge_map`, a chunk of edges at
a time.
"""
from __future__ import annotations

import warnings
from typing import Optional

import numpy as np
import torch

from bgl.dgl.base import DGLError
from bgl.dgl.ops._kernels import edge_head_dot, scatter_arg_grad, spmm_extreme, spmm_weighted
from bgl.dgl.ops import cpu_alloc, cpu_rows, ties
from bgl.dgl.ops.cpu_rows import adjacency_arrays, kernels_for, run_rows
from bgl.dgl.ops.edge_map import EdgeOpCompare, EdgeOpSum, flat_rows, reshaped
from bgl.dgl.ops.operands import Operands, check_rows
from bgl.dgl.relation import Relation

REDUCERS = ("sum", "mean", "max", "min")

SPMM_OPS = ("add", "sub", "mul", "div", "copy_lhs", "copy_rhs")


def _sparse(adj, values: torch.Tensor, shape) -> torch.Tensor:
    with warnings.catch_warnings():  # torch calls its CSR support "beta" on every construction
        warnings.simplefilter("ignore", UserWarning)
        # torch wants one index dtype; a bgl block may pair an int64 indptr with int32 indices
        return torch.sparse_csr_tensor(adj.indptr.to(adj.indices.dtype), adj.indices, values, shape)


def _weights(adj, w: Optional[torch.Tensor], like: torch.Tensor) -> torch.Tensor:
    if w is None:
        return torch.ones(adj.indices.shape[0], dtype=like.dtype, device=like.device)
    return w if adj.eids is None else w.index_select(0, adj.eids)


def _torch_spmm(adj, x, w, shape) -> torch.Tensor:
    """The GPU path: one sparse-dense matmul per weight column (head)."""
    if w is None or w.shape[1] == 1:
        return _sparse(adj, _weights(adj, None if w is None else w[:, 0], x), shape) @ x
    heads = w.shape[1]
    parts = x.view(x.shape[0], heads, -1)
    return torch.stack([_sparse(adj, _weights(adj, w[:, h], x), shape) @ parts[:, h] for h in range(heads)],
                       1).reshape(shape[0], -1)


def _cpu_spmm(adj, x, w, rows, scale: Optional[torch.Tensor] = None) -> torch.Tensor:
    out = cpu_alloc.empty((rows, x.shape[1]), x.dtype)  # the kernel writes every row
    xn = x.detach().contiguous().numpy()
    wn = np.empty((0, 1), xn.dtype) if w is None else w.detach().contiguous().numpy()
    sn = np.empty(0, xn.dtype) if scale is None else scale.numpy()
    run_rows(spmm_weighted, *adjacency_arrays(adj), xn, wn, sn, out.numpy())
    return out


def _mean_scale(rel: Relation, like: torch.Tensor) -> torch.Tensor:
    """1 / in-degree per dst node (1 where a node has none: its mean is 0), [num_dst] of ``like``'s dtype."""
    return rel.in_degrees().clamp(min=1).to(device=like.device, dtype=like.dtype).reciprocal_()


class WeightedSpmm(torch.autograd.Function):
    """``out[v, f] = sum over in-edges e = (u, v) of w[e, head(f)] * x[u, f]``: x [N, F], w [E, H]
    (H divides F; H = 1: one weight per edge) or None (all ones); ``scale`` [num_dst] or None:
    row v multiplied by ``scale[v]`` (mean's 1 / in-degree, GraphConv's degree norm) in the
    kernel's store, not a pass of its own.  CPU: the numba kernel over the CSC
    (backward: over the CSR); GPU: torch's CSR matmul."""

    @staticmethod
    def forward(ctx, rel: Relation, x, w, scale: Optional[torch.Tensor] = None):
        csc = rel.csc()
        if scale is not None:
            scale = scale.detach().to(dtype=x.dtype).contiguous()  # a constant: no gradient flows into it
        if kernels_for(x):
            out = _cpu_spmm(csc, x, w, rel.num_dst, scale)
        else:
            out = _torch_spmm(csc, x, w, (rel.num_dst, rel.num_src))
            if scale is not None:
                out.mul_(scale.view(-1, 1))
        ctx.rel = rel
        ctx.save_for_backward(x, w, scale)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, w, scale = ctx.saved_tensors
        rel = ctx.rel
        # scaled: out = scale * spmm, so both gradients read grad * scale (a [num_dst, F] pass)
        grad = grad.contiguous() if scale is None else grad * scale.view(-1, 1)
        grad_x = grad_w = None
        if ctx.needs_input_grad[1]:
            csr = rel.csr()
            if kernels_for(x):
                grad_x = _cpu_spmm(csr, grad, w, rel.num_src)
            else:
                grad_x = _torch_spmm(csr, grad, w, (rel.num_src, rel.num_dst))
        if w is not None and ctx.needs_input_grad[2]:
            heads = w.shape[1]
            if kernels_for(x):
                grad_w = cpu_alloc.empty((rel.num_edges, heads), w.dtype)
                run_rows(edge_head_dot, *adjacency_arrays(rel.csc()), grad.numpy(),
                         x.detach().contiguous().numpy(), grad_w.numpy())
            else:
                src, dst = rel.coo()
                grad_w = EdgeOpSum.apply("dot", x.detach().view(x.shape[0], heads, -1),
                                         grad.view(grad.shape[0], heads, -1), src, dst, None, rel.num_edges, 0,
                                         (heads, 1)).view(rel.num_edges, heads)
        return None, grad_x, grad_w, None


class SpmmExtreme(torch.autograd.Function):
    """Max / min of ``x[src]`` (``by_edge``: of ``x[edge]``) over each dst node's in-edges on the
    CPU, one kernel pass; the gradient goes to the row each extreme came from, as DGL's (of tied
    edges the last when ``last_wins``, else the first: :func:`.ties.last_wins`)."""

    @staticmethod
    def forward(ctx, rel: Relation, by_edge: bool, take_max: bool, last_wins: bool, x):
        fill = float("-inf") if take_max else float("inf")
        out = cpu_alloc.full((rel.num_dst, x.shape[1]), fill, x.dtype)
        # the x row of each extreme: int32 while x's rows fit (DGL keeps int64), 4 B per output value
        arg = cpu_alloc.full((rel.num_dst, x.shape[1]), -1, torch.int32 if x.shape[0] < 2**31 else torch.int64)
        run_rows(spmm_extreme, *adjacency_arrays(rel.csc()), by_edge, x.detach().contiguous().numpy(), take_max,
                 last_wins, out.numpy(), arg.numpy())
        ctx.save_for_backward(arg)
        ctx.rows = x.shape[0]
        return out

    @staticmethod
    def backward(ctx, grad):
        (arg,) = ctx.saved_tensors
        grad_x = cpu_alloc.zeros((ctx.rows, grad.shape[1]), grad.dtype)
        scatter_arg_grad(arg.numpy(), grad.contiguous().numpy(), grad_x.numpy())
        return None, None, None, None, grad_x


def _fused(rel: Relation, op: str, lhs, rhs, scale: Optional[torch.Tensor]) -> Optional[torch.Tensor]:
    """The SpMM result (rows times ``scale`` [num_dst] when given) when the pair maps onto
    :class:`WeightedSpmm`, else None."""
    if op not in ("copy_lhs", "mul"):
        return None
    if lhs.device.type == "cpu" and not kernels_for(lhs) and cpu_rows.USE_KERNELS:
        return None  # CPU half types: torch's CSR matmul has no CPU kernel for them
    if op == "copy_lhs":
        w = None
    elif op == "mul" and rel.num_edges and lhs.shape[1:] != rhs.shape[1:]:
        e = rhs.shape[0]
        if rhs[0].numel() == 1:  # one weight per edge
            w = reshaped(rhs, (e, 1))
        elif lhs.dim() >= 3 and rhs.shape[1] == lhs.shape[1] and rhs[0, 0].numel() == 1:  # one per head
            w = reshaped(rhs, (e, lhs.shape[1]))
        else:
            return None
    else:
        return None
    return reshaped(WeightedSpmm.apply(rel, flat_rows(lhs), w, scale), (rel.num_dst, *lhs.shape[1:]))


def _extreme(rel: Relation, op: str, reduce_op: str, lhs, rhs, lhs_target: str,
             last_wins: bool) -> Optional[torch.Tensor]:
    """``copy_u`` / ``copy_e`` with max / min on the CPU through :class:`SpmmExtreme`, else None."""
    data = lhs if op == "copy_lhs" else rhs
    if op not in ("copy_lhs", "copy_rhs") or (op == "copy_lhs" and lhs_target != "u") or not kernels_for(data):
        return None
    out = SpmmExtreme.apply(rel, op == "copy_rhs", reduce_op == "max", last_wins, flat_rows(data))
    return reshaped(out, (rel.num_dst, *data.shape[1:]))


def message_reduce(rel: Relation, op: str, reduce_op: str, lhs: Optional[torch.Tensor],
                   rhs: Optional[torch.Tensor], lhs_target: str = "u", rhs_target: str = "e",
                   dst_scale: Optional[torch.Tensor] = None, typed: bool = False) -> torch.Tensor:
    """Reduce ``op(lhs, rhs)`` over the in-edges of every destination node.

    Parameters
    ----------
    rel : the relation; op : one of add/sub/mul/div/dot/copy_lhs/copy_rhs
    reduce_op : sum / mean / max / min (max / min give -inf / inf where a node has no in-edge)
    lhs, rhs : float tensors [rows, *feature] read per edge from its source (``"u"``), destination
        (``"v"``) or the edge itself (``"e"``, rows in edge-id order); None when the op skips it
    dst_scale : float [num_dst] constant multiplying each destination's ``sum`` / ``mean`` (no
        gradient; GraphConv's degree norm), fused into the SpMM's store where the pair is fused
    typed : one relation of a heterograph's ``update_all`` over several relations (DGL's typed
        kernel: a max / min tie goes to the first edge; :mod:`.ties`)
    Returns
    -------
    tensor [num_dst, *broadcast feature shape]
    """
    if reduce_op not in REDUCERS:
        raise DGLError(f"Reduce operator {reduce_op!r} is not supported; use one of {REDUCERS}.")
    counts = {"u": rel.num_src, "v": rel.num_dst, "e": rel.num_edges}
    names = {"u": "source node", "v": "destination node", "e": "edge"}
    for data, target in ((lhs, lhs_target), (rhs, rhs_target)):
        if data is not None:
            check_rows(data, counts[target], names[target])
    ops = Operands(op, lhs, rhs)
    if dst_scale is not None and reduce_op not in ("sum", "mean"):
        raise DGLError(f"dst_scale scales a sum or mean, not {reduce_op!r}")
    out = None
    if reduce_op in ("sum", "mean") and lhs_target == "u" and (rhs is None or rhs_target == "e"):
        scale = dst_scale
        if reduce_op == "mean":
            mean = _mean_scale(rel, ops.lhs if ops.lhs is not None else ops.rhs)
            scale = mean if scale is None else mean * scale.to(mean)
        out = _fused(rel, op, ops.lhs, ops.rhs, scale)
        if out is not None:
            return ops.finish(out)
    if reduce_op in ("max", "min"):
        ref = ops.lhs if ops.lhs is not None else ops.rhs
        # DGL fuses only copy_u / copy_e and u_<op>_e into its SpMM; any other message (u_add_v, e_add_u,
        # u_dot_e, ...) it computes on the edges first and then reduces with copy_e, which never broadcasts
        broadcasts = (op not in ("copy_lhs", "copy_rhs", "dot") and (lhs_target, rhs_target) == ("u", "e")
                      and ops.lhs.shape[1:] != ops.rhs.shape[1:])
        last = ties.last_wins(ref.dtype, ref.device, broadcasts, typed)
        out = _extreme(rel, op, reduce_op, ops.lhs, ops.rhs, lhs_target, last)
    if out is None:  # the unfused path reads the COO (built now if the relation had only its CSC)
        src, dst = rel.coo()
        index = {"u": src, "v": dst, "e": None}
    if out is None and reduce_op in ("sum", "mean"):
        out = EdgeOpSum.apply(op, ops.lhs, ops.rhs, index[lhs_target], index[rhs_target], dst,
                              rel.num_edges, rel.num_dst, ops.out_shape)
    elif out is None and reduce_op in ("max", "min"):
        out = EdgeOpCompare.apply(op, reduce_op, ops.lhs, ops.rhs, index[lhs_target], index[rhs_target], dst,
                                  rel.num_edges, rel.num_dst, ops.out_shape, last)
    if reduce_op == "mean":
        deg = rel.in_degrees().clamp(min=1).to(out.dtype)
        out = out / deg.view(-1, *(1,) * (out.dim() - 1))
    if dst_scale is not None:
        out = out * dst_scale.detach().to(out.dtype).view(-1, *(1,) * (out.dim() - 1))
    return ops.finish(out)
