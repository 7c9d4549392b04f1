"""Weighted temporal sampling (GraphBolt's ``prob_name=``, PyG's ``weight_attr`` with ``time_attr``): among a
row's eligible in-edges, by weight; never a future edge, never a zero weight."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from bgl.sampler import LocalSampler
from bgl.sampler.temporal.sampling import TemporalLayer
from bgl.store import write_store


def one_row_store(path, sorted_times: bool):
    """Node 0 with 40 in-edges (sources 1..40): times 0..39 (shuffled unless ``sorted_times``), weights
    1..4 with every fifth edge 0."""
    rng = np.random.default_rng(3)
    n, d = 41, 40
    indptr = np.zeros(n + 1, np.int64)
    indptr[1:] = d
    times = np.arange(d, dtype=np.int64)
    if not sorted_times:
        rng.shuffle(times)
    weights = (np.arange(d) % 4 + 1).astype(np.float32)
    weights[::5] = 0
    return write_store(path, indptr, np.arange(1, d + 1, dtype=np.int32), edata={"ts": times, "w": weights})


@pytest.mark.parametrize("sorted_times", [False, True])
def test_one_draw_follows_the_eligible_weights(tmp_path, sorted_times):
    """Fanout 1 at t = 24 over 4,000 streams: chi-square of the counts against the weights of the 25
    eligible edges (zero-weight and future edges never drawn)."""
    store = one_row_store(tmp_path / "s", sorted_times)
    layer = TemporalLayer(store, parallel=False)
    times, weights = np.asarray(store.edge_array("ts")), np.asarray(store.edge_array("w"), np.float64)
    draws = 4000
    got = np.zeros(40, np.int64)
    for seed in range(draws):
        counts, _, eids, etime = layer(np.array([0]), np.array([24]), 1, "uniform", seed, time_name="ts",
                                       prob_name="w")
        assert counts.tolist() == [1] and etime[0] <= 24
        got[eids[0]] += 1
    eligible = (times <= 24) & (weights > 0)
    assert got[~eligible].sum() == 0, "a future or zero-weight edge"
    expected = weights[eligible] / weights[eligible].sum() * draws
    assert stats.chisquare(got[eligible], expected).pvalue > 1e-3


def test_many_draws_take_only_eligible_positive_edges_and_all_of_them_when_few(tmp_path):
    store = one_row_store(tmp_path / "s", False)
    layer = TemporalLayer(store)
    times, weights = np.asarray(store.edge_array("ts")), np.asarray(store.edge_array("w"))
    dst = np.zeros(6, np.int64)
    t = np.array([-1, 0, 3, 10, 24, 39])
    counts, _, eids, etime = layer(dst, t, 5, "uniform", 7, time_name="ts", prob_name="w")
    positive = [int(((times <= x) & (weights > 0)).sum()) for x in t]
    assert counts.tolist() == [min(5, p) for p in positive]
    edge_dst = np.repeat(np.arange(6), counts)
    assert (times[eids] <= t[edge_dst]).all() and (weights[eids] > 0).all()
    for i in range(6):  # no edge twice within a row
        row = eids[edge_dst == i]
        assert np.unique(row).shape[0] == row.shape[0]
    counts, _, eids, _ = layer(np.array([0]), np.array([3]), -1, "uniform", 7, time_name="ts", prob_name="w")
    assert sorted(eids.tolist()) == sorted(np.flatnonzero((times <= 3) & (weights > 0)).tolist())


def test_a_row_whose_every_edge_is_eligible_draws_the_non_temporal_weighted_sample(tmp_path):
    store = one_row_store(tmp_path / "s", False)
    layer = TemporalLayer(store)
    for seed in range(20):
        _, _, eids, _ = layer(np.array([0]), np.array([100]), 6, "uniform", seed, time_name="ts", prob_name="w")
        _, _, plain = LocalSampler(store).sample_layer(np.array([0]), 6, False, seed, prob="w")[:3]
        assert np.array_equal(eids, plain), seed


def test_weights_with_last_or_bad_weights_are_one_line(tmp_path):
    store = one_row_store(tmp_path / "s", False)
    layer = TemporalLayer(store)
    with pytest.raises(ValueError, match=r"prob_name='w' weighs a uniform draw; strategy='last' .* use "
                                         r"strategy='uniform' or drop the weights"):
        layer(np.array([0]), np.array([5]), 2, "last", 0, time_name="ts", prob_name="w")
    with pytest.raises(ValueError, match=r"has no edge data 'nope'; it has \['ts', 'w'\]"):
        layer(np.array([0]), np.array([5]), 2, "uniform", 0, time_name="ts", prob_name="nope")


@pytest.mark.parametrize("names", [("ts", None, None), ("ts", "nt", None), (None, "nt", None), ("ts", None, "w"),
                                   ("ts", "nt", "w"), (None, "nt", "w")])
def test_the_name_frame_carries_edge_times_node_times_and_weights(names):
    from bgl.sampler.temporal.frames import parse_temporal_request, temporal_request

    frames = temporal_request(3, np.array([1, 2]), np.array([5, 6]), 4, "uniform", 9, *names)
    req = parse_temporal_request(frames)
    assert (req.time_name, req.node_time_name, req.prob_name) == names


def test_a_name_frame_with_more_than_three_names_is_refused():
    from bgl.errors import ProtocolError
    from bgl.sampler.temporal.frames import parse_temporal_request, temporal_request

    frames = temporal_request(3, np.array([1]), np.array([5]), 4, "uniform", 9, "ts")
    frames[3] = b"ts\0nt\0w\0x"
    with pytest.raises(ProtocolError, match=r"bad time array name: 4 NUL-separated names, at most 3"):
        parse_temporal_request(frames)
