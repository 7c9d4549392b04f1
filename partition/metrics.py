"""Partition quality and cost metrics, computed from ``part_of`` before anything is written.

* ``edge_cut``: share of (directed, stored) edges whose endpoints lie in different parts.
* ``remote_sample_share``: GNN training samples neighbourhoods, so the cut that matters is
  the one the sampler crosses.  Each part is a trainer that samples mini-batches of its own
  training nodes (fanouts 15,10,5); every sampled neighbour (one per sampled edge, all
  layers) owned by another part would be a remote fetch.  Samples with
  ``bgl.sampler.LocalSampler``, the same sampler training uses.
* ``balance_*``: max over parts / average, for nodes, owned in-edges, training nodes.
* ``peak_rss_bytes``: the process's peak resident set so far (``getrusage``), so run
  each partitioning in a fresh process to compare methods (``bench/partition/methods.py`` does).
"""
from __future__ import annotations

import logging
import resource
import sys
from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np

from . import _kernels
from .graph_input import GraphInput

log = logging.getLogger(__name__)

CUT_CHUNK_EDGES = 1 << 24


def edge_cut(graph: GraphInput, part_of: np.ndarray) -> float:
    """Share of edges crossing parts, in [0, 1]; streamed in row chunks of ~16M edges."""
    if graph.num_edges == 0:
        return 0.0
    cut = 0
    ip = graph.indptr
    n = graph.num_nodes
    start = 0
    while start < n:
        # rows [start, stop) hold about CUT_CHUNK_EDGES edges (at least one row)
        stop = int(np.searchsorted(ip, ip[start] + CUT_CHUNK_EDGES, side="right"))
        stop = min(n, max(stop - 1, start + 1))
        sub_ptr = np.asarray(ip[start : stop + 1])
        sub_idx = np.asarray(graph.indices[sub_ptr[0] : sub_ptr[-1]])
        cut += _kernels.count_cut_edges(sub_ptr, sub_idx, part_of, start)
        start = stop
    return cut / graph.num_edges


def balance(graph: GraphInput, part_of: np.ndarray, num_parts: int) -> dict[str, float]:
    """``{"nodes", "edges", "train"}``: max part load / average load (1.0 = perfect)."""
    deg = np.diff(graph.indptr)
    loads = {
        "nodes": np.bincount(part_of, minlength=num_parts).astype(np.float64),
        "edges": np.bincount(part_of, weights=deg, minlength=num_parts),
        "train": np.bincount(part_of, weights=graph.is_train, minlength=num_parts),
    }
    return {k: (float(v.max() / v.mean()) if v.sum() > 0 else 1.0) for k, v in loads.items()}


def default_batch_size(num_train: int, num_parts: int) -> int:
    """1024, or smaller so each trainer of a small graph still gets a few batches."""
    return int(min(1024, max(8, num_train // (4 * num_parts))))


def _sample_neighbours(sampler, seeds: np.ndarray, fanouts: Sequence[int], seed: int) -> list[np.ndarray]:
    """Sampled neighbour ids per layer (one entry per sampled edge), DGL layer order."""
    import torch

    if getattr(sampler.store, "etype", None) is not None:  # typed: each fanout per relation, as trainers do
        num_rel = len(sampler.schema.edge_types)
        blocks = sampler.sample_typed_blocks(seeds, [np.full(num_rel, f, np.int64) for f in fanouts], seed=seed)
    else:
        blocks = sampler.sample_blocks(torch.from_numpy(seeds), list(fanouts), seed=seed)
    # numpy's gather: torch's indexing cost ~10 ms a layer on a busy 2-core box (its thread pool)
    return [b.src_ids.numpy()[b.indices.numpy()] for b in blocks]


class _CscArrays:
    """The read API ``LocalSampler`` samples from, over a :class:`GraphInput`'s arrays (no copy):
    lets a partitioner measure its candidates with the real sampler before any store is written."""

    node_offset = 0
    feat = label = None

    def __init__(self, graph: GraphInput):
        self.indptr, self.indices = graph.indptr, graph.indices
        self.num_nodes = self.global_num_nodes = graph.num_nodes
        self.num_edges = graph.num_edges
        self.etype, self.schema = graph.etype, graph.schema  # typed: sampled per relation
        self.path = "<graph arrays>"


def remote_sample_share(store, graph: GraphInput, part_of: np.ndarray, num_parts: int, *,
                        fanouts: Sequence[int] = (15, 10, 5), num_batches: int = 200,
                        batch_size: int | None = None, seed: int = 0) -> float | None:
    """Share of sampled neighbours owned by a part other than the batch's trainer part.

    Parameters
    ----------
    store : the whole-graph :class:`GraphStore` (for ``LocalSampler``), or None to sample
        ``graph``'s own CSC arrays (the same draws: the sampler reads only the CSC)
    graph, part_of : CSC view and assignment int64 [n]
    num_batches : batches in total, dealt round-robin to the parts' trainers
    batch_size : default :func:`default_batch_size`

    Returns
    -------
    share in [0, 1], or None when the store has no training nodes.
    """
    train = np.flatnonzero(graph.is_train > 0)
    if train.size == 0:
        return None
    bs = batch_size or default_batch_size(train.size, num_parts)
    from bgl.sampler import LocalSampler  # lazy: pulls in torch, which the other metrics don't need

    rng = np.random.default_rng(seed)
    train_of = [rng.permutation(train[part_of[train] == k]) for k in range(num_parts)]
    remote = total = 0
    with LocalSampler(_CscArrays(graph) if store is None else store) as sampler:
        for b in range(num_batches):
            k = b % num_parts
            pool = train_of[k]
            if pool.size == 0:
                continue
            i = (b // num_parts) * bs % pool.size
            seeds = np.sort(pool[i : i + bs]).astype(np.int64)
            for src in _sample_neighbours(sampler, seeds, fanouts, seed + b):
                remote += int(np.count_nonzero(part_of[src] != k))
                total += src.size
    return remote / total if total else 0.0


def peak_rss_bytes() -> int:
    """Peak resident set size of this process so far, in bytes."""
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(r if sys.platform == "darwin" else r * 1024)


@dataclass(frozen=True)
class PartitionMetrics:
    """What ``partition.json["metrics"]`` holds (see module docstring)."""

    edge_cut: float
    remote_sample_share: float | None
    balance_nodes: float
    balance_edges: float
    balance_train: float
    seconds: float
    write_seconds: float
    peak_rss_bytes: int
    sampler: str

    def to_dict(self) -> dict:
        """The metrics as a JSON-ready dict."""
        return asdict(self)


# The sampler remote_sample_share uses, recorded as metrics["sampler"] (bench/results read it).
SAMPLER_NAME = "bgl.sampler.LocalSampler"
