"""Graph readout layers of DGL's graph-classification scripts: ``SumPooling``, ``AvgPooling``,
``MaxPooling``, ``GlobalAttentionPooling``, ``WeightAndSum``, ``SortPooling`` and ``Set2Set`` over each
graph of a ``dgl.batch``.

Each is one segment reduction over the batch's node counts (:mod:`bgl.dgl.batching`): the features
``[num_nodes, *]`` in, one row per graph ``[batch_size, *]`` out (a graph never batched is a batch of
one).  Parameter names are DGL's (``gate_nn``, ``feat_nn``, ``atom_weighting``), so its state dicts load.
"""
from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor, nn

from ..base import DGLError
from ..ops.segment import segment_reduce, segment_softmax


def _pool(graph, feat: Tensor, reducer: str) -> Tensor:
    return segment_reduce(graph.batch_num_nodes().to(feat.device), feat, reducer=reducer)


class SumPooling(nn.Module):
    """Each graph's node features summed."""

    def forward(self, graph, feat: Tensor) -> Tensor:
        return _pool(graph, feat, "sum")


class AvgPooling(nn.Module):
    """Each graph's node features averaged (0 for a graph without nodes)."""

    def forward(self, graph, feat: Tensor) -> Tensor:
        return _pool(graph, feat, "mean")


class MaxPooling(nn.Module):
    """Each graph's element-wise maximum of its node features (0 for a graph without nodes)."""

    def forward(self, graph, feat: Tensor) -> Tensor:
        return _pool(graph, feat, "max")


class GlobalAttentionPooling(nn.Module):
    """Li et al.'s attention readout: ``sum_v softmax_graph(gate_nn(x_v)) * feat_nn(x_v)`` per graph;
    ``gate_nn`` must map a row to one score."""

    def __init__(self, gate_nn: nn.Module, feat_nn: Optional[nn.Module] = None):
        super().__init__()
        self.gate_nn, self.feat_nn = gate_nn, feat_nn

    def forward(self, graph, feat: Tensor, get_attention: bool = False):
        gate = self.gate_nn(feat)
        if gate.shape[-1] != 1:
            raise DGLError("The output of gate_nn should have size 1 at the last axis.")
        feat = self.feat_nn(feat) if self.feat_nn else feat
        counts = graph.batch_num_nodes().to(feat.device)
        gate = segment_softmax(counts, gate)
        readout = segment_reduce(counts, feat * gate, reducer="sum")
        return (readout, gate) if get_attention else readout


class WeightAndSum(nn.Module):
    """Each graph's node features weighted by a learned sigmoid score per node, summed."""

    def __init__(self, in_feats: int):
        super().__init__()
        self.in_feats = in_feats
        self.atom_weighting = nn.Sequential(nn.Linear(in_feats, 1), nn.Sigmoid())

    def forward(self, g, feats: Tensor) -> Tensor:
        return segment_reduce(g.batch_num_nodes().to(feats.device), feats * self.atom_weighting(feats), reducer="sum")


class SortPooling(nn.Module):
    """Zhang et al.'s DGCNN readout: each node's features sorted ascending, then per graph the ``k`` nodes
    with the largest last feature, in descending order, flattened: ``[batch_size, k * D]``, zero rows where a
    graph has fewer than ``k`` nodes.  One ``[batch_size, max(k, largest graph), D]`` padded copy (DGL's too)."""

    def __init__(self, k: int):
        super().__init__()
        self.k = k

    def forward(self, graph, feat: Tensor) -> Tensor:
        feat, _ = feat.sort(dim=-1)
        counts = graph.batch_num_nodes().to(feat.device)
        size, width = int(counts.shape[0]), feat.shape[-1]
        length = max(int(counts.max()) if size else 0, self.k)
        graph_of = torch.repeat_interleave(torch.arange(size, device=feat.device), counts)
        position = torch.arange(feat.shape[0], device=feat.device) - (torch.cumsum(counts, 0) - counts)[graph_of]
        padded = feat.new_full((size, length, width), -float("inf")).index_put((graph_of, position), feat)
        order = padded[..., -1].argsort(dim=-1, descending=True)[:, : self.k]
        top = padded.gather(1, order.unsqueeze(-1).expand(-1, -1, width))
        return top.masked_fill(torch.isinf(top), 0).view(-1, self.k * width)


class Set2Set(nn.Module):
    """Vinyals et al.'s order-invariant readout: ``n_iters`` rounds of an LSTM query attending over each
    graph's nodes; ``[batch_size, 2 * input_dim]`` out (the query and the attended sum).  DGL's names (``lstm``)."""

    def __init__(self, input_dim: int, n_iters: int, n_layers: int):
        super().__init__()
        self.input_dim, self.output_dim = input_dim, 2 * input_dim
        self.n_iters, self.n_layers = n_iters, n_layers
        self.lstm = nn.LSTM(self.output_dim, self.input_dim, n_layers)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        self.lstm.reset_parameters()

    def forward(self, graph, feat: Tensor) -> Tensor:
        counts = graph.batch_num_nodes().to(feat.device)
        size = int(counts.shape[0])
        h = (feat.new_zeros((self.n_layers, size, self.input_dim)), feat.new_zeros((self.n_layers, size, self.input_dim)))
        q_star = feat.new_zeros(size, self.output_dim)
        for _ in range(self.n_iters):
            q, h = self.lstm(q_star.unsqueeze(0), h)
            q = q.view(size, self.input_dim)
            e = (feat * torch.repeat_interleave(q, counts, dim=0)).sum(dim=-1, keepdim=True)
            readout = segment_reduce(counts, feat * segment_softmax(counts, e), reducer="sum")
            q_star = torch.cat([q, readout], dim=-1)
        return q_star

    def extra_repr(self) -> str:
        return f"n_iters={self.n_iters}"
