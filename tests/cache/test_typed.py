"""TypedFeatureCache: one cache per node type behind one fetch/announce API over global ids."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from bgl.cache import LookaheadCache, make_cache
from bgl.cache.lookahead_feeder import LookaheadFeeder
from bgl.cache.typed import TypedFeatureCache, TypedLookaheadCache, type_groups, typed_cache

NTYPES = ("paper", "author", "field")
COUNTS = (300, 200, 100)
OFFSETS = np.concatenate([[0], np.cumsum(COUNTS)]).astype(np.int64)
# each type its own width and dtype; "field" has no features (no cache)
FEATS = {"paper": torch.randn(300, 5), "author": torch.randn(200, 3).half()}


def _stream(seed=0, count=30):
    rng = np.random.default_rng(seed)
    return [torch.from_numpy((rng.random(rng.integers(10, 90)) ** 2 * OFFSETS[-1]).astype(np.int64))
            for _ in range(count)]


def _caches(policy, capacity=(40, 25)):
    return {nt: make_cache(policy, cap, FEATS[nt].shape[0], FEATS[nt].shape[1], dtype=FEATS[nt].dtype)
            for nt, cap in zip(FEATS, capacity)}


class Source:
    """A typed miss source that records every call."""

    def __init__(self):
        self.calls = []

    def __call__(self, ntype, local_ids):
        self.calls.append((ntype, local_ids.clone()))
        return FEATS[ntype][local_ids]


def _expected(ids):
    types = np.searchsorted(OFFSETS, ids.numpy(), side="right") - 1
    return {nt: FEATS[nt][ids[torch.from_numpy(types == t)] - int(OFFSETS[t])]
            for t, nt in enumerate(NTYPES) if nt in FEATS}


def test_type_groups_are_each_types_positions_in_input_order():
    ids = torch.tensor([310, 5, 550, 301, 2, 499, 0])
    order, bounds = type_groups(ids, OFFSETS)
    assert bounds.tolist() == [0, 3, 6, 7]
    assert ids[order].tolist() == [5, 2, 0, 310, 301, 499, 550]


@pytest.mark.parametrize("policy", ["lookahead", "fifo", "lru", "none"])
def test_rows_are_each_types_own_rows_and_misses_come_once_per_type(policy):
    cache = typed_cache(_caches(policy), NTYPES, OFFSETS)
    assert isinstance(cache, TypedLookaheadCache) == (policy == "lookahead")
    for ids in _stream():
        source = Source()
        got = cache.fetch(ids, source, num_seeds=5)
        want = _expected(ids)
        assert got.keys() == want.keys()
        for nt in want:
            assert got[nt].dtype == FEATS[nt].dtype and torch.equal(got[nt], want[nt])
        asked = [nt for nt, _ in source.calls]
        assert len(asked) == len(set(asked)) and "field" not in asked  # one call per type with misses
        for nt, miss in source.calls:
            assert miss.unique().numel() == miss.numel() and int(miss.max()) < FEATS[nt].shape[0]
    stats = cache.stats()
    assert stats["requests"] == sum(s["requests"] for s in stats["by_type"].values()) > 0
    assert stats["hits"] + stats["misses"] == stats["requests"]


def test_each_types_lookahead_sees_its_own_stream():
    """Through the feeder, each type's cache keeps what a cache fed that type's ids alone keeps."""
    batches = _stream(seed=3, count=40)
    cache = typed_cache(_caches("lookahead"), NTYPES, OFFSETS)
    feeder = LookaheadFeeder(cache, Source(), 4, ids_of=lambda ids: ids, num_seeds_of=None)
    out = list(feeder(iter(batches)))
    assert [item is b for (item, _), b in zip(out, batches)] == [True] * len(batches)
    assert cache.pending == 0
    for t, nt in enumerate(NTYPES[:2]):
        alone = LookaheadCache(cache.caches[nt].capacity, COUNTS[t], FEATS[nt].shape[1], dtype=FEATS[nt].dtype)
        local = [b[(b >= OFFSETS[t]) & (b < OFFSETS[t + 1])] - int(OFFSETS[t]) for b in batches]
        for item, rows in LookaheadFeeder(alone, lambda m, nt=nt: FEATS[nt][m], 4, ids_of=lambda i: i,
                                          num_seeds_of=None)(iter(local)):
            pass
        assert cache.caches[nt].stats()["hits"] == alone.stats()["hits"] > 0
        assert sorted(cache.caches[nt].cached_ids().tolist()) == sorted(alone.cached_ids().tolist())


def test_an_abandoned_stream_leaves_no_type_announced():
    cache = typed_cache(_caches("lookahead"), NTYPES, OFFSETS)
    stream = LookaheadFeeder(cache, Source(), 3, ids_of=lambda ids: ids, num_seeds_of=None)(iter(_stream()))
    next(stream)
    assert cache.pending == 3 and cache.protected_rows() > 0
    stream.close()
    assert cache.pending == 0 and all(c.pending == 0 for c in cache.caches.values())


def test_bad_construction_is_named():
    with pytest.raises(ValueError, match="unknown node types"):
        TypedFeatureCache({"venue": make_cache("fifo", 1, 2, 2)}, NTYPES, OFFSETS)
    with pytest.raises(ValueError, match="4 entries"):
        TypedFeatureCache(_caches("fifo"), NTYPES, OFFSETS[:3])
    with pytest.raises(ValueError, match="at least one"):
        TypedFeatureCache({}, NTYPES, OFFSETS)
    with pytest.raises(TypeError, match="take no announcements"):
        TypedLookaheadCache(_caches("fifo"), NTYPES, OFFSETS)
