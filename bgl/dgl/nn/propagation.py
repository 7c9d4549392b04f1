"""Fixed-propagation layers of full-graph scripts: ``SGConv`` (Wu et al., 2019: ``k`` hops of the
symmetric-normalised adjacency, then one linear map), ``APPNPConv`` (Klicpera et al., 2019: ``k`` steps
of personalised-PageRank propagation, no parameters), ``TAGConv`` (Du et al., 2017: one linear map
of every hop's features side by side) and ``GCN2Conv`` (Chen et al., 2020: one hop mixed with the
initial features and an identity-mapped weight), and ``LabelPropagation`` (Zhu and Ghahramani, 2002:
``k`` steps spreading known labels, no parameters).

Each hop is one SpMM (:func:`~bgl.dgl.nn.graphconv.neighbour_sum`) on the graph's CSC: no per-edge
feature tensor; the degree scalings are one ``[N, 1]`` vector each.  Parameter names, shapes and
initialisation are DGL's (``fc.*`` / ``lin.*`` / ``weight1``, ...), so DGL's state dicts load.  As DGL's, both take
a graph (not a block), refuse nothing but what DGL refuses, and with ``edge_weight`` normalise it
as ``EdgeWeightNorm("both")`` does instead of the degrees.
"""
from __future__ import annotations

import math
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .graph_inputs import check_edge_weight, refuse_block, refuse_zero_in_degree
from .graphconv import EdgeWeightNorm, degree_scale, neighbour_sum


class SGConv(nn.Module):
    """``fc(norm(S^k X))`` with ``S = D^-1/2 A D^-1/2`` (in-degrees clamped to 1); ``cached`` keeps
    ``S^k X`` after the first call (transductive training over one graph), as DGL's does."""

    def __init__(self, in_feats: int, out_feats: int, k: int = 1, cached: bool = False, bias: bool = True,
                 norm=None, allow_zero_in_degree: bool = False):
        super().__init__()
        self.fc = nn.Linear(in_feats, out_feats, bias=bias)
        self._cached, self._cached_h, self._k = cached, None, k
        self.norm = norm
        self._allow_zero_in_degree = allow_zero_in_degree
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.xavier_uniform_(self.fc.weight)
        if self.fc.bias is not None:
            nn.init.zeros_(self.fc.bias)

    def set_allow_zero_in_degree(self, set_value: bool) -> None:
        self._allow_zero_in_degree = set_value

    def forward(self, graph, feat: Tensor, edge_weight: Optional[Tensor] = None) -> Tensor:
        if not self._allow_zero_in_degree:
            refuse_zero_in_degree(graph)
        check_edge_weight(graph, edge_weight)
        if self._cached_h is not None:
            return self.fc(self._cached_h)
        weight = None if edge_weight is None else EdgeWeightNorm("both")(graph, edge_weight)
        scale = None if weight is not None else degree_scale(graph.in_degrees(), feat, "both")
        for _ in range(self._k):
            if scale is not None:
                feat = feat * scale
            feat = neighbour_sum(graph, feat, weight)
            if scale is not None:
                feat = feat * scale
        if self.norm is not None:
            feat = self.norm(feat)
        if self._cached:
            self._cached_h = feat
        return self.fc(feat)


class APPNPConv(nn.Module):
    """``k`` steps of ``H <- (1 - alpha) D_in^-1/2 A D_out^-1/2 H + alpha H0`` (degrees clamped to 1),
    each step's edge weights passed through ``Dropout(edge_drop)`` as DGL's are."""

    def __init__(self, k: int, alpha: float, edge_drop: float = 0.0):
        super().__init__()
        self._k, self._alpha = k, alpha
        self.edge_drop = nn.Dropout(edge_drop)

    def forward(self, graph, feat: Tensor, edge_weight: Optional[Tensor] = None) -> Tensor:
        check_edge_weight(graph, edge_weight)
        if edge_weight is None:
            src_scale = degree_scale(graph.out_degrees(), feat, "both")
            dst_scale = degree_scale(graph.in_degrees(), feat, "both")
        else:
            edge_weight = EdgeWeightNorm("both")(graph, edge_weight)
        feat_0 = feat
        for _ in range(self._k):
            if edge_weight is None:
                feat = feat * src_scale
            weight = torch.ones(graph.num_edges(), 1) if edge_weight is None else edge_weight
            weight = self.edge_drop(weight).to(feat.device)  # the same draw as DGL's, step by step
            feat = neighbour_sum(graph, feat, weight)
            if edge_weight is None:
                feat = feat * dst_scale
            feat = (1 - self._alpha) * feat + self._alpha * feat_0
        return feat


class TAGConv(nn.Module):
    """Du et al.'s topology-adaptive convolution: ``lin([X, S X, ..., S^k X])`` with ``S = D^-1/2 A D^-1/2``
    (in-degrees clamped to 1; with ``edge_weight`` the weights normalised as ``EdgeWeightNorm("both")``)."""

    def __init__(self, in_feats: int, out_feats: int, k: int = 2, bias: bool = True, activation=None):
        super().__init__()
        self._in_feats, self._out_feats, self._k = in_feats, out_feats, k
        self._activation = activation
        self.lin = nn.Linear(in_feats * (k + 1), out_feats, bias=bias)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.xavier_normal_(self.lin.weight, gain=nn.init.calculate_gain("relu"))

    def forward(self, graph, feat: Tensor, edge_weight: Optional[Tensor] = None) -> Tensor:
        check_edge_weight(graph, edge_weight)
        weight = None if edge_weight is None else EdgeWeightNorm("both")(graph, edge_weight)
        scale = None if weight is not None else degree_scale(graph.in_degrees(), feat, "both")
        hops = [feat]
        for _ in range(self._k):
            h = hops[-1] if scale is None else hops[-1] * scale
            h = neighbour_sum(graph, h, weight)
            hops.append(h if scale is None else h * scale)
        out = self.lin(torch.cat(hops, dim=-1))
        return out if self._activation is None else self._activation(out)


