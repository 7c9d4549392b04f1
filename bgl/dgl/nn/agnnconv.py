"""``dgl.nn.AGNNConv`` (Thekumparampil et al., 2018, attention-based GNN): each node's in-neighbours
weighted by a softmax over in-edges of ``beta`` times the cosine of the two ends' features.

One SDDMM (``u_dot_v`` of the row-normalised features: the cosines, ``[E, 1]``), ``edge_softmax``, one
SpMM: ``E`` floats per layer, as DGL's.  ``beta`` is a parameter, or with ``learn_beta=False`` a buffer
(DGL's name), so DGL's state dicts load.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..ops import edge_softmax, u_dot_v, u_mul_e_sum
from .graph_inputs import refuse_zero_in_degree, src_dst_features


class AGNNConv(nn.Module):
    """``h_v = sum_{u -> v} softmax_v(beta * cos(x_u, x_v)) x_u`` (module doc)."""

    def __init__(self, init_beta: float = 1.0, learn_beta: bool = True, allow_zero_in_degree: bool = False):
        super().__init__()
        self._allow_zero_in_degree = allow_zero_in_degree
        beta = torch.tensor([float(init_beta)])
        if learn_beta:
            self.beta = nn.Parameter(beta)
        else:
            self.register_buffer("beta", beta)

    def set_allow_zero_in_degree(self, set_value: bool) -> None:
        self._allow_zero_in_degree = set_value

    def forward(self, graph, feat) -> Tensor:
        if not self._allow_zero_in_degree:
            refuse_zero_in_degree(graph)
        feat_src, feat_dst = src_dst_features(feat, graph)
        norm_src = F.normalize(feat_src, p=2, dim=-1)
        # DGL normalises the dst features separately only for a pair or a block (else they are the src's)
        norm_dst = F.normalize(feat_dst, p=2, dim=-1) if isinstance(feat, tuple) or graph.is_block else norm_src
        cos = u_dot_v(graph, norm_src, norm_dst)
        return u_mul_e_sum(graph, feat_src, edge_softmax(graph, self.beta * cos))
