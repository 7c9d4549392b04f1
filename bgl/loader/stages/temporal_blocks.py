"""A temporal sample as the loader's blocks (MFGs), in GraphBolt's tree layout or PyG's disjoint one.

Both layouts keep the loader's block contract (``blocks[i].dst_ids`` lead ``blocks[i].src_ids``;
``blocks[i].dst_ids == blocks[i + 1].src_ids``; ``blocks[-1].dst_ids`` are the seeds), so the fetch
and transfer stages, the caches and the DGL conversion treat them as any other batch.  A node id may
appear many times among ``src_ids`` (once per subgraph, or per sampled edge in the tree layout): each
copy carries its own time, ``blocks[0].srcdata["seed_time"]``, and subgraph, ``srcdata["batch"]``.
Each block's ``edata[<time name>]`` holds its edges' times (with node times, the later of the edge's
and its source's).
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np
import torch

from ...blocks import Block

TIME_KEY = "timestamp"  # edata key of the edge times when the sampler names node times only


def tree_blocks(layer: Callable, nodes: np.ndarray, times: np.ndarray, fanouts, opts, seed: int,
                schema=None) -> list[Block]:
    """GraphBolt's layout: at each hop every destination is expanded, and its sources are the destinations
    followed by one new node per sampled edge (no merging), each at its destination's time.

    ``layer`` is a sampler's ``temporal_layer`` (or a typed one, with ``schema``: ``fanouts`` are then
    int64 [R] arrays and the blocks carry ``etypes``); ``fanouts`` in hop order (the first hop first);
    hop ``h`` draws with ``layer_seed(seed, L - 1 - h)``, the seed the block sampler gives the same layer.
    """
    from ...sampler.ops import layer_seed

    num_layers = len(fanouts)
    dst = np.ascontiguousarray(nodes, np.int64)
    dst_time = np.ascontiguousarray(times, np.int64)
    batch = np.arange(dst.shape[0], dtype=np.int64)
    blocks: list[Block] = []
    for hop, fanout in enumerate(fanouts):
        counts, nbrs, eids, etime, *rel = layer(dst, dst_time, fanout, opts.strategy,
                                                layer_seed(seed, num_layers - 1 - hop), time_name=opts.edge_time)
        m, e = dst.shape[0], int(nbrs.shape[0])
        indptr = np.zeros(m + 1, np.int64)
        np.cumsum(counts, out=indptr[1:])
        src = np.concatenate([dst, np.asarray(nbrs, np.int64)])
        block = Block(torch.from_numpy(src), m, torch.from_numpy(indptr), torch.arange(m, m + e, dtype=torch.int64),
                      edge_ids=torch.from_numpy(np.asarray(eids, np.int64)))
        _edge_fields(block, etime, rel[0] if rel else None, schema, opts.edge_time)
        blocks.insert(0, block)
        dst_time = np.concatenate([dst_time, np.repeat(dst_time, counts)])
        batch = np.concatenate([batch, np.repeat(batch, counts)])
        dst = src
    _node_fields(blocks[0], batch, dst_time, schema)
    return blocks


def disjoint_blocks(sample, edge_time: Optional[str], schema=None) -> list[Block]:
    """PyG's disjoint layout of a :class:`~bgl.sampler.temporal.sampling.TemporalSample`: the block of hop ``h``
    has the nodes of hops <= h as destinations and those of hops <= h + 1 as sources, and hop ``h``'s
    edges (older destinations have none there: only new nodes are expanded, as PyG does).

    Every block numbers nodes as ``sample.node`` does, so ``blocks[0].src_ids`` is PyG's ``n_id`` and
    the blocks' local edges, concatenated, are its ``edge_index``.
    """
    node = torch.from_numpy(np.ascontiguousarray(sample.node, np.int64))
    reach = np.cumsum(sample.num_sampled_nodes)  # nodes known after each hop
    blocks: list[Block] = []
    first_edge = 0
    for hop, num_edges in enumerate(sample.num_sampled_edges):
        span = slice(first_edge, first_edge + num_edges)
        first_edge += num_edges
        num_dst = int(reach[hop])
        dst = sample.dst[span]  # grouped by destination, ascending (the frontier's order)
        indptr = np.zeros(num_dst + 1, np.int64)
        np.cumsum(np.bincount(dst, minlength=num_dst), out=indptr[1:])
        block = Block(node[: int(reach[hop + 1])], num_dst, torch.from_numpy(indptr),
                      torch.from_numpy(np.ascontiguousarray(sample.src[span], np.int64)),
                      edge_ids=torch.from_numpy(np.ascontiguousarray(sample.eid[span], np.int64)))
        _edge_fields(block, sample.edge_time[span], None if sample.etype is None else sample.etype[span], schema,
                     edge_time)
        blocks.insert(0, block)
    _node_fields(blocks[0], sample.batch, sample.node_time, schema)
    return blocks


def _edge_fields(block: Block, etime, etypes, schema, edge_time: Optional[str]) -> None:
    """A block's edge times (``edata[<time name>]``), or on a typed graph its edges' relations (its
    edge ids, per relation in DGL's blocks, find their times)."""
    if etypes is None:
        block.edata[edge_time or TIME_KEY] = torch.from_numpy(np.ascontiguousarray(etime, np.int64))
    else:
        block.etypes, block.schema = torch.from_numpy(np.ascontiguousarray(etypes, np.int64)), schema


def _node_fields(first: Block, batch: np.ndarray, seed_time: np.ndarray, schema=None) -> None:
    """Each input node's subgraph and time on ``blocks[0].srcdata`` (per node type on a typed graph:
    ``{ntype: rows}`` in the order of that type's nodes among ``src_ids``, DGL's heterograph form)."""
    fields = {"batch": np.ascontiguousarray(batch, np.int64), "seed_time": np.ascontiguousarray(seed_time, np.int64)}
    if schema is None:
        for key, values in fields.items():
            first.srcdata[key] = torch.from_numpy(values)
        return
    types = np.searchsorted(schema.offsets, first.src_ids.numpy(), side="right") - 1
    for key, values in fields.items():
        first.srcdata[key] = {nt: torch.from_numpy(values[types == t]) for t, nt in enumerate(schema.ntypes)}
