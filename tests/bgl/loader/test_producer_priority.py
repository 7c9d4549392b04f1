"""The thread pipeline's producer runs below the trainer's CPU priority over a local graph, and nothing else does.

``bgl.threads.lower_thread_priority`` says why (the trainer's wait on a 2-core box); these tests
check that only the producer thread's nice value changes, that ``BGL_PRODUCER_NICE`` sets the step
(0: none) and graph servers keep the trainer's (``assemble_pipeline``), and that numba's worker
pool, when a producer's kernel would launch it, does not inherit the producer's priority.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

from bgl.loader.pipeline.assembly import assemble_pipeline
from bgl.loader.pipeline.background import background_items
from bgl.loader.stages.order import OrderStage
from bgl.loader.stages.protocol import Stage
from bgl.threads import PRODUCER_NICE, lower_thread_priority, producer_nice

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="nice is per thread on Linux only")


def own_nice() -> int:
    """The calling thread's nice value."""
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


def niceness_of_items(count: int, nice: int) -> list[int]:
    """The nice value of the thread that made each of ``count`` items, through ``background_items``."""
    return list(background_items(lambda: (own_nice() for _ in range(count)), queue_size=1, nice=nice))


@linux_only
def test_the_producer_runs_lower_and_the_trainer_keeps_its_priority():
    before = own_nice()
    if before + PRODUCER_NICE > 19:
        pytest.skip("this process already runs at the lowest priorities")
    # the first item is made in the trainer's thread, the rest in the producer's
    assert niceness_of_items(3, PRODUCER_NICE) == [before, before + PRODUCER_NICE, before + PRODUCER_NICE]
    assert niceness_of_items(2, 0) == [before, before]  # 0: the trainer's priority
    assert own_nice() == before


class NoStage(Stage):
    """A map stage that is never run: ``assemble_pipeline`` only places it."""

    def __init__(self, name: str, build_csr: bool = False):
        self.name, self.build_csr = name, build_csr


def assembled_nice(mode: str, servers: bool) -> int:
    order = OrderStage(ids=np.arange(4), batch_size=2)
    pipeline, _ = assemble_pipeline(mode, order, NoStage("sample"), NoStage("fetch"), NoStage("transfer"), None,
                                    None, servers=servers)
    return pipeline.producer_nice


def test_bgl_producer_nice_sets_the_step_for_a_local_graph_and_servers_keep_the_trainers(monkeypatch):
    monkeypatch.delenv("BGL_PRODUCER_NICE", raising=False)
    assert assembled_nice("thread", servers=False) == PRODUCER_NICE > 0
    assert assembled_nice("thread", servers=True) == 0
    assert assembled_nice("inline", servers=False) == 0
    monkeypatch.setenv("BGL_PRODUCER_NICE", "3")
    assert assembled_nice("thread", servers=False) == 3
    monkeypatch.setenv("BGL_PRODUCER_NICE", "0")
    assert assembled_nice("thread", servers=False) == 0


@pytest.mark.parametrize("text", ["ten", "-1", "2.5"])
def test_a_bad_bgl_producer_nice_is_a_clear_error(monkeypatch, text):
    monkeypatch.setenv("BGL_PRODUCER_NICE", text)
    with pytest.raises(ValueError, match=f"BGL_PRODUCER_NICE must be an integer >= 0, got '{text}'"):
        assembled_nice("thread", servers=False)


def test_producer_nice_defaults_to_the_documented_step(monkeypatch):
    monkeypatch.delenv("BGL_PRODUCER_NICE", raising=False)
    assert producer_nice() == PRODUCER_NICE > 0
    assert not lower_thread_priority(0)  # zero steps: nothing to do


@linux_only
def test_numbas_pool_keeps_the_trainers_priority_when_a_producer_kernel_launches_it():
    """In a fresh process (numba's pool not yet launched), the producer's items call a parallel kernel
    for the first time; afterwards every thread of the process but the finished producer runs at the
    trainer's priority.  Without ``launch_pools_here`` the pool's workers would be made by the
    producer and keep its nice value for the rest of the process.  (numba also starts a thread at a
    process's first compile or cache load; a loader pays that at construction, in the trainer's
    thread, as ``plain`` does here.)"""
    pytest.importorskip("numba")
    script = textwrap.dedent("""
        import os, threading
        import numpy as np
        import numba
        from numba.np.ufunc import parallel
        from bgl.loader.pipeline.background import background_items

        @numba.njit(parallel=True, cache=False)
        def total(a):
            s = 0.0
            for i in numba.prange(a.shape[0]):
                s += a[i]
            return s

        @numba.njit(cache=False)
        def plain(a):
            return a.sum()

        plain(np.ones(3))  # the process's first kernel: a loader loads its kernels at construction

        producer = []

        def items():
            yield 0.0  # the trainer's thread: no kernel yet
            producer.append(threading.get_native_id())
            for _ in range(2):
                yield total(np.ones(1000))

        assert not parallel._is_initialized, "numba's pool launched before the producer ran"
        assert list(background_items(items, queue_size=1, nice=10)) == [0.0, 1000.0, 1000.0]
        mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        nice = {}
        for t in os.listdir("/proc/self/task"):
            if int(t) in producer:  # joined, but its OS thread may not have gone yet
                continue
            try:
                nice[t] = os.getpriority(os.PRIO_PROCESS, int(t))
            except ProcessLookupError:  # a thread that ended meanwhile
                pass
        assert len(nice) > 1 and set(nice.values()) == {mine}, (mine, nice)
        print("ok")
    """)
    env = {**os.environ, "NUMBA_THREADING_LAYER": "workqueue", "NUMBA_NUM_THREADS": "2"}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-2000:]


@linux_only
def test_after_first_runs_in_the_producer_at_the_trainers_priority():
    """The next-epoch order starts off the trainer's way to its first batch, and at the trainer's
    priority (a thread it starts inherits it), before the producer lowers its own."""
    before = own_nice()
    if before + PRODUCER_NICE > 19:
        pytest.skip("this process already runs at the lowest priorities")
    seen = []

    def after_first():
        seen.append((threading.get_ident(), own_nice()))

    items = list(background_items(lambda: (i for i in range(4)), queue_size=1, after_first=after_first,
                                  nice=PRODUCER_NICE))
    assert items == [0, 1, 2, 3]
    assert len(seen) == 1 and seen[0][0] != threading.get_ident() and seen[0][1] == before


def test_an_after_first_that_fails_reaches_the_trainer_after_the_first_item():
    closed = []

    def made():
        try:
            yield from range(5)
        finally:
            closed.append(True)

    def after_first():
        raise RuntimeError("no next order")

    it = background_items(made, queue_size=1, after_first=after_first)
    assert next(it) == 0  # made in the trainer's thread, before the producer starts
    with pytest.raises(RuntimeError, match="no next order"):
        next(it)
    assert closed == [True]  # the producer closed the items it owned
