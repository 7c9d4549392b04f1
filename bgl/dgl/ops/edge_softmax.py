"""DGL's ``edge_softmax``: softmax of edge scores over each node's in-edges (or out-edges).

Numerically stable (the group max is subtracted first).  On the CPU one numba pass over the
cached CSC (CSR for ``norm_by="src"``); elsewhere torch scatter ops over the COO.  The backward
pass keeps only the output (and the group index): ``grad_x = y * (grad_y - sum over the group of y * grad_y)``, as DGL's.
Memory: the output (E x H) plus two group-sized tensors, nothing else per edge.
"""
from __future__ import annotations

import torch

from bgl.dgl.base import DGLError, is_all
from bgl.dgl.ops import cpu_alloc
from bgl.dgl.ops._kernels import segment_softmax, segment_softmax_backward
from bgl.dgl.ops.cpu_rows import adjacency_arrays, kernels_for, run_rows
from bgl.dgl.ops.edge_map import flat_rows


def _group_sum(values: torch.Tensor, group: torch.Tensor, num_groups: int) -> torch.Tensor:
    out = torch.zeros((num_groups, *values.shape[1:]), dtype=values.dtype, device=values.device)
    return out.index_add_(0, group, values)


class _EdgeSoftmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, group, num_groups):
        where = group.long().view(-1, *(1,) * (logits.dim() - 1)).expand_as(logits)
        peak = torch.full((num_groups, *logits.shape[1:]), float("-inf"), dtype=logits.dtype, device=logits.device)
        peak.scatter_reduce_(0, where, logits, "amax", include_self=True)
        out = torch.exp(logits - peak.index_select(0, group))
        out = out / _group_sum(out, group, num_groups).index_select(0, group)
        ctx.save_for_backward(out, group)
        ctx.num_groups = num_groups
        return out

    @staticmethod
    def backward(ctx, grad):
        out, group = ctx.saved_tensors
        weighted = out * grad
        return weighted - out * _group_sum(weighted, group, ctx.num_groups).index_select(0, group), None, None


class _CpuEdgeSoftmax(torch.autograd.Function):
    """The CPU path: one numba pass per row of the CSC (CSR for ``norm_by="src"``), no COO."""

    @staticmethod
    def forward(ctx, adj, logits):
        out = cpu_alloc.empty(logits.shape, logits.dtype)
        indptr, _, eids = adjacency_arrays(adj)
        run_rows(segment_softmax, indptr, eids, logits.detach().contiguous().numpy(), out.numpy())
        ctx.adj = adj
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        grad_in = cpu_alloc.empty(out.shape, out.dtype)
        indptr, _, eids = adjacency_arrays(ctx.adj)
        run_rows(segment_softmax_backward, indptr, eids, out.numpy(), grad.contiguous().numpy(), grad_in.numpy())
        return None, grad_in


def edge_softmax(graph, logits, eids=None, norm_by="dst"):
    """Softmax of ``logits`` over the edges that share a destination (``norm_by="dst"``) or a
    source (``"src"``).

    Parameters
    ----------
    graph : a one-relation :class:`bgl.dgl.DGLGraph` (or block), or a typed one with ``logits``
        a dict keyed by canonical edge type (normalised across the relations into a node)
    logits : float tensor [E, *] (rows in edge-id order), or [len(eids), *] with ``eids``
    eids : optional int tensor of the edges the logits belong to (default: all edges)
    norm_by : ``"dst"`` or ``"src"``

    Returns
    -------
    tensor shaped like ``logits``
    """
    if norm_by not in ("dst", "src"):
        raise DGLError(f'norm_by must be "dst" or "src", got {norm_by!r}.')
    if isinstance(logits, dict):
        return _typed_edge_softmax(graph, logits, norm_by)
    rel = graph._relation(None)
    if is_all(eids) and kernels_for(logits) and logits.shape[0] == rel.num_edges:
        adj = rel.csc() if norm_by == "dst" else rel.csr()
        return _CpuEdgeSoftmax.apply(adj, flat_rows(logits.contiguous())).view(logits.shape)
    src, dst = rel.coo()
    group, num_groups = (dst, rel.num_dst) if norm_by == "dst" else (src, rel.num_src)
    if not is_all(eids):
        group = group.index_select(0, torch.as_tensor(eids, device=group.device).long())
    if logits.shape[0] != group.shape[0]:
        raise DGLError(f"edge_softmax expects {group.shape[0]} logits (one per edge), got {logits.shape[0]}.")
    return _EdgeSoftmax.apply(logits, group.long(), num_groups)


def _typed_edge_softmax(graph, logits: dict, norm_by: str) -> dict:
    """Relations concatenated into one group space per node type, then one softmax."""
    offsets, groups, order, total = {}, [], [], 0
    side = 2 if norm_by == "dst" else 0
    for key in logits:
        cet = graph.to_canonical_etype(key)
        ntype = cet[side]
        if ntype not in offsets:
            offsets[ntype] = total
            total += graph.num_dst_nodes(ntype) if norm_by == "dst" else graph.num_src_nodes(ntype)
        src, dst = graph._relation(cet).coo()
        groups.append((dst if norm_by == "dst" else src).long() + offsets[ntype])
        order.append(key)
    sizes = [logits[k].shape[0] for k in order]
    out = _EdgeSoftmax.apply(torch.cat([logits[k] for k in order]), torch.cat(groups), total)
    return dict(zip(order, torch.split(out, sizes)))
