"""FeatureCache (FIFO) against a brute-force one-id-at-a-time reference."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from collections import deque

from hypothesis import given, settings, strategies as st

from bgl.cache import FeatureCache, make_cache
from bgl.cache.gpu_gather import HostFeatureSource


class RefFIFO:
    """Plain-Python FIFO: look the whole request up, then insert the distinct misses one by
    one at the back of a queue, evicting from the front.  ``reverse``: the distinct misses
    are inserted last-requested first (so the first-requested ones are newest)."""

    def __init__(self, capacity: int, num_nodes: int, reverse: bool = False, priority=None):
        self.capacity = min(capacity, num_nodes)
        self.queue: deque[int] = deque()
        self.reverse = reverse
        self.priority = priority  # per node; inserts sorted by it (stable), highest inserted last
        self.requests = self.hits = self.misses = self.rows = 0

    @property
    def where(self) -> set[int]:
        return set(self.queue)

    def fetch(self, ids: list[int], num_seeds: int = 0) -> None:
        cached = self.where
        hits = [i for i in ids if i in cached]
        missing = list(dict.fromkeys(i for i in ids if i not in cached))
        self.requests += len(ids)
        self.hits += len(hits)
        self.misses += len(ids) - len(hits)
        self.rows += len(missing)
        if self.reverse:
            # seeds' misses first (evicted first), then the rest last-requested first
            seeds = set(ids[:num_seeds])
            first = [i for i in missing if i in seeds]
            rest = [i for i in missing if i not in seeds]
            inserts = list(reversed(first)) + list(reversed(rest))
        else:
            inserts = missing
        if self.priority is not None:
            inserts = sorted(inserts, key=lambda i: self.priority[i])  # stable
        for i in inserts:
            if self.capacity == 0:
                break
            if len(self.queue) == self.capacity:
                self.queue.popleft()
            self.queue.append(i)

    def eviction_order(self) -> list[int]:
        """Cached ids, next to be evicted first."""
        return list(self.queue)


def table_source(feat: torch.Tensor, log: list | None = None):
    def source(ids: torch.Tensor) -> torch.Tensor:
        if log is not None:
            log.append(ids.clone())
        return feat.index_select(0, ids)
    return source


def assert_consistent(cache: FeatureCache) -> None:
    """slot_of and id_in_slot are inverse maps of each other."""
    held = (cache.id_in_slot >= 0).nonzero().squeeze(1)
    assert torch.equal(cache.slot_of[cache.id_in_slot[held]].long(), held)
    assert int((cache.slot_of >= 0).sum()) == held.numel()


def ring_eviction_order(cache: FeatureCache) -> list[int]:
    """Cached ids in the order the ring will overwrite them."""
    cap = cache.capacity
    # request: the head moves up and overwrites head, head+1, ...; reverse: head-1, head-2, ...
    if cache.insert_order == "request":
        slots = [(cache.head + j) % cap for j in range(cap)]
    else:
        slots = [(cache.head - 1 - j) % cap for j in range(cap)]
    ids = [int(cache.id_in_slot[s]) for s in slots]
    return [i for i in ids if i >= 0]


@settings(max_examples=60, deadline=None)
@given(num_nodes=st.integers(1, 50), capacity=st.integers(0, 60), dim=st.integers(1, 5),
       half=st.booleans(), reverse=st.booleans(), use_priority=st.booleans(), data=st.data())
def test_matches_reference_on_random_streams(num_nodes, capacity, dim, half, reverse, use_priority, data):
    dtype = torch.float16 if half else torch.float32
    feat = torch.randn(num_nodes, dim).to(dtype)
    batches = data.draw(st.lists(st.lists(st.integers(0, num_nodes - 1), max_size=80), max_size=12))
    seed_counts = [data.draw(st.integers(0, len(b))) for b in batches]
    # few distinct values, so ties (broken by the insert order) are common
    priority = data.draw(st.lists(st.integers(0, 3), min_size=num_nodes, max_size=num_nodes)) if use_priority else None
    order = "reverse" if reverse else "request"
    cache = FeatureCache(capacity, num_nodes, dim, dtype, insert_order=order, node_priority=priority)
    ref = RefFIFO(capacity, num_nodes, reverse, priority)
    calls: list[torch.Tensor] = []
    for batch, num_seeds in zip(batches, seed_counts):
        ids = torch.tensor(batch, dtype=torch.int64)
        before = len(calls)
        out = cache.fetch(ids, table_source(feat, calls), num_seeds=num_seeds)
        expected_missing = list(dict.fromkeys(i for i in batch if i not in ref.where))
        ref.fetch(batch, num_seeds)
        assert out.dtype == dtype and torch.equal(out, feat[ids])
        if expected_missing:  # one call, with exactly the distinct misses in first-seen order
            assert len(calls) == before + 1 and calls[-1].tolist() == expected_missing
        else:
            assert len(calls) == before
        assert sorted(cache.cached_ids().tolist()) == sorted(ref.where)
        if cache.capacity:
            # not only the same set: the same order of future evictions as one-by-one inserts
            assert ring_eviction_order(cache)[-len(ref.queue):] == ref.eviction_order()
        assert_consistent(cache)
    s = cache.stats()
    assert (s["requests"], s["hits"], s["misses"]) == (ref.requests, ref.hits, ref.misses)
    assert s["bytes_from_source"] == ref.rows * dim * feat.element_size()


def test_batch_larger_than_capacity_keeps_last_distinct_misses_in_request_order():
    feat = torch.arange(100, dtype=torch.float32).unsqueeze(1)
    cache = FeatureCache(4, 100, 1, insert_order="request")
    ids = torch.tensor([5, 6, 5, 7, 8, 9, 10, 6, 11])
    out = cache.fetch(ids, table_source(feat))
    assert torch.equal(out.squeeze(1), ids.float())
    assert sorted(cache.cached_ids().tolist()) == [8, 9, 10, 11]
    assert cache.head == 7 % 4
    out = cache.fetch(torch.tensor([11, 5, 8]), table_source(feat))
    assert torch.equal(out.squeeze(1), torch.tensor([11.0, 5.0, 8.0]))
    assert cache.stats()["hits"] == 2
    assert_consistent(cache)


def test_reverse_insert_keeps_first_requested_ids_and_rows_stay_in_request_order():
    # blocks[0].src_ids lists seeds, then hop-1, then hop-2 nodes: reverse keeps the inner ones
    feat = torch.arange(100, dtype=torch.float32).unsqueeze(1)
    cache = FeatureCache(4, 100, 1)
    assert cache.insert_order == "reverse"
    ids = torch.tensor([5, 6, 5, 7, 8, 9, 10, 6, 11])
    out = cache.fetch(ids, table_source(feat))
    assert torch.equal(out.squeeze(1), ids.float())
    assert sorted(cache.cached_ids().tolist()) == [5, 6, 7, 8]
    # the next fetch's misses evict the last-requested survivor (8) first, the seed (5) last
    cache.fetch(torch.tensor([20]), table_source(feat))
    assert sorted(cache.cached_ids().tolist()) == [5, 6, 7, 20]
    cache.fetch(torch.tensor([21, 22]), table_source(feat))
    assert sorted(cache.cached_ids().tolist()) == [5, 20, 21, 22]
    assert_consistent(cache)


def test_seed_hint_evicts_seeds_first_and_keeps_hop1_longest():
    feat = torch.arange(100, dtype=torch.float32).unsqueeze(1)
    cache = FeatureCache(4, 100, 1)
    ids = torch.tensor([1, 2, 10, 11, 20, 21, 22])  # seeds 1, 2; hop 1: 10, 11; hop 2: 20..22
    out = cache.fetch(ids, table_source(feat), num_seeds=2)
    assert torch.equal(out.squeeze(1), ids.float())
    assert sorted(cache.cached_ids().tolist()) == [10, 11, 20, 21]
    cache.fetch(torch.tensor([50, 51]), table_source(feat))  # evicts the outermost survivors first
    assert sorted(cache.cached_ids().tolist()) == [10, 11, 50, 51]
    assert_consistent(cache)
    snap = snapshot(cache)
    for bad in (-1, 3, True):
        with pytest.raises(ValueError, match="num_seeds"):
            cache.fetch(torch.tensor([60, 61]), table_source(feat), num_seeds=bad)
    assert_unchanged(cache, snap)


def test_node_priority_keeps_hubs_when_a_batch_overflows():
    feat = torch.arange(100, dtype=torch.float32).unsqueeze(1)
    degree = np.zeros(100)
    degree[[30, 31]] = 50  # two hubs in the outermost hop
    cache = FeatureCache(3, 100, 1, node_priority=degree)
    ids = torch.tensor([1, 2, 10, 11, 30, 20, 31])  # seeds 1, 2
    assert torch.equal(cache.fetch(ids, table_source(feat), num_seeds=2), feat[ids])
    # hubs first, then by the reverse rule (hop-1 before outer hops before seeds)
    assert sorted(cache.cached_ids().tolist()) == [10, 30, 31]
    cache.fetch(torch.tensor([40]), table_source(feat))  # FIFO across fetches: the lowest-ranked goes
    assert sorted(cache.cached_ids().tolist()) == [30, 31, 40]
    assert make_cache("fifo", 3, 100, 1, degrees=degree).node_priority is not None
    with pytest.raises(ValueError, match="node_priority"):
        FeatureCache(3, 100, 1, node_priority=np.zeros(99))


def test_make_cache_passes_insert_order_and_rejects_unknown():
    assert make_cache("fifo", 4, 10, 1).insert_order == "reverse"
    assert make_cache("fifo", 4, 10, 1, insert_order="request").insert_order == "request"
    with pytest.raises(ValueError, match="'lifo'"):
        FeatureCache(4, 10, 1, insert_order="lifo")


def test_ring_wraps_with_contiguous_writes_both_orders():
    feat = torch.randn(64, 3)
    for order in ("request", "reverse"):
        cache = FeatureCache(7, 64, 3, insert_order=order)
        ref = RefFIFO(7, 64, reverse=order == "reverse")
        for start in range(0, 60, 5):  # 5 new ids per fetch: the run wraps around the 7-slot ring
            batch = list(range(start, start + 5)) + [start - 1] if start else list(range(5))
            assert torch.equal(cache.fetch(torch.tensor(batch), table_source(feat)), feat[batch])
            ref.fetch(batch)
            assert ring_eviction_order(cache) == ref.eviction_order()
            assert torch.equal(cache.storage[cache.slot_of[cache.cached_ids()].long()], feat[cache.cached_ids()])
        assert_consistent(cache)


def test_capacity_zero_always_asks_source_for_distinct_ids():
    feat = torch.randn(10, 3)
    calls: list[torch.Tensor] = []
    cache = FeatureCache(0, 10, 3)
    for _ in range(3):
        ids = torch.tensor([1, 2, 1, 3])
        assert torch.equal(cache.fetch(ids, table_source(feat, calls)), feat[ids])
    assert [c.tolist() for c in calls] == [[1, 2, 3]] * 3
    assert cache.stats()["hits"] == 0 and cache.stats()["bytes_from_source"] == 9 * 3 * 4


def test_int32_ids_empty_request_and_reset_stats():
    feat = torch.randn(20, 2)
    cache = FeatureCache(5, 20, 2)
    out = cache.fetch(torch.tensor([3, 4, 3], dtype=torch.int32), table_source(feat))
    assert torch.equal(out, feat[[3, 4, 3]])
    assert cache.fetch(torch.empty(0, dtype=torch.int64), table_source(feat)).shape == (0, 2)
    assert cache.stats()["requests"] == 3
    cache.reset_stats()
    assert cache.stats() == {"requests": 0, "hits": 0, "misses": 0, "hit_rate": 0.0, "bytes_from_source": 0}


def snapshot(cache: FeatureCache):
    return (cache.slot_of.clone(), cache.id_in_slot.clone(), cache.head, cache.storage.clone(), cache.stats())


def assert_unchanged(cache: FeatureCache, snap) -> None:
    slot_of, id_in_slot, head, storage, stats = snap
    assert torch.equal(cache.slot_of, slot_of)
    assert torch.equal(cache.id_in_slot, id_in_slot)
    assert cache.head == head
    assert torch.equal(cache.storage, storage)
    assert cache.stats() == stats


def _warm_cache():
    feat = torch.randn(30, 4)
    cache = FeatureCache(8, 30, 4)
    cache.fetch(torch.arange(0, 30, 3), table_source(feat))  # wraps the ring once
    return cache, feat


@pytest.mark.parametrize("ids, error, text", [
    (torch.tensor([1, 30, 2]), ValueError, "30"),
    (torch.tensor([1, -4]), ValueError, "-4"),
    (torch.tensor([1.0, 2.0]), TypeError, "float32"),
    (torch.tensor([[1, 2]]), ValueError, "(1, 2)"),
    ([1, 2], TypeError, "list"),
    (torch.empty(2, dtype=torch.int64, device="meta"), ValueError, "meta"),
])
def test_bad_ids_raise_and_leave_state(ids, error, text):
    cache, feat = _warm_cache()
    snap = snapshot(cache)
    with pytest.raises(error, match=None) as info:
        cache.fetch(ids, table_source(feat))
    assert text in str(info.value)
    assert_unchanged(cache, snap)


@pytest.mark.parametrize("bad_source, error, text", [
    (lambda ids: torch.zeros(ids.numel() + 1, 4), ValueError, "shape"),
    (lambda ids: torch.zeros(ids.numel(), 3), ValueError, "(2, 3)"),
    (lambda ids: torch.zeros(ids.numel(), 4, dtype=torch.float64), TypeError, "float64"),
    (lambda ids: [[0.0] * 4] * ids.numel(), TypeError, "list"),
])
def test_bad_miss_source_answer_raises_and_leaves_state(bad_source, error, text):
    cache, _ = _warm_cache()
    snap = snapshot(cache)
    with pytest.raises(error) as info:
        cache.fetch(torch.tensor([1, 2, 1]), bad_source)  # 1, 2 are not cached
    assert text in str(info.value)
    assert_unchanged(cache, snap)


def test_miss_source_exception_propagates_and_leaves_state():
    cache, _ = _warm_cache()
    snap = snapshot(cache)

    def failing(ids):
        raise ConnectionError("server gone")

    with pytest.raises(ConnectionError, match="server gone"):
        cache.fetch(torch.tensor([1, 2, 3]), failing)
    assert_unchanged(cache, snap)


def test_bad_constructor_arguments():
    with pytest.raises(ValueError, match="-1"):
        FeatureCache(-1, 10, 2)
    with pytest.raises(ValueError, match="2.5"):
        FeatureCache(2.5, 10, 2)
    with pytest.raises(TypeError, match="int64"):
        FeatureCache(2, 10, 2, dtype=torch.int64)


def test_host_feature_source_over_store_memmap(random_store):
    feat = np.asarray(random_store.feat)
    source = HostFeatureSource(random_store.feat)
    cache = FeatureCache(50, random_store.num_nodes, random_store.feat_dim)
    rng = np.random.default_rng(1)
    for _ in range(5):
        ids = torch.from_numpy(rng.integers(0, random_store.num_nodes, 200))
        assert np.array_equal(cache.fetch(ids, source).numpy(), feat[ids.numpy()])
    assert source.stats()["calls"] == 5 and source.stats()["rows"] * 16 * 4 == cache.stats()["bytes_from_source"]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_cache_with_pinned_store_source(random_store):
    feat = np.asarray(random_store.feat)
    cache = FeatureCache(50, random_store.num_nodes, random_store.feat_dim, device="cuda")
    source = HostFeatureSource(random_store.feat, device="cuda", mode="cpu")  # pinned staging copy
    for seed in range(5):
        ids = torch.from_numpy(np.random.default_rng(seed).integers(0, random_store.num_nodes, 300))
        out = cache.fetch(ids.cuda(), source)
        assert out.is_cuda and np.array_equal(out.cpu().numpy(), feat[ids.numpy()])
    with pytest.raises(ValueError, match="cpu"):
        cache.fetch(torch.tensor([1]), source)
    assert cache.stats()["hits"] > 0


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-CUDA fallback")
def test_cuda_request_without_cuda_falls_back_to_cpu(caplog):
    cache = FeatureCache(4, 10, 2, device="cuda")
    assert cache.device.type == "cpu" and cache.storage.device.type == "cpu"
    assert "CUDA requested" in caplog.text
    feat = torch.randn(10, 2)
    assert torch.equal(cache.fetch(torch.tensor([1, 2]), lambda m: feat[m]), feat[[1, 2]])


def test_fetch_into_caller_buffer_and_bad_buffer():
    cache, feat = _warm_cache()
    buf = torch.full((3, 4), 7.0)
    ids = torch.tensor([0, 1, 3])  # 0 and 3 cached, 1 missing
    assert cache.fetch(ids, table_source(feat), out=buf) is buf and torch.equal(buf, feat[ids])
    snap = snapshot(cache)
    for bad, error in ((torch.empty(2, 4), ValueError), (torch.empty(3, 4, dtype=torch.float64), ValueError),
                       (torch.empty(3, 4).numpy(), TypeError)):
        with pytest.raises(error, match="out"):
            cache.fetch(torch.tensor([2, 5, 6]), table_source(feat), out=bad)
    assert_unchanged(cache, snap)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_all_hit_all_miss_and_mixed_fetches_fill_every_row(dtype):
    # the three copy paths: all miss (rows copied as a block), mixed (scatters), all hit (one gather)
    feat = torch.randn(40, 6).to(dtype)
    cache = FeatureCache(40, 40, 6, dtype)
    buf = torch.full((64, 6), 9.0, dtype=dtype)
    first = torch.tensor([3, 1, 4, 15, 9, 2, 6])
    assert torch.equal(cache.fetch(first, table_source(feat), out=buf[:7]), feat[first])
    mixed = torch.tensor([1, 20, 4, 21, 22, 3, 20])
    assert torch.equal(cache.fetch(mixed, table_source(feat), out=buf[7:14]), feat[mixed])
    hits = torch.tensor([22, 3, 20, 15])

    def must_not_be_called(ids):
        raise AssertionError(f"every id should hit, source asked for {ids.tolist()}")

    assert torch.equal(cache.fetch(hits, must_not_be_called), feat[hits])
    assert cache.stats()["hits"] == 3 + 4 and torch.equal(buf[14:], torch.full((50, 6), 9.0, dtype=dtype))
    assert_consistent(cache)


def test_float_priorities_rank_like_their_values():
    feat = torch.arange(10, dtype=torch.float32).unsqueeze(1)
    prio = np.array([0.5, 2.5, -1.0, 2.25, 0, 0, 0, 0, 0, 0])
    cache = FeatureCache(2, 10, 1, insert_order="request", node_priority=prio)
    cache.fetch(torch.tensor([0, 1, 2, 3]), table_source(feat))
    assert sorted(cache.cached_ids().tolist()) == [1, 3]  # the two highest priorities
    with pytest.raises(ValueError, match="node_priority"):
        FeatureCache(2, 10, 1, node_priority=np.array(["a"] * 10))
