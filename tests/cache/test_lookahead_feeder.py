"""LookaheadFeeder: k-deep announcements over a stream of sampled batches, in order, clean on abandon."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from bgl.cache import LookaheadCache, make_cache
from bgl.cache.benchmark import replay
from bgl.cache.lookahead_feeder import CacheSizedWindow, LookaheadFeeder

N = 400


def _stream(seed=0, count=40):
    rng = np.random.default_rng(seed)
    return [torch.from_numpy((rng.random(rng.integers(20, 120)) ** 2 * N).astype(np.int64)) for _ in range(count)]


def _feeder(cache, feat, depth):
    return LookaheadFeeder(cache, lambda m: feat[m], depth, ids_of=lambda ids: ids, num_seeds_of=None)


@pytest.mark.parametrize("depth", [0, 1, 4])
def test_feeder_yields_every_batch_in_order_and_matches_a_k_deep_replay(depth):
    feat = torch.randn(N, 3)
    batches = _stream()
    scores = np.arange(N)[::-1]
    cache = LookaheadCache(40, N, 3, scores=scores)
    out = list(_feeder(cache, feat, depth)(iter(batches)))
    assert [item is b for (item, _), b in zip(out, batches)] == [True] * len(batches)
    for (ids, rows) in out:
        assert torch.equal(rows, feat[ids])
    reference = LookaheadCache(40, N, 3, scores=scores)
    stats, _ = replay(reference, batches, lambda m: feat[m], lookahead=depth)
    assert cache.stats()["hits"] == stats["hits"] and cache.pending == 0
    assert sorted(cache.cached_ids().tolist()) == sorted(reference.cached_ids().tolist())


def test_deeper_lookahead_moves_fewer_rows_on_a_reusing_stream():
    feat = torch.randn(N, 1)
    batches = _stream(seed=3, count=60)
    moved = []
    for depth in (0, 4):
        cache = LookaheadCache(30, N, 1)
        for _ in _feeder(cache, feat, depth)(batches):
            pass
        moved.append(cache.stats()["bytes_from_source"])
    assert moved[1] < moved[0]


def test_abandoned_or_failed_stream_forgets_announcements():
    feat = torch.randn(N, 2)
    batches = _stream(seed=1)
    cache = LookaheadCache(40, N, 2)
    gen = _feeder(cache, feat, 4)(batches)
    next(gen)
    assert cache.pending == 4
    gen.close()  # the consumer broke out of its loop
    assert cache.pending == 0

    def failing(m):
        raise OSError("source down")

    with pytest.raises(OSError, match="source down"):
        list(LookaheadFeeder(cache, failing, 3, ids_of=lambda ids: ids, num_seeds_of=None)(batches))
    assert cache.pending == 0
    # the cache still serves a fresh stream
    out = list(_feeder(cache, feat, 2)(batches[:5]))
    assert all(torch.equal(rows, feat[ids]) for ids, rows in out)


def test_feeder_passes_through_caches_without_announce():
    feat = torch.randn(N, 2)
    cache = make_cache("fifo", 40, N, 2)
    feeder = _feeder(cache, feat, 4)
    assert feeder.depth == 0
    out = list(feeder(_stream(count=5)))
    assert len(out) == 5 and all(torch.equal(rows, feat[ids]) for ids, rows in out)
    with pytest.raises(ValueError, match="depth"):
        LookaheadFeeder(cache, lambda m: feat[m], -1)


def test_feeder_reads_blocks_of_sampled_batches(random_store):
    from bgl.sampler import LocalSampler

    sampler = LocalSampler(random_store)
    train = np.asarray(random_store.train_idx, dtype=np.int64)

    class Item:  # the MiniBatch fields the feeder reads
        def __init__(self, seeds, seed):
            self.blocks = sampler.sample_blocks(seeds, [3, 3], seed=seed)

    items = [Item(train[i:i + 16], i) for i in range(0, 160, 16)]
    feat = torch.from_numpy(np.array(random_store.feat))
    cache = make_cache("lookahead", 50, random_store.num_nodes, feat.shape[1],
                       degrees=np.asarray(random_store.in_degrees()))
    for item, rows in LookaheadFeeder(cache, lambda m: feat[m], 4)(items):
        assert torch.equal(rows, feat[item.blocks[0].src_ids])
    assert cache.stats()["requests"] == sum(it.blocks[0].src_ids.numel() for it in items)


def _small_batches(seed=0, count=80):
    """Small batches that reuse rows over a long stretch (a proximity-order-like drift)."""
    rng = np.random.default_rng(seed)
    return [torch.from_numpy(((i * 3 + rng.integers(0, 60, 12)) % N).astype(np.int64)) for i in range(count)]


def _ids_bytes(ids):
    return ids.numel() * ids.element_size()


@pytest.mark.parametrize("backend", ["numba", "torch"])
def test_cache_sized_window_matches_the_replay_and_moves_fewer_rows_than_k4(backend):
    feat = torch.randn(N, 2)
    batches = _small_batches()
    window = CacheSizedWindow(max_depth=64, max_bytes=1 << 20)
    cache = LookaheadCache(60, N, 2, backend=backend)
    feeder = LookaheadFeeder(cache, lambda m: feat[m], "auto", ids_of=lambda ids: ids, num_seeds_of=None,
                             max_depth=64, max_bytes=1 << 20, bytes_of=_ids_bytes)
    out = list(feeder(iter(batches)))
    assert [item is b for (item, _), b in zip(out, batches)] == [True] * len(batches)
    assert all(torch.equal(rows, feat[ids]) for ids, rows in out)
    reference = LookaheadCache(60, N, 2, backend=backend)
    stats, _ = replay(reference, batches, lambda m: feat[m], lookahead="auto", window=window)
    assert cache.stats()["bytes_from_source"] == stats["bytes_from_source"] and cache.pending == 0
    assert sorted(cache.cached_ids().tolist()) == sorted(reference.cached_ids().tolist())
    assert stats["mean_depth"] > 4
    k4 = LookaheadCache(60, N, 2, backend=backend)
    k4_stats, _ = replay(k4, batches, lambda m: feat[m], lookahead=4)
    assert stats["bytes_from_source"] < k4_stats["bytes_from_source"]


def test_cache_sized_window_keeps_its_bounds():
    feat = torch.randn(N, 1)
    batches = _small_batches(seed=2)
    for max_depth, max_bytes, most in ((5, 1 << 20, 5), (64, 3 * _ids_bytes(batches[0]), 3)):
        cache = LookaheadCache(60, N, 1)
        seen = []
        feeder = LookaheadFeeder(cache, lambda m: feat[m], "auto", ids_of=lambda ids: ids, num_seeds_of=None,
                                 max_depth=max_depth, max_bytes=max_bytes, bytes_of=_ids_bytes)
        for _ in feeder(batches):
            seen.append(cache.pending)  # announced, not fetched: the window after this fetch
        assert max(seen) == most, (max_depth, max_bytes, max(seen))


def test_cache_sized_window_stops_when_every_slot_is_protected():
    cache = LookaheadCache(4, N, 1)
    window = CacheSizedWindow(max_depth=100, max_bytes=1 << 30)
    feat = torch.randn(N, 1)
    cache.announce(torch.arange(4))
    cache.fetch(torch.arange(4), lambda m: feat[m])  # the cache holds 0..3, none protected
    assert window.wants_more(cache, 1, 0)
    cache.announce(torch.tensor([0, 1, 9]))
    assert cache.protected_rows() == 2 and window.wants_more(cache, 1, 0)
    cache.announce(torch.tensor([2, 3]))
    assert cache.protected_rows() == 4 and not window.wants_more(cache, 2, 0)
    assert window.wants_more(cache, 0, 0)  # never fewer than one batch ahead
    assert not window.wants_more(cache, 100, 0) and not window.wants_more(LookaheadCache(4, N, 1), 1, 1 << 30)


def test_bad_windows_are_refused():
    cache = LookaheadCache(4, N, 1)
    with pytest.raises(ValueError, match="'deep'"):
        LookaheadFeeder(cache, lambda m: m, "deep")
    with pytest.raises(ValueError, match="max_depth must be an int >= 1, got 0"):
        LookaheadFeeder(cache, lambda m: m, "auto", max_depth=0)
    with pytest.raises(ValueError, match="max_bytes must be an int >= 0, got -1"):
        CacheSizedWindow(max_bytes=-1)


class _Arriving:
    """Batches arriving from a queue: ``ready()`` says whether reading the next one delays no one (a
    fetch process's input), here True for the first ``waiting`` batches, then False."""

    def __init__(self, batches, waiting: int):
        self._it, self._left = iter(batches), waiting

    def __iter__(self):
        return self

    def __next__(self):
        self._left -= 1
        return next(self._it)

    def ready(self) -> bool:
        return self._left > 0


def test_a_sized_window_reads_past_a_few_batches_only_while_batches_are_waiting():
    from bgl.cache.lookahead_feeder import READY_MIN_AHEAD

    feat = torch.randn(N, 1)
    batches = _small_batches(seed=3)

    def depths(items):
        cache = LookaheadCache(60, N, 1)
        feeder = LookaheadFeeder(cache, lambda m: feat[m], "auto", ids_of=lambda ids: ids, num_seeds_of=None,
                                 max_depth=64, max_bytes=1 << 20, bytes_of=_ids_bytes)
        seen = []
        for ids, rows in feeder(items):
            assert torch.equal(rows, feat[ids])
            seen.append(cache.pending)
        assert len(seen) == len(batches)
        return seen

    unready = depths(_Arriving(batches, waiting=0))  # the trainer waits: fetch what is there
    assert max(unready) == READY_MIN_AHEAD
    plain = depths(iter(batches))  # no ready(): the window the cache wants (inline pipeline)
    waiting = depths(_Arriving(batches, waiting=len(batches)))  # all queued: the same window
    assert waiting == plain and max(plain) > READY_MIN_AHEAD
