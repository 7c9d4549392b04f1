"""``BiasedMHA`` and ``GraphormerLayer``: multi-head self-attention over all node pairs of a padded batch,
with an additive or multiplicative bias per pair and head (Graphormer's spatial / edge encodings).

Cost per graph: O(N^2 * feat_size) time, O(N^2 * num_heads) memory for the attention weights.
"""
from __future__ import annotations

import torch
from torch import nn


class BiasedMHA(nn.Module):
    """Dense multi-head attention with a bias on the attention scores (DGL's ``BiasedMHA``).

    Parameters
    ----------
    feat_size : int
        Input and output feature size; a multiple of ``num_heads``.
    num_heads : int
        Number of attention heads.
    bias : bool
        Whether the q / k / v / output projections have a bias.
    attn_bias_type : str
        ``"add"`` adds ``attn_bias`` to the scaled scores; anything else multiplies them by it.
    attn_drop : float
        Dropout on the attention weights.
    """

    def __init__(self, feat_size, num_heads, bias=True, attn_bias_type="add", attn_drop=0.1):
        super().__init__()
        if feat_size % num_heads:
            raise AssertionError(f"feat_size must be divisible by num_heads, got {feat_size} and {num_heads}")
        self.feat_size, self.num_heads = feat_size, num_heads
        self.head_dim = feat_size // num_heads
        self.scaling = self.head_dim ** -0.5
        self.attn_bias_type = attn_bias_type
        self.q_proj = nn.Linear(feat_size, feat_size, bias=bias)
        self.k_proj = nn.Linear(feat_size, feat_size, bias=bias)
        self.v_proj = nn.Linear(feat_size, feat_size, bias=bias)
        self.out_proj = nn.Linear(feat_size, feat_size, bias=bias)
        self.dropout = nn.Dropout(p=attn_drop)
        self.reset_parameters()

    def reset_parameters(self):
        """DGL's initialisation: Xavier-uniform projections (gain 2**-0.5 for q, k, v), zero output bias."""
        for proj in (self.q_proj, self.k_proj, self.v_proj):
            nn.init.xavier_uniform_(proj.weight, gain=2 ** -0.5)
        nn.init.xavier_uniform_(self.out_proj.weight)
        if self.out_proj.bias is not None:
            nn.init.constant_(self.out_proj.bias, 0.0)

    def _heads(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape  # feature h * head_dim + d is head h's d-th (DGL's layout)
        return x.view(b, n, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, ndata, attn_bias=None, attn_mask=None):
        """Attend over every node pair of each padded graph.

        Parameters
        ----------
        ndata : float tensor [batch, N, feat_size]
        attn_bias : float tensor [batch, N, N, num_heads], optional
        attn_mask : bool tensor [batch, N, N], optional
            True where a pair must not attend (its score becomes -inf; a row all True gives NaN, as DGL's).

        Returns
        -------
        float tensor [batch, N, feat_size]
        """
        b, n, _ = ndata.shape
        q = self._heads(self.q_proj(ndata)) * self.scaling
        k, v = self._heads(self.k_proj(ndata)), self._heads(self.v_proj(ndata))
        scores = (q @ k.transpose(-1, -2)).permute(0, 2, 3, 1)  # [b, N(query), N(key), heads], attn_bias's layout
        if attn_bias is not None:
            scores = scores + attn_bias if self.attn_bias_type == "add" else scores * attn_bias
        if attn_mask is not None:
            mask = attn_mask.to(torch.bool)
            scores = scores.masked_fill(mask.unsqueeze(-1) if mask.dim() == 3 else mask, float("-inf"))
        weights = self.dropout(torch.softmax(scores, dim=2)).permute(0, 3, 1, 2)
        out = (weights @ v).transpose(1, 2).reshape(b, n, self.feat_size)
        return self.out_proj(out)


class GraphormerLayer(nn.Module):
    """A Graphormer transformer layer (DGL's ``GraphormerLayer``): biased attention then a feed-forward
    network, each with a residual and layer norm (after, or before with ``norm_first``).

    Parameters
    ----------
    feat_size, hidden_size, num_heads : int
        Feature size, the feed-forward hidden size, the number of heads.
    attn_bias_type : str
        As in :class:`BiasedMHA`.
    norm_first : bool
        Layer norm before each block (pre-norm) instead of after.
    dropout, attn_dropout : float
        Dropout after each block; dropout on the attention weights.
    activation : nn.Module
        The feed-forward activation.
    """

    def __init__(self, feat_size, hidden_size, num_heads, attn_bias_type="add", norm_first=False, dropout=0.1,
                 attn_dropout=0.1, activation=nn.ReLU()):
        super().__init__()
        self.norm_first = norm_first
        self.attn = BiasedMHA(feat_size=feat_size, num_heads=num_heads, attn_bias_type=attn_bias_type,
                              attn_drop=attn_dropout)
        self.ffn = nn.Sequential(nn.Linear(feat_size, hidden_size), activation, nn.Dropout(p=dropout),
                                 nn.Linear(hidden_size, feat_size), nn.Dropout(p=dropout))
        self.dropout = nn.Dropout(p=dropout)
        self.attn_layer_norm = nn.LayerNorm(feat_size)
        self.ffn_layer_norm = nn.LayerNorm(feat_size)

    def _block(self, x, norm, body):
        h = body(norm(x) if self.norm_first else x) + x
        return h if self.norm_first else norm(h)

    def forward(self, nfeat, attn_bias=None, attn_mask=None):
        """``nfeat`` float [batch, N, feat_size], ``attn_bias`` / ``attn_mask`` as in :class:`BiasedMHA`;
        returns float [batch, N, feat_size]."""
        nfeat = self._block(nfeat, self.attn_layer_norm,
                            lambda h: self.dropout(self.attn(h, attn_bias, attn_mask)))
        return self._block(nfeat, self.ffn_layer_norm, self.ffn)
