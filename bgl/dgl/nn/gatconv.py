"""Graph attention (``dgl.nn.GATConv``, ``dgl.nn.GATv2Conv``) for ``bgl.dgl`` graphs.

Parameter names, shapes and initialisation are DGL's (``fc`` or ``fc_src``/``fc_dst``,
``attn_l``/``attn_r`` or ``attn`` [1, heads, out], ``res_fc``, ``bias``).  GATConv's scores are
per-node dot products combined per edge (E x heads floats, as DGL), aggregation one fused
u_mul_e + sum.  GATv2 scores need the E x heads x out sum of both ends, as DGL's do.
"""
from __future__ import annotations

from typing import Callable, Optional

import torch
from torch import Tensor, nn

from ..ops import edge_softmax, gsddmm, gspmm
from .dropout import Dropout
from .graph_inputs import add_head_projections, project_heads, refuse_zero_in_degree, split_widths


class _Attention(nn.Module):
    """What GATConv and GATv2Conv share: the widths, dropouts, LeakyReLU and DGL's zero-in-degree switch
    (no parameters here, so each layer registers its own in DGL's order and state-dict names)."""

    def __init__(self, in_feats, out_feats: int, num_heads: int, feat_drop: float, attn_drop: float,
                 negative_slope: float, allow_zero_in_degree: bool):
        super().__init__()
        self._num_heads = num_heads
        self._in_src_feats, self._in_dst_feats = split_widths(in_feats)
        self._out_feats = out_feats
        self._allow_zero_in_degree = allow_zero_in_degree
        self.feat_drop = Dropout(feat_drop)
        self.attn_drop = Dropout(attn_drop)
        self.leaky_relu = nn.LeakyReLU(negative_slope)

    def set_allow_zero_in_degree(self, set_value: bool) -> None:
        self._allow_zero_in_degree = set_value


