"""Graph attention scored with edge features: ``dgl.nn.EGATConv`` (Kamiński et al., 2021) and
``dgl.nn.EdgeGATConv`` (GAT whose scores and messages add an edge term).

EGATConv: ``f_uv = LeakyReLU(fc_ni(x_u) + fc_nj(x_v) + fc_fij(e_uv) + bias)`` is the new edge feature
(``[E, heads, out_edge]``, returned); ``attn . f_uv`` softmaxed over in-edges weighs ``fc_node_src(x_u)``.
EdgeGATConv: GAT's score plus ``attn_edge . fc_edge(e_uv)``, and messages ``W x_u + fc_edge(e_uv)``.
Both follow DGL's arithmetic (``E x heads x out`` per-edge tensors where DGL builds them, the node part of
the aggregation fused), parameter names and initialisation, so DGL's state dicts load.
"""
from __future__ import annotations

from typing import Callable, Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ...base import DGLError
from ...ops import edge_softmax, gsddmm, gspmm
from ..dropout import Dropout
from ..graph_inputs import add_bias, add_head_projections, project_heads, refuse_zero_in_degree, split_widths

# EGATConv's own wording: it has no allow_zero_in_degree switch to mention
EGAT_ZERO_IN_DEGREE_MESSAGE = (
    "There are 0-in-degree nodes in the graph, output for those nodes will be invalid. "
    "This is harmful for some applications, causing silent performance regression. "
    "Adding self-loop on the input graph by calling `g = dgl.add_self_loop(g)` will resolve the issue.")


def _heads_of(edge_weight: Tensor, heads: int) -> Tensor:
    """DGL's broadcast of a [num_edges] weight over the heads: [num_edges, heads, 1]."""
    return edge_weight.tile(1, heads, 1).transpose(0, 2)


