"""Hu et al.'s heterogeneous graph transformer layer (``dgl.nn.HGTConv``) for ``bgl.dgl`` graphs and blocks.

As DGL's, it runs on a graph (or block) of one node and edge type whose nodes and edges carry type
ids (``dgl.to_homogeneous``'s ``NTYPE`` / ``ETYPE``): keys, queries and values are a linear map per
node type, attention and messages a linear map per edge type and head, attention normalised over
each destination's in-edges (``edge_softmax``), the result mapped per node type and mixed with the
destination's input by a learned per-type gate.  Parameter names, shapes and initialisation are
DGL's (``linear_k``, ``relation_att.<head>``, ``skip``, ``residual_w``, ...), so DGL's state dicts load.

Cost per call beyond the input: ``[E, heads, head_size]`` messages and ``[E, heads]`` scores (the
per-edge tensors any attention layer keeps for its backward), ``[N, heads * head_size]`` per map.
"""
from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from ..ops import copy_e_sum, edge_softmax
from .linear import TypedLinear


class HGTConv(nn.Module):
    """``HGTConv(in_size, head_size, num_heads, num_ntypes, num_etypes, dropout=0.2, use_norm=False)``;
    ``forward(g, x, ntype, etype, *, presorted=False)`` -> ``[num_dst, head_size * num_heads]``."""

    def __init__(self, in_size: int, head_size: int, num_heads: int, num_ntypes: int, num_etypes: int,
                 dropout: float = 0.2, use_norm: bool = False):
        super().__init__()
        width = head_size * num_heads
        self.in_size, self.head_size, self.num_heads = in_size, head_size, num_heads
        self.sqrt_d = math.sqrt(head_size)
        self.use_norm = use_norm
        self.linear_k = TypedLinear(in_size, width, num_ntypes)
        self.linear_q = TypedLinear(in_size, width, num_ntypes)
        self.linear_v = TypedLinear(in_size, width, num_ntypes)
        self.linear_a = TypedLinear(width, width, num_ntypes)
        self.relation_pri = nn.ParameterList([nn.Parameter(torch.ones(num_etypes)) for _ in range(num_heads)])
        self.relation_att = nn.ModuleList([TypedLinear(head_size, head_size, num_etypes) for _ in range(num_heads)])
        self.relation_msg = nn.ModuleList([TypedLinear(head_size, head_size, num_etypes) for _ in range(num_heads)])
        self.skip = nn.Parameter(torch.ones(num_ntypes))
        self.drop = nn.Dropout(dropout)
        if use_norm:
            self.norm = nn.LayerNorm(width)
        if in_size != width:
            self.residual_w = nn.Parameter(torch.empty(in_size, width))
            nn.init.xavier_uniform_(self.residual_w)

    def forward(self, g, x: Tensor, ntype: Tensor, etype: Tensor, *, presorted: bool = False) -> Tensor:
        num_dst = g.num_dst_nodes() if g.is_block else x.shape[0]
        x_dst, dst_ntype = x[:num_dst], ntype[:num_dst]
        heads = (-1, self.num_heads, self.head_size)
        k = self.linear_k(x, ntype, presorted).view(heads)
        q = self.linear_q(x_dst, dst_ntype, presorted).view(heads)
        v = self.linear_v(x, ntype, presorted).view(heads)
        src, dst = (t.long() for t in g.edges())
        scores, messages = [], []
        for i in range(self.num_heads):
            keyed = self.relation_att[i](k[src, i], etype, presorted)  # [E, head_size]
            scores.append((keyed * q[dst, i]).sum(-1) * self.relation_pri[i][etype] / self.sqrt_d)
            messages.append(self.relation_msg[i](v[src, i], etype, presorted))
        attention = edge_softmax(g, torch.stack(scores, dim=1))  # [E, heads]
        h = copy_e_sum(g, torch.stack(messages, dim=1) * attention.unsqueeze(-1))
        h = self.drop(self.linear_a(h.reshape(-1, self.num_heads * self.head_size), dst_ntype, presorted))
        gate = torch.sigmoid(self.skip[dst_ntype]).unsqueeze(-1)
        residual = x_dst @ self.residual_w if x_dst.shape != h.shape else x_dst
        h = h * gate + residual * (1 - gate)
        return self.norm(h) if self.use_norm else h
