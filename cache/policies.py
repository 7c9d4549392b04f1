"""Cache policies compared in BGL's evaluation, all behind the :class:`CacheBase` fetch API.

==================  ===========================================================
``none``            no cache: every distinct id goes to the miss source
``fifo``            BGL: ring buffer, newest misses overwrite the oldest rows
``lru``             evict the least recently used rows (per-slot use stamps)
``static-degree``   PaGraph: pin the highest in-degree nodes, never evict
``presample``       GNNLab: pin the nodes touched most in presampled epochs
``lookahead``       keep what the announced (already sampled) batches need,
                    fill the rest by presample counts / degrees
                    (:class:`~bgl.cache.lookahead.LookaheadCache`)
==================  ===========================================================

Static policies fill their pinned slots lazily (the first request of a pinned
node is a miss, like a cold FIFO/LRU), so every policy pays the same warm-up
and hit rates compare like for like; :meth:`StaticCache.preload` loads every
pinned row up front instead.
"""
from __future__ import annotations

from typing import Callable, Iterable

import numpy as np
import torch

from .base import CacheBase, FetchPlan, MissSource
from .fifo import FeatureCache
from .lookahead import LookaheadCache

POLICIES = ("none", "static-degree", "presample", "lru", "fifo", "lookahead")


class NoCache(FeatureCache):
    """Capacity-0 cache: fetches go straight to the source (distinct ids only, once each)."""

    policy = "none"

    def __init__(self, num_nodes: int, dim: int, dtype: torch.dtype = torch.float32,
                 device: str | torch.device = "cpu"):
        super().__init__(0, num_nodes, dim, dtype, device)


class StaticCache(CacheBase):
    """Pins the ``capacity`` nodes with the highest ``scores``; the pinned set never changes.

    Parameters
    ----------
    scores : [num_nodes] array, higher = more worth caching (in-degree for
        PaGraph, presample access counts for GNNLab).  Ties break by lower id.
    """

    policy = "static"

    def __init__(self, capacity: int, num_nodes: int, dim: int, scores, dtype: torch.dtype = torch.float32,
                 device: str | torch.device = "cpu", policy: str = "static"):
        super().__init__(capacity, num_nodes, dim, dtype, device)
        self.policy = policy
        scores = np.asarray(scores)
        if scores.shape != (num_nodes,):
            raise ValueError(f"scores must have shape ({num_nodes},), got {scores.shape}")
        # stable argsort of -score: deterministic ties, O(n log n) once at build time
        order = np.argsort(-scores.astype(np.float64), kind="stable")[: self.capacity]
        self.pinned = torch.from_numpy(np.sort(order).astype(np.int64)).to(self.device)

    def _admit(self, plan: FetchPlan, rows: torch.Tensor | None) -> None:
        cap = self.capacity
        if rows is None or cap == 0:
            return
        uniq = plan.miss_unique
        pos = torch.searchsorted(self.pinned, uniq).clamp_(max=cap - 1)
        is_pinned = self.pinned.index_select(0, pos) == uniq
        if bool(is_pinned.any()):
            # a pinned node's home slot is its rank among pinned ids; never evicts anything
            self._write(pos[is_pinned], uniq[is_pinned], rows[is_pinned])

    def preload(self, miss_source: MissSource, chunk: int = 1 << 20) -> None:
        """Load every pinned row now (PaGraph/GNNLab fill their cache before training)."""
        for start in range(0, self.capacity, chunk):
            self.fetch(self.pinned[start:start + chunk], miss_source)


class LRUCache(CacheBase):
    """Least-recently-used cache, batch-vectorised.

    Each slot keeps the stamp of its last use; the stamp of a request's
    position ``p`` is ``clock + p``, so stamps are distinct and a fetch
    behaves as: look every id up against the cache as it was, then keep the
    ``capacity`` most recently used of (cached ids and this fetch's misses).
    Eviction picks the smallest stamps with one ``topk``.
    """

    policy = "lru"
    needs_last_pos = True

    def __init__(self, capacity: int, num_nodes: int, dim: int, dtype: torch.dtype = torch.float32,
                 device: str | torch.device = "cpu"):
        super().__init__(capacity, num_nodes, dim, dtype, device)
        self.stamp = torch.full((self.capacity,), -1, dtype=torch.int64, device=self.device)
        self.clock = 0

    def _admit(self, plan: FetchPlan, rows: torch.Tensor | None) -> None:
        base = self.clock
        self.clock += plan.ids.numel()
        cap = self.capacity
        if cap == 0:
            return
        if plan.hit_slots.numel():
            self.stamp.scatter_reduce_(0, plan.hit_slots, plan.hit_pos + base, "amax")
        k = plan.miss_unique.numel()
        if k == 0:
            return
        # keep the `capacity` most recent of (slots, misses); stamps are distinct
        self._keep_largest(plan, rows, self.stamp, plan.miss_last_pos + base)


