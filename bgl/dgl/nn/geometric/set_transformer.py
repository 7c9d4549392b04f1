"""``dgl.nn.SetTransformerEncoder`` / ``SetTransformerDecoder`` (Lee et al., 2019, "Set Transformer"): attention
over the nodes of each graph of a batch, as a readout.

The encoder stacks self-attention blocks (SAB) or induced ones (ISAB: m learned points attend to the set, then
the set to them); the decoder pools each graph into k seed vectors (PMA), refines them with SABs and returns
[batch, k * d_model].  The graphs' node features are padded to [batch, longest, ...] for the attention and packed
back (as DGL's): cost O(batch * longest^2 * heads) per SAB layer, O(batch * longest * m) per ISAB.  DGL's module
layout (``layers.i.mha.proj_q``, ``pma.seed_vectors``, ...) and initialisation order, so its state dicts load.
"""
from __future__ import annotations

import math
import warnings

import torch
from torch import Tensor, nn

from bgl.dgl.base import DGLWarning


def _as_lengths(lengths, device) -> Tensor:
    return torch.as_tensor(lengths, dtype=torch.int64, device=device)


def _slots(lengths: Tensor) -> tuple:
    """(graph, position) of each packed row: int64 [total] each."""
    graph = torch.repeat_interleave(torch.arange(lengths.shape[0], device=lengths.device), lengths)
    starts = torch.cumsum(lengths, 0) - lengths
    return graph, torch.arange(graph.shape[0], device=lengths.device) - starts[graph]


def _pad(packed: Tensor, lengths: Tensor, longest: int) -> Tensor:
    """[total, *] rows of consecutive graphs -> [batch, longest, *], zeros after each graph's rows."""
    out = packed.new_zeros((lengths.shape[0], longest) + tuple(packed.shape[1:]))
    return out.index_put(_slots(lengths), packed)


def _learned_rows(module: nn.Module, name: str, letter: str, count: int, d_model: int) -> None:
    """``module.<name>``: ``count`` learned query rows (initialised by the module's ``reset_parameters``)."""
    if count == 1:
        warnings.warn(f"if {letter} is set to 1, the parameters corresponding to query and key projections would "
                      "not get updated during training.", DGLWarning, stacklevel=3)
    module.d_model = d_model
    setattr(module, name, nn.Parameter(torch.empty(count, d_model)))


class MultiHeadAttention(nn.Module):
    """Attention of each graph's rows of ``x`` over its rows of ``mem``, then residual, LayerNorm, feed-forward,
    LayerNorm.  ``dropouta`` is kept as DGL keeps it (built, not applied)."""

    def __init__(self, d_model: int, num_heads: int, d_head: int, d_ff: int, dropouth: float = 0.0,
                 dropouta: float = 0.0):
        super().__init__()
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_head = d_head
        self.d_ff = d_ff
        self.proj_q = nn.Linear(d_model, num_heads * d_head, bias=False)
        self.proj_k = nn.Linear(d_model, num_heads * d_head, bias=False)
        self.proj_v = nn.Linear(d_model, num_heads * d_head, bias=False)
        self.proj_o = nn.Linear(num_heads * d_head, d_model, bias=False)
        self.ffn = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Dropout(dropouth), nn.Linear(d_ff, d_model))
        self.droph = nn.Dropout(dropouth)
        self.dropa = nn.Dropout(dropouta)
        self.norm_in = nn.LayerNorm(d_model)
        self.norm_inter = nn.LayerNorm(d_model)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)

    def forward(self, x: Tensor, mem: Tensor, lengths_x, lengths_mem) -> Tensor:
        """x : [sum lengths_x, d_model]; mem : [sum lengths_mem, d_model] -> [sum lengths_x, d_model]."""
        lengths_x, lengths_mem = _as_lengths(lengths_x, x.device), _as_lengths(lengths_mem, x.device)
        batch = lengths_x.shape[0]
        len_x, len_mem = int(lengths_x.max()), int(lengths_mem.max())
        heads = (self.num_heads, self.d_head)
        queries = _pad(self.proj_q(x).view(-1, *heads), lengths_x, len_x)
        keys = _pad(self.proj_k(mem).view(-1, *heads), lengths_mem, len_mem)
        values = _pad(self.proj_v(mem).view(-1, *heads), lengths_mem, len_mem)
        e = torch.einsum("bxhd,byhd->bhxy", queries, keys) / math.sqrt(self.d_head)
        mask = ((torch.arange(len_x, device=x.device) < lengths_x.unsqueeze(1)).unsqueeze(-1)
                & (torch.arange(len_mem, device=x.device) < lengths_mem.unsqueeze(1)).unsqueeze(-2)).unsqueeze(1)
        alpha = torch.softmax(e.masked_fill(~mask, -float("inf")), dim=-1)
        alpha = alpha.masked_fill(~mask, 0.0)  # rows with nothing to attend to: 0, not NaN
        out = torch.einsum("bhxy,byhd->bxhd", alpha, values)
        out = self.proj_o(out.contiguous().view(batch, len_x, self.num_heads * self.d_head))
        out = out[_slots(lengths_x)]  # packed back
        x = self.norm_in(x + out)
        return self.norm_inter(x + self.ffn(x))


