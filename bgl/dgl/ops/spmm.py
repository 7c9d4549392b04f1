"""DGL's generalized SpMM: a message per edge reduced over each destination's in-edges.

``copy_u`` and ``u_mul_e`` with one weight per edge (or per edge and head, as GAT's attention)
reduced by ``sum`` / ``mean`` run as a CSR sparse-dense matmul over the relation's cached CSC
(backward: the cached CSR), never gathering an E x F tensor.  Every other pair runs through
:mod:`.edge_map`, a chunk of edges at a time.
"""
from __future__ import annotations

import warnings
from typing import Optional

import torch

from bgl.dgl.base import DGLError
from bgl.dgl.ops.edge_map import EdgeOpCompare, EdgeOpSum
from bgl.dgl.ops.operands import Operands, check_rows
from bgl.dgl.relation import Relation

REDUCERS = ("sum", "mean", "max", "min")
SPMM_OPS = ("add", "sub", "mul", "div", "copy_lhs", "copy_rhs")


def _sparse(adj, values: torch.Tensor, shape) -> torch.Tensor:
    with warnings.catch_warnings():  # torch calls its CSR support "beta" on every construction
        warnings.simplefilter("ignore", UserWarning)
        return torch.sparse_csr_tensor(adj.indptr, adj.indices, values, shape)


def _weights(adj, w: Optional[torch.Tensor], like: torch.Tensor) -> torch.Tensor:
    if w is None:
        return torch.ones(adj.indices.shape[0], dtype=like.dtype, device=like.device)
    return w if adj.eids is None else w.index_select(0, adj.eids)


class WeightedSpmm(torch.autograd.Function):
    """``out[v] = sum over in-edges e = (u, v) of w[e] * x[u]`` (``w`` None: all ones), x [N, F]."""

    @staticmethod
    def forward(ctx, rel: Relation, x, w):
        csc = rel.csc()
        out = _sparse(csc, _weights(csc, w, x), (rel.num_dst, rel.num_src)) @ x
        ctx.rel = rel
        ctx.save_for_backward(x, w)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        rel = ctx.rel
        grad_x = grad_w = None
        if ctx.needs_input_grad[1]:
            csr = rel.csr()
            grad_x = _sparse(csr, _weights(csr, w, x), (rel.num_src, rel.num_dst)) @ grad.contiguous()
        if w is not None and ctx.needs_input_grad[2]:
            src, dst = rel.coo()
            grad_w = EdgeOpSum.apply("dot", x.detach(), grad.detach(), src, dst, None, rel.num_edges, 0,
                                     (1,)).squeeze(-1)
        return None, grad_x, grad_w


def _fused(rel: Relation, op: str, lhs, rhs) -> Optional[torch.Tensor]:
    """The SpMM result when the pair maps onto :class:`WeightedSpmm`, else None."""
    if op == "copy_lhs":
        n = lhs.shape[0]
        return WeightedSpmm.apply(rel, lhs.reshape(n, -1), None).view(rel.num_dst, *lhs.shape[1:])
    if op != "mul" or lhs.shape[1:] == rhs.shape[1:]:
        return None
    n, e = lhs.shape[0], rhs.shape[0]
    if rhs[0].numel() == 1:  # one weight per edge
        return WeightedSpmm.apply(rel, lhs.reshape(n, -1), rhs.reshape(e)).view(rel.num_dst, *lhs.shape[1:])
    if lhs.dim() >= 3 and rhs.shape[1] == lhs.shape[1] and rhs[0, 0].numel() == 1:  # one weight per head
        heads = [WeightedSpmm.apply(rel, lhs[:, h].reshape(n, -1), rhs[:, h].reshape(e))
                 for h in range(lhs.shape[1])]
        return torch.stack(heads, 1).view(rel.num_dst, *lhs.shape[1:])
    return None


def message_reduce(rel: Relation, op: str, reduce_op: str, lhs: Optional[torch.Tensor],
                   rhs: Optional[torch.Tensor], lhs_target: str = "u", rhs_target: str = "e") -> torch.Tensor:
    """Reduce ``op(lhs, rhs)`` over the in-edges of every destination node.

    Parameters
    ----------
    rel : the relation; op : one of add/sub/mul/div/dot/copy_lhs/copy_rhs
    reduce_op : sum / mean / max / min (max / min give -inf / inf where a node has no in-edge)
    lhs, rhs : float tensors [rows, *feature] read per edge from its source (``"u"``), destination
        (``"v"``) or the edge itself (``"e"``, rows in edge-id order); None when the op skips it
    Returns
    -------
    tensor [num_dst, *broadcast feature shape]
    """
    if reduce_op not in REDUCERS:
        raise DGLError(f"Reduce operator {reduce_op!r} is not supported; use one of {REDUCERS}.")
    src, dst = rel.coo()
    counts = {"u": rel.num_src, "v": rel.num_dst, "e": rel.num_edges}
    index = {"u": src, "v": dst, "e": None}
    names = {"u": "source node", "v": "destination node", "e": "edge"}
    for data, target in ((lhs, lhs_target), (rhs, rhs_target)):
        if data is not None:
            check_rows(data, counts[target], names[target])
    ops = Operands(op, lhs, rhs)
    out = None
    if reduce_op in ("sum", "mean") and lhs_target == "u" and (rhs is None or rhs_target == "e"):
        out = _fused(rel, op, ops.lhs, ops.rhs)
    if out is None and reduce_op in ("sum", "mean"):
        out = EdgeOpSum.apply(op, ops.lhs, ops.rhs, index[lhs_target], index[rhs_target], dst,
                              rel.num_edges, rel.num_dst, ops.out_shape)
    elif out is None:
        out = EdgeOpCompare.apply(op, reduce_op, ops.lhs, ops.rhs, index[lhs_target], index[rhs_target], dst,
                                  rel.num_edges, rel.num_dst, ops.out_shape)
    if reduce_op == "mean":
        deg = rel.in_degrees().clamp(min=1).to(out.dtype)
        out = out / deg.view(-1, *(1,) * (out.dim() - 1))
    return ops.finish(out)
