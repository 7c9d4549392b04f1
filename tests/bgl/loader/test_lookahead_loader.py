"""The fetch stage reading sampled batches ahead for a lookahead cache, inline and in processes.

Checks: the stream protocol of a reading-ahead stage (order, exactly once, how far ahead,
empty epochs, abandoned epochs), DataLoader batches bitwise equal to no cache, fewer rows
from the source than BGL's FIFO, errors that end the epoch instead of hanging, and the
``cache*`` arguments (default policy, ``cache_lookahead``).
"""
from __future__ import annotations

import os
import resource
import time

import numpy as np
import pytest
import torch

import bgl
from bgl.cache.lookahead_feeder import DEFAULT_MAX_DEPTH, CacheSizedWindow, process_window
from bgl.errors import PipelineError
from bgl.loader.cache_choice import sized_window
from bgl.loader.stages.order import OrderStage
from bgl.loader.pipeline.chain import Pipeline
from bgl.loader.stages.specs import CacheSpec, SamplingSpec
from bgl.loader.stages.transfer import TransferStage


# -------------------------------------------------------------- stream protocol


@pytest.mark.parametrize("mode", ["inline", "processes"])
def test_a_reading_ahead_stage_sees_k_items_ahead_in_order_once(mode, stages_module, spawned_children):
    k, sizes = 2, [7, 0, 1, 5]
    with Pipeline(stages_module.Count(sizes), [stages_module.ReadAhead(k)], mode=mode, queue_size=2) as pipe:
        for epoch, n in enumerate(sizes):
            out = list(pipe.run_epoch(epoch))
            assert [item for item, _ in out] == [(epoch, i) for i in range(n)]
            # item i leaves once k more were read (or the epoch ended): the stage saw ahead
            assert [seen for _, seen in out] == [min(i + 1 + k, n) for i in range(n)]
        # an epoch abandoned while the stage holds items read ahead, then a whole one
        it = pipe.run_epoch(0)
        assert next(it)[0] == (0, 0)
        it.close()
        assert [item for item, _ in pipe.run_epoch(3)] == [(3, i) for i in range(5)]
    assert not spawned_children()


# ------------------------------------------------------------------ DataLoader

KW = dict(batch_size=40, shuffle=True, order="proximity")


def _run(store, mode, epochs=2, break_after=None, skip_epochs=0, **kw):
    """[(epoch batches: (input ids, output ids, features))], cache stats, cache policy, pending.

    ``skip_epochs`` epochs are skipped first, as abandoned epochs would be.
    """
    torch.manual_seed(5)
    ids = np.asarray(store.train_idx)
    if mode == "processes":
        cores = sorted(os.sched_getaffinity(0))
        kw["stage_cores"] = {"sample": [cores[0]], "fetch": [cores[-1]]}  # skip the profiling run
    with bgl.DataLoader(store, ids, bgl.NeighborSampler([5, 5]), pipeline=mode, **KW, **kw) as loader:
        if skip_epochs:
            loader.load_state_dict({**loader.state_dict(), "epoch": skip_epochs})
        if break_after is not None:
            for i, _ in enumerate(loader):
                if i + 1 == break_after:
                    break
        out = [[(inp.clone(), o.clone(), blocks[0].srcdata["feat"].clone()) for inp, o, blocks in loader]
               for _ in range(epochs)]
        cache = loader._fetch._cache if mode == "inline" else None
        pending = getattr(cache, "pending", None)
        return out, loader.cache_stats(), loader.cache_policy, pending


@pytest.fixture(scope="module")
def runs(random_store):
    """Loader runs shared by the tests below, computed on first use."""
    done = {}

    def get(name, mode, **kw):
        if name not in done:
            done[name] = _run(random_store, mode, **kw)
        return done[name]

    return get


def _check_epochs(store, epochs, reference):
    ids = np.sort(np.asarray(store.train_idx))
    assert len(epochs) == len(reference)
    for batches, ref in zip(epochs, reference):
        assert len(batches) == len(ref)
        for (inp, out, feat), (rinp, rout, rfeat) in zip(batches, ref):
            assert torch.equal(inp, rinp) and torch.equal(out, rout)
            assert torch.equal(feat, rfeat)  # bitwise the rows without a cache
            assert torch.equal(feat, torch.from_numpy(store.feat[inp.numpy()]))
        assert np.array_equal(np.sort(torch.cat([o for _, o, _ in batches]).numpy()), ids)


