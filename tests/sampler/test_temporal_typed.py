"""Temporal sampling of a typed store: per relation fanouts, no edge newer than its destination's time."""
from __future__ import annotations

import numpy as np
import pytest

from bgl.sampler.temporal.typed import TypedTemporalLayer
from bgl.sampler.typed.sampling import sample_typed_store

from .conftest import with_edge_arrays


@pytest.fixture(scope="module")
def timed_hetero(hetero_store, tmp_path_factory):
    """The shared typed store (papers, authors, venues; four relations) with int64 edge times ``ts``."""
    rng = np.random.default_rng(4)
    return with_edge_arrays(hetero_store, tmp_path_factory.mktemp("timed-hetero") / "store",
                            {"ts": rng.integers(0, 1000, hetero_store.num_edges).astype(np.int64)})


def brute(store, dst, t, rel, ts):
    """CSC positions of ``dst``'s in-edges of relation ``rel`` with time <= ``t``."""
    ip, et = np.asarray(store.indptr), np.asarray(store.etype)
    pos = np.arange(ip[dst], ip[dst + 1])
    return pos[(et[pos] == rel) & (ts[pos] <= t)]


@pytest.mark.parametrize("strategy", ["uniform", "last"])
@pytest.mark.parametrize("fanouts", [(2, 3, 1, 2), (-1, 1, 0, 4)])
def test_each_relation_draws_among_its_eligible_edges(timed_hetero, strategy, fanouts):
    store = timed_hetero
    ts = np.asarray(store.edge_array("ts"))
    rng = np.random.default_rng(9)
    dst = rng.integers(0, store.num_nodes, 200)
    times = rng.integers(0, 1000, 200)
    layer = TypedTemporalLayer(store)
    counts, nbrs, eids, etime, etypes = layer(dst, times, np.array(fanouts), strategy, seed=5, time_name="ts")
    assert counts.sum() == eids.shape[0] == nbrs.shape[0] == etypes.shape[0]
    assert np.array_equal(nbrs, np.asarray(store.indices)[eids]) and np.array_equal(etime, ts[eids])
    assert np.array_equal(etypes, np.asarray(store.etype)[eids])
    start = 0
    for i, (v, t) in enumerate(zip(dst, times)):
        mine, mine_rel = eids[start:start + counts[i]], etypes[start:start + counts[i]]
        start += counts[i]
        assert (np.diff(mine_rel) >= 0).all(), "a row's edges are grouped by relation, ascending"
        for r, f in enumerate(fanouts):
            picked, eligible = mine[mine_rel == r], brute(store, v, t, r, ts)
            want = eligible.shape[0] if f < 0 else min(f, eligible.shape[0])
            assert picked.shape[0] == want and np.isin(picked, eligible).all()
            if strategy == "last" and want:
                assert np.array_equal(np.sort(ts[picked]), np.sort(ts[eligible])[-want:])


def test_with_every_edge_eligible_a_layer_is_the_typed_samplers(timed_hetero):
    store = timed_hetero
    dst = np.arange(0, store.num_nodes, 3)
    fanouts = np.array([2, 3, 1, 2])
    layer = TypedTemporalLayer(store)
    counts, _, eids, _, etypes = layer(dst, np.full(dst.shape[0], 10**9), fanouts, "uniform", seed=11,
                                       time_name="ts")
    ref_counts, _, ref_eids, ref_etypes = sample_typed_store(store, np.asarray(store.indptr), dst, fanouts, False, 11)
    assert np.array_equal(counts, ref_counts) and np.array_equal(etypes, ref_etypes)
    assert np.array_equal(eids, ref_eids)


def test_node_times_keep_future_sources_out(timed_hetero):
    store = timed_hetero
    rng = np.random.default_rng(2)
    node_time = rng.integers(0, 1000, store.num_nodes)
    dst = rng.integers(0, store.num_nodes, 150)
    times = rng.integers(0, 1000, 150)
    layer = TypedTemporalLayer(store, node_time=node_time)
    counts, nbrs, eids, etime, _ = layer(dst, times, np.array([-1, -1, -1, -1]), "uniform", seed=1, time_name="ts")
    ts = np.asarray(store.edge_array("ts"))
    assert np.array_equal(etime, np.maximum(ts[eids], node_time[nbrs]))
    assert (etime <= np.repeat(times, counts)).all()


def test_bad_fanouts_and_names_are_one_line(timed_hetero):
    layer = TypedTemporalLayer(timed_hetero)
    with pytest.raises(ValueError, match="3 fanouts for a graph of 4 relations"):
        layer(np.array([0]), np.array([5]), np.array([1, 1, 1]), "uniform", 0, time_name="ts")
    with pytest.raises(ValueError, match="nope"):
        layer(np.array([0]), np.array([5]), np.array([1, 1, 1, 1]), "uniform", 0, time_name="nope")
    with pytest.raises(TypeError, match="seed times must be integers"):
        layer(np.array([0]), np.array([0.5]), np.array([1, 1, 1, 1]), "uniform", 0, time_name="ts")


def test_typed_temporal_requests_on_the_wire(timed_hetero):
    from bgl.errors import ProtocolError
    from bgl.sampler.temporal.frames import layer_for, parse_temporal_request, serve, temporal_request

    typed = layer_for(timed_hetero)
    seeds, times = np.array([1, 5, 9]), np.array([100, 500, 900])
    frames = temporal_request(3, seeds, times, np.array([2, 3, 1, 2]), "last", 5, "ts")
    req = parse_temporal_request(frames)
    assert req.fanouts.tolist() == [2, 3, 1, 2] and req.strategy == "last"
    reply_counts, *_ = typed(seeds, times, np.array([2, 3, 1, 2]), "last", 5, time_name="ts")
    assert len(serve(typed, frames)) > 3 and reply_counts.sum() > 0
    with pytest.raises(ProtocolError, match="a typed store takes relation fanouts"):
        serve(typed, temporal_request(3, seeds, times, 2, "last", 5, "ts"))
    with pytest.raises(ProtocolError, match="fanouts frame of 5 bytes"):
        parse_temporal_request(frames[:4] + [b"12345"])
