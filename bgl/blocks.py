"""The bgl block: one layer of a sampled message-flow graph, without DGL.

Follows DGL's block convention: destination nodes are a prefix of source
nodes, and the adjacency is CSC over local ids (row ``j`` lists the source
positions of the in-edges of destination ``j``).  ``bgl.dgl_adapter``
turns a Block into a ``dgl.Block`` when a model wants one.
"""
from __future__ import annotations

from dataclasses import dataclass, field

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
    """

    src_ids: torch.Tensor
    num_dst: int
    indptr: torch.Tensor
    indices: torch.Tensor
    edge_ids: torch.Tensor | None = None
    srcdata: dict[str, torch.Tensor] = field(default_factory=dict)
    dstdata: dict[str, torch.Tensor] = field(default_factory=dict)
    edata: dict[str, torch.Tensor] = field(default_factory=dict)

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
            return None if t is None else t.to(device, non_blocking=non_blocking)

        return Block(mv(self.src_ids), self.num_dst, mv(self.indptr), mv(self.indices), mv(self.edge_ids),
                     {k: mv(v) for k, v in self.srcdata.items()}, {k: mv(v) for k, v in self.dstdata.items()},
                     {k: mv(v) for k, v in self.edata.items()})

    def __repr__(self) -> str:
        return f"Block(num_src={self.num_src}, num_dst={self.num_dst}, num_edges={self.num_edges})"
