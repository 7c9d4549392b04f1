"""Policies behind one fetch API: correct rows always; LRU and static pinning against references."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from bgl.cache import POLICIES, make_cache, presample_counts


class RefLRU:
    """Brute force: after each request the cache holds the `capacity` most recently
    used ids among (what it held) + (this request's misses), recency = last position."""

    def __init__(self, capacity: int, num_nodes: int):
        self.capacity = min(capacity, num_nodes)
        self.last_use: dict[int, int] = {}
        self.clock = 0
        self.hits = 0

    def fetch(self, ids: list[int]) -> None:
        self.hits += sum(i in self.last_use for i in ids)
        candidates = dict(self.last_use)
        for p, i in enumerate(ids):
            candidates[i] = self.clock + p
        self.clock += len(ids)
        keep = sorted(candidates, key=candidates.get, reverse=True)[: self.capacity]
        self.last_use = {i: candidates[i] for i in keep}


def build(policy, capacity, num_nodes, dim, rng, dtype=torch.float32):
    return make_cache(policy, capacity, num_nodes, dim, dtype,
                      degrees=rng.integers(0, 20, num_nodes),
                      presample_counts=rng.integers(0, 5, num_nodes))


@pytest.mark.parametrize("policy", POLICIES)
@settings(max_examples=25, deadline=None)
@given(num_nodes=st.integers(1, 40), capacity=st.integers(0, 45), seed=st.integers(0, 2**16), data=st.data())
def test_every_policy_returns_requested_rows(policy, num_nodes, capacity, seed, data):
    rng = np.random.default_rng(seed)
    feat = torch.randn(num_nodes, 3, dtype=torch.float64).half()
    cache = build(policy, capacity, num_nodes, 3, rng, torch.float16)
    requests = hits = 0
    for batch in data.draw(st.lists(st.lists(st.integers(0, num_nodes - 1), max_size=50), max_size=8)):
        ids = torch.tensor(batch, dtype=torch.int64)
        assert torch.equal(cache.fetch(ids, lambda m: feat[m]), feat[ids])
        requests += len(batch)
        assert len(cache) <= min(capacity, num_nodes)
    s = cache.stats()
    assert s["requests"] == requests and s["hits"] + s["misses"] == requests
    if policy == "none":
        assert s["hits"] == 0


@settings(max_examples=60, deadline=None)
@given(num_nodes=st.integers(1, 40), capacity=st.integers(0, 45), data=st.data())
def test_lru_matches_reference(num_nodes, capacity, data):
    feat = torch.randn(num_nodes, 2)
    cache, ref = make_cache("lru", capacity, num_nodes, 2), RefLRU(capacity, num_nodes)
    for batch in data.draw(st.lists(st.lists(st.integers(0, num_nodes - 1), max_size=50), max_size=10)):
        ids = torch.tensor(batch, dtype=torch.int64)
        assert torch.equal(cache.fetch(ids, lambda m: feat[m]), feat[ids])
        ref.fetch(batch)
        assert sorted(cache.cached_ids().tolist()) == sorted(ref.last_use)
    assert cache.stats()["hits"] == ref.hits


def test_lru_keeps_recently_hit_rows_fifo_does_not():
    feat = torch.randn(10, 1)
    lru, fifo = make_cache("lru", 2, 10, 1), make_cache("fifo", 2, 10, 1)
    for cache in (lru, fifo):
        for ids in ([0], [1], [0], [2], [0]):  # 0 is used again before each eviction
            cache.fetch(torch.tensor(ids), lambda m: feat[m])
    assert lru.stats()["hits"] == 2 and fifo.stats()["hits"] == 1


@pytest.mark.parametrize("policy, key", [("static-degree", "degrees"), ("presample", "presample_counts")])
def test_static_policies_pin_top_scores_and_never_evict(policy, key):
    rng = np.random.default_rng(0)
    num_nodes, cap = 200, 20
    scores = rng.permutation(num_nodes)  # distinct scores: a unique top set
    cache = make_cache(policy, cap, num_nodes, 4, **{key: scores})
    top = set(np.argsort(-scores)[:cap].tolist())
    feat = torch.randn(num_nodes, 4)
    for _ in range(10):
        ids = torch.from_numpy(rng.integers(0, num_nodes, 80))
        assert torch.equal(cache.fetch(ids, lambda m: feat[m]), feat[ids])
        assert set(cache.cached_ids().tolist()) <= top
    before = cache.stats()["hits"]
    # every pinned id seen so far now hits
    seen_pinned = torch.tensor(sorted(set(cache.cached_ids().tolist())))
    cache.fetch(seen_pinned, lambda m: feat[m])
    assert cache.stats()["hits"] - before == seen_pinned.numel() > 0
    cache.preload(lambda m: feat[m])
    assert set(cache.cached_ids().tolist()) == top


def test_static_degree_beats_fifo_on_hub_heavy_stream():
    """A stream where hubs recur and the rest is noise: pinning hubs should win."""
    rng = np.random.default_rng(3)
    n, cap = 1000, 50
    degrees = np.zeros(n, np.int64)
    degrees[:cap] = 100
    feat = torch.randn(n, 2)
    static, fifo = make_cache("static-degree", cap, n, 2, degrees=degrees), make_cache("fifo", cap, n, 2)
    for _ in range(30):
        ids = torch.from_numpy(np.unique(np.concatenate([rng.integers(0, cap, 20), rng.integers(cap, n, 200)])))
        for cache in (static, fifo):
            cache.fetch(ids, lambda m: feat[m])
    assert static.stats()["hit_rate"] > fifo.stats()["hit_rate"]


def test_make_cache_errors():
    with pytest.raises(ValueError, match="'clock'"):
        make_cache("clock", 1, 10, 2)
    with pytest.raises(ValueError, match="degrees"):
        make_cache("static-degree", 1, 10, 2)
    with pytest.raises(ValueError, match="presample_counts"):
        make_cache("presample", 1, 10, 2)
    with pytest.raises(ValueError, match=r"\(7,\)"):
        make_cache("static-degree", 1, 10, 2, degrees=np.zeros(7))


def test_presample_counts_counts_every_input_node():
    batches = {0: [np.array([1, 2]), np.array([3])], 1: [np.array([2])]}
    seen_seeds = []

    def sample_fn(seeds, seed):
        seen_seeds.append(seed)
        return np.concatenate([seeds, seeds + 10])

    counts = presample_counts(sample_fn, lambda e: batches[e], epochs=2, num_nodes=20)
    expected = np.zeros(20, np.int64)
    for ids in (1, 2, 3, 2, 11, 12, 13, 12):
        expected[ids] += 1
    assert np.array_equal(counts, expected)
    assert len(set(seen_seeds)) == 3
    assert presample_counts(sample_fn, lambda e: batches[e], epochs=1).shape == (14,)
    with pytest.raises(ValueError, match="num_nodes=5"):
        presample_counts(sample_fn, lambda e: batches[e], epochs=1, num_nodes=5)
    with pytest.raises(ValueError, match="0"):
        presample_counts(sample_fn, lambda e: batches[e], epochs=0)


@pytest.mark.parametrize("policy", POLICIES)
def test_bad_input_leaves_every_policy_unchanged(policy):
    rng = np.random.default_rng(5)
    feat = torch.randn(50, 3)
    cache = build(policy, 10, 50, 3, rng)
    cache.fetch(torch.from_numpy(rng.integers(0, 50, 40)), lambda m: feat[m])
    before = {k: v.clone() for k, v in vars(cache).items() if isinstance(v, torch.Tensor)}
    scalars = {k: v for k, v in vars(cache).items() if isinstance(v, (int, float))}
    stats = cache.stats()
    for ids, source in ((torch.tensor([3, 50]), lambda m: feat[m]),
                        (torch.arange(50), lambda m: feat[m].double()),
                        (torch.arange(50), lambda m: feat[m][:, :2])):
        with pytest.raises((ValueError, TypeError)):
            cache.fetch(ids, source)
    for key, value in before.items():
        assert torch.equal(getattr(cache, key), value), key
    assert {k: v for k, v in vars(cache).items() if isinstance(v, (int, float))} == scalars
    assert cache.stats() == stats
