"""Kipf & Welling's graph convolution and DGL's edge-weight normaliser, for ``bgl.dgl`` graphs.

Parameter names, shapes and initialisation are DGL's (``weight`` [in, out], ``bias`` [out]), so
``load_state_dict`` takes a state dict saved from ``dgl.nn.GraphConv`` and gives its outputs.
Aggregation is one fused sparse-dense product (``gspmm`` copy_u/u_mul_e + sum): no per-edge
feature tensor is built.
"""
from __future__ import annotations

from typing import Callable, Optional

import torch
from torch import Tensor, nn

from ..base import DGLError
from ..ops import gspmm
from ..ops.spmm import message_reduce
from .graph_inputs import check_edge_weight, refuse_zero_in_degree, src_dst_features

NORMS = ("none", "both", "right", "left")


def neighbour_sum(graph, src_feat: Tensor, edge_weight: Optional[Tensor] = None,
                  reduce: str = "sum", dst_scale: Optional[Tensor] = None) -> Tensor:
    """Reduce (optionally edge-weighted) src features onto each dst node: one SpMM.

    Parameters
    ----------
    graph : bgl.dgl graph or block
    src_feat : float [num_src, *feat_shape]
    edge_weight : float [num_edges] or [num_edges, *broadcastable], or None
    reduce : "sum" | "mean" | "max" | "min" (zero-in-degree nodes get 0, as in DGL)
    dst_scale : float [num_dst] constant multiplying each dst row of a sum / mean, applied in the
        SpMM kernel's store (no [num_dst, F] pass and tensor of its own), or None

    Returns
    -------
    float [num_dst, *feat_shape]
    """
    if edge_weight is not None and edge_weight.dim() == 1:
        edge_weight = edge_weight.unsqueeze(-1)
    op = "copy_lhs" if edge_weight is None else "mul"
    if dst_scale is None:
        out = gspmm(graph, op, reduce, src_feat, edge_weight)
    else:
        out = message_reduce(graph._relation(None), op, reduce, src_feat, edge_weight, dst_scale=dst_scale)
    if reduce in ("max", "min"):
        # gspmm leaves -inf / inf where a node has no in-edge; update_all (what DGL's layers
        # call) turns those into 0, gradient 0
        out = out.masked_fill(torch.isinf(out), 0)
    return out


def degree_scale(degrees: Tensor, like: Tensor, norm: str) -> Tensor:
    """deg^-1/2 ("both") or 1/deg (otherwise) of degrees clamped to >= 1, shaped to broadcast over ``like``."""
    degrees = degrees.to(like).clamp(min=1)
    scale = torch.pow(degrees, -0.5) if norm == "both" else 1.0 / degrees
    return scale.reshape(scale.shape + (1,) * (like.dim() - 1))


