"""Temporal sampling on a store: never an edge or node from the future, "last" exact, uniform draws."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from bgl.sampler import LocalSampler, ops
from bgl.sampler.temporal.sampling import TemporalLayer, build_index, sample_temporal
from bgl.store import write_store


def arrays(indptr, indices, etime, **extra):
    """A graph's read API over plain arrays (what :class:`TemporalLayer` reads of a store)."""
    n = indptr.shape[0] - 1
    edata = {"timestamp": etime, **extra}
    return SimpleNamespace(indptr=indptr, indices=indices, node_offset=0, global_num_nodes=n,
                           num_edges=indices.shape[0], edge_array=lambda name: edata[name], path="arrays")


def random_graph(rng, n, e, tmax):
    dst = np.sort(rng.integers(0, n, e))
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(dst, minlength=n), out=indptr[1:])
    return indptr, rng.integers(0, n, e).astype(np.int64), rng.integers(0, tmax, e).astype(np.int64)


def eligible(indptr, key, v, t):
    """Brute force: the CSC positions of ``v``'s in-edges with key <= t, by (key, position)."""
    pos = np.arange(indptr[v], indptr[v + 1])
    pos = pos[key[pos] <= t]
    return pos[np.lexsort((pos, key[pos]))]


def check_sample(g, key, s, fanouts, strategy, node_time=None):
    """Every invariant of a disjoint temporal sample against brute force; returns nothing."""
    indptr, indices = g.indptr, g.indices
    assert np.array_equal(s.node_time, s.node_time[:s.num_sampled_nodes[0]][s.batch])  # each its seed's time
    assert np.all(s.edge_time <= s.node_time[s.dst]), "an edge from the future"
    assert np.array_equal(s.batch[s.src], s.batch[s.dst])
    assert np.array_equal(indices[s.eid], s.node[s.src]) and np.array_equal(key[s.eid], s.edge_time)
    if node_time is not None:
        assert np.all(node_time[s.node[s.src]] <= s.node_time[s.dst]), "a node from the future"
    starts = np.cumsum((0,) + s.num_sampled_edges)
    for hop, fanout in enumerate(fanouts):
        sl = slice(starts[hop], starts[hop + 1])
        for d in np.unique(s.dst[sl]):
            got = s.eid[sl][s.dst[sl] == d]
            v, t = s.node[d], s.node_time[d]
            assert np.all((got >= indptr[v]) & (got < indptr[v + 1]))
            ok = eligible(indptr, key, v, t)
            k = ok.shape[0] if fanout < 0 else min(fanout, ok.shape[0])
            assert got.shape[0] == k and np.all(np.diff(got) > 0)
            if strategy == "last":
                assert np.array_equal(got, np.sort(ok[ok.shape[0] - k:]))
            else:
                assert np.isin(got, ok).all()


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 25), e=st.integers(0, 160), tmax=st.integers(1, 30),
       fanouts=st.lists(st.sampled_from([-1, 0, 1, 2, 3, 7]), min_size=1, max_size=3),
       strategy=st.sampled_from(["uniform", "last"]), with_node_time=st.booleans())
def test_no_future_edge_or_node_and_last_is_exact(seed, n, e, tmax, fanouts, strategy, with_node_time):
    rng = np.random.default_rng(seed)
    indptr, indices, etime = random_graph(rng, n, e, tmax)
    ntime = rng.integers(0, tmax, n).astype(np.int64) if with_node_time else None
    g = arrays(indptr, indices, etime)
    m = int(rng.integers(1, 12))
    seeds, times = rng.integers(0, n, m), rng.integers(-1, tmax + 1, m)  # repeats: one subgraph each
    s = sample_temporal(TemporalLayer(g, node_time=ntime), seeds, times, fanouts, strategy, seed=seed)
    key = etime if ntime is None else np.maximum(etime, ntime[indices])
    assert np.array_equal(s.node[:m], seeds) and np.array_equal(s.batch[:m], np.arange(m))
    check_sample(g, key, s, fanouts, strategy, ntime)


def test_unsorted_rows_get_a_time_order_sorted_ones_none():
    indptr = np.array([0, 4], np.int64)
    indices = np.zeros(4, np.int64)
    assert build_index(indptr, indices, np.array([1, 1, 2, 5])).order.shape == (0,)
    idx = build_index(indptr, indices, np.array([5, 1, 2, 1]))
    assert idx.order.tolist() == [1, 3, 2, 0]  # ties by position


