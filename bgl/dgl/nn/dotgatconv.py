"""Dot-product attention (``dgl.nn.DotGatConv``) for ``bgl.dgl`` graphs and blocks: each head scores an edge
by ``<W h_u, W h_v> / sqrt(out_feats)``, normalised over the destination's in-edges, and sums the
sources' ``W h_u`` by those scores.  One SDDMM for the scores, ``edge_softmax``, one SpMM for the sum;
``[E, heads]`` scores are all it keeps per edge.  Parameter names are DGL's (``fc``, or ``fc_src`` /
``fc_dst`` for a ``(src, dst)`` width pair), so DGL's state dicts load.
"""
from __future__ import annotations

from torch import Tensor, nn

from ..ops import edge_softmax, u_dot_v, u_mul_e_sum
from .graph_inputs import add_head_projections, refuse_zero_in_degree, split_widths


class DotGatConv(nn.Module):
    """``DotGatConv(in_feats, out_feats, num_heads, allow_zero_in_degree=False)`` -> ``[num_dst, heads, out]``."""

    def __init__(self, in_feats, out_feats: int, num_heads: int, allow_zero_in_degree: bool = False):
        super().__init__()
        self._in_src_feats, self._in_dst_feats = split_widths(in_feats)
        self._out_feats, self._num_heads = out_feats, num_heads
        self._allow_zero_in_degree = allow_zero_in_degree
        add_head_projections(self, in_feats, out_feats * num_heads)

    def forward(self, graph, feat, get_attention: bool = False):
        if not self._allow_zero_in_degree:
            refuse_zero_in_degree(graph)
        heads = (-1, self._num_heads, self._out_feats)
        if isinstance(feat, tuple):
            feat_src, feat_dst = self.fc_src(feat[0]).view(heads), self.fc_dst(feat[1]).view(heads)
            if not graph.is_block and graph.srctypes == graph.dsttypes:
                # DGL writes both into one node frame there, the destination's last: its sources read it too
                feat_src = feat_dst
        else:
            feat_src = feat_dst = self.fc(feat).view(heads)
            if graph.is_block:
                feat_dst = feat_src[: graph.num_dst_nodes()]
        scores = u_dot_v(graph, feat_src, feat_dst)  # [E, heads, 1]
        attention = edge_softmax(graph, scores / self._out_feats ** 0.5)
        rst: Tensor = u_mul_e_sum(graph, feat_src, attention)
        return (rst, attention) if get_attention else rst