class GCN2Conv(nn.Module):
    """Chen et al.'s GCNII layer: ``h = (1 - a) S X + a X0``, then ``(1 - b) h + b h W1`` (``project_initial_features``;
    otherwise ``(1 - b) h + b ((1 - a) S X W1 + a X0 W2)``), ``b = log(lambda_ / layer + 1)``; ``S`` as in SGConv."""

    def __init__(self, in_feats: int, layer: int, alpha: float = 0.1, lambda_: float = 1,
                 project_initial_features: bool = True, allow_zero_in_degree: bool = False, bias: bool = True,
                 activation=None):
        super().__init__()
        self._in_feats, self._project_initial_features = in_feats, project_initial_features
        self.alpha, self.beta = alpha, math.log(lambda_ / layer + 1)
        self._bias, self._activation, self._allow_zero_in_degree = bias, activation, allow_zero_in_degree
        self.weight1 = nn.Parameter(torch.empty(in_feats, in_feats))
        if project_initial_features:
            self.register_parameter("weight2", None)
        else:
            self.weight2 = nn.Parameter(torch.empty(in_feats, in_feats))
        if bias:
            self.bias = nn.Parameter(torch.empty(in_feats))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.normal_(self.weight1)
        if self.weight2 is not None:
            nn.init.normal_(self.weight2)
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def set_allow_zero_in_degree(self, set_value: bool) -> None:
        self._allow_zero_in_degree = set_value

    def forward(self, graph, feat: Tensor, feat_0: Tensor, edge_weight: Optional[Tensor] = None) -> Tensor:
        if not self._allow_zero_in_degree:
            refuse_zero_in_degree(graph)
        check_edge_weight(graph, edge_weight)
        if edge_weight is None:
            scale = degree_scale(graph.in_degrees(), feat, "both")
            feat = neighbour_sum(graph, feat * scale) * scale
        else:
            feat = neighbour_sum(graph, feat, EdgeWeightNorm("both")(graph, edge_weight))
        feat = feat * (1 - self.alpha)
        feat_0 = feat_0[: feat.size(0)] * self.alpha
        feat_sum = feat + feat_0
        if self._project_initial_features:
            projected = feat_sum @ self.weight1
        else:
            projected = feat @ self.weight1 + feat_0 @ self.weight2
        rst = (1 - self.beta) * feat_sum + self.beta * projected
        if self.bias is not None:
            rst = rst + self.bias
        return rst if self._activation is None else self._activation(rst)


class LabelPropagation(nn.Module):
    """``dgl.nn.LabelPropagation``: ``Y <- (1 - alpha) Y_0 + alpha N(A) Y``, ``k`` times, from the known labels.

    Parameters
    ----------
    k : int, propagation steps
    alpha : float, weight of the propagated labels against the initial ones
    norm_type : "sym" (``D_in^-1/2 A D_out^-1/2``) or "row" (``D_in^-1 A``); degrees clamped to 1;
        another name is a ValueError at the first forward, as DGL's
    clamp : clip the labels to [0, 1] after each step
    normalize : L1-normalise each node's labels after each step
    reset : set the masked nodes back to their labels after each step
    """

    def __init__(self, k: int, alpha: float, norm_type: str = "sym", clamp: bool = True, normalize: bool = False,
                 reset: bool = False):
        super().__init__()
        self.k, self.alpha, self.norm_type = k, alpha, norm_type
        self.clamp, self.normalize, self.reset = clamp, normalize, reset

    def forward(self, g, labels: Tensor, mask: Optional[Tensor] = None) -> Tensor:
        """
        Parameters
        ----------
        g : bgl.dgl graph (not a block)
        labels : int [N] class ids (one-hot encoded, ``max + 1`` classes), or [N, C] label scores
        mask : bool [N] (or node ids) of the known labels; None: all known

        Returns
        -------
        float32 [N, C] propagated label scores
        """
        refuse_block(g, "LabelPropagation")
        if labels.dim() > 1 and labels.shape[1] > 1:
            labels = labels.to(torch.float32)
        else:
            labels = F.one_hot(labels.view(-1)).to(torch.float32)
        y = labels
        if mask is not None:
            y = torch.zeros_like(labels)
            y[mask] = labels[mask]
        init = (1 - self.alpha) * y
        in_degs = g.in_degrees().float().clamp(min=1).to(labels.device).unsqueeze(1)
        out_degs = g.out_degrees().float().clamp(min=1).to(labels.device).unsqueeze(1)
        if self.norm_type == "sym":
            norm_i, norm_j = in_degs.pow(-0.5), out_degs.pow(-0.5)
        elif self.norm_type == "row":
            norm_i, norm_j = in_degs.pow(-1.0), None
        else:
            raise ValueError(f"Expect norm_type to be 'sym' or 'row', got {self.norm_type}")
        for _ in range(self.k):
            y = init + self.alpha * neighbour_sum(g, y * norm_j if norm_j is not None else y) * norm_i
            if self.clamp:
                y = y.clamp_(0.0, 1.0)
            if self.normalize:
                y = F.normalize(y, p=1)
            if self.reset:
                y[mask] = labels[mask]  # mask None: every node (DGL indexes with None too)
        return y