def test_lookahead_batches_equal_no_cache_bitwise_inline_and_processes(random_store, runs, spawned_children):
    none, _, none_policy, _ = runs("none", "inline", epochs=3)
    inline, inline_stats, policy, pending = runs("lookahead", "inline", cache=True)
    # processes: an epoch abandoned after 2 batches (the stage processes restart), then 2 whole ones
    procs, procs_stats, procs_policy, _ = runs("lookahead-processes", "processes", break_after=2,
                                               cache="lookahead")
    assert none_policy is None and policy == procs_policy == "lookahead"
    _check_epochs(random_store, inline, none[:2])
    _check_epochs(random_store, procs, none[1:])
    assert pending == 0
    assert inline_stats["hits"] > 0
    # the fetch process read the same batches ahead as the inline stage: the same rows moved
    # (its cache is new after the restart: compare with a new inline cache on the same epochs)
    later, later_stats, _, _ = runs("lookahead-later", "inline", skip_epochs=1, cache="lookahead")
    _check_epochs(random_store, later, none[1:])
    assert procs_stats == later_stats
    # and reading ahead matters: without it the same cache moves more rows
    _, no_ahead_stats, _, _ = runs("lookahead-0", "inline", cache="lookahead", cache_lookahead=0)
    assert inline_stats["bytes_from_source"] < no_ahead_stats["bytes_from_source"]
    assert not spawned_children()


def test_window_sized_to_the_cache_inline_and_processes(random_store, runs, spawned_children):
    """``cache_lookahead="auto"``: the same batches and rows moved in both modes (the fetch process
    applies the same window rule), and no more rows than 4 batches of lookahead."""
    none, _, _, _ = runs("none", "inline", epochs=3)
    inline, inline_stats, _, pending = runs("auto", "inline", cache="lookahead", cache_lookahead="auto")
    procs, procs_stats, _, _ = runs("auto-processes", "processes", cache="lookahead", cache_lookahead="auto")
    _check_epochs(random_store, inline, none[:2])
    _check_epochs(random_store, procs, none[:2])
    assert pending == 0 and procs_stats == inline_stats
    _, k4_stats, _, _ = runs("lookahead-4", "inline", cache="lookahead", cache_lookahead=4)
    assert inline_stats["requests"] == k4_stats["requests"]
    assert inline_stats["bytes_from_source"] <= k4_stats["bytes_from_source"]
    assert not spawned_children()


def test_lookahead_moves_no_more_rows_than_fifo_with_proximity_order(random_store, runs):
    _, fifo, fifo_policy, _ = runs("fifo", "inline", cache="fifo", cache_ratio=0.1)
    _, ahead, _, _ = runs("lookahead", "inline", cache=True)
    assert fifo_policy == "fifo"
    assert ahead["requests"] == fifo["requests"] > 0
    assert ahead["bytes_from_source"] <= fifo["bytes_from_source"]


def test_inline_break_mid_epoch_forgets_what_was_read_ahead(random_store, runs):
    none, _, _, _ = runs("none", "inline", epochs=3)
    # the abandoned epoch drew the first epoch seed: the whole epochs are the reference's later ones
    out, stats, _, pending = runs("lookahead-break", "inline", break_after=2, cache="lookahead")
    _check_epochs(random_store, out, none[1:])
    assert pending == 0 and stats["requests"] > 0


def _failing_pipeline(store, stages_module, mode, fetch_fails: bool):
    spec = SamplingSpec("store", path=str(store.path))
    cache = CacheSpec(policy="lookahead", capacity=50, num_nodes=store.num_nodes, dim=store.feat_dim)
    order = OrderStage(ids=np.asarray(store.train_idx), batch_size=32)
    if fetch_fails:
        sample = stages_module.SampleStage(source=spec, fanouts=(5, 5))
        fetch = stages_module.FailingFetchStage(source=spec, cache=cache, lookahead=3, fail_after=4)
    else:
        sample = stages_module.FailingSampleStage(source=spec, fanouts=(5, 5), fail_after=4)
        fetch = stages_module.FailingFetchStage(source=spec, cache=cache, lookahead=3, fail_after=10**9)
    return Pipeline(order, [sample, fetch], trainer_stages=[TransferStage()], mode=mode, queue_size=2)


