"""``loader.stats()``: the trainer's time blocked in ``next()``, per epoch (bgl/loader/trainer_wait.py)."""
from __future__ import annotations

import os
import time

import numpy as np
import pytest

import bgl
from bgl.loader.stages.map import SampleStage

SAMPLE_S = 0.02  # a slowed sampler: what one batch's data path costs in these tests
STEP_S = 0.04    # a slow model step, twice the data path


@pytest.fixture
def slow_sampler(monkeypatch):
    """Every batch's sampling takes at least SAMPLE_S more (inline: in the trainer's thread)."""
    real = SampleStage.__call__

    def slow(self, mb):
        time.sleep(SAMPLE_S)
        return real(self, mb)

    monkeypatch.setattr(SampleStage, "__call__", slow)


def loader_over(store, **kw):
    ids = np.asarray(store.train_idx)[:160]
    return bgl.DataLoader(store, ids, bgl.NeighborSampler([3, 3]), batch_size=32, shuffle=True, **kw)


def timed_epoch(loader, step_s: float = 0.0) -> tuple[float, int]:
    """Run one epoch, sleeping ``step_s`` a batch; the test's own sum of the time spent in next()."""
    it = iter(loader)
    mine, n = 0.0, 0
    while True:
        start = time.perf_counter()
        try:
            next(it)
        except StopIteration:
            mine += time.perf_counter() - start
            return mine, n
        mine += time.perf_counter() - start
        n += 1
        time.sleep(step_s)


def test_before_any_epoch_the_figures_are_zero(random_store):
    with loader_over(random_store) as loader:
        stats = loader.stats()
        assert stats["pipeline"] == loader.pipeline_mode
    assert stats["batches"] == 0 and stats["wait_s"] == 0.0 and not stats["running"]


@pytest.mark.parametrize("mode", ["inline", "thread"])
def test_the_figures_add_up_and_match_a_timer_around_next(random_store, mode):
    with loader_over(random_store, pipeline=mode) as loader:
        start = time.perf_counter()
        mine, n = timed_epoch(loader, step_s=0.002)
        wall = time.perf_counter() - start
        stats = loader.stats()
    assert n == len(loader) == stats["batches"] == 5
    assert not stats["running"]
    # the loader's timer sits inside the test's: never more, and only call overhead less
    assert stats["wait_s"] <= mine <= stats["wait_s"] + 0.002 * (n + 1) + 0.05
    assert stats["wait_mean_s"] == pytest.approx(stats["wait_s"] / n)
    assert 0 < stats["wait_max_s"] <= stats["wait_s"]
    assert stats["epoch_s"] <= wall
    assert stats["wait_share"] == pytest.approx(stats["wait_s"] / stats["epoch_s"])


def test_inline_the_wait_is_the_data_path(random_store, slow_sampler):
    with loader_over(random_store, pipeline="inline") as loader:
        timed_epoch(loader, step_s=0.0)
        stats = loader.stats()
    assert stats["wait_mean_s"] >= SAMPLE_S
    assert stats["wait_share"] > 0.5  # no model step: the loader is all there is


def test_a_slow_model_step_hides_a_thread_pipelines_data_path(random_store, slow_sampler):
    with loader_over(random_store, pipeline="thread") as loader:
        timed_epoch(loader, step_s=STEP_S)
        stats = loader.stats()
    assert stats["batches"] == 5
    # inline, each batch would wait >= SAMPLE_S (the test above): 1/3 of the epoch at least.
    # Overlapped, only the first batch waits for its sample; the rest are ready when asked for.
    assert stats["wait_share"] < 0.25, stats
    assert stats["wait_s"] < 2 * SAMPLE_S + 0.03, stats


def test_each_epoch_starts_its_own_figures(random_store):
    with loader_over(random_store) as loader:
        timed_epoch(loader)
        first = loader.stats()
        it = iter(loader)
        next(it)
        running = loader.stats()
        it.close()
        closed = loader.stats()
    assert first["epoch"] == 0 and running["epoch"] == 1
    assert running["batches"] == 1 and running["running"]
    assert closed["batches"] == 1 and not closed["running"]


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="stage processes pin cores (Linux)")
def test_processes_count_the_same_way(spawned_children, random_store):
    cores = sorted(os.sched_getaffinity(0))
    with loader_over(random_store, pipeline="processes",
                     stage_cores={"sample": [cores[0]], "fetch": [cores[-1]]}) as loader:
        mine, n = timed_epoch(loader)
        stats = loader.stats()
    assert stats["batches"] == n == len(loader)
    assert stats["wait_s"] <= mine and stats["pipeline"] == "processes"

