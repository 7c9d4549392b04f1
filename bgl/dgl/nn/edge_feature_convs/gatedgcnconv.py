"""``dgl.nn.GatedGCNConv`` (Bresson and Laurent, 2017; Dwivedi et al.'s benchmark version): edge-gated aggregation
that also updates the edge features.

``e'_uv = D x_u + E x_v + C e_uv``, ``h_v = A x_v + sum_u sigmoid(e'_uv) * B x_u / (sum_u sigmoid(e'_uv) + 1e-6)``;
then, as DGL's, batch norm (nodes and edges apart), the activation, the residual (only when all widths agree)
and dropout on both.  Both sums are fused SpMMs.  On graphs only (DGL's layer stores node data, which a block
refuses); DGL's parameter names (``A`` ... ``E``, ``bn_node``, ``bn_edge``) and its default ``Linear`` init.
"""
from __future__ import annotations

from typing import Callable, Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ...ops import gsddmm, gspmm
from ..dropout import Dropout
from ..graph_inputs import refuse_block


class GatedGCNConv(nn.Module):
    """``dgl.nn.GatedGCNConv``: returns (node features [N, output_feats], edge features [E, output_feats]).

    Parameters
    ----------
    input_feats, edge_feats, output_feats : int
    dropout : dropout on both outputs
    batch_norm : BatchNorm1d on both (before the activation)
    residual : add the inputs (dropped silently when a width differs, as DGL)
    activation : callable on both, or None
    """

    def __init__(self, input_feats: int, edge_feats: int, output_feats: int, dropout: float = 0,
                 batch_norm: bool = True, residual: bool = True, activation: Optional[Callable] = F.relu):
        super().__init__()
        self.dropout = Dropout(dropout)
        self.batch_norm = batch_norm
        self.residual = residual and input_feats == output_feats and edge_feats == output_feats
        self.A = nn.Linear(input_feats, output_feats, bias=True)
        self.B = nn.Linear(input_feats, output_feats, bias=True)
        self.D = nn.Linear(input_feats, output_feats, bias=True)
        self.E = nn.Linear(input_feats, output_feats, bias=True)
        self.C = nn.Linear(edge_feats, output_feats, bias=True)
        self.bn_node = nn.BatchNorm1d(output_feats)
        self.bn_edge = nn.BatchNorm1d(output_feats)
        self.activation = activation

    def forward(self, graph, feat: Tensor, edge_feat: Tensor):
        """
        Parameters
        ----------
        graph : bgl.dgl graph (not a block)
        feat : float [num_nodes, input_feats]
        edge_feat : float [num_edges, edge_feats]

        Returns
        -------
        (float [num_nodes, output_feats], float [num_edges, output_feats])
        """
        refuse_block(graph, "GatedGCNConv")
        edge = gsddmm(graph, "add", self.D(feat), self.E(feat), "u", "v") + self.C(edge_feat)
        gate = torch.sigmoid(edge)
        gated_sum = gspmm(graph, "mul", "sum", self.B(feat), gate)
        gate_sum = gspmm(graph, "copy_rhs", "sum", None, gate)
        h, e = self.A(feat) + gated_sum / (gate_sum + 1e-6), edge
        if self.batch_norm:
            h, e = self.bn_node(h), self.bn_edge(e)
        if self.activation:
            h, e = self.activation(h), self.activation(e)
        if self.residual:
            h, e = feat + h, edge_feat + e
        return self.dropout(h), self.dropout(e)