class EGATConv(nn.Module):
    """``dgl.nn.EGATConv``: returns (node output [num_dst, heads, out_node_feats],
    edge output [num_edges, heads, out_edge_feats]) and, with ``get_attention``, the weights [E, heads, 1].

    Parameters
    ----------
    in_node_feats : int, or (src, dst) widths
    in_edge_feats, out_node_feats, out_edge_feats : int
    num_heads : int
    bias : learnable ``bias`` [heads * out_edge_feats] added to the edge term before the LeakyReLU

    Destination nodes without in-edges are always refused (DGLError), as DGL's layer has no switch.
    On a block, pass a ``(src, dst)`` feature pair (DGL's layer refuses one tensor there too).
    """

    def __init__(self, in_node_feats, in_edge_feats: int, out_node_feats: int, out_edge_feats: int,
                 num_heads: int, bias: bool = True):
        super().__init__()
        self._num_heads = num_heads
        self._in_src_node_feats, self._in_dst_node_feats = split_widths(in_node_feats)
        self._out_node_feats, self._out_edge_feats = out_node_feats, out_edge_feats
        src_width, dst_width = self._in_src_node_feats, self._in_dst_node_feats
        if not isinstance(in_node_feats, tuple):
            dst_width = src_width
        self.fc_node_src = nn.Linear(src_width, out_node_feats * num_heads, bias=False)
        self.fc_ni = nn.Linear(src_width, out_edge_feats * num_heads, bias=False)
        self.fc_nj = nn.Linear(dst_width, out_edge_feats * num_heads, bias=False)
        self.fc_fij = nn.Linear(in_edge_feats, out_edge_feats * num_heads, bias=False)
        self.attn = nn.Parameter(torch.empty(1, num_heads, out_edge_feats))
        add_bias(self, num_heads * out_edge_feats, bias)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Glorot-normal with ReLU gain on the four maps and ``attn``, zero bias (DGL's)."""
        gain = nn.init.calculate_gain("relu")
        for linear in (self.fc_node_src, self.fc_ni, self.fc_fij, self.fc_nj):
            nn.init.xavier_normal_(linear.weight, gain=gain)
        nn.init.xavier_normal_(self.attn, gain=gain)
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def forward(self, graph, nfeats, efeats: Tensor, edge_weight: Optional[Tensor] = None,
                get_attention: bool = False):
        """
        Parameters
        ----------
        graph : bgl.dgl graph or block
        nfeats : float [num_nodes, in], or a (src, dst) pair
        efeats : float [num_edges, in_edge_feats]
        edge_weight : float [num_edges] scaling each attention weight, or None
        get_attention : also return the attention weights [num_edges, heads, 1]
        """
        if bool((graph.in_degrees() == 0).any()):
            raise DGLError(EGAT_ZERO_IN_DEGREE_MESSAGE)
        nfeats_src, nfeats_dst = nfeats if isinstance(nfeats, tuple) else (nfeats, nfeats)
        for rows, nodes in ((nfeats_src.shape[0], graph.num_src_nodes()), (nfeats_dst.shape[0], graph.num_dst_nodes())):
            if rows != nodes:  # DGL's words, from storing the features on the graph
                raise DGLError(f"Expect number of features to match number of nodes (len(u)). "
                               f"Got {rows} and {nodes} instead.")
        heads = self._num_heads
        f_out = gsddmm(graph, "add", self.fc_ni(nfeats_src), self.fc_nj(nfeats_dst), "u", "v") + self.fc_fij(efeats)
        if self.bias is not None:
            f_out = f_out + self.bias
        f_out = F.leaky_relu(f_out).view(-1, heads, self._out_edge_feats)
        attention = edge_softmax(graph, (f_out * self.attn).sum(dim=-1).unsqueeze(-1))
        if edge_weight is not None:
            attention = attention * _heads_of(edge_weight, heads)
        h_src = self.fc_node_src(nfeats_src).view(-1, heads, self._out_node_feats)
        h_out = gspmm(graph, "mul", "sum", h_src, attention).view(-1, heads, self._out_node_feats)
        return (h_out, f_out, attention) if get_attention else (h_out, f_out)


class EdgeGATConv(nn.Module):
    """``dgl.nn.EdgeGATConv``: output [num_dst, *, heads, out_feats] (and the attention weights).

    Parameters
    ----------
    in_feats : int, or (src, dst) widths (then ``fc_src`` / ``fc_dst`` instead of ``fc``)
    edge_feats : int, width of the edge input
    out_feats : int, per head
    num_heads : int
    feat_drop, attn_drop : dropout on inputs / attention weights
    negative_slope : LeakyReLU slope on the scores
    residual : add ``res_fc(x_dst)`` (always a Linear, as DGL's; on by default)
    activation : callable applied last, or None
    allow_zero_in_degree : accept dst nodes without in-edges; refused with DGLError by default
    bias : learnable ``bias`` [heads * out_feats]
    """

    def __init__(self, in_feats, edge_feats: int, out_feats: int, num_heads: int, feat_drop: float = 0.0,
                 attn_drop: float = 0.0, negative_slope: float = 0.2, residual: bool = True,
                 activation: Optional[Callable] = None, allow_zero_in_degree: bool = False, bias: bool = True):
        super().__init__()
        self._num_heads = num_heads
        self._in_src_feats, self._in_dst_feats = split_widths(in_feats)
        self._out_feats = out_feats
        self._allow_zero_in_degree = allow_zero_in_degree
        width = out_feats * num_heads
        add_head_projections(self, in_feats, width)
        self.attn_l = nn.Parameter(torch.empty(1, num_heads, out_feats))
        self.attn_r = nn.Parameter(torch.empty(1, num_heads, out_feats))
        self.feat_drop = Dropout(feat_drop)
        self.attn_drop = Dropout(attn_drop)
        self.leaky_relu = nn.LeakyReLU(negative_slope)
        add_bias(self, width, bias)
        if residual:
            self.res_fc = nn.Linear(self._in_dst_feats, width, bias=False)
        else:
            self.register_buffer("res_fc", None)
        self._edge_feats = edge_feats
        self.fc_edge = nn.Linear(edge_feats, width, bias=False)
        self.attn_edge = nn.Parameter(torch.empty(1, num_heads, out_feats))
        self.reset_parameters()
        self.activation = activation

    def reset_parameters(self) -> None:
        """Glorot-normal with ReLU gain on every weight and attention vector, zero bias (DGL's)."""
        gain = nn.init.calculate_gain("relu")
        for linear in (("fc",) if hasattr(self, "fc") else ("fc_src", "fc_dst")):
            nn.init.xavier_normal_(getattr(self, linear).weight, gain=gain)
        for param in (self.attn_l, self.attn_r, self.fc_edge.weight, self.attn_edge):
            nn.init.xavier_normal_(param, gain=gain)
        if self.bias is not None:
            nn.init.zeros_(self.bias)
        if isinstance(self.res_fc, nn.Linear):
            nn.init.xavier_normal_(self.res_fc.weight, gain=gain)

    def set_allow_zero_in_degree(self, set_value: bool) -> None:
        self._allow_zero_in_degree = set_value

    def forward(self, graph, feat, edge_feat: Tensor, get_attention: bool = False):
        """
        Parameters
        ----------
        graph : bgl.dgl graph or block
        feat : float [num_src, *, in], or a (src, dst) pair
        edge_feat : float [num_edges, edge_feats]
        get_attention : also return the attention weights [num_edges, heads, 1]
        """
        if not self._allow_zero_in_degree:
            refuse_zero_in_degree(graph)
        heads, out = self._num_heads, self._out_feats
        h_src, h_dst, z_src, z_dst = project_heads(self, graph, feat, heads, out)
        z_edge = self.fc_edge(edge_feat).view(*edge_feat.shape[:-1], heads, out)
        score_src = (z_src * self.attn_l).sum(dim=-1, keepdim=True)
        score_dst = (z_dst * self.attn_r).sum(dim=-1, keepdim=True)
        score_edge = (z_edge * self.attn_edge).sum(dim=-1, keepdim=True)
        scores = self.leaky_relu(gsddmm(graph, "add", score_src, score_dst, "u", "v") + score_edge)
        attention = self.attn_drop(edge_softmax(graph, scores))
        messages = gsddmm(graph, "add", z_src, z_edge, "u", "e") * attention  # DGL's (x_u W + e W_e) a per edge
        rst = gspmm(graph, "copy_rhs", "sum", None, messages)
        if self.res_fc is not None:
            rst = rst + self.res_fc(h_dst).view(*h_dst.shape[:-1], -1, out)
        if self.bias is not None:
            rst = rst + self.bias.view(*((1,) * (h_dst.dim() - 1)), heads, out)
        if self.activation:
            rst = self.activation(rst)
        return (rst, attention) if get_attention else rst
