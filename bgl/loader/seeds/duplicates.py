"""Blocks for a batch whose seed ids repeat, laid out as DGL lays them out.

DGL accepts repeated seed ids (class re-balancing by repetition is the usual
reason) and keeps every occurrence: the output block's dst nodes are the seeds
as given, and since a block's dst nodes lead its src nodes, the repeats lead
every layer's nodes.  bgl's sampler relabels through one slot per node id, so
a batch is sampled on its distinct seeds and the blocks are then expanded:
each repeated dst row gets a copy of its node's sampled in-edges.

Samples are a function of (seed, node id), so the copies of a node have the
same neighbours (DGL draws each copy on its own).  Edges pointing at a
repeated node point at its first copy.  Cost per batch: one ``torch.unique``
over the seeds and one gather of each block's rows; nothing when the loader's
ids have no repeats (the stage checks only then).
"""
from __future__ import annotations

from typing import Sequence

import torch

from ...blocks import Block


def distinct_seeds(seeds: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(distinct seeds, position of each seed among them) or (seeds, None) when none repeats."""
    uniq, inverse = torch.unique(seeds, return_inverse=True)
    if uniq.shape[0] == seeds.shape[0]:
        return seeds, None
    return uniq, inverse


def _expand_block(b: Block, rows: torch.Tensor) -> tuple[Block, torch.Tensor]:
    """``b`` with dst rows ``rows`` (indices into b's dst rows, covering all of them), and the
    row map the block below must use (its dst nodes are this block's new src nodes)."""
    nd, n = b.num_dst, int(rows.shape[0])
    deg = b.indptr[1:] - b.indptr[:-1]
    new_deg = deg[rows]
    indptr = torch.zeros(n + 1, dtype=torch.int64)
    torch.cumsum(new_deg, 0, out=indptr[1:])
    # CSC positions of every new row's edges: its old row's start + 0..deg-1.
    starts = torch.repeat_interleave(b.indptr[:-1][rows], new_deg)
    offsets = torch.arange(int(indptr[-1]), dtype=torch.int64) - torch.repeat_interleave(indptr[:-1], new_deg)
    pos = starts + offsets
    first = torch.full((nd,), n, dtype=torch.int64).scatter_reduce(0, rows, torch.arange(n), "amin")
    old = b.indices[pos].to(torch.int64)
    indices = torch.where(old < nd, first[old.clamp(max=max(nd - 1, 0))], old - nd + n)
    src_ids = torch.cat([b.src_ids[rows], b.src_ids[nd:]])
    edge_ids = None if b.edge_ids is None else b.edge_ids[pos]
    etypes = None if b.etypes is None else b.etypes[pos]
    below = torch.cat([rows, torch.arange(nd, b.num_src, dtype=torch.int64)])
    edata = {key: value[pos] for key, value in b.edata.items()}  # sampled edges' rows go with their edges
    return Block(src_ids, n, indptr, indices, edge_ids, edata=edata, etypes=etypes), below


def expand_to_seeds(blocks: Sequence[Block], inverse: torch.Tensor) -> list[Block]:
    """The blocks of the seeds ``distinct[inverse]``, from blocks sampled on ``distinct``.

    Parameters
    ----------
    blocks : blocks sampled on the distinct seeds (DGL order, ``blocks[-1]`` the output layer)
    inverse : int64 [n], position of each given seed among the distinct ones

    Returns
    -------
    blocks whose output dst nodes are the given seeds, repeats included, in order
    """
    out: list[Block] = []
    rows = inverse.to(torch.int64)
    for b in reversed(list(blocks)):
        expanded, rows = _expand_block(b, rows)
        out.append(expanded)
    out.reverse()
    return out
