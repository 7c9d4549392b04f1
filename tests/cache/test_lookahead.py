"""Lookahead cache against a brute-force reference; Belady's bound against exhaustive search."""
from __future__ import annotations

import itertools
from functools import lru_cache

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from bgl.cache import BeladyBound, LookaheadCache, make_cache


class RefLookahead:
    """Brute force of the documented rule: after batch t, keep the `capacity` rows at hand
    (held + batch t) with the largest key: needed by an announced batch (soonest first), else
    the fill key; every tie broken by prio = (score descending, then lower id)."""

    def __init__(self, capacity, num_nodes, scores, fill):
        self.capacity = min(capacity, num_nodes)
        order = sorted(range(num_nodes), key=lambda v: (-scores[v], v)) if fill == "counts" else range(num_nodes)
        self.prio = {v: num_nodes - r for r, v in enumerate(order)}
        self.fill = fill
        self.held: set[int] = set()
        self.last_use: dict[int, int] = {}
        self.hits = self.rows = 0

    def fetch(self, t, batch, announced_after):
        """``announced_after``: [(seq, ids)] announced and not fetched, after batch t."""
        self.hits += sum(v in self.held for v in batch)
        self.rows += len(set(batch) - self.held)
        for v in batch:
            self.last_use[v] = t

        def key(v):
            nxt = next((s for s, ids in announced_after if v in ids), None)
            if nxt is not None:
                return (2, -nxt, self.prio[v])
            if self.fill == "recency":
                return (1, self.last_use[v], self.prio[v])
            return (1, 0, self.prio[v])

        self.held = set(sorted(self.held | set(batch), key=key, reverse=True)[: self.capacity])


batches_st = st.lists(st.lists(st.integers(0, 11), max_size=9), min_size=1, max_size=9)


@pytest.mark.parametrize("backend", ["numba", "numba-heap", "torch"])
@pytest.mark.parametrize("fill", ["counts", "recency", "none"])
@settings(max_examples=40, deadline=None)
@given(capacity=st.integers(0, 14), k=st.integers(0, 4), seed=st.integers(0, 2**16), batches=batches_st)
def test_lookahead_matches_reference(backend, fill, capacity, k, seed, batches):
    n = 12
    scores = np.random.default_rng(seed).integers(0, 4, n)  # ties on purpose
    feat = torch.randn(n, 2)
    cache = _make(backend, capacity, n, 2, scores=scores, fill=fill)
    ref = RefLookahead(capacity, n, scores.tolist(), fill)
    tensors = [torch.tensor(b, dtype=torch.int64) for b in batches]
    announced = 0
    for t, ids in enumerate(tensors):
        while announced < min(len(tensors), t + k + 1):
            cache.announce(tensors[announced])
            announced += 1
        assert torch.equal(cache.fetch(ids, lambda m: feat[m]), feat[ids])
        ref.fetch(t, batches[t], [(s, set(batches[s])) for s in range(t + 1, announced)])
        assert set(cache.cached_ids().tolist()) == ref.held, t
    assert cache.stats()["hits"] == ref.hits
    assert cache.stats()["bytes_from_source"] == ref.rows * cache.row_bytes
    assert cache.pending == 0


def test_unannounced_fetch_fills_by_score_and_k0_equals_it():
    n = 30
    scores = np.arange(n)[::-1]  # low ids score high
    feat = torch.randn(n, 1)
    a = make_cache("lookahead", 5, n, 1, presample_counts=scores)
    b = make_cache("lookahead", 5, n, 1, degrees=np.zeros(n), presample_counts=scores)
    for ids in ([20, 21, 3, 4], [5, 6, 7, 8, 25], [1, 2]):
        t = torch.tensor(ids)
        a.fetch(t, lambda m: feat[m])
        b.announce(t)
        b.fetch(t, lambda m: feat[m])
    assert sorted(a.cached_ids().tolist()) == sorted(b.cached_ids().tolist()) == [1, 2, 3, 4, 5]


def test_lookahead_keeps_what_the_next_batch_needs():
    n = 100
    feat = torch.randn(n, 1)
    scores = np.zeros(n)
    scores[:10] = 5  # 0..9 are the "hubs"
    cache = make_cache("lookahead", 4, n, 1, presample_counts=scores)
    b0, b1 = torch.tensor([50, 51, 52, 53, 0]), torch.tensor([52, 53, 60])
    cache.announce(b0)
    cache.announce(b1)
    cache.fetch(b0, lambda m: feat[m])
    assert set(cache.cached_ids().tolist()) == {52, 53, 0, 50}  # needed first, then score 5, then lower id
    cache.fetch(b1, lambda m: feat[m])
    assert cache.stats()["hits"] == 2


