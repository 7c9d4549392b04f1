"""Layers whose messages a network computes per edge: ``dgl.nn.NNConv`` (Gilmer et al.'s edge-conditioned
convolution: an ``in x out`` weight per edge from its features) and ``dgl.nn.EdgeConv`` (Wang et al.'s
DGCNN: ``max`` over in-edges of ``theta(x_v - x_u) + phi(x_v)``).

As DGL's, NNConv multiplies each source row by its edge's weight matrix element by element and reduces the
``[E, in, out]`` products over in-edges before summing over ``in`` (so ``max`` keeps DGL's meaning), and
EdgeConv's ``theta`` runs on every edge's difference: ``E x in`` and ``E x out`` per layer, as in DGL.
DGL's parameter names (``edge_func``, ``res_fc``, ``bias``; ``theta``, ``phi``, ``bn``), so its state dicts load.
"""
from __future__ import annotations

from typing import Callable

import torch
from torch import Tensor, nn

from .graph_inputs import refuse_zero_in_degree, split_widths, src_dst_features

NNCONV_AGGREGATORS = ("sum", "mean", "max")


class NNConv(nn.Module):
    """``h_v = bias + res_fc(x_v) + sum_i agg_{u -> v} x_u[i] * edge_func(e_uv)[i, :]``."""

    def __init__(self, in_feats, out_feats: int, edge_func: Callable, aggregator_type: str = "mean",
                 residual: bool = False, bias: bool = True):
        super().__init__()
        self._in_src_feats, self._in_dst_feats = split_widths(in_feats)
        self._out_feats = out_feats
        self.edge_func = edge_func
        if aggregator_type not in NNCONV_AGGREGATORS:
            raise KeyError(f"Aggregator type {aggregator_type} not recognized: ")
        self._aggre_type = aggregator_type
        if residual:
            self.res_fc = nn.Linear(self._in_dst_feats, out_feats, bias=False) \
                if self._in_dst_feats != out_feats else nn.Identity()
        else:
            self.register_buffer("res_fc", None)
        if bias:
            self.bias = nn.Parameter(torch.empty(out_feats))
        else:
            self.register_buffer("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.bias is not None:
            nn.init.zeros_(self.bias)
        if isinstance(self.res_fc, nn.Linear):
            nn.init.xavier_normal_(self.res_fc.weight, gain=nn.init.calculate_gain("relu"))

    def forward(self, graph, feat, efeat: Tensor) -> Tensor:
        from .. import function as fn

        with graph.local_scope():
            feat_src, feat_dst = src_dst_features(feat, graph)
            graph.srcdata["h"] = feat_src.unsqueeze(-1)
            graph.edata["w"] = self.edge_func(efeat).view(-1, self._in_src_feats, self._out_feats)
            reducer = getattr(fn, self._aggre_type)
            graph.update_all(fn.u_mul_e("h", "w", "m"), reducer("m", "neigh"))
            rst = graph.dstdata["neigh"].sum(dim=1)
            if self.res_fc is not None:
                rst = rst + self.res_fc(feat_dst)
            if self.bias is not None:
                rst = rst + self.bias
            return rst


class EdgeConv(nn.Module):
    """``h_v = max_{u -> v} theta(x_v - x_u) + phi(x_v)`` (``bn`` over the edges first with ``batch_norm``)."""

    def __init__(self, in_feat: int, out_feat: int, batch_norm: bool = False, allow_zero_in_degree: bool = False):
        super().__init__()
        self.batch_norm = batch_norm
        self._allow_zero_in_degree = allow_zero_in_degree
        self.theta = nn.Linear(in_feat, out_feat)
        self.phi = nn.Linear(in_feat, out_feat)
        if batch_norm:
            self.bn = nn.BatchNorm1d(out_feat)

    def set_allow_zero_in_degree(self, set_value: bool) -> None:
        self._allow_zero_in_degree = set_value

    def forward(self, g, feat) -> Tensor:
        from .. import function as fn

        with g.local_scope():
            if not self._allow_zero_in_degree:
                refuse_zero_in_degree(g)
            h_src, h_dst = src_dst_features(feat, g)
            g.srcdata["x"] = h_src
            g.dstdata["x"] = h_dst
            g.apply_edges(fn.v_sub_u("x", "x", "theta"))
            g.edata["theta"] = self.theta(g.edata["theta"])
            g.dstdata["phi"] = self.phi(g.dstdata["x"])
            if not self.batch_norm:
                g.update_all(fn.e_add_v("theta", "phi", "e"), fn.max("e", "x"))
            else:
                g.apply_edges(fn.e_add_v("theta", "phi", "e"))
                g.edata["e"] = self.bn(g.edata["e"])
                g.update_all(fn.copy_e("e", "e"), fn.max("e", "x"))
            return g.dstdata["x"]
