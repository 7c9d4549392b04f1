"""``dgl.nn.ChebConv`` (Defferrard et al., 2016): a ``k``-term Chebyshev filter of the scaled graph Laplacian.

``T_0 X = X``, ``T_1 X = L~ X``, ``T_i X = 2 L~ T_{i-1} X - T_{i-2} X`` with ``L~ = 2 L / lambda_max - I`` and
``L = I - D^-1/2 A D^-1/2`` (in-degrees clamped to 1); the ``k`` terms side by side go through one linear map.
Each term is one SpMM over the graph's CSC (:func:`~bgl.dgl.nn.graphconv.neighbour_sum`), nothing per edge.
``lambda_max`` per graph of a batch (a list or a tensor), 2 when not given (DGL warns; so does this).
DGL's parameter names (``linear.*``), so its state dicts load.
"""
from __future__ import annotations

import warnings
from typing import Callable, Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .graphconv import neighbour_sum


class ChebConv(nn.Module):
    """``activation(linear([T_0 X, ..., T_{k-1} X]))`` (module doc)."""

    def __init__(self, in_feats: int, out_feats: int, k: int, activation: Optional[Callable] = F.relu,
                 bias: bool = True):
        super().__init__()
        self._k, self._in_feats, self._out_feats = k, in_feats, out_feats
        self.activation = activation
        self.linear = nn.Linear(k * in_feats, out_feats, bias)

    def forward(self, graph, feat: Tensor, lambda_max=None) -> Tensor:
        from ..batching import broadcast_nodes

        scale = graph.in_degrees().to(feat).clamp(min=1).pow(-0.5).unsqueeze(-1)

        def laplacian_part(x: Tensor) -> Tensor:  # D^-1/2 A D^-1/2 x
            return neighbour_sum(graph, x * scale) * scale

        if lambda_max is None:
            warnings.warn("lambda_max is not provided, using default value of 2.  Please use "
                          "dgl.laplacian_lambda_max to compute the eigenvalues.")
            lambda_max = [2] * graph.batch_size
        if isinstance(lambda_max, list):
            lambda_max = torch.tensor(lambda_max, dtype=feat.dtype, device=feat.device)
        if lambda_max.dim() == 1:
            lambda_max = lambda_max.unsqueeze(-1)
        re_norm = 2.0 / broadcast_nodes(graph, lambda_max)
        x0, terms = feat, [feat]
        if self._k > 1:
            x1 = -re_norm * laplacian_part(x0) + x0 * (re_norm - 1)
            terms.append(x1)
            for _ in range(2, self._k):
                xi = -2 * re_norm * laplacian_part(x1) + x1 * 2 * (re_norm - 1) - x0
                terms.append(xi)
                x1, x0 = xi, x1
        h = self.linear(torch.cat(terms, dim=1))
        return self.activation(h) if self.activation else h