class GATConv(_Attention):
    """``dgl.nn.GATConv``: multi-head attention over in-edges; output [num_dst, heads, out_feats].

    Parameters
    ----------
    in_feats : int, or (src, dst) widths (then ``fc_src`` and ``fc_dst`` instead of ``fc``)
    out_feats : int, per head
    num_heads : int
    feat_drop, attn_drop : dropout on inputs / attention weights
    negative_slope : LeakyReLU slope on the scores
    residual : add ``res_fc(h_dst)`` (a Linear, or the identity when widths agree)
    activation : callable applied last, or None
    allow_zero_in_degree : accept dst nodes with no in-edge; refused with DGLError by default
    bias : learnable ``bias`` [heads * out] (carried by ``res_fc`` when that is a Linear)
    """

    def __init__(self, in_feats, out_feats: int, num_heads: int, feat_drop: float = 0.0,
                 attn_drop: float = 0.0, negative_slope: float = 0.2, residual: bool = False,
                 activation: Optional[Callable] = None, allow_zero_in_degree: bool = False,
                 bias: bool = True):
        super().__init__(in_feats, out_feats, num_heads, feat_drop, attn_drop, negative_slope, allow_zero_in_degree)
        width = out_feats * num_heads
        add_head_projections(self, in_feats, width)
        self.attn_l = nn.Parameter(torch.empty(1, num_heads, out_feats))
        self.attn_r = nn.Parameter(torch.empty(1, num_heads, out_feats))
        self.has_linear_res = residual and self._in_dst_feats != width
        if not residual:
            self.register_buffer("res_fc", None)
        elif self.has_linear_res:
            self.res_fc = nn.Linear(self._in_dst_feats, width, bias=bias)
        else:
            self.res_fc = nn.Identity()
        self.has_explicit_bias = bias and not self.has_linear_res
        if self.has_explicit_bias:
            self.bias = nn.Parameter(torch.empty(width))
        else:
            self.register_buffer("bias", None)
        self.activation = activation
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Glorot-normal with ReLU gain on weights and attention vectors, zero biases (DGL's)."""
        gain = nn.init.calculate_gain("relu")
        for linear in (("fc",) if hasattr(self, "fc") else ("fc_src", "fc_dst")):
            nn.init.xavier_normal_(getattr(self, linear).weight, gain=gain)
        nn.init.xavier_normal_(self.attn_l, gain=gain)
        nn.init.xavier_normal_(self.attn_r, gain=gain)
        if self.has_explicit_bias:
            nn.init.zeros_(self.bias)
        if isinstance(self.res_fc, nn.Linear):
            nn.init.xavier_normal_(self.res_fc.weight, gain=gain)
            if self.res_fc.bias is not None:
                nn.init.zeros_(self.res_fc.bias)

    def forward(self, graph, feat, edge_weight: Optional[Tensor] = None, get_attention: bool = False):
        """
        Parameters
        ----------
        graph : bgl.dgl graph or block
        feat : float [num_src, *, in], or a (src, dst) pair
        edge_weight : float [num_edges] scaling each attention weight, or None
        get_attention : also return the attention weights [num_edges, heads, 1]

        Returns
        -------
        float [num_dst, *, heads, out_feats] (and the attention weights)
        """
        if not self._allow_zero_in_degree:
            refuse_zero_in_degree(graph)
        heads, out = self._num_heads, self._out_feats
        h_src, h_dst, z_src, z_dst = project_heads(self, graph, feat, heads, out)
        score_src = (z_src * self.attn_l).sum(dim=-1, keepdim=True)
        score_dst = (z_dst * self.attn_r).sum(dim=-1, keepdim=True)
        scores = self.leaky_relu(gsddmm(graph, "add", score_src, score_dst, "u", "v"))
        attention = self.attn_drop(edge_softmax(graph, scores))
        if edge_weight is not None:
            attention = attention * edge_weight.tile(1, heads, 1).transpose(0, 2)
        rst = gspmm(graph, "mul", "sum", z_src, attention)
        if self.res_fc is not None:
            rst = rst + self.res_fc(h_dst).view(*h_dst.shape[:-1], heads, out)
        if self.has_explicit_bias:
            rst = rst + self.bias.view(*((1,) * (h_dst.dim() - 1)), heads, out)
        if self.activation:
            rst = self.activation(rst)
        return (rst, attention) if get_attention else rst


class GATv2Conv(_Attention):
    """``dgl.nn.GATv2Conv``: attention ``a . LeakyReLU(W_s h_u + W_d h_v)`` (the dynamic variant).

    Parameters
    ----------
    in_feats : int, or (src, dst) widths
    out_feats : int, per head
    num_heads : int
    feat_drop, attn_drop, negative_slope, residual, activation, allow_zero_in_degree : as GATConv
    bias : biases inside ``fc_src``, ``fc_dst`` and a Linear ``res_fc``
    share_weights : one Linear for both ends (``fc_dst`` is ``fc_src``)
    """

    def __init__(self, in_feats, out_feats: int, num_heads: int, feat_drop: float = 0.0,
                 attn_drop: float = 0.0, negative_slope: float = 0.2, residual: bool = False,
                 activation: Optional[Callable] = None, allow_zero_in_degree: bool = False,
                 bias: bool = True, share_weights: bool = False):
        super().__init__(in_feats, out_feats, num_heads, feat_drop, attn_drop, negative_slope, allow_zero_in_degree)
        width = out_feats * num_heads
        self.fc_src = nn.Linear(self._in_src_feats, width, bias=bias)
        if share_weights and not isinstance(in_feats, tuple):
            self.fc_dst = self.fc_src
        else:
            self.fc_dst = nn.Linear(self._in_dst_feats, width, bias=bias)
        self.attn = nn.Parameter(torch.empty(1, num_heads, out_feats))
        if not residual:
            self.register_buffer("res_fc", None)
        elif self._in_dst_feats != width:
            self.res_fc = nn.Linear(self._in_dst_feats, width, bias=bias)
        else:
            self.res_fc = nn.Identity()
        self.activation = activation
        self.share_weights = share_weights
        self.bias = bias
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Glorot-normal with ReLU gain on weights and ``attn``, zero biases (DGL's)."""
        gain = nn.init.calculate_gain("relu")
        linears = [self.fc_src] + ([] if self.share_weights else [self.fc_dst])
        if isinstance(self.res_fc, nn.Linear):
            linears.append(self.res_fc)
        for linear in linears:
            nn.init.xavier_normal_(linear.weight, gain=gain)
            if linear.bias is not None:
                nn.init.zeros_(linear.bias)
        nn.init.xavier_normal_(self.attn, gain=gain)

    def forward(self, graph, feat, get_attention: bool = False):
        """
        Parameters
        ----------
        graph : bgl.dgl graph or block
        feat : float [num_src, in], or a (src [num_src, d_src], dst [num_dst, d_dst]) pair
        get_attention : also return the attention weights [num_edges, heads, 1]

        Returns
        -------
        float [num_dst, heads, out_feats] (and the attention weights)
        """
        if not self._allow_zero_in_degree:
            refuse_zero_in_degree(graph)
        heads, out = self._num_heads, self._out_feats
        if isinstance(feat, tuple):
            h_src, h_dst = self.feat_drop(feat[0]), self.feat_drop(feat[1])
            z_src = self.fc_src(h_src).view(-1, heads, out)
            z_dst = self.fc_dst(h_dst).view(-1, heads, out)
        else:
            h_src = h_dst = self.feat_drop(feat)
            z_src = self.fc_src(h_src).view(-1, heads, out)
            z_dst = z_src if self.share_weights else self.fc_dst(h_dst).view(-1, heads, out)
            if graph.is_block:
                z_dst = z_dst[: graph.num_dst_nodes()]
                h_dst = h_dst[: graph.num_dst_nodes()]
        pair = self.leaky_relu(gsddmm(graph, "add", z_src, z_dst, "u", "v"))  # [E, heads, out]
        scores = (pair * self.attn).sum(dim=-1).unsqueeze(dim=2)
        attention = self.attn_drop(edge_softmax(graph, scores))
        rst = gspmm(graph, "mul", "sum", z_src, attention)
        if self.res_fc is not None:
            rst = rst + self.res_fc(h_dst).view(h_dst.shape[0], heads, out)
        if self.activation:
            rst = self.activation(rst)
        return (rst, attention) if get_attention else rst