def make_cache(policy: str, capacity: int, num_nodes: int, dim: int, dtype: torch.dtype = torch.float32,
               device: str | torch.device = "cpu", *, degrees=None, presample_counts=None,
               insert_order: str = "reverse", lookahead_fill: str = "counts") -> CacheBase:
    """Build a cache by policy name (one of :data:`POLICIES`).

    ``static-degree`` needs ``degrees`` [num_nodes]; ``presample`` needs
    ``presample_counts`` [num_nodes] (see :func:`presample_counts`).
    ``insert_order`` applies to ``fifo``, which also uses ``degrees`` when given as its
    ``node_priority`` (see :class:`~bgl.cache.fifo.FeatureCache`).  ``lookahead`` fills
    by ``presample_counts`` when given, else ``degrees``, else lower id first
    (``lookahead_fill``: see :data:`bgl.cache.lookahead.FILLS`); it needs the
    loader to :meth:`~bgl.cache.lookahead.LookaheadCache.announce` sampled batches ahead.
    """
    if policy == "none":
        return NoCache(num_nodes, dim, dtype, device)
    if policy == "fifo":
        return FeatureCache(capacity, num_nodes, dim, dtype, device, insert_order=insert_order,
                            node_priority=degrees)
    if policy == "lru":
        return LRUCache(capacity, num_nodes, dim, dtype, device)
    if policy == "static-degree":
        if degrees is None:
            raise ValueError("policy 'static-degree' needs degrees=[num_nodes] (in-degrees)")
        return StaticCache(capacity, num_nodes, dim, degrees, dtype, device, policy="static-degree")
    if policy == "presample":
        if presample_counts is None:
            raise ValueError("policy 'presample' needs presample_counts=[num_nodes]")
        return StaticCache(capacity, num_nodes, dim, presample_counts, dtype, device, policy="presample")
    if policy == "lookahead":
        scores = presample_counts if presample_counts is not None else degrees
        return LookaheadCache(capacity, num_nodes, dim, dtype, device, scores=scores, fill=lookahead_fill)
    raise ValueError(f"unknown cache policy {policy!r}; choose from {', '.join(POLICIES)}")


def presample_counts(sample_fn: Callable[[np.ndarray, int], np.ndarray],
                     order_fn: Callable[[int], Iterable[np.ndarray]], epochs: int,
                     num_nodes: int | None = None) -> np.ndarray:
    """How often each node is an input node over ``epochs`` presampled epochs (GNNLab).

    Parameters
    ----------
    order_fn : ``order_fn(epoch) -> iterable of seed batches`` (int64 arrays).
    sample_fn : ``sample_fn(seeds, seed) -> input node ids`` (int array) of one batch;
        ``seed`` is a distinct int per batch.
    epochs : presampled epochs (GNNLab uses 1).
    num_nodes : length of the result (default: max id seen + 1).

    Returns
    -------
    int64 [num_nodes] access counts.
    """
    if epochs < 1:
        raise ValueError(f"epochs must be >= 1, got {epochs}")
    counts = np.zeros(num_nodes or 0, dtype=np.int64)
    batch_seed = 0
    for epoch in range(epochs):
        for seeds in order_fn(epoch):
            ids = np.asarray(sample_fn(seeds, batch_seed), dtype=np.int64)
            batch_seed += 1
            c = np.bincount(ids, minlength=counts.size)
            if c.size > counts.size:
                if num_nodes is not None:
                    raise ValueError(f"sample_fn returned id {int(ids.max())} >= num_nodes={num_nodes}")
                c[: counts.size] += counts
                counts = c
            else:
                counts += c
    return counts