class GraphConv(nn.Module):
    """``dgl.nn.GraphConv``: ``h_v = b + sum_{u -> v} c_uv * h_u W`` with DGL's four normalisations.

    Parameters
    ----------
    in_feats, out_feats : int
    norm : "both" (c = 1/sqrt(d_out(u) d_in(v))), "right" (1/d_in(v)), "left" (1/d_out(u)) or "none"
    weight, bias : whether the layer owns a learnable ``weight`` [in, out] / ``bias`` [out]
    activation : callable applied last, or None
    allow_zero_in_degree : accept dst nodes with no in-edge (they get only the bias);
        by default such a graph is refused with DGL's DGLError
    """

    def __init__(self, in_feats: int, out_feats: int, norm: str = "both", weight: bool = True,
                 bias: bool = True, activation: Optional[Callable] = None,
                 allow_zero_in_degree: bool = False):
        super().__init__()
        if norm not in NORMS:
            raise DGLError(f'Invalid norm value. Must be either "none", "both", "right" or "left". '
                           f'But got "{norm}".')
        self._in_feats, self._out_feats = in_feats, out_feats
        self._norm = norm
        self._allow_zero_in_degree = allow_zero_in_degree
        self.register_parameter("weight", nn.Parameter(torch.empty(in_feats, out_feats)) if weight else None)
        self.register_parameter("bias", nn.Parameter(torch.empty(out_feats)) if bias else None)
        self._activation = activation
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Glorot-uniform weight, zero bias (DGL's initialisation)."""
        if self.weight is not None:
            nn.init.xavier_uniform_(self.weight)
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def set_allow_zero_in_degree(self, set_value: bool) -> None:
        self._allow_zero_in_degree = set_value

    def forward(self, graph, feat, weight: Optional[Tensor] = None,
                edge_weight: Optional[Tensor] = None) -> Tensor:
        """
        Parameters
        ----------
        graph : bgl.dgl graph or block
        feat : float [num_src, in_feats], or a (src [num_src, in], dst [num_dst, in]) pair
        weight : external weight [in, out] for a layer built with ``weight=False``
        edge_weight : float [num_edges] multiplying each message (e.g. ``EdgeWeightNorm``'s output)

        Returns
        -------
        float [num_dst, out_feats]
        """
        if not self._allow_zero_in_degree:
            refuse_zero_in_degree(graph)
        check_edge_weight(graph, edge_weight)
        if weight is not None and self.weight is not None:
            raise DGLError("External weight is provided while at the same time the module has "
                           "defined its own weight parameter. Please create the module with flag "
                           "weight=False.")
        weight = self.weight if weight is None else weight
        feat_src, feat_dst = src_dst_features(feat, graph)
        if self._norm in ("left", "both"):
            feat_src = feat_src * degree_scale(graph.out_degrees(), feat_src, self._norm)
        # multiply by W on the narrower side of the aggregation: fewer bytes through the SpMM
        transform_first = weight is not None and self._in_feats > self._out_feats
        if transform_first:
            feat_src = torch.matmul(feat_src, weight)
        # "right" / "both": the dst degree scale rides in the SpMM's store (a row scale commutes with W)
        in_scale = None
        if self._norm in ("right", "both"):
            in_scale = degree_scale(graph.in_degrees(), feat_dst, self._norm).reshape(-1)
        rst = neighbour_sum(graph, feat_src, edge_weight, dst_scale=in_scale)
        if weight is not None and not transform_first:
            rst = torch.matmul(rst, weight)
        if self.bias is not None:
            rst = rst + self.bias
        if self._activation is not None:
            rst = self._activation(rst)
        return rst

    def extra_repr(self) -> str:
        return f"in={self._in_feats}, out={self._out_feats}, normalization={self._norm}"


class EdgeWeightNorm(nn.Module):
    """``dgl.nn.EdgeWeightNorm``: scale scalar edge weights as GraphConv scales degrees.

    ``"both"``: w_uv / sqrt(W_out(u) W_in(v)), ``"right"``: w_uv / W_in(v), ``"left"`` (as DGL,
    also divides by the dst sum), ``"none"``: unchanged; W_out / W_in are sums of the weights
    (+ ``eps``).  Two scatter-adds over the edges, O(E) scalars.

    Parameters
    ----------
    norm : "both" | "right" | "left" | "none"
    eps : added to each weight sum before inverting
    """

    def __init__(self, norm: str = "both", eps: float = 0.0):
        super().__init__()
        self._norm = norm
        self._eps = eps

    def forward(self, graph, edge_weight: Tensor) -> Tensor:
        """
        Parameters
        ----------
        graph : bgl.dgl graph or block
        edge_weight : float [num_edges], positive for "both"

        Returns
        -------
        float [num_edges], the normalised weights
        """
        if edge_weight.dim() > 1:
            raise DGLError("Currently the normalization is only defined on scalar edge weight. "
                           "Please customize the normalization for your high-dimensional weights.")
        check_edge_weight(graph, edge_weight)
        if self._norm == "both" and bool((edge_weight <= 0).any()):
            raise DGLError('Non-positive edge weight detected with `norm="both"`. '
                           "This leads to square root of zero or negative values.")
        src, dst = graph.edges()
        src, dst = src.to(edge_weight.device).long(), dst.to(edge_weight.device).long()
        out = edge_weight
        if self._norm == "both":
            out_sum = edge_weight.new_zeros(graph.num_src_nodes()).index_add_(0, src, edge_weight)
            out = out * torch.pow(out_sum + self._eps, -0.5).index_select(0, src)
        if self._norm != "none":
            in_sum = edge_weight.new_zeros(graph.num_dst_nodes()).index_add_(0, dst, edge_weight)
            in_sum = in_sum + self._eps
            in_scale = torch.pow(in_sum, -0.5) if self._norm == "both" else 1.0 / in_sum
            out = out * in_scale.index_select(0, dst)
        return out
