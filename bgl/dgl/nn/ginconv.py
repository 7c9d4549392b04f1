"""Graph isomorphism layer (``dgl.nn.GINConv``) for ``bgl.dgl`` graphs."""
from __future__ import annotations

from typing import Callable, Optional

import torch
from torch import Tensor, nn

from .graph_inputs import check_edge_weight, src_dst_features
from .graphconv import neighbour_sum

AGGREGATORS = ("sum", "max", "mean")


class GINConv(nn.Module):
    """``h_v = apply_func((1 + eps) h_v + agg_{u -> v} h_u)``; ``eps`` is a buffer or, with
    ``learn_eps``, a parameter (shape [1], DGL's name), so DGL checkpoints load.

    Parameters
    ----------
    apply_func : callable (e.g. an MLP) applied to the sum, or None
    aggregator_type : "sum" | "max" | "mean" (one fused gspmm)
    init_eps : float
    learn_eps : make ``eps`` learnable
    activation : callable applied last, or None
    """

    def __init__(self, apply_func: Optional[Callable] = None, aggregator_type: str = "sum",
                 init_eps: float = 0, learn_eps: bool = False, activation: Optional[Callable] = None):
        super().__init__()
        if aggregator_type not in AGGREGATORS:
            raise KeyError(f"Aggregator type {aggregator_type} not recognized.")
        self.apply_func = apply_func
        self._aggregator_type = aggregator_type
        self.activation = activation
        eps = torch.tensor([float(init_eps)])
        if learn_eps:
            self.eps = nn.Parameter(eps)
        else:
            self.register_buffer("eps", eps)

    def forward(self, graph, feat, edge_weight: Optional[Tensor] = None) -> Tensor:
        """
        Parameters
        ----------
        graph : bgl.dgl graph or block
        feat : float [num_src, *], or a (src, dst) pair
        edge_weight : float [num_edges] multiplying each message, or None

        Returns
        -------
        float [num_dst, *] (before ``apply_func`` changes the width)
        """
        check_edge_weight(graph, edge_weight)
        feat_src, feat_dst = src_dst_features(feat, graph)
        neighbours = neighbour_sum(graph, feat_src, edge_weight, self._aggregator_type)
        rst = (1 + self.eps) * feat_dst + neighbours
        if self.apply_func is not None:
            rst = self.apply_func(rst)
        if self.activation is not None:
            rst = self.activation(rst)
        return rst
