"""Record sampled batches once, then replay them through a cache.

The hit-rate benchmark (:mod:`bgl.cache.benchmark`), ``bench/cache/partition_order.py``
and the lookahead tests all measure a cache this way: each training batch is
sampled once and its input node ids recorded, and the same recorded stream is
fed to every cache, so caches differ only in what they keep.

:func:`replay` also drives the policies that need to see the future: a
:class:`~bgl.cache.lookahead.LookaheadCache` has each batch announced
``lookahead`` fetches before it is fetched (as the loader's queues allow), and
a :class:`~bgl.cache.lookahead.BeladyBound` has the whole stream announced
first.  The miss source is timed apart (:class:`_TimedSource`) so the speed
reported is the cache's own.
"""
from __future__ import annotations

import time
from typing import Callable, Sequence

import numpy as np
import torch

from .bench_config import BenchConfig
from .lookahead import BeladyBound, LookaheadCache
from .lookahead_feeder import AUTO, CacheSizedWindow
from .ordering import proximity_order, random_order


def input_node_sampler(store, fanouts: Sequence[int]) -> Callable[[np.ndarray, int], np.ndarray]:
    """``f(seeds, seed) -> int64 input node ids`` of one sampled batch.

    Uses :class:`bgl.sampler.LocalSampler` (``blocks[0].src_ids``), the sampler training uses.
    """
    from bgl.sampler import LocalSampler

    fanouts = [int(f) for f in fanouts]
    sampler = LocalSampler(store)
    return lambda seeds, seed: sampler.sample_blocks(seeds, fanouts, seed=seed)[0].src_ids.numpy()


def epoch_order(store, order: str, train: np.ndarray, seed: int, num_sequences: int,
                chunk: int = 1) -> np.ndarray:
    """Training ids int64 [t] in this epoch's order: ``random_order`` or ``proximity_order`` (``order``
    = 'random' | 'proximity').
    """
    if order == "random":
        return random_order(train, seed)
    return proximity_order(store, train, num_sequences, seed, chunk=chunk)


def record_batches(store, sample_fn, order: str, cfg: BenchConfig, seed_base: int = 0,
                   progress=None) -> list[tuple[torch.Tensor, int]]:
    """``(input node ids int64 tensor, number of seeds)`` of every batch of ``cfg.epochs`` epochs
    in ``order``; the ids start with the seeds (DGL's ``src_ids`` layout)."""
    train = np.asarray(store.train_idx, dtype=np.int64)
    out = []
    for epoch in range(cfg.epochs):
        ids = epoch_order(store, order, train, cfg.seed + seed_base + epoch, cfg.num_sequences, cfg.chunk)
        starts = range(0, ids.size, cfg.batch_size)
        if cfg.max_batches is not None:
            starts = starts[: cfg.max_batches]
        for b in starts:
            batch_seed = (cfg.seed + seed_base) * 1_000_003 + epoch * 100_003 + b // cfg.batch_size
            seeds = ids[b:b + cfg.batch_size]
            out.append((torch.from_numpy(np.asarray(sample_fn(seeds, batch_seed), dtype=np.int64)),
                        int(seeds.size)))
            if progress is not None:
                progress.update(1)
    return out


def memmap_gather_ms(store, batches) -> float:
    """Mean CPU ms per batch of ``np.take`` of each batch's rows from the store's feature memmap
    (the anchor of a policy's bookkeeping budget); a first untimed pass pages the rows in,
    as the loader's prefault does.  0.0 for a store without features."""
    rows = getattr(store, "feat_rows", store.feat)  # encoded rows when the store has a codec
    if rows is None or not batches:
        return 0.0
    feat = np.asarray(rows)
    for ids, _ in batches:
        np.take(feat, ids.numpy(), axis=0)
    t = time.thread_time()
    for ids, _ in batches:
        np.take(feat, ids.numpy(), axis=0)
    return 1e3 * (time.thread_time() - t) / len(batches)


class _TimedSource:
    """Wraps a miss source and adds up the wall and CPU time spent in it (subtracted from cache speed)."""

    def __init__(self, source):
        self.source = source
        self.seconds = 0.0
        self.cpu_seconds = 0.0

    def __call__(self, ids):
        t, c = time.perf_counter(), time.thread_time()
        rows = self.source(ids)
        self.seconds += time.perf_counter() - t
        self.cpu_seconds += time.thread_time() - c
        return rows


def replay(cache, batches: Sequence, source, seed_hint: bool = True, lookahead: int | str = 0,
           window: CacheSizedWindow | None = None) -> tuple[dict, float]:
    """Fetch every batch (an ids tensor or ``(ids, num_seeds)``) through ``cache``;
    returns (stats, cache-only ids/s).  ``seed_hint`` passes ``num_seeds`` on to ``fetch``.

    A :class:`LookaheadCache` has each batch announced ``lookahead`` fetches before it is
    fetched, or with ``lookahead="auto"`` as far ahead as ``window`` (default
    :class:`~bgl.cache.lookahead_feeder.CacheSizedWindow`, the bytes of a queued batch being
    its ids' here) reads: the same rule as :class:`LookaheadFeeder`; ``stats["mean_depth"]``
    is the batches announced beyond the fetched one, on average.  A :class:`BeladyBound` has
    the whole stream announced first (its time counts).
    """
    timed = _TimedSource(source)
    cache.reset_stats()
    items = [item if isinstance(item, tuple) else (item, 0) for item in batches]
    ahead = 0
    sized = None
    if isinstance(cache, BeladyBound):
        lookahead = len(items)
    elif not isinstance(cache, LookaheadCache):
        lookahead = -1
    elif lookahead == AUTO:
        sized, lookahead = window or CacheSizedWindow(), len(items)
    queued = depth_sum = 0  # bytes of the batches announced beyond the fetched one (sized only)
    t, c = time.perf_counter(), time.thread_time()
    for i, (ids, num_seeds) in enumerate(items):
        if i > 0 and sized is not None and ahead > i:
            queued -= ids.numel() * ids.element_size()  # batch i is the fetched one now
        while lookahead >= 0 and ahead <= min(i + lookahead, len(items) - 1) and (
                sized is None or ahead <= i or sized.wants_more(cache, ahead - i - 1, queued)):
            cache.announce(items[ahead][0])
            if sized is not None and ahead > i:
                queued += items[ahead][0].numel() * items[ahead][0].element_size()
            ahead += 1
        depth_sum += max(ahead - i - 1, 0)
        cache.fetch(ids, timed, num_seeds=num_seeds if seed_hint else 0)
    own = max(time.perf_counter() - t - timed.seconds, 1e-9)
    stats = cache.stats()
    stats["own_cpu_seconds"] = max(time.thread_time() - c - timed.cpu_seconds, 0.0)
    stats["policy_cpu_seconds"] = getattr(cache, "policy_cpu_seconds", 0.0)
    stats["mean_depth"] = depth_sum / max(len(items), 1) if lookahead >= 0 else 0.0
    return stats, stats["requests"] / own
