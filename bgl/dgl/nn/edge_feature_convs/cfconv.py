"""``dgl.nn.CFConv`` (Schütt et al., 2017, SchNet): continuous-filter convolution.

``h_v = project_out(sum_{u -> v} project_node(x_u) * project_edge(e_uv))`` where the edge and output
projections end in a shifted softplus (``softplus(x) - log 2``).  The product is fused into the sum
(``u_mul_e``).  DGL's module layout (``project_edge.0`` / ``.2``, ``project_node``, ``project_out.0``), so
its state dicts load.  A dst node without in-edges gets ``project_out(0)``, as in DGL (no refusal).
"""
from __future__ import annotations

import math

from torch import Tensor, nn


class ShiftedSoftplus(nn.Module):
    """``softplus(x; beta, threshold) - log(shift)``: zero at the origin for the default shift of 2."""

    def __init__(self, beta: float = 1, shift: float = 2, threshold: float = 20):
        super().__init__()
        self.shift = shift
        self.softplus = nn.Softplus(beta=beta, threshold=threshold)

    def forward(self, inputs: Tensor) -> Tensor:
        return self.softplus(inputs) - math.log(float(self.shift))


class CFConv(nn.Module):
    """``dgl.nn.CFConv``: output [num_dst, out_feats].

    Parameters
    ----------
    node_in_feats, edge_in_feats : int, widths of the node and edge inputs
    hidden_feats : int, width of the filters and projected node features
    out_feats : int
    """

    def __init__(self, node_in_feats: int, edge_in_feats: int, hidden_feats: int, out_feats: int):
        super().__init__()
        self.project_edge = nn.Sequential(nn.Linear(edge_in_feats, hidden_feats), ShiftedSoftplus(),
                                          nn.Linear(hidden_feats, hidden_feats), ShiftedSoftplus())
        self.project_node = nn.Linear(node_in_feats, hidden_feats)
        self.project_out = nn.Sequential(nn.Linear(hidden_feats, out_feats), ShiftedSoftplus())

    def forward(self, g, node_feats, edge_feats: Tensor) -> Tensor:
        """
        Parameters
        ----------
        g : bgl.dgl graph or block
        node_feats : float [num_src, node_in_feats], or a (src, dst) pair (only src is read)
        edge_feats : float [num_edges, edge_in_feats]

        Returns
        -------
        float [num_dst, out_feats]
        """
        from ...ops import gspmm

        node_feats_src = node_feats[0] if isinstance(node_feats, tuple) else node_feats
        summed = gspmm(g, "mul", "sum", self.project_node(node_feats_src), self.project_edge(edge_feats))
        return self.project_out(summed)
