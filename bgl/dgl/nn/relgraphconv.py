"""Relational graph convolution (``dgl.nn.RelGraphConv``) for ``bgl.dgl`` graphs."""
from __future__ import annotations

from typing import Callable, Optional

import torch
from torch import Tensor, nn

from ..base import DGLError
from .dropout import Dropout
from .linear import TypedLinear


class RelGraphConv(nn.Module):
    """R-GCN: ``h_v = sum_{(u, r) -> v} norm_e h_u W_r + h_v W_loop + bias`` (then layer norm,
    activation, dropout, in DGL's order).

    Parameters
    ----------
    in_feat, out_feat : int
    num_rels : number of edge types
    regularizer : None, "basis" or "bdd" (see :class:`TypedLinear`)
    num_bases : int; defaults to ``num_rels`` when a regularizer is given
    bias : learnable ``h_bias`` [out]
    activation : callable, or None
    self_loop : add ``h_v @ loop_weight`` [in, out]
    dropout : dropout on the output
    layer_norm : LayerNorm (``layer_norm_weight``) on the aggregated messages

    Notes
    -----
    Messages are computed over the edges sorted by type, a chunk of edges at a time, and added onto
    their dst rows in the same pass (:meth:`TypedLinear.typed_sum`): neither DGL's E x in gathered
    source rows nor its E x out messages exist, in forward or backward.
    """

    def __init__(self, in_feat: int, out_feat: int, num_rels: int, regularizer: Optional[str] = None,
                 num_bases: Optional[int] = None, bias: bool = True,
                 activation: Optional[Callable] = None, self_loop: bool = True, dropout: float = 0.0,
                 layer_norm: bool = False):
        super().__init__()
        if regularizer is not None and num_bases is None:
            num_bases = num_rels
        self.linear_r = TypedLinear(in_feat, out_feat, num_rels, regularizer, num_bases)
        self.bias = bias
        self.activation = activation
        self.self_loop = self_loop
        self.layer_norm = layer_norm
        if bias:
            self.h_bias = nn.Parameter(torch.zeros(out_feat))
        if layer_norm:
            self.layer_norm_weight = nn.LayerNorm(out_feat, elementwise_affine=True)
        if self_loop:
            self.loop_weight = nn.Parameter(torch.empty(in_feat, out_feat))
            nn.init.xavier_uniform_(self.loop_weight, gain=nn.init.calculate_gain("relu"))
        self.dropout = Dropout(dropout)

    def forward(self, g, feat: Tensor, etypes: Tensor, norm: Optional[Tensor] = None, *,
                presorted: bool = False) -> Tensor:
        """
        Parameters
        ----------
        g : bgl.dgl graph or block
        feat : float [num_src, in_feat]
        etypes : int [num_edges], the relation of each edge in [0, num_rels)
        norm : float [num_edges, 1] scaling each message, or None
        presorted : the edges are already ordered by type (skips one sort)

        Returns
        -------
        float [num_dst, out_feat]
        """
        if not torch.is_tensor(etypes) or etypes.shape[0] != g.num_edges():
            got = tuple(etypes.shape) if torch.is_tensor(etypes) else type(etypes).__name__
            raise DGLError(f"etypes must be an integer tensor with one type per edge "
                           f"({g.num_edges()}), got {got}")
        out_feat = self.linear_r.out_size
        if norm is not None and (norm.dim() != 2 or norm.shape[0] != g.num_edges()
                                 or norm.shape[1] not in (1, out_feat)):
            raise DGLError(f"norm must be a float tensor [num_edges, 1] (or [num_edges, {out_feat}]), "
                           f"got {tuple(norm.shape)}")
        src, dst = g.edges()
        h = self.linear_r.typed_sum(feat, etypes.to(feat.device), gather=src, scatter=dst, norm=norm,
                                    num_out=g.num_dst_nodes(), sorted_by_type=presorted)
        if self.layer_norm:
            h = self.layer_norm_weight(h)
        if self.bias:
            h = h + self.h_bias
        if self.self_loop:
            h = h + feat[: g.num_dst_nodes()] @ self.loop_weight
        if self.activation:
            h = self.activation(h)
        return self.dropout(h)
