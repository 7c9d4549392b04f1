"""``dgl.nn.GMMConv`` (Monti et al., 2017, MoNet): messages weighted by Gaussian kernels of edge pseudo-coordinates.

``h_v = bias + res_fc(x_v) + sum_k agg_{u -> v} w_k(p_uv) * (fc(x_u))_k`` with
``w_k(p) = exp(-1/2 sum_d (p_d - mu_kd)^2 inv_sigma_kd^2)``.  As DGL's, the ``K`` kernels are reduced
over in-edges separately (a ``[num_dst, K, out]`` result) and summed after, so ``max`` keeps DGL's meaning;
the per-edge product is fused into the aggregation (``u_mul_e``).  DGL's parameter names (``mu``,
``inv_sigma``, ``fc``, ``res_fc``, ``bias``), so its state dicts load.
"""
from __future__ import annotations

import torch
from torch import Tensor, nn

from ..graph_inputs import add_bias, add_residual, refuse_zero_in_degree, split_widths, src_dst_features

GMM_AGGREGATORS = ("sum", "mean", "max")


class GMMConv(nn.Module):
    """``dgl.nn.GMMConv``: output [num_dst, out_feats].

    Parameters
    ----------
    in_feats : int, or (src, dst) widths
    out_feats : int
    dim : int, width of the pseudo-coordinates
    n_kernels : int, number of Gaussian kernels K
    aggregator_type : "sum", "mean" or "max" (KeyError otherwise, as DGL)
    residual : add ``res_fc(x_dst)`` (a Linear without bias, the identity when widths agree)
    bias : learnable ``bias`` [out_feats]
    allow_zero_in_degree : accept dst nodes without in-edges; refused with DGLError by default
    """

    def __init__(self, in_feats, out_feats: int, dim: int, n_kernels: int, aggregator_type: str = "sum",
                 residual: bool = False, bias: bool = True, allow_zero_in_degree: bool = False):
        super().__init__()
        self._in_src_feats, self._in_dst_feats = split_widths(in_feats)
        self._out_feats, self._dim, self._n_kernels = out_feats, dim, n_kernels
        self._allow_zero_in_degree = allow_zero_in_degree
        if aggregator_type not in GMM_AGGREGATORS:
            raise KeyError(f"Aggregator type {aggregator_type} not recognized.")
        self._aggregator = aggregator_type
        self.mu = nn.Parameter(torch.empty(n_kernels, dim))
        self.inv_sigma = nn.Parameter(torch.empty(n_kernels, dim))
        self.fc = nn.Linear(self._in_src_feats, n_kernels * out_feats, bias=False)
        add_residual(self, self._in_dst_feats, out_feats, residual)
        add_bias(self, out_feats, bias)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """DGL's: Glorot-normal (ReLU gain) ``fc`` / ``res_fc``, ``mu ~ N(0, 0.1^2)``, ``inv_sigma = 1``, zero bias."""
        gain = nn.init.calculate_gain("relu")
        nn.init.xavier_normal_(self.fc.weight, gain=gain)
        if isinstance(self.res_fc, nn.Linear):
            nn.init.xavier_normal_(self.res_fc.weight, gain=gain)
        nn.init.normal_(self.mu, 0, 0.1)
        nn.init.constant_(self.inv_sigma, 1)
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def set_allow_zero_in_degree(self, set_value: bool) -> None:
        self._allow_zero_in_degree = set_value

    def forward(self, graph, feat, pseudo: Tensor) -> Tensor:
        """
        Parameters
        ----------
        graph : bgl.dgl graph or block
        feat : float [num_src, in], or a (src, dst) pair
        pseudo : float [num_edges, dim], each edge's pseudo-coordinates

        Returns
        -------
        float [num_dst, out_feats]
        """
        from ... import function as fn

        if not self._allow_zero_in_degree:
            refuse_zero_in_degree(graph)
        with graph.local_scope():
            feat_src, feat_dst = src_dst_features(feat, graph)
            k, dim = self._n_kernels, self._dim
            graph.srcdata["h"] = self.fc(feat_src).view(-1, k, self._out_feats)
            offsets = pseudo.view(graph.num_edges(), 1, dim) - self.mu.view(1, k, dim)
            exponent = (-0.5 * offsets ** 2 * self.inv_sigma.view(1, k, dim) ** 2).sum(dim=-1, keepdim=True)
            graph.edata["w"] = torch.exp(exponent)  # [E, K, 1]
            graph.update_all(fn.u_mul_e("h", "w", "m"), getattr(fn, self._aggregator)("m", "h"))
            rst = graph.dstdata["h"].sum(1)
            if self.res_fc is not None:
                rst = rst + self.res_fc(feat_dst)
            if self.bias is not None:
                rst = rst + self.bias
            return rst