def test_a_stored_order_is_checked_before_it_is_read():
    from bgl.sampler.temporal._kernels import order_valid

    indptr = np.array([0, 3, 5], np.int64)
    key = np.array([4, 1, 4, 2, 2], np.int64)
    assert order_valid(indptr, key, np.array([1, 0, 2, 0, 1], np.int32))
    for bad in ([1, 2, 0, 0, 1],  # keys out of order
                [1, 2, 2, 0, 1],  # not a permutation
                [1, 0, 2, 1, 0],  # a tie in descending offsets
                [1, 0, 3, 0, 1],  # an offset past its row
                [1, 0, 2, 0, -1]):
        assert not order_valid(indptr, key, np.array(bad, np.int64)), bad


def test_last_takes_the_most_recent_ties_by_later_position():
    indptr = np.array([0, 0, 6], np.int64)
    indices = np.zeros(6, np.int64)
    etime = np.array([3, 9, 3, 1, 7, 3], np.int64)
    layer = TemporalLayer(arrays(indptr, indices, etime))
    counts, _, eids, times = layer(np.array([1, 1]), np.array([5, 8]), 2, "last", 0)
    assert counts.tolist() == [2, 2]
    assert eids.tolist() == [2, 5, 4, 5]  # t=5: the two latest 3s; t=8: the 7 and the latest 3
    assert times.tolist() == [3, 3, 7, 3]


def test_all_times_equal_draws_what_the_non_temporal_sampler_draws(random_store_factory, tmp_path):
    base = random_store_factory(num_nodes=300, avg_degree=12, seed=3)
    ip, idx = np.asarray(base.indptr), np.asarray(base.indices)
    store = write_store(tmp_path / "t", ip, idx, edata={"timestamp": np.full(idx.shape[0], 7, np.int64)})
    seeds = np.random.default_rng(0).choice(300, 80, replace=False)
    for fanout in (1, 3, 5, 40, -1):
        want = ops.sample_neighbors(ip, idx, seeds, 0, fanout, False, 99)
        got = TemporalLayer(store)(seeds, np.full(80, 7), fanout, "uniform", 99)
        assert all(np.array_equal(a, b) for a, b in zip(want, got[:3]))
    # two hops, unique seeds: hop 0 is the block sampler's last layer (DGL's fanout order is the
    # reverse of PyG's num_neighbors) for the same seed, row for row
    s = LocalSampler(store).sample_temporal(seeds, np.full(80, 100), [4, 3], seed=5)
    block = LocalSampler(store).sample_blocks(seeds, [3, 4], seed=5)[-1]
    hop0 = slice(0, s.num_sampled_edges[0])
    assert np.array_equal(s.node[s.src[hop0]], block.src_ids.numpy()[block.indices.numpy()])
    # nothing eligible before the time of every edge
    s = LocalSampler(store).sample_temporal(seeds, np.full(80, 6), [4, 3], seed=5)
    assert s.num_sampled_edges == (0, 0) and s.node.shape == (80,)


def test_a_row_wholly_in_the_past_draws_the_non_temporal_sample():
    # times out of CSC order in every row: once all of a row is eligible its draw is the block sampler's
    rng = np.random.default_rng(6)
    indptr, indices, etime = random_graph(rng, 60, 1500, 1000)
    dst = rng.choice(60, 40, replace=False)
    for fanout in (2, 9, 70):
        want = ops.sample_neighbors(indptr, indices, dst, 0, fanout, False, 31)
        got = TemporalLayer(arrays(indptr, indices, etime))(dst, np.full(40, 1000), fanout, "uniform", 31)
        assert all(np.array_equal(a, b) for a, b in zip(want, got[:3]))


@pytest.mark.parametrize("shuffled", [False, True])
def test_uniform_draw_is_uniform_over_the_eligible(shuffled):
    # one row of 20 in-edges, 10 of them at or before t: each drawn with probability 3/10
    etime = np.repeat(np.array([1, 9]), 10).astype(np.int64)
    if shuffled:  # the row is not in time order: the sampler reads it through its time order
        etime = np.random.default_rng(0).permutation(etime)
    layer = TemporalLayer(arrays(np.array([0, 20], np.int64), np.zeros(20, np.int64), etime))
    hits = np.zeros(20)
    trials = 3000
    for s in range(trials):
        _, _, eids, _ = layer(np.array([0]), np.array([5]), 3, "uniform", s)
        hits[eids] += 1
    assert np.all(hits[etime == 9] == 0)
    freq = hits[etime == 1] / trials
    assert np.all(np.abs(freq - 0.3) < 0.05), freq  # 6 standard deviations


