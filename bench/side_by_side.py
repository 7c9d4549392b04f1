"""Shared by the benchmarks that time two loaders side by side in one process
(bench/link_pred_loader.py, bench/graphbolt.py): setup, the DGLGraph of a store, alternating passes."""
from __future__ import annotations

import os
from pathlib import Path


def setup(workdir: str) -> Path:
    """One torch thread, numba's quiet thread layer, ``workdir`` created; prints the load average."""
    import torch

    from bgl.loader.pipeline.chain import quiet_numba_threads

    quiet_numba_threads()
    torch.set_num_threads(1)
    path = Path(workdir)
    path.mkdir(parents=True, exist_ok=True)
    print(f"load average at start: {open('/proc/loadavg').read().strip()} ({os.cpu_count()} cores)", flush=True)
    return path


def dgl_graph(store, labels: int = 0):
    """A DGLGraph of the store's edges (edge id = CSC position) with ``feat``; with ``labels > 0`` also
    ``label``: the store's, or seeded synthetic ones in ``[0, labels)`` when it has none."""
    import dgl
    import numpy as np
    import torch

    n = store.num_nodes
    dst = torch.from_numpy(np.repeat(np.arange(n), np.diff(np.asarray(store.indptr))))
    g = dgl.graph((torch.from_numpy(np.asarray(store.indices, dtype=np.int64)), dst), num_nodes=n)
    g.ndata["feat"] = torch.from_numpy(np.array(store.feat))
    if labels:
        own = store.label
        g.ndata["label"] = (torch.from_numpy(np.array(own, dtype=np.int64)) if own is not None
                            else torch.randint(0, labels, (n,), generator=torch.Generator().manual_seed(0)))
    return g


def batches_of(loader, count: int):
    """``count`` batches of ``loader``, running as many epochs as that takes (small graphs)."""
    left = count
    while left > 0:
        for batch in loader:
            yield batch
            left -= 1
            if left == 0:
                return


def alternate(runs: dict, batches: int, repeats: int) -> dict:
    """``{name: [seconds]}``: ``runs`` maps a name to ``(loader, one_pass)``; passes alternate between
    the loaders (torch seeded per round) so load drifts hit each alike; the first round warms up."""
    import torch

    times = {name: [] for name in runs}
    for rep in range(repeats + 1):
        for name, (loader, one_pass) in runs.items():
            torch.manual_seed(rep)
            t = one_pass(loader, batches)
            if rep:
                times[name].append(t)
    return times


def load_average_at_end() -> None:
    print(f"load average at end: {open('/proc/loadavg').read().strip()}", flush=True)


class TrainerWait:
    """The time a training loop is blocked in ``next()`` on a loader's iterator, the same timer for
    every system (bgl's ``loader.stats()`` counts the same way, inside the loader).

    ``for batch in wait.batches(loader):`` runs one epoch; ``wait_s`` then holds each epoch's total
    and ``batches`` each epoch's count (the ``next()`` that ends an epoch counts as a wait too).
    """

    def __init__(self):
        self.wait_s: list[float] = []
        self.batches: list[int] = []

    def batches_of(self, loader, limit: int = 0):
        """Yield ``loader``'s batches (at most ``limit`` when > 0), timing each ``next()``."""
        import time

        it = iter(loader)
        waited, n = 0.0, 0
        try:
            while not limit or n < limit:
                start = time.perf_counter()
                try:
                    batch = next(it)
                except StopIteration:
                    waited += time.perf_counter() - start
                    break
                waited += time.perf_counter() - start
                n += 1
                yield batch
        finally:
            self.wait_s.append(waited)
            self.batches.append(n)