def _make(backend, *args, **kwargs):
    """``numba-heap``: the numba backend with its bulk ranking off, so every update goes through the heap."""
    cache = LookaheadCache(*args, backend="numba" if backend == "numba-heap" else backend, **kwargs)
    if backend == "numba-heap":
        cache._allow_bulk = False
    return cache


def _belady_exhaustive(batches, capacity):
    """Fewest rows from the source over every keep-set choice (rows at hand only)."""
    batches = [frozenset(b) for b in batches]

    @lru_cache(maxsize=None)
    def best(t, held):
        if t == len(batches):
            return 0
        cost = len(batches[t] - held)
        at_hand = sorted(held | batches[t])
        keep_sizes = range(min(capacity, len(at_hand)) + 1)
        return cost + min(best(t + 1, frozenset(c)) for r in keep_sizes for c in itertools.combinations(at_hand, r))

    return best(0, frozenset())


@pytest.mark.parametrize("backend", ["numba", "torch"])
@settings(max_examples=60, deadline=None)
@given(capacity=st.integers(0, 4),
       batches=st.lists(st.lists(st.integers(0, 6), max_size=4), min_size=1, max_size=6))
def test_belady_is_optimal_on_tiny_streams(backend, capacity, batches):
    n = 7
    feat = torch.randn(n, 1)
    cache = BeladyBound(capacity, n, 1, backend=backend)
    cache.replay([torch.tensor(b, dtype=torch.int64) for b in batches], lambda m: feat[m])
    assert cache.stats()["bytes_from_source"] // cache.row_bytes == _belady_exhaustive(batches, capacity)


@settings(max_examples=30, deadline=None)
@given(capacity=st.integers(1, 8), k=st.integers(0, 3), seed=st.integers(0, 2**16), batches=batches_st)
def test_no_policy_beats_belady(capacity, k, seed, batches):
    n = 12
    feat = torch.randn(n, 1)
    tensors = [torch.tensor(b, dtype=torch.int64) for b in batches]
    bound = BeladyBound(capacity, n, 1)
    bound.replay(tensors, lambda m: feat[m])
    scores = np.random.default_rng(seed).integers(0, 5, n)
    for policy in ("fifo", "lru", "presample", "lookahead"):
        cache = make_cache(policy, capacity, n, 1, presample_counts=scores)
        for t, ids in enumerate(tensors):
            if policy == "lookahead":
                while cache.pending < k + 1 and cache.next_seq < len(tensors):
                    cache.announce(tensors[cache.next_seq])
            cache.fetch(ids, lambda m: feat[m])
        assert cache.stats()["bytes_from_source"] >= bound.stats()["bytes_from_source"], policy


@pytest.mark.parametrize("backend", ["numba", "torch"])
def test_bad_input_leaves_lookahead_unchanged(backend):
    n = 50
    rng = np.random.default_rng(1)
    feat = torch.randn(n, 3)
    cache = LookaheadCache(10, n, 3, scores=rng.integers(0, 9, n), backend=backend)
    b = [torch.from_numpy(rng.integers(0, n, 30)) for _ in range(4)]
    for ids in b[:3]:
        cache.announce(ids)
    cache.fetch(b[0], lambda m: feat[m])
    before, stats = cache.state(), cache.stats()

    def same():
        after = cache.state()
        for key, value in before.items():
            if key == "window":
                assert len(value) == len(after[key])
                for x, y in zip(value, after[key]):
                    assert x[:2] == y[:2] and torch.equal(x[2], y[2])
            elif isinstance(value, torch.Tensor):
                assert torch.equal(value, after[key]), key
            else:
                assert value == after[key], key
        assert cache.stats() == stats

    for bad in (torch.tensor([3, n]), torch.tensor([-1]), torch.tensor([[1]]), [1, 2], torch.tensor([1.0])):
        with pytest.raises((ValueError, TypeError)):
            cache.announce(bad)
        same()
    with pytest.raises(ValueError, match="oldest announced"):
        cache.fetch(b[2], lambda m: feat[m])  # out of order
    same()
    for source in (lambda m: feat[m].double(), lambda m: feat[m][:, :2], lambda m: "rows"):
        with pytest.raises((ValueError, TypeError)):
            cache.fetch(b[1], source)
        same()
    with pytest.raises(ValueError, match="fill"):
        LookaheadCache(1, n, 1, fill="lfu")
    with pytest.raises(ValueError, match="scores"):
        LookaheadCache(1, n, 1, scores=np.zeros(n - 1))
    with pytest.raises(ValueError, match="backend"):
        LookaheadCache(1, n, 1, backend="cuda")
    cache.fetch(b[1], lambda m: feat[m])  # still usable, in order
    assert cache.pending == 1


