"""``EGTLayer``: the Edge-augmented Graph Transformer layer (Hussain et al., KDD '22) on padded batches:
attention whose scores are biased and gated by the pair (edge) channels, which it updates in turn.
O(N^2 * (feat_size + edge_feat_size)) per graph.
"""
from __future__ import annotations

import torch
from torch import nn


class EGTLayer(nn.Module):
    """DGL's ``EGTLayer``.

    Parameters
    ----------
    feat_size : int
        Node feature size; a multiple of ``num_heads``.
    edge_feat_size : int
        Pair (edge channel) feature size.
    num_heads : int
    num_virtual_nodes : int
        The first ``num_virtual_nodes`` nodes of each graph are virtual: their aggregation is not
        scaled by degree.
    dropout, attn_dropout : float
    activation : nn.Module
        The feed-forward activation.
    edge_update : bool
        Whether to update and return the pair features.
    """

    def __init__(self, feat_size, edge_feat_size, num_heads, num_virtual_nodes, dropout=0, attn_dropout=0,
                 activation=nn.ELU(), edge_update=True):
        super().__init__()
        if feat_size % num_heads:
            raise AssertionError(f"feat_size must be divisible by num_heads, got {feat_size} and {num_heads}")
        self.num_heads, self.num_virtual_nodes, self.edge_update = num_heads, num_virtual_nodes, edge_update
        self.dot_dim = feat_size // num_heads
        self.mha_ln_h = nn.LayerNorm(feat_size)
        self.mha_ln_e = nn.LayerNorm(edge_feat_size)
        self.edge_input = nn.Linear(edge_feat_size, num_heads)
        self.qkv_proj = nn.Linear(feat_size, feat_size * 3)
        self.gate = nn.Linear(edge_feat_size, num_heads)
        self.attn_dropout = nn.Dropout(attn_dropout)
        self.node_output = nn.Linear(feat_size, feat_size)
        self.mha_dropout_h = nn.Dropout(dropout)
        self.node_ffn = self._ffn(feat_size, activation, dropout)
        if edge_update:
            self.edge_output = nn.Linear(num_heads, edge_feat_size)
            self.mha_dropout_e = nn.Dropout(dropout)
            self.edge_ffn = self._ffn(edge_feat_size, activation, dropout)

    @staticmethod
    def _ffn(size, activation, dropout):
        return nn.Sequential(nn.LayerNorm(size), nn.Linear(size, size), activation, nn.Linear(size, size),
                             nn.Dropout(dropout))

    def forward(self, nfeat, efeat, mask=None):
        """``nfeat``: float [batch, N, feat_size]; ``efeat``: float [batch, N, N, edge_feat_size];
        ``mask``: float [batch, N, N], added to the scores and gates (-inf or a large negative where a
        pair is padding), optional.  Returns the new ``nfeat`` and, with ``edge_update``, ``efeat``."""
        efeat_ln = self.mha_ln_e(efeat)
        qkv = self.qkv_proj(self.mha_ln_h(nfeat))
        bsz, n, _ = qkv.shape
        # DGL's layout: feature c * num_heads + h is channel c of head h; q, k, v are channel blocks
        q, k, v = qkv.view(bsz, n, -1, self.num_heads).split(self.dot_dim, dim=2)
        scores = torch.einsum("bldh,bmdh->blmh", q, k).clamp(-5, 5) + self.edge_input(efeat_ln)
        gates, logits = self.gate(efeat_ln), scores
        if mask is not None:
            gates, logits = gates + mask.unsqueeze(-1), scores + mask.unsqueeze(-1)
        gates = torch.sigmoid(gates)
        attn = self.attn_dropout(torch.softmax(logits, dim=2) * gates)
        agg = torch.einsum("blmh,bmkh->blkh", attn, v)
        # EGT's degree scaler: log(1 + the gates' sum); virtual nodes are not scaled
        scale = torch.log(1 + gates.sum(dim=2, keepdim=True))
        virtual = torch.arange(n, device=scale.device).view(1, n, 1, 1) < self.num_virtual_nodes
        agg = (agg * torch.where(virtual, torch.ones_like(scale), scale)).reshape(bsz, n, -1)
        h = self.mha_dropout_h(self.node_output(agg)) + nfeat
        h = self.node_ffn(h) + h
        if not self.edge_update:
            return h
        e = self.mha_dropout_e(self.edge_output(scores)) + efeat
        return h, self.edge_ffn(e) + e
