"""Core splitting between pipeline stages, on synthetic profiles (no timing assertions)."""
from __future__ import annotations

import itertools

import pytest

from bgl.loader.pipeline.resources import core_counts, resolve_stage_cores, split_cores


def brute_force_best(times: dict[str, float], num_cores: int) -> float:
    """The smallest achievable max(t_s / c_s) over every way of handing out the cores."""
    names = list(times)
    best = float("inf")
    for counts in itertools.product(range(1, num_cores + 1), repeat=len(names)):
        if sum(counts) <= num_cores:
            best = min(best, max(times[n] / c for n, c in zip(names, counts)))
    return best


@pytest.mark.parametrize("times,num_cores", [
    ({"sample": 3.0, "fetch": 1.0}, 4),
    ({"sample": 1.0, "fetch": 1.0}, 6),
    ({"sample": 5.0, "fetch": 2.0, "order": 0.1}, 8),
    ({"sample": 0.2, "fetch": 7.0}, 5),
    ({"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0}, 9),
])
def test_core_counts_match_brute_force_optimum(times, num_cores):
    counts = core_counts(times, num_cores)
    assert sum(counts.values()) == num_cores
    assert all(c >= 1 for c in counts.values())
    got = max(times[n] / counts[n] for n in times)
    assert got == pytest.approx(brute_force_best(times, num_cores))


def test_slower_stage_gets_more_cores():
    split = split_cores({"sample": 3.0, "fetch": 1.2}, cores=[0, 1, 2, 3])
    assert split.cores == {"sample": [0, 1, 2], "fetch": [3]}
    assert split.batches_per_second["sample"] == pytest.approx(1.0)
    assert split.bottleneck == "fetch"  # 1 / 1.2 batches/s on its one core


def test_split_cores_are_disjoint_and_cover_usable_cores():
    cores = [2, 3, 5, 7, 11, 13]
    split = split_cores({"sample": 2.0, "fetch": 1.0, "order": 0.5}, cores=cores, reserve=1)
    used = [c for cs in split.cores.values() for c in cs]
    assert sorted(used) == cores[:5]  # the last core is kept for the trainer
    assert len(set(used)) == len(used)
    assert "stage cores" in split.describe()


def test_reserve_is_dropped_when_stages_would_lose_their_own_core():
    split = split_cores({"sample": 1.0, "fetch": 1.0}, cores=[0, 1], reserve=1)
    assert sorted(c for cs in split.cores.values() for c in cs) == [0, 1]


def test_fewer_cores_than_stages_shares_by_load():
    split = split_cores({"sample": 4.0, "fetch": 3.0, "order": 1.0}, cores=[0, 1])
    assert split.cores["sample"] != split.cores["fetch"]  # the two heavy stages never share
    assert split.cores["order"] == split.cores["fetch"]   # the light one joins the less loaded core
    assert split.batches_per_second["fetch"] == pytest.approx(1 / 4.0)


def test_one_core_runs_everything_there():
    split = split_cores({"sample": 1.0, "fetch": 2.0}, cores=[0])
    assert split.cores == {"sample": [0], "fetch": [0]}


@pytest.mark.parametrize("bad", [{"sample": -1.0}, {"sample": float("nan")}, {}])
def test_split_rejects_bad_profiles(bad):
    with pytest.raises(ValueError):
        split_cores(bad, cores=[0, 1])


def test_override_with_lists_and_counts():
    split = resolve_stage_cores({"sample": [1], "fetch": [0]}, ["order", "sample", "fetch"], cores=[0, 1])
    assert split.cores == {"sample": [1], "fetch": [0]} and split.source == "override"
    split = resolve_stage_cores({"sample": 3, "fetch": 1}, ["sample", "fetch"], cores=[4, 5, 6, 7])
    assert split.cores == {"sample": [4, 5, 6], "fetch": [7]}


@pytest.mark.parametrize("override,match", [
    ({"samples": [0]}, "unknown stages"),
    ({"sample": [9]}, "9"),
    ({"sample": 0}, "count must be >= 1"),
    ({"sample": 2, "fetch": 1}, "only 2 available"),
    ({"sample": "zero"}, "core list or a count"),
])
def test_override_errors_name_the_problem(override, match):
    with pytest.raises(ValueError, match=match):
        resolve_stage_cores(override, ["sample", "fetch"], cores=[0, 1])
