"""GraphSAGE layers that run directly on bgl :class:`~bgl.blocks.Block` objects.

The GPU machine has no DGL, yet training there should use the same model a
DGL user writes.  :class:`SAGEConv` is :class:`bgl.dgl.nn.SAGEConv` (``dgl.nn.SAGEConv``'s
maths and parameter names: ``fc_self``, ``fc_neigh``, and ``bias`` for ``"gcn"``) over bgl's
``Block`` / ``RelationBlock``, so a state dict trained with one loads into the other.

:func:`aggregate` is one gather (``feat[indices]``) plus one scatter (``index_add_``): O(edges)
tensor work, no Python loop over nodes, on anything with ``num_dst`` (int), ``indptr`` (int64
[num_dst + 1]) and ``indices`` (int64 [num_edges], local src positions).
DGL's whole layer set (GraphConv, GATConv, RelGraphConv, ...) on ``bgl.dgl`` graphs and
blocks is :mod:`bgl.dgl.nn`.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence, Union

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from bgl.dgl.convert import block_from_bgl
from bgl.dgl.nn.sageconv import SAGEConv as DglSAGEConv

AGGREGATORS = ("mean", "gcn", "pool")


def edge_dst_index(block) -> Tensor:
    """Local dst position of every edge, int64 [num_edges] (CSC rows expanded).

    ``indptr`` is CSC over dst nodes, so edge ``e`` in ``indptr[j]:indptr[j+1]``
    belongs to dst ``j``; ``repeat_interleave`` expands that in one kernel.
    """
    indptr = block.indptr
    counts = indptr[1:] - indptr[:-1]
    return torch.repeat_interleave(torch.arange(block.num_dst, device=indptr.device), counts,
                                   output_size=int(block.indices.shape[0]))


def in_degrees(block) -> Tensor:
    """In-degree of each dst node, int64 [num_dst]."""
    return block.indptr[1:] - block.indptr[:-1]


def aggregate(block, src_feat: Tensor, reduce: str = "mean") -> Tensor:
    """Reduce the src features of each dst node's in-edges.

    Parameters
    ----------
    block : bgl block (``num_dst``, ``indptr``, ``indices``)
    src_feat : float tensor [num_src, d]
    reduce : ``"sum"``, ``"mean"`` or ``"max"``; dst nodes without in-edges get 0,
        as ``dgl.function.mean/sum/max`` give.

    Returns
    -------
    float tensor [num_dst, d]
    """
    if reduce not in ("sum", "mean", "max"):
        raise ValueError(f"reduce must be 'sum', 'mean' or 'max', got {reduce!r}")
    device = src_feat.device
    indices = block.indices.to(device, non_blocking=True)
    dst = edge_dst_index(block).to(device, non_blocking=True)
    messages = src_feat.index_select(0, indices)
    out = src_feat.new_zeros((block.num_dst,) + tuple(src_feat.shape[1:]))
    if reduce == "max":
        # include_self=False leaves zero-in-degree rows at their initial 0
        index = dst.view(-1, *([1] * (messages.dim() - 1))).expand_as(messages)
        return out.scatter_reduce_(0, index, messages, "amax", include_self=False)
    out.index_add_(0, dst, messages)
    if reduce == "mean":
        deg = in_degrees(block).to(device).clamp_(min=1).to(out.dtype)
        out = out / deg.view(-1, *([1] * (out.dim() - 1)))
    return out


class SAGEConv(DglSAGEConv):
    """GraphSAGE layer over a bgl block: :class:`bgl.dgl.nn.SAGEConv` (``dgl.nn.SAGEConv``'s maths,
    parameter names and initialisation) on bgl's own blocks, wrapped zero-copy by
    :func:`bgl.dgl.block_from_bgl`.

    Kept for code written against bgl's blocks: one class does the maths, so a state dict moves
    between this layer, ``bgl.dgl.nn.SAGEConv`` and DGL's (``fc_self``, ``fc_neigh``, ``fc_pool``,
    and ``bias`` for ``"gcn"``).

    Parameters
    ----------
    in_feats : int, or (src, dst) pair
    out_feats : int
    aggregator : ``"mean"`` | ``"gcn"`` | ``"pool"``
    feat_drop : dropout on the input features
    bias : add a learnable bias (inside ``fc_self`` except for ``"gcn"``, as in DGL)
    norm, activation : optional callables applied to the output (activation first)
    """

    def __init__(self, in_feats: Union[int, tuple[int, int]], out_feats: int,
                 aggregator: str = "mean", feat_drop: float = 0.0, bias: bool = True,
                 norm: Optional[Callable[[Tensor], Tensor]] = None,
                 activation: Optional[Callable[[Tensor], Tensor]] = None):
        if aggregator not in AGGREGATORS:
            raise ValueError(f"aggregator must be one of {AGGREGATORS}, got {aggregator!r}")
        widths = (int(in_feats[0]), int(in_feats[1])) if isinstance(in_feats, (tuple, list)) else int(in_feats)
        super().__init__(widths, int(out_feats), aggregator, feat_drop=feat_drop, bias=bias, norm=norm,
                         activation=activation)

    def forward(self, block, feat: Union[Tensor, tuple[Tensor, Tensor]]) -> Tensor:
        """
        Parameters
        ----------
        block : bgl :class:`~bgl.blocks.Block` with ``num_dst`` dst nodes (a prefix of its src nodes),
            or a :class:`~bgl.blocks.RelationBlock` of a typed block (then ``feat`` is a pair)
        feat : float [num_src, in_feats], or a (src [num_src, d_src], dst [num_dst, d_dst]) pair

        Returns
        -------
        float tensor [num_dst, out_feats]
        """
        feat_src, feat_dst = feat if isinstance(feat, tuple) else (feat, feat[: block.num_dst])
        # A (src, dst) pair may come from two node types (a relation of a typed block): only the
        # dst rows must match then; one tensor must cover the dst prefix of the src nodes.
        short_src = not isinstance(feat, tuple) and feat_src.shape[0] < block.num_dst
        if short_src or feat_dst.shape[0] != block.num_dst:
            raise ValueError(f"block has {block.num_dst} dst nodes but features have "
                             f"{feat_src.shape[0]} src / {feat_dst.shape[0]} dst rows")
        return super().forward(block_from_bgl(block, num_src=feat_src.shape[0]), feat)

    def extra_repr(self) -> str:
        return f"{self._in_src_feats} -> {self._out_feats}, aggregator={self._aggre_type!r}"


class SAGE(nn.Module):
    """The standard mini-batch GraphSAGE model (DGL's ``node_classification.py`` layout).

    ``num_layers`` SAGEConv layers ``in -> hidden -> ... -> out`` with ReLU and
    dropout between layers; parameter names (``layers.<i>.fc_self.weight``, ...)
    match DGL's example model, so checkpoints move between the two.

    Parameters
    ----------
    in_feats, hidden_feats, out_feats : layer widths
    num_layers : >= 1; one block per layer at forward time
    dropout : dropout between layers
    aggregator : see :class:`SAGEConv`
    """

    def __init__(self, in_feats: int, hidden_feats: int, out_feats: int, num_layers: int = 2,
                 dropout: float = 0.5, aggregator: str = "mean"):
        super().__init__()
        if num_layers < 1:
            raise ValueError(f"num_layers must be >= 1, got {num_layers}")
        widths = [in_feats] + [hidden_feats] * (num_layers - 1) + [out_feats]
        self.layers = nn.ModuleList(SAGEConv(widths[i], widths[i + 1], aggregator)
                                    for i in range(num_layers))
        self.dropout = nn.Dropout(dropout)

    def forward(self, blocks: Sequence, x: Tensor) -> Tensor:
        """
        Parameters
        ----------
        blocks : ``num_layers`` blocks, input layer first (``blocks[-1].dst_ids`` are the seeds)
        x : float [blocks[0].num_src, in_feats]

        Returns
        -------
        float tensor [blocks[-1].num_dst, out_feats]
        """
        if len(blocks) != len(self.layers):
            raise ValueError(f"model has {len(self.layers)} layers but got {len(blocks)} blocks")
        h = x
        for i, (layer, block) in enumerate(zip(self.layers, blocks)):
            h = layer(block, h)
            if i != len(self.layers) - 1:
                h = self.dropout(F.relu(h))
        return h


class HeteroGraphConv(nn.Module):
    """A layer per relation, summed into each destination type: ``dgl.nn.HeteroGraphConv(mods, "sum")``
    on bgl's typed blocks (R-GCN style with ``SAGEConv`` per relation).

    Parameters
    ----------
    mods : {relation name or canonical (src, rel, dst): module(block, (h_src, h_dst)) -> [num_dst, out]}

    Notes
    -----
    ``forward(block, inputs)`` takes ``{ntype: [num_src_t, d_t]}`` rows in the block's per-type
    order (``blocks[0].srcdata['feat']`` of a typed loader) and returns ``{ntype: [num_dst_t, out]}``
    for the types some relation reaches.
    """

    def __init__(self, mods: dict):
        super().__init__()
        self._keys = list(mods)
        self.mods = nn.ModuleDict({self._key_name(k): m for k, m in mods.items()})

    @staticmethod
    def _key_name(key) -> str:
        return key if isinstance(key, str) else ":".join(key)

    def forward(self, block, inputs: dict) -> dict:
        from .blocks import relation_blocks

        out: dict = {}
        for (src_t, rel, dst_t), rb in relation_blocks(block).items():
            name = (self._key_name((src_t, rel, dst_t)) if self._key_name((src_t, rel, dst_t)) in self.mods
                    else rel)
            if name not in self.mods or src_t not in inputs or dst_t not in inputs:
                continue
            h_src, h_dst = inputs[src_t], inputs[dst_t][: rb.num_dst]
            y = self.mods[name](rb, (h_src, h_dst))
            out[dst_t] = y if dst_t not in out else out[dst_t] + y
        return out
