"""DGL's ``dgl.topk_nodes`` / ``dgl.topk_edges``: each graph of a batch's ``k`` largest (or smallest) node / edge
features.

One padded [batch, max(len, k), D] tensor (graphs shorter than ``k`` padded with -inf / inf, reported as 0, as
DGL pads) and one ``argsort`` / ``topk`` over it: 4 B x D per slot of the padded batch beyond the input.
"""
from __future__ import annotations

import torch

from bgl.dgl.base import DGLError
from bgl.dgl.heterograph import DGLGraph


def _padded(values: torch.Tensor, counts: torch.Tensor, fill: float, length: int) -> torch.Tensor:
    """[B, length, D]: graph b's rows first in row b, ``fill`` after."""
    batch = counts.shape[0]
    out = values.new_full((batch, length) + tuple(values.shape[1:]), fill)
    graph_of = torch.repeat_interleave(torch.arange(batch, device=values.device), counts)
    starts = torch.cumsum(counts, 0) - counts
    slot = torch.arange(values.shape[0], device=values.device) - starts[graph_of]
    out[graph_of, slot] = values
    return out


def _topk(graph: DGLGraph, kind: str, feat: str, k: int, descending: bool, sortby, type_name):
    frame = (graph.nodes if kind == "nodes" else graph.edges)[type_name].data
    values = frame[feat]
    if values.dim() > 2:
        raise DGLError(f"Only support {kind} feature `{feat}` with dimension less than or equal to 2")
    if values.dim() < 2:  # DGL's own gather breaks on a 1-D field (a shape error): ask for [N, D]
        raise DGLError(f"topk_{kind} needs a 2-D {kind} feature `{feat}` [N, D], got shape {tuple(values.shape)}")
    counts = (graph.batch_num_nodes(type_name) if kind == "nodes" else graph.batch_num_edges(type_name)).long()
    counts = counts.to(values.device)
    length = max(int(counts.max()) if counts.numel() else 0, k)
    padded = _padded(values, counts, -float("inf") if descending else float("inf"), length)
    if sortby is not None:
        order = padded[..., sortby].topk(k, -1, largest=descending)[1]  # [B, k]
        out = torch.gather(padded, 1, order.unsqueeze(-1).expand(-1, -1, padded.shape[-1]))
    else:
        order = torch.argsort(padded, 1, descending=descending)[:, :k]  # [B, k, D]: each column on its own
        out = torch.gather(padded, 1, order)
    return out.masked_fill(torch.isinf(out), 0), order


def topk_nodes(graph: DGLGraph, feat: str, k: int, *, descending=True, sortby=None, ntype=None):
    """Each graph's top ``k`` of node feature ``feat`` [N, D] (DGL's ``dgl.topk_nodes``).

    Returns
    -------
    values : [batch, k, D], graphs with fewer than ``k`` nodes padded with 0
    indices : int64 [batch, k, D] (each column ranked on its own), or [batch, k] with ``sortby``
        (whole rows ranked by column ``sortby``); positions within each graph (padding slots included)

    Raises
    ------
    DGLError : a feature of more than 2 dimensions (DGL's), or of 1 (DGL fails with a shape error)
    """
    return _topk(graph, "nodes", feat, k, descending, sortby, ntype)


def topk_edges(graph: DGLGraph, feat: str, k: int, *, descending=True, sortby=None, etype=None):
    """:func:`topk_nodes` over edge feature ``feat`` (DGL's ``dgl.topk_edges``)."""
    return _topk(graph, "edges", feat, k, descending, sortby, etype)