def test_samples_depend_on_seed_time_and_node_only():
    rng = np.random.default_rng(4)
    indptr, indices, etime = random_graph(rng, 40, 600, 50)
    layer = TemporalLayer(arrays(indptr, indices, etime))
    dst, times = rng.integers(0, 40, 30), rng.integers(0, 50, 30)
    a = layer(dst, times, 4, "uniform", 11)
    perm = rng.permutation(30)
    b = layer(dst[perm], times[perm], 4, "uniform", 11)
    rows_a = np.split(a[2], np.cumsum(a[0])[:-1])
    rows_b = np.split(b[2], np.cumsum(b[0])[:-1])
    assert all(np.array_equal(rows_a[p], rows_b[i]) for i, p in enumerate(perm))


def test_typed_stores_are_refused_by_name(hetero_store):
    with pytest.raises(ValueError, match="temporal sampling of a typed store .* not supported yet"):
        LocalSampler(hetero_store, node_time=np.zeros(hetero_store.num_nodes, np.int64)).sample_temporal(
            [0], [1], [2], time_name=None)


def test_bad_input_one_clear_line(tmp_path):
    indptr = np.array([0, 2, 3], np.int64)
    indices = np.array([1, 0, 0], np.int64)
    store = write_store(tmp_path / "s", indptr, indices,
                        edata={"timestamp": np.array([1, 2, 3], np.int64), "w": np.ones(3, np.float32)})
    local = LocalSampler(store)
    with pytest.raises(ValueError, match="seed times are required"):
        local.sample_temporal([0, 1], None, [2])
    with pytest.raises(ValueError, match=r"seed times must have shape \(2,\), got \(3,\)"):
        local.sample_temporal([0, 1], [1, 2, 3], [2])
    with pytest.raises(TypeError, match="seed times must be integers.*float64"):
        local.sample_temporal([0, 1], [1.5, 2.0], [2])
    with pytest.raises(TypeError, match="edge time array 'w' must be integers.*float32"):
        local.sample_temporal([0, 1], [1, 2], [2], time_name="w")
    with pytest.raises(ValueError, match="nope"):
        local.sample_temporal([0, 1], [1, 2], [2], time_name="nope")
    with pytest.raises(ValueError, match="strategy must be one of.*'newest'"):
        local.sample_temporal([0, 1], [1, 2], [2], strategy="newest")
    with pytest.raises(ValueError, match=r"node times must have shape \(2,\), got \(5,\)"):
        LocalSampler(store, node_time=np.zeros(5, np.int64)).sample_temporal([0], [1], [2])
    with pytest.raises(ValueError, match=r"edge time array 'timestamp' must have shape \(3,\), got \(2,\)"):
        TemporalLayer(arrays(indptr, indices, np.array([1, 2], np.int64)))([0], [1], 1, "last", 0)


def test_a_dglgraph_read_in_place_samples_by_its_edata_times():
    """The path a DGL-style temporal sampler takes: a DGLGraph's CSC views and ``edata["timestamp"]``
    (in DGL's edge order), node times from ``ndata``; ids and times come back as DGL's."""
    dgl = pytest.importorskip("dgl")
    import torch

    from bgl.loader.graph_arrays import dglgraph_arrays

    rng = np.random.default_rng(8)
    src, dst = rng.integers(0, 80, 2000), rng.integers(0, 80, 2000)
    g = dgl.graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=80)
    g.edata["timestamp"] = torch.from_numpy(rng.integers(0, 1000, 2000))
    g.ndata["t"] = torch.from_numpy(rng.integers(0, 600, 80))
    seeds, times = rng.integers(0, 80, 64), rng.integers(0, 1000, 64)
    sampler = LocalSampler(dglgraph_arrays(g, None, None), node_time=g.ndata["t"].numpy())
    s = sampler.sample_temporal(seeds, times, [4, 3], "last", seed=0)
    eid = torch.from_numpy(s.eid)
    u, v = g.find_edges(eid)
    assert np.array_equal(u.numpy(), s.node[s.src]) and np.array_equal(v.numpy(), s.node[s.dst])
    etime, ntime = g.edata["timestamp"][eid].numpy(), g.ndata["t"].numpy()[s.node[s.src]]
    assert np.array_equal(np.maximum(etime, ntime), s.edge_time)
    assert np.all(s.edge_time <= s.node_time[s.dst]) and s.num_sampled_edges[0] > 0