# (a sampler failing under a reading-ahead fetch process is the same stop path as the
# abandoned epoch of test_a_reading_ahead_stage_sees_k_items_ahead_in_order_once)
@pytest.mark.parametrize("mode,fetch_fails", [("inline", True), ("inline", False), ("processes", True)])
def test_a_failure_while_reading_ahead_ends_the_epoch_naming_the_stage(mode, fetch_fails, random_store, stages_module,
                                                                       spawned_children):
    pipe = _failing_pipeline(random_store, stages_module, mode, fetch_fails)
    got = 0
    start = time.monotonic()
    try:
        with pytest.raises(PipelineError) as info:
            for _ in pipe.run_epoch((0, 1)):
                got += 1
    finally:
        pipe.close()
    assert time.monotonic() - start < 60
    stage = "fetch" if fetch_fails else "sample"
    assert f"stage {stage!r}" in str(info.value) and "injected" in str(info.value)
    assert got <= 4
    if mode == "inline":
        assert pipe.stages[1]._cache.pending == 0  # announced batches were forgotten
    assert not spawned_children()


# ------------------------------------------------------------------- arguments


@pytest.mark.parametrize("kwargs,policy", [
    (dict(), None),
    (dict(cache=False), None),
    (dict(cache=True), "lookahead"),
    (dict(cache=0.2), "lookahead"),
    (dict(cache_ratio=0.2), "lookahead"),
    (dict(cache_bytes=1000), "lookahead"),
    (dict(cache="fifo", cache_ratio=0.2), "fifo"),
    (dict(cache="none"), "none"),
])
def test_a_cache_size_without_a_policy_means_lookahead(random_store, kwargs, policy):
    loader = bgl.DataLoader(random_store, np.arange(10), bgl.NeighborSampler([2]), **kwargs)
    assert loader.cache_policy == policy
    spec = loader._fetch.cache
    assert (spec.policy if spec is not None else None) == policy
    if kwargs.get("cache") == 0.2 or "cache_ratio" in kwargs:
        assert spec.capacity == int(0.2 * random_store.num_nodes)
    if policy == "lookahead":
        assert spec.degrees is not None  # the fill ranks by in-degree
        assert loader._fetch.lookahead == CacheSizedWindow()  # the window sized to the cache


def test_the_default_window_is_bounded_in_a_stage_process():
    """``pipeline="processes"``: each batch the fetch process holds keeps its shared-memory segments
    open (a file descriptor each), so the window there takes at most half the open-file limit."""
    assert sized_window("inline") == sized_window("thread") == CacheSizedWindow(DEFAULT_MAX_DEPTH, 64 << 20)
    assert process_window(open_files=1024) == CacheSizedWindow(64, 64 << 20)
    assert process_window(open_files=20000).max_depth == DEFAULT_MAX_DEPTH
    assert process_window(open_files=4).max_depth == 1
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    assert sized_window("processes") == process_window(open_files=soft)


def test_cache_lookahead_sets_the_depth_and_is_checked(random_store):
    make = lambda **kw: bgl.DataLoader(random_store, np.arange(10), bgl.NeighborSampler([2]), **kw)  # noqa: E731
    assert make(cache=True, cache_lookahead=9)._fetch.lookahead == 9
    assert make(cache=True, cache_lookahead="auto")._fetch.lookahead == CacheSizedWindow()
    # the default is that window, whatever the queue size (it used to be the queue size)
    assert make(cache=True, queue_size=2)._fetch.lookahead == CacheSizedWindow()
    assert make(cache=True, cache_lookahead=0)._fetch.lookahead == 0
    with pytest.raises(ValueError, match="cache_lookahead applies to the lookahead cache; .* fifo"):
        make(cache="fifo", cache_lookahead=2)
    with pytest.raises(ValueError, match="cache_lookahead must be an int >= 0"):
        make(cache=True, cache_lookahead=-1)
    with pytest.raises(ValueError, match="or 'auto', got 'far'"):
        make(cache=True, cache_lookahead="far")
    with pytest.raises(ValueError, match="already a size"):
        make(cache=0.1, cache_ratio=0.2)
    with pytest.raises(TypeError, match="policy name, True, a fraction"):
        make(cache=3)