class SetAttentionBlock(nn.Module):
    """SAB: the set attends to itself."""

    def __init__(self, d_model, num_heads, d_head, d_ff, dropouth=0.0, dropouta=0.0):
        super().__init__()
        self.mha = MultiHeadAttention(d_model, num_heads, d_head, d_ff, dropouth=dropouth, dropouta=dropouta)

    def forward(self, feat: Tensor, lengths) -> Tensor:
        return self.mha(feat, feat, lengths, lengths)


class InducedSetAttentionBlock(nn.Module):
    """ISAB: m learned inducing points attend to the set, the set to them."""

    def __init__(self, m, d_model, num_heads, d_head, d_ff, dropouth=0.0, dropouta=0.0):
        super().__init__()
        self.m = m
        _learned_rows(self, "inducing_points", "m", m, d_model)
        self.mha = nn.ModuleList([MultiHeadAttention(d_model, num_heads, d_head, d_ff, dropouth=dropouth,
                                                     dropouta=dropouta) for _ in range(2)])
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.xavier_uniform_(self.inducing_points)

    def forward(self, feat: Tensor, lengths) -> Tensor:
        count = len(lengths)
        memory = self.mha[0](self.inducing_points.repeat(count, 1), feat, [self.m] * count, lengths)
        return self.mha[1](feat, memory, lengths, [self.m] * count)

    def extra_repr(self) -> str:
        return f"InducedVector: ({self.inducing_points.shape[0]}, {self.inducing_points.shape[1]})"


class PMALayer(nn.Module):
    """PMA: k learned seed vectors attend to the (feed-forwarded) set."""

    def __init__(self, k, d_model, num_heads, d_head, d_ff, dropouth=0.0, dropouta=0.0):
        super().__init__()
        self.k = k
        _learned_rows(self, "seed_vectors", "k", k, d_model)
        self.mha = MultiHeadAttention(d_model, num_heads, d_head, d_ff, dropouth=dropouth, dropouta=dropouta)
        self.ffn = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Dropout(dropouth), nn.Linear(d_ff, d_model))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.xavier_uniform_(self.seed_vectors)

    def forward(self, feat: Tensor, lengths) -> Tensor:
        count = len(lengths)
        return self.mha(self.seed_vectors.repeat(count, 1), self.ffn(feat), [self.k] * count, lengths)

    def extra_repr(self) -> str:
        return f"SeedVector: ({self.seed_vectors.shape[0]}, {self.seed_vectors.shape[1]})"


class SetTransformerEncoder(nn.Module):
    """``dgl.nn.SetTransformerEncoder``: node features [N, d_model] of a batch -> [N, d_model].

    Parameters
    ----------
    d_model, n_heads, d_head, d_ff : int, widths; n_layers : int, blocks stacked
    block_type : 'sab' or 'isab' (KeyError otherwise, as DGL); m : int, inducing points (required for 'isab')
    dropouth : float, the feed-forward's dropout; dropouta : float, kept (unused, as in DGL)
    """

    def __init__(self, d_model, n_heads, d_head, d_ff, n_layers=1, block_type="sab", m=None, dropouth=0.0,
                 dropouta=0.0):
        super().__init__()
        self.n_layers = n_layers
        self.block_type = block_type
        self.m = m
        if block_type == "isab" and m is None:
            raise KeyError("The number of inducing points is not specified in ISAB block.")
        if block_type not in ("sab", "isab") and n_layers > 0:
            raise KeyError(f"Unrecognized block type {block_type}: we only support sab/isab")
        widths = (d_model, n_heads, d_head, d_ff)
        drop = {"dropouth": dropouth, "dropouta": dropouta}
        self.layers = nn.ModuleList([SetAttentionBlock(*widths, **drop) if block_type == "sab"
                                     else InducedSetAttentionBlock(m, *widths, **drop) for _ in range(n_layers)])

    def forward(self, graph, feat: Tensor) -> Tensor:
        """graph : a bgl.dgl batch; feat : float [N, d_model] -> float [N, d_model]."""
        lengths = graph.batch_num_nodes()
        for layer in self.layers:
            feat = layer(feat, lengths)
        return feat


class SetTransformerDecoder(nn.Module):
    """``dgl.nn.SetTransformerDecoder``: node features [N, d_model] of a batch -> [batch_size, k * d_model].

    Parameters
    ----------
    d_model, num_heads, d_head, d_ff : int, widths; n_layers : int, SABs after the pooling
    k : int, seed vectors per graph; dropouth, dropouta : as :class:`SetTransformerEncoder`
    """

    def __init__(self, d_model, num_heads, d_head, d_ff, n_layers, k, dropouth=0.0, dropouta=0.0):
        super().__init__()
        self.n_layers = n_layers
        self.k = k
        self.d_model = d_model
        widths = (d_model, num_heads, d_head, d_ff)
        drop = {"dropouth": dropouth, "dropouta": dropouta}
        self.pma = PMALayer(k, *widths, **drop)
        self.layers = nn.ModuleList([SetAttentionBlock(*widths, **drop) for _ in range(n_layers)])

    def forward(self, graph, feat: Tensor) -> Tensor:
        """graph : a bgl.dgl batch; feat : float [N, d_model] -> float [batch_size, k * d_model]."""
        feat = self.pma(feat, graph.batch_num_nodes())
        lengths = [self.k] * graph.batch_size
        for layer in self.layers:
            feat = layer(feat, lengths)
        return feat.view(graph.batch_size, self.k * self.d_model)