@pytest.mark.parametrize("backend", ["numba", "torch"])
def test_forget_announced_releases_protection(backend):
    n = 20
    feat = torch.randn(n, 1)
    cache = LookaheadCache(2, n, 1, scores=-np.arange(n), backend=backend)  # low ids preferred
    b0, b1 = torch.tensor([10, 11, 0]), torch.tensor([10, 11])
    cache.announce(b0)
    cache.announce(b1)
    cache.fetch(b0, lambda m: feat[m])
    assert set(cache.cached_ids().tolist()) == {10, 11}
    cache.forget_announced()
    assert cache.pending == 0
    cache.fetch(torch.tensor([1]), lambda m: feat[m])  # unannounced: fill decides
    assert set(cache.cached_ids().tolist()) == {1, 10}  # 11 lost its protection and has the lower score


@pytest.mark.parametrize("backend", ["numba", "torch"])
def test_lookahead_matches_reference_while_its_links_slide_in_one_buffer(backend):
    """A stream past the 1024-position links buffer: the live links slide to its front, in place
    (no new buffer once it fits), and the cache still keeps exactly the reference's rows."""
    rng = np.random.default_rng(3)
    n, k = 12, 4
    scores = rng.integers(0, 4, n)
    feat = torch.randn(n, 2)
    cache = _make(backend, 5, n, 2, scores=scores, fill="counts")
    ref = RefLookahead(5, n, scores.tolist(), "counts")
    batches = [rng.integers(0, n, rng.integers(1, 10)).tolist() for _ in range(500)]  # ~2500 positions
    tensors = [torch.tensor(b, dtype=torch.int64) for b in batches]
    buffers = set()
    for t, ids in enumerate(tensors):
        while cache.next_seq < min(len(tensors), t + k + 1):
            cache.announce(tensors[cache.next_seq])
        buffers.add(cache.links.data_ptr())
        assert torch.equal(cache.fetch(ids, lambda m: feat[m]), feat[ids])
        ref.fetch(t, batches[t], [(s, set(batches[s])) for s in range(t + 1, cache.next_seq)])
        assert set(cache.cached_ids().tolist()) == ref.held, t
    assert cache.links_base > 1024 and len(buffers) == 1


def test_backends_agree_on_a_long_stream_with_buffer_regrowth():
    """Hundreds of batches of a skewed stream: the numba heap and the torch topk keep the same rows."""
    rng = np.random.default_rng(7)
    n, cap = 3000, 300
    scores = rng.integers(0, 50, n)
    feat = torch.randn(n, 4)
    caches = [_make(b, cap, n, 4, scores=scores, fill=f)
              for b in ("numba", "numba-heap", "torch") for f in ("counts", "recency")]
    batches = [torch.from_numpy((rng.random(rng.integers(50, 400)) ** 3 * n).astype(np.int64)) for _ in range(300)]
    for c in caches:
        for i, ids in enumerate(batches):
            while c.next_seq < min(len(batches), i + 6):
                c.announce(batches[c.next_seq])
            assert torch.equal(c.fetch(ids, lambda m: feat[m]), feat[ids])
    for a, b in ((caches[0], caches[4]), (caches[2], caches[4]), (caches[1], caches[5]), (caches[3], caches[5])):
        assert sorted(a.cached_ids().tolist()) == sorted(b.cached_ids().tolist())
        assert a.stats() == b.stats()
        # every cached row holds its own features
        ids = a.cached_ids()
        assert torch.equal(a.storage[a.slot_of[ids].long()], feat[ids])


@pytest.mark.parametrize("backend", ["numba", "torch"])
def test_protected_rows_counts_cached_rows_an_announced_batch_needs(backend):
    rng = np.random.default_rng(4)
    feat = torch.randn(50, 1)
    stream = [torch.from_numpy(rng.integers(0, 50, rng.integers(1, 15))) for _ in range(40)]
    cache = LookaheadCache(12, 50, 1, backend=backend)
    ahead = 0
    for i, ids in enumerate(stream):
        while ahead < min(i + 1 + int(rng.integers(0, 5)), len(stream)):
            cache.announce(stream[ahead])
            ahead += 1
        cache.fetch(ids, lambda m: feat[m])
        pending = set(torch.cat(stream[i + 1:ahead]).tolist()) if ahead > i + 1 else set()
        assert cache.protected_rows() == len(pending & set(cache.cached_ids().tolist()))


