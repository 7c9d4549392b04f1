"""Graph readout layers of DGL's graph-classification scripts: ``SumPooling``, ``AvgPooling``,
``MaxPooling``, ``GlobalAttentionPooling`` and ``WeightAndSum`` over each graph of a ``dgl.batch``.

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
