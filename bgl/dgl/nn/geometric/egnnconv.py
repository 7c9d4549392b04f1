"""``dgl.nn.EGNNConv`` (Satorras et al., 2021, "E(n) Equivariant Graph Neural Networks").

Per edge u -> v: ``m = phi_e(h_u, h_v, |x_u - x_v|^2, a_uv)``; per node v: ``h'_v = phi_h(h_v, sum m)`` and
``x'_v = x_v + mean(phi_x(m) * (x_u - x_v) / |x_u - x_v|)`` over its in-edges (rotations, translations and
reflections of the coordinates carry over to ``x'`` and leave ``h'`` unchanged).  DGL's module layout
(``edge_mlp``, ``node_mlp``, ``coord_mlp``: SiLU MLPs), so its state dicts load.  Cost per edge: the edge MLP,
O(hidden * (2 in + edge_feat + hidden)); a node without in-edges gets ``x' = x`` and a zero message sum.
"""
from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor, nn


class EGNNConv(nn.Module):
    """``dgl.nn.EGNNConv(in_size, hidden_size, out_size, edge_feat_size=0)``.

    Parameters
    ----------
    in_size : int, node feature width; hidden_size : int, message width; out_size : int
    edge_feat_size : int, edge feature width (0: none)
    """

    def __init__(self, in_size: int, hidden_size: int, out_size: int, edge_feat_size: int = 0):
        super().__init__()
        self.in_size = in_size
        self.hidden_size = hidden_size
        self.out_size = out_size
        self.edge_feat_size = edge_feat_size
        act = nn.SiLU()
        # + 1: the squared distance of the edge's ends
        self.edge_mlp = nn.Sequential(nn.Linear(in_size * 2 + edge_feat_size + 1, hidden_size), act,
                                      nn.Linear(hidden_size, hidden_size), act)
        self.node_mlp = nn.Sequential(nn.Linear(in_size + hidden_size, hidden_size), act,
                                      nn.Linear(hidden_size, out_size))
        self.coord_mlp = nn.Sequential(nn.Linear(hidden_size, hidden_size), act,
                                       nn.Linear(hidden_size, 1, bias=False))

    def forward(self, graph, node_feat: Tensor, coord_feat: Tensor, edge_feat: Optional[Tensor] = None):
        """
        Parameters
        ----------
        graph : bgl.dgl graph (one node type)
        node_feat : float [N, in_size]; coord_feat : float [N, C], the coordinates
        edge_feat : float [E, edge_feat_size], required when ``edge_feat_size > 0``

        Returns
        -------
        (float [N, out_size], float [N, C]): the new node features and coordinates
        """
        from bgl.dgl.ops import copy_u, copy_v, gsddmm, gspmm

        if self.edge_feat_size > 0 and edge_feat is None:
            raise AssertionError("Edge features must be provided.")  # DGL's assert
        x_diff = gsddmm(graph, "sub", coord_feat, coord_feat, "u", "v")
        radial = x_diff.square().sum(dim=1).unsqueeze(-1)
        x_diff = x_diff / (radial.sqrt() + 1e-30)
        parts = [copy_u(graph, node_feat), copy_v(graph, node_feat), radial]
        msg_h = self.edge_mlp(torch.cat(parts + ([edge_feat] if self.edge_feat_size > 0 else []), dim=-1))
        msg_x = self.coord_mlp(msg_h) * x_diff
        x_neigh = gspmm(graph, "copy_rhs", "mean", None, msg_x)
        h_neigh = gspmm(graph, "copy_rhs", "sum", None, msg_h)
        h = self.node_mlp(torch.cat([node_feat, h_neigh], dim=-1))
        return h, coord_feat + x_neigh
