"""The launcher's warm-up also runs LABOR and weighted samples, skipping an edge array that is not weights."""
from __future__ import annotations

import threading
import time

import numpy as np

from bgl.launch.run_keys import warm_up_servers
from bgl.sampler.server import GraphServer
from bgl.store import write_store


def test_warm_up_samples_by_every_weight_array_and_skips_bad_ones(tmp_path):
    rng = np.random.default_rng(0)
    indptr = np.arange(0, 101 * 4, 4)
    indices = rng.integers(0, 100, int(indptr[-1]))
    store = write_store(tmp_path / "s", indptr, indices, edata={
        "w": rng.random(indices.size).astype(np.float32),
        "signed": rng.standard_normal(indices.size),  # an edge feature, not weights
        "f": rng.random((indices.size, 2))})
    server = GraphServer(store, threads=1)
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while server.address is None and time.monotonic() < deadline:
            time.sleep(0.01)
        before = server.requests
        warm_up_servers([server.address], timeout=120.0)
        # INFO, uniform (2 layers), LABOR (1), weighted by "w" (1) and the refused "signed" (1)
        assert server.requests - before == 6
    finally:
        server.stop()
        thread.join(timeout=10)


def test_warm_up_seeds_stay_inside_graphs_past_2_to_the_24_nodes():
    """R-MAT 25 (33,554,432 nodes): a float32 linspace turned the last id into 33,554,432."""
    from bgl.launch.run_keys import spread_ids

    for n, k in ((2 ** 25, 32), (2 ** 24 + 3, 8), (10, 10), (1, 1), (5, 32)):
        ids = spread_ids(n, min(n, k))
        assert int(ids.min()) == 0 and int(ids.max()) == n - 1 and ids.unique().numel() == ids.numel()
        assert ids.dtype.is_floating_point is False and ids.numel() == min(n, k)
