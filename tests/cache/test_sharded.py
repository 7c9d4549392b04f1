"""ShardedFeatureCache: same rows as one cache, shards behave as independent FIFO caches."""
from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings, strategies as st

from bgl.cache import FeatureCache, ShardedFeatureCache


@settings(max_examples=40, deadline=None)
@given(num_shards=st.integers(2, 4), num_nodes=st.integers(1, 60), capacity=st.integers(0, 40), data=st.data())
def test_sharded_equals_unsharded_rows_and_per_shard_fifo(num_shards, num_nodes, capacity, data):
    feat = torch.randn(num_nodes, 3)
    sharded = ShardedFeatureCache(capacity, num_nodes, 3, devices=["cpu"] * num_shards)
    single = FeatureCache(capacity, num_nodes, 3)
    # reference: one independent FIFO per shard, driven by hand over local ids
    refs = [FeatureCache(sh.capacity, sh.num_nodes, 3) for sh in sharded.shards]
    assert sum(r.capacity for r in refs) <= min(capacity, num_nodes)
    calls = []

    def source(ids):
        calls.append(ids.clone())
        return feat[ids]

    for batch in data.draw(st.lists(st.lists(st.integers(0, num_nodes - 1), max_size=60), max_size=8)):
        ids = torch.tensor(batch, dtype=torch.int64)
        num_seeds = data.draw(st.integers(0, len(batch)))
        before = len(calls)
        out = sharded.fetch(ids, source, num_seeds=num_seeds)
        assert torch.equal(out, single.fetch(ids, lambda m: feat[m], num_seeds=num_seeds))
        assert torch.equal(out, feat[ids])
        assert len(calls) - before <= 1  # one source call per fetch, whatever the shard count
        if len(calls) > before:
            assert len(set(calls[-1].tolist())) == calls[-1].numel()  # distinct ids only
        for s, ref in enumerate(refs):
            mine = ids % num_shards == s
            local = ids[mine] // num_shards
            # the shard's seeds are its ids among the request's first num_seeds
            ref.fetch(local, lambda m, s=s: feat[m * num_shards + s], num_seeds=int(mine[:num_seeds].sum()))
            assert sorted(sharded.shards[s].cached_ids().tolist()) == sorted(ref.cached_ids().tolist())
    assert sharded.stats()["hits"] == sum(r.stats()["hits"] for r in refs)
    assert sharded.stats()["requests"] == sum(r.stats()["requests"] for r in refs) == single.stats()["requests"]


def test_sharded_capacity_split_and_errors_leave_state():
    sharded = ShardedFeatureCache(10, 100, 2, devices=["cpu", "cpu", "cpu"])
    assert [sh.capacity for sh in sharded.shards] == [4, 3, 3]
    assert [sh.num_nodes for sh in sharded.shards] == [34, 33, 33]
    feat = torch.randn(100, 2)
    sharded.fetch(torch.arange(0, 100, 7), lambda m: feat[m])
    snap = [(sh.slot_of.clone(), sh.id_in_slot.clone(), sh.head) for sh in sharded.shards]
    stats = sharded.stats()
    with pytest.raises(ValueError, match="100"):
        sharded.fetch(torch.tensor([1, 100]), lambda m: feat[m])
    with pytest.raises(ValueError, match="shape"):
        sharded.fetch(torch.tensor([1, 2, 3, 4]), lambda m: feat[m][:-1])
    with pytest.raises(TypeError, match="float32"):
        sharded.fetch(torch.tensor([1.0]), lambda m: feat[m])
    for sh, (slot_of, id_in_slot, head) in zip(sharded.shards, snap):
        assert torch.equal(sh.slot_of, slot_of) and torch.equal(sh.id_in_slot, id_in_slot) and sh.head == head
    assert sharded.stats() == stats
    with pytest.raises(ValueError, match=r"\[\]"):
        ShardedFeatureCache(10, 100, 2, devices=[])
