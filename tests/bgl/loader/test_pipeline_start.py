"""``pipeline="processes"`` starts its stage processes at construction, in the background: they run before the
first ``iter()``, the batches are unchanged (also after ``load_state_dict``), and ``close()`` right after
construction leaves no process behind."""
from __future__ import annotations

import time

import numpy as np
import pytest
import torch

import bgl

CORES = {"sample": [0], "fetch": [0]}


def _loader(store, **kw):
    return bgl.DataLoader(store, torch.arange(200), bgl.NeighborSampler([3, 3]), batch_size=32, shuffle=True, **kw)


def _seeds(loader):
    return [b[1].numpy().copy() for b in loader]


def _wait(predicate, seconds=60.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_stages_run_before_the_first_iter_and_batches_are_unchanged(random_store, spawned_children):
    torch.manual_seed(5)
    expected = _seeds(_loader(random_store, pipeline="inline"))
    torch.manual_seed(5)
    loader = _loader(random_store, pipeline="processes", stage_cores=CORES)
    try:
        # No iter() yet: the order, sample and fetch processes are already up.
        assert _wait(lambda: len(loader.stage_pids()) == 3), "stage processes did not start at construction"
        got = _seeds(loader)
    finally:
        loader.close()
    assert [g.tolist() for g in got] == [e.tolist() for e in expected]
    assert _wait(lambda: not spawned_children())


def test_load_state_dict_after_construction_resumes_on_the_started_stages(random_store, spawned_children):
    torch.manual_seed(6)
    first = _loader(random_store, pipeline="inline")
    it = iter(first)
    head = [next(it)[1].numpy().copy() for _ in range(3)]
    state = first.state_dict()
    rest_inline = [b[1].numpy().copy() for b in it]
    resumed = _loader(random_store, pipeline="processes", stage_cores=CORES)
    try:
        assert _wait(lambda: len(resumed.stage_pids()) == 3)
        resumed.load_state_dict(state)
        rest = _seeds(resumed)
    finally:
        resumed.close()
    assert [x.tolist() for x in rest] == [x.tolist() for x in rest_inline]
    assert np.concatenate(head + rest).shape[0] == 200
    assert _wait(lambda: not spawned_children())


@pytest.mark.parametrize("use", ["close", "gc"])
def test_a_loader_closed_or_dropped_while_its_stages_start_leaves_none(random_store, spawned_children, use):
    loader = _loader(random_store, pipeline="processes", stage_cores=CORES)
    if use == "close":
        loader.close()
    else:
        del loader
        import gc

        # The starting thread holds the pipeline until the stages are up; then the pipeline's finalizer stops them.
        _wait(lambda: gc.collect() is not None and not [t for t in __import__("threading").enumerate()
                                                         if t.name == "bgl-pipeline-start"])
        gc.collect()
    assert _wait(lambda: not spawned_children()), f"stage processes left: {spawned_children()}"