def test_bulk_threshold_keeps_the_same_rows_on_recorded_streams(random_store, monkeypatch):
    """The numba backend's choice between heap updates and a bulk ranking changes its speed, never
    its rows: replay recorded sampled streams with today's threshold, a lower one
    (BULK_FIXED_STEPS = 0), heap updates only and the torch backend; all move the same rows."""
    from bgl.cache import lookahead as lookahead_module
    from bgl.cache.benchmark import BenchConfig
    from bgl.cache.replay import input_node_sampler, record_batches, replay

    n = random_store.num_nodes
    feat = torch.randn(n, 2)
    degrees = np.asarray(random_store.in_degrees())
    rankings = []
    for batch_size, k in ((8, 4), (32, 16)):
        cfg = BenchConfig(batch_size=batch_size, fanouts=(5, 5), epochs=2)
        stream = record_batches(random_store, input_node_sampler(random_store, cfg.fanouts), "proximity", cfg)
        results = {}
        for name, backend, fixed, bulk in (("now", "numba", lookahead_module.BULK_FIXED_STEPS, True),
                                           ("lower", "numba", 0, True), ("heap", "numba", 0, False),
                                           ("torch", "torch", 0, True)):
            monkeypatch.setattr(lookahead_module, "BULK_FIXED_STEPS", fixed)
            cache = LookaheadCache(40, n, 2, scores=degrees, backend=backend)
            if backend == "numba":
                cache._allow_bulk = bulk
            stats, _ = replay(cache, stream, lambda m: feat[m], lookahead=k)
            results[name] = (stats["bytes_from_source"], stats["hits"], sorted(cache.cached_ids().tolist()),
                             getattr(cache, "bulk_rankings", 0))
        assert all(r[:3] == results["torch"][:3] for r in results.values()), {
            name: r[:2] for name, r in results.items()}
        assert results["heap"][3] == 0
        rankings.append((results["now"][3], results["lower"][3]))
    # both paths ran: the lower threshold ranks in bulk on both streams, today's no more often
    assert all(0 < lower and now <= lower for now, lower in rankings), rankings


@pytest.mark.parametrize("fill, dtype, dim", [("counts", torch.bfloat16, 4), ("recency", torch.bfloat16, 4),
                                              ("none", torch.float16, 3)])
def test_cpu_kernels_move_the_rows_of_the_torch_backend_on_recorded_streams(random_store, fill, dtype, dim,
                                                                            monkeypatch):
    """The numba backend's fused kernels (plan, admit, announce on NumPy views) against the torch
    backend, the vectorised implementation they replace on the CPU: after every batch of recorded
    sampled streams (lookahead 0, 3 and the whole stream; bfloat16 and float16 rows moved as bytes; int32
    ids; repeated ids; num_seeds; a small cache that ranks in bulk, a large one that does not)
    both return the same rows and hold the same ids with the same counters."""
    from bgl.cache import lookahead as lookahead_module
    from bgl.cache.benchmark import BenchConfig
    from bgl.cache.replay import input_node_sampler, record_batches

    n = random_store.num_nodes
    degrees = np.asarray(random_store.in_degrees())
    feat = torch.randn(n, dim).to(dtype)
    source = lambda m: feat[m]  # noqa: E731
    cfg = BenchConfig(batch_size=16, fanouts=(5, 3), epochs=2)
    stream = record_batches(random_store, input_node_sampler(random_store, cfg.fanouts), "proximity", cfg)
    rng = np.random.default_rng(3)
    stream += [(torch.from_numpy(rng.integers(0, n, 60)), 0) for _ in range(10)]  # repeats, no seeds
    monkeypatch.setattr(lookahead_module, "BULK_FIXED_STEPS", 0)  # so these small batches rank in bulk too
    compared = bulk = 0
    for capacity, k in ((20, 3), (150, 0), (150, len(stream))):
        caches = [LookaheadCache(capacity, n, dim, dtype, scores=degrees, fill=fill, backend=b)
                  for b in ("numba", "torch")]
        for c in caches:
            c.reset_stats()
        for i, (ids, num_seeds) in enumerate(stream):
            asked = ids.int() if i % 3 == 0 else ids
            for c in caches:
                while c.next_seq < min(len(stream), i + k + 1) and k:
                    c.announce(stream[c.next_seq][0].int() if c.next_seq % 3 == 0 else stream[c.next_seq][0])
                assert torch.equal(c.fetch(asked, source, num_seeds=num_seeds), feat[ids]), (capacity, k, i)
            cpu, ref = caches
            assert cpu.stats() == ref.stats(), (capacity, k, i)
            assert sorted(cpu.cached_ids().tolist()) == sorted(ref.cached_ids().tolist()), (capacity, k, i)
            assert cpu.filled == ref.filled and cpu.protected_rows() == ref.protected_rows()
            compared += 1
        held = cpu.cached_ids()
        assert torch.equal(cpu.storage[cpu.slot_of[held].long()], feat[held])  # every slot holds its own row
        assert (cpu.slot_of >= 0).sum() == held.numel() == cpu.filled
        bulk += cpu.bulk_rankings
    assert compared == 3 * len(stream) and 0 < bulk < compared  # both admission paths ran
