"""The bgl block: one layer of a sampled message-flow graph, without DGL.

Follows DGL's block convention: destination nodes are a prefix of source
nodes, and the adjacency is CSC over local ids (row ``j`` lists the source
positions of the in-edges of destination ``j``).  ``bgl.dgl.real_dgl.blocks``
turns a Block into a ``dgl.Block`` when a model wants one.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch


@dataclass
class Block:
    """One sampled layer.

    Attributes
    ----------
    src_ids : int64 tensor [num_src], GLOBAL node ids; ``src_ids[:num_dst]`` are the dst ids
    num_dst : number of destination nodes
    indptr : int64 tensor [num_dst + 1]; indices : int64 tensor [num_edges] local src positions
    edge_ids : optional int64 tensor [num_edges] (edge ids in the sampled store's CSC order)
    srcdata / dstdata : per-node tensors (e.g. ``"feat"``, ``"label"``), rows aligned with
        ``src_ids`` / ``dst_ids``
    edata : per-edge tensors (the graph's edge arrays named in ``prefetch_edge_feats``), rows
        aligned with ``indices`` (CSC order)
    etypes : optional int64 tensor [num_edges], relation id of each edge (typed graphs, see
        :mod:`bgl.schema`); each dst row's edges are grouped by relation, ascending.  Per-type
        data then lives in ``srcdata[key] = {ntype: tensor}`` (DGL's heterograph convention).
    """

    src_ids: torch.Tensor
    num_dst: int
    indptr: torch.Tensor
    indices: torch.Tensor
    edge_ids: torch.Tensor | None = None
    srcdata: dict[str, torch.Tensor] = field(default_factory=dict)
    dstdata: dict[str, torch.Tensor] = field(default_factory=dict)
    edata: dict[str, torch.Tensor] = field(default_factory=dict)
    etypes: torch.Tensor | None = None
    schema: Any = None  # the graph's GraphSchema when ``etypes`` is set (bgl/schema.py)
    # src_ids split by node type (bgl.loader.typed.TypeSplit), where the loader split them for its
    # input_nodes just before a frontend converts the block (which reuses it); None otherwise
    type_split: Any = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        if self.indptr.shape[0] != self.num_dst + 1:
            raise ValueError(f"indptr has {self.indptr.shape[0]} entries, expected num_dst + 1 = {self.num_dst + 1}")
        if self.num_dst > self.src_ids.shape[0]:
            raise ValueError(f"num_dst={self.num_dst} exceeds num_src={self.src_ids.shape[0]}")

    @property
    def dst_ids(self) -> torch.Tensor:
        """int64 [num_dst] global ids of the destination nodes (a view of ``src_ids``)."""
        return self.src_ids[: self.num_dst]

    @property
    def num_src(self) -> int:
        """Number of source nodes (``src_ids.shape[0]``; the first ``num_dst`` are the dst nodes)."""
        return int(self.src_ids.shape[0])

    @property
    def num_edges(self) -> int:
        """Number of sampled edges (``indices.shape[0]``)."""
        return int(self.indices.shape[0])

    def edges(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(src local ids, dst local ids) in CSC order, int64 [num_edges] each."""
        dst = torch.repeat_interleave(torch.arange(self.num_dst, device=self.indptr.device),
                                      self.indptr[1:] - self.indptr[:-1])
        return self.indices, dst

    def to(self, device, non_blocking: bool = False) -> "Block":
        """A copy with every tensor on ``device``."""
        def mv(t):
            if isinstance(t, dict):  # per-type data of a typed block
                return {k: mv(v) for k, v in t.items()}
            return None if t is None else t.to(device, non_blocking=non_blocking)

        return Block(mv(self.src_ids), self.num_dst, mv(self.indptr), mv(self.indices), mv(self.edge_ids),
                     {k: mv(v) for k, v in self.srcdata.items()}, {k: mv(v) for k, v in self.dstdata.items()},
                     {k: mv(v) for k, v in self.edata.items()}, mv(self.etypes), self.schema)

    def __repr__(self) -> str:
        return f"Block(num_src={self.num_src}, num_dst={self.num_dst}, num_edges={self.num_edges})"


def type_layout(block: Block) -> tuple[torch.Tensor, dict[str, torch.Tensor], dict[str, int]]:
    """How a typed block's nodes split by type.

    Returns (position of each src node among the src nodes of its type, int64 [num_src];
    {ntype: indices of its src nodes in the block}; {ntype: its number of dst nodes}).
    Dst nodes lead src nodes in the block, so each type's dst nodes lead that type's src nodes.
    One stable sort of the src nodes by type (NumPy: a batch's few thousand ids).
    """
    schema = block.schema
    offsets = schema.offsets
    src = block.src_ids.cpu().numpy()
    types = np.searchsorted(offsets, src, side="right") - 1
    order = np.argsort(types, kind="stable")
    bounds = np.searchsorted(types[order], np.arange(len(offsets)))
    local = np.empty(src.shape[0], np.int64)
    members, num_dst = {}, {}
    for t, nt in enumerate(schema.ntypes):
        idx = order[bounds[t]:bounds[t + 1]]
        local[idx] = np.arange(idx.shape[0])
        members[nt] = torch.from_numpy(idx).to(block.src_ids.device)
        num_dst[nt] = int(np.searchsorted(idx, block.num_dst))
    return torch.from_numpy(local).to(block.src_ids.device), members, num_dst


@dataclass
class RelationBlock:
    """One relation of a typed block: CSC over its dst type's dst nodes, indices into its src type's
    src nodes (type-local positions) -- what a per-relation layer (``bgl.nn.SAGEConv``) reads."""

    num_dst: int
    indptr: torch.Tensor
    indices: torch.Tensor


def relation_blocks(block: Block) -> dict[tuple[str, str, str], RelationBlock]:
    """Every relation of a typed block as a :class:`RelationBlock` (O(edges) tensor work)."""
    schema = block.schema
    local, members, num_dst = type_layout(block)
    counts = block.indptr[1:] - block.indptr[:-1]
    dst_of_edge = torch.repeat_interleave(torch.arange(block.num_dst, device=counts.device), counts)
    out = {}
    for r, (src_t, rel, dst_t) in enumerate(schema.canonical_etypes):
        sel = (block.etypes == r).nonzero().flatten()
        rows = members[dst_t][: num_dst[dst_t]]  # block dst positions of this type, in order
        per_row = torch.zeros(block.num_dst, dtype=torch.int64, device=counts.device)
        per_row.index_add_(0, dst_of_edge[sel], torch.ones_like(sel))
        indptr = torch.zeros(rows.shape[0] + 1, dtype=torch.int64, device=counts.device)
        torch.cumsum(per_row[rows], 0, out=indptr[1:])
        out[(src_t, rel, dst_t)] = RelationBlock(int(rows.shape[0]), indptr, local[block.indices[sel]])
    return out
