"""Stage processes do not leak: RSS stays flat over many small epochs."""
from __future__ import annotations

import numpy as np
import psutil
import pytest

import bgl


EPOCHS = 50
WARMUP_EPOCHS = 5
# Allocator noise and lazily touched store pages stay far below this.  A small
# per-batch leak might not reach it in 45 epochs, so the test also checks that
# RSS does not keep rising epoch after epoch.
GROWTH_BOUND = 48 << 20


@pytest.mark.extended
def test_stage_rss_stays_bounded_over_50_epochs(random_store):
    loader = bgl.DataLoader(random_store, np.array(random_store.train_idx), bgl.NeighborSampler([5, 5]),
                            batch_size=16, shuffle=True, pipeline="processes", cache="fifo",
                            stage_cores={"sample": 1, "fetch": 1})
    rss: dict[str, list[int]] = {}
    try:
        batches = 0
        for epoch in range(EPOCHS):
            for input_nodes, output_nodes, blocks in loader:
                assert blocks[0].srcdata["feat"].shape[0] == input_nodes.shape[0]
                batches += 1
            pids = loader.stage_pids()
            if epoch == 0:
                first_pids = pids
            assert pids == first_pids  # the same processes serve every epoch
            for name, pid in pids.items():
                rss.setdefault(name, []).append(psutil.Process(pid).memory_info().rss)
        assert batches == EPOCHS * len(loader)
    finally:
        loader.close()
    for name, series in rss.items():
        base, tail = series[WARMUP_EPOCHS], series[WARMUP_EPOCHS:]
        growth = max(tail) - base
        assert growth < GROWTH_BOUND, f"stage {name}: RSS grew {growth >> 20} MiB ({[s >> 20 for s in series]})"
        # A leak grows every epoch; noise does not: the last 10 epochs may not all exceed the middle.
        assert min(series[-10:]) <= max(series[WARMUP_EPOCHS:WARMUP_EPOCHS + 20]) + (4 << 20), \
            f"stage {name}: RSS keeps rising ({[s >> 20 for s in series]})"


@pytest.mark.parametrize("pipeline", ["inline", "thread"])
def test_a_dropped_batch_is_freed_while_the_epoch_runs(random_store, pipeline):
    """No stage generator keeps the batch it yielded: once the trainer drops a batch, its
    feature rows are freed before the next one is gathered (a suspended ``for item in items:
    yield stage(item)`` frame held one batch of rows more than DGL's loader does)."""
    import gc
    import weakref

    loader = bgl.DataLoader(random_store, np.array(random_store.train_idx), bgl.NeighborSampler([5, 5]),
                            batch_size=16, pipeline=pipeline)
    it = iter(loader)
    try:
        for _ in range(2):
            _, _, blocks = next(it)
            feat = weakref.ref(blocks[0].srcdata["feat"])
            del blocks
            gc.collect()
            assert feat() is None, f"a dropped batch's features are still referenced ({pipeline} pipeline)"
    finally:
        it.close()
        loader.close()
