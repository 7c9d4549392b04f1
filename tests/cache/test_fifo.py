"""FeatureCache (FIFO) against a brute-force one-id-at-a-time reference."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from bgl.cache import ArrayMissSource, FeatureCache


class RefFIFO:
    """Plain-Python FIFO: look the whole request up, then insert the distinct misses
    one by one, in order of first occurrence, at a ring head."""

    def __init__(self, capacity: int, num_nodes: int):
        self.capacity = min(capacity, num_nodes)
        self.ring = [None] * self.capacity
        self.where: dict[int, int] = {}
        self.head = 0
        self.requests = self.hits = self.misses = self.rows = 0

    def fetch(self, ids: list[int]) -> None:
        hits = [i for i in ids if i in self.where]
        missing = list(dict.fromkeys(i for i in ids if i not in self.where))
        self.requests += len(ids)
        self.hits += len(hits)
        self.misses += len(ids) - len(hits)
        self.rows += len(missing)
        for i in missing:
            if self.capacity == 0:
                break
            old = self.ring[self.head]
            if old is not None:
                del self.where[old]
            self.ring[self.head] = i
            self.where[i] = self.head
            self.head = (self.head + 1) % self.capacity


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


@settings(max_examples=60, deadline=None)
@given(num_nodes=st.integers(1, 50), capacity=st.integers(0, 60), dim=st.integers(1, 5),
       half=st.booleans(), data=st.data())
def test_matches_reference_on_random_streams(num_nodes, capacity, dim, half, data):
    dtype = torch.float16 if half else torch.float32
    feat = torch.randn(num_nodes, dim).to(dtype)
    batches = data.draw(st.lists(st.lists(st.integers(0, num_nodes - 1), max_size=80), max_size=12))
    cache, ref = FeatureCache(capacity, num_nodes, dim, dtype), RefFIFO(capacity, num_nodes)
    calls: list[torch.Tensor] = []
    for batch in batches:
        ids = torch.tensor(batch, dtype=torch.int64)
        before = len(calls)
        out = cache.fetch(ids, table_source(feat, calls))
        expected_missing = list(dict.fromkeys(i for i in batch if i not in ref.where))
        ref.fetch(batch)
        assert out.dtype == dtype and torch.equal(out, feat[ids])
        if expected_missing:  # one call, with exactly the distinct misses in first-seen order
            assert len(calls) == before + 1 and calls[-1].tolist() == expected_missing
        else:
            assert len(calls) == before
        assert sorted(cache.cached_ids().tolist()) == sorted(ref.where)
        assert cache.head == ref.head
        assert_consistent(cache)
    s = cache.stats()
    assert (s["requests"], s["hits"], s["misses"]) == (ref.requests, ref.hits, ref.misses)
    assert s["bytes_from_source"] == ref.rows * dim * feat.element_size()


def test_batch_larger_than_capacity_keeps_last_distinct_misses():
    feat = torch.arange(100, dtype=torch.float32).unsqueeze(1)
    cache = FeatureCache(4, 100, 1)
    ids = torch.tensor([5, 6, 5, 7, 8, 9, 10, 6, 11])
    out = cache.fetch(ids, table_source(feat))
    assert torch.equal(out.squeeze(1), ids.float())
    assert sorted(cache.cached_ids().tolist()) == [8, 9, 10, 11]
    assert cache.head == 7 % 4
    out = cache.fetch(torch.tensor([11, 5, 8]), table_source(feat))
    assert torch.equal(out.squeeze(1), torch.tensor([11.0, 5.0, 8.0]))
    assert cache.stats()["hits"] == 2
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


def test_array_miss_source_over_store_memmap(random_store):
    feat = np.asarray(random_store.feat)
    source = ArrayMissSource(random_store.feat)
    cache = FeatureCache(50, random_store.num_nodes, random_store.feat_dim)
    rng = np.random.default_rng(1)
    for _ in range(5):
        ids = torch.from_numpy(rng.integers(0, random_store.num_nodes, 200))
        assert np.array_equal(cache.fetch(ids, source).numpy(), feat[ids.numpy()])
    assert source.calls == 5 and source.rows * 16 * 4 == cache.stats()["bytes_from_source"]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_cache_with_pinned_store_source(random_store):
    feat = np.asarray(random_store.feat)
    cache = FeatureCache(50, random_store.num_nodes, random_store.feat_dim, device="cuda")
    source = ArrayMissSource(random_store.feat, device="cuda")
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
