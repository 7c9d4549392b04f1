"""Shared by the benchmarks that time two loaders side by side in one process
(bench/link_pred/loader_only.py, bench/graphbolt/data_path.py): setup, the DGLGraph of a store, alternating passes,
and the trainer-wait timer every loader benchmark uses for bgl and its anchor alike; also the fields DGL's example
sampler names and the drop-in's sampler choice (bench/loader/node_classification.py, pipeline_modes.py, start.py)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

#: The fields DGL's example scripts name to their sampler (examples/pytorch/graphsage/node_classification.py):
#: both loaders then gather those rows into the batch.
DGL_EXAMPLE_PREFETCH = {"prefetch_node_feats": ["feat"], "prefetch_labels": ["label"]}
#: The drop-in's sampler as a command-line choice: ``example`` names those fields, ``plain`` none.
DROPIN_SAMPLERS = ("example", "plain")
DROPIN_SAMPLER_HELP = "DGL's example's sampler (feat and label named) or one naming no field"


def setup(workdir: str) -> Path:
    """One torch thread, numba's quiet thread layer, ``workdir`` created, bgl's bytecode written
    (:mod:`bench.common.bytecode`); prints the load average."""
    import torch

    from bench.common.bytecode import compile_checkout
    from bgl.loader.pipeline.chain import quiet_numba_threads

    compile_checkout()
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


PIPELINES = ("inline", "thread", "processes")


def bgl_loader_options(system: str) -> dict:
    """``bgl.DataLoader``'s extra arguments for a benchmark's system name: ``"bgl"`` its defaults,
    ``"bgl-<pipeline>"`` that pipeline (inline, thread, processes), a ``-qN`` suffix ``queue_size=N``
    (``"bgl-thread-q4"``).  ValueError naming a name it does not know."""
    parts = system.split("-")
    if parts[0] != "bgl" or len(parts) > 3 or (len(parts) > 1 and parts[1] not in PIPELINES) \
            or (len(parts) == 3 and not (parts[2].startswith("q") and parts[2][1:].isdigit())):
        raise ValueError(f"unknown bgl system {system!r}: bgl, bgl-<{'|'.join(PIPELINES)}>[-qN]")
    options = {"pipeline": parts[1]} if len(parts) > 1 else {}
    if len(parts) == 3:
        options["queue_size"] = int(parts[2][1:])
    return options


def batches_of(loader, count: int):
    """``count`` batches of ``loader``, running as many epochs as that takes (small graphs)."""
    left = count
    while left > 0:
        for batch in loader:
            yield batch
            left -= 1
            if left == 0:
                return


def alternate(runs: dict, batches: int, repeats: int, waits: Optional[dict] = None) -> dict:
    """``{name: [seconds]}``: ``runs`` maps a name to ``(loader, one_pass)``; passes alternate between
    the loaders (torch seeded per round) so load drifts hit each alike; the first round warms up.

    With ``waits`` (a dict), ``waits[name]`` gets each timed pass's trainer wait (seconds blocked in
    ``next()``, :class:`TrainerWait`'s timer, the same for every system): ``one_pass`` is handed the
    loader behind a :class:`TimedLoader`."""
    import torch

    times = {name: [] for name in runs}
    timers = {name: TrainerWait() for name in runs}
    for rep in range(repeats + 1):
        for name, (loader, one_pass) in runs.items():
            torch.manual_seed(rep)
            timer = timers[name]
            before = len(timer.wait_s)
            t = one_pass(loader if waits is None else TimedLoader(loader, timer), batches)
            if rep:
                times[name].append(t)
                if waits is not None:
                    waits.setdefault(name, []).append(sum(timer.wait_s[before:]))
    return times


def wait_column(waits: list, times: list, batches: int) -> str:
    """``"W ms/batch (S %)"``: the median pass's wait per batch and the waits' share of the passes' time."""
    import statistics

    return f"{1000 * statistics.median(waits) / batches:.2f} ms/batch ({100 * sum(waits) / sum(times):.0f} %)"


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

    def figures(self, epoch_times: list, skip: int = 1) -> dict:
        """``{"wait_share", "wait_ms"}`` over the epochs after the first ``skip`` (warm-up): the waits'
        share of ``epoch_times`` (each epoch's loop seconds) and the mean wait per batch in ms."""
        waited, times = sum(self.wait_s[skip:]), sum(epoch_times[skip:])
        return {"wait_share": waited / times if times > 0 else 0.0,
                "wait_ms": 1000 * waited / max(sum(self.batches[skip:]), 1)}


class TimedLoader:
    """``loader`` whose every ``iter()`` runs through ``wait.batches_of`` (one epoch each), so a
    benchmark's pass function times the trainer's wait without changing its loop."""

    def __init__(self, loader, wait: TrainerWait):
        self.loader, self.wait = loader, wait

    def __iter__(self):
        return self.wait.batches_of(self.loader)

    def __len__(self) -> int:
        return len(self.loader)
