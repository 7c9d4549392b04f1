"""bgl.loader.pipeline.chain's ``thread`` mode: same items as inline, bounded read-ahead, clean stops."""
from __future__ import annotations

import sys
import threading
import time

import numpy as np
import pytest
import torch

from bgl.errors import PipelineError
from bgl.loader.stages.order import OrderStage
from bgl.loader.loader_options import ONE_AHEAD_BYTES
from bgl.loader.pipeline.chain import Pipeline
from bgl.loader.stages.protocol import SourceStage, Stage
from bgl.loader.stages.specs import SamplingSpec
from bgl.loader.stages.map import FetchStage, SampleStage
from bgl.loader.stages.transfer import TransferStage


def real_pipeline(store, mode, sample_stage=None):
    spec = SamplingSpec("store", path=str(store.path))
    order = OrderStage(ids=np.asarray(store.train_idx), batch_size=32, shuffle=True)
    sample = sample_stage(spec) if sample_stage else SampleStage(source=spec, fanouts=(5, 5))
    return Pipeline(order, [sample, FetchStage(source=spec)], trainer_stages=[TransferStage()],
                    mode=mode, queue_size=2)


def producer_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("bgl-") and t.is_alive()]


class Counting(SourceStage):
    """Yields ``n`` numbers, noting which thread produced each."""

    name = "counting"

    def __init__(self, n: int):
        self.n, self.produced, self.threads = n, 0, set()

    def items(self, epoch):
        for i in range(self.n):
            self.produced += 1
            self.threads.add(threading.get_ident())
            yield i


class Thread(Stage):
    name = "where"

    def __call__(self, item):
        return item, threading.get_ident()


def test_thread_mode_yields_what_inline_yields(random_store):
    results = {}
    for mode in ("inline", "thread"):
        with real_pipeline(random_store, mode) as pipe:
            results[mode] = [list(pipe.run_epoch((e, 100 + e))) for e in range(2)]
    for a, b in zip(results["inline"], results["thread"]):
        assert len(a) == len(b) > 1
        for (x_in, x_out, x_blocks), (y_in, y_out, y_blocks) in zip(a, b):
            assert torch.equal(x_in, y_in) and torch.equal(x_out, y_out)
            assert all(torch.equal(p.src_ids, q.src_ids) and torch.equal(p.indices, q.indices)
                       for p, q in zip(x_blocks, y_blocks))
            assert torch.equal(x_blocks[0].srcdata["feat"], y_blocks[0].srcdata["feat"])
    assert not producer_threads()


def test_producer_runs_in_its_thread_and_at_most_queue_size_ahead():
    """The first item is made in the trainer's thread (it could only wait for it); the rest in the
    producer's, at most ``queue_size`` ahead."""
    source = Counting(50)
    with Pipeline(source, [], trainer_stages=[Thread()], mode="thread", queue_size=3) as pipe:
        it = pipe.run_epoch(0)
        item, consumer = next(it)
        assert source.threads == {consumer} == {threading.get_ident()}
        time.sleep(0.3)  # let the producer fill the queue
        # one handed over, 3 queued, one produced and waiting to be put
        assert item == 0 and source.produced <= 1 + 3 + 1
        assert [i for i, _ in it] == list(range(1, 50))
        assert len(source.threads - {consumer}) == 1  # items 1..49: the producer thread
    assert not producer_threads()


class Rows(Stage):
    """Says each item's input rows were ``nbytes`` (as the fetch stage says its gathers were)."""

    name = "rows"

    def __init__(self, nbytes: int):
        self.last_rows_bytes, self.nbytes = 0, nbytes

    def __call__(self, item):
        self.last_rows_bytes = self.nbytes
        return item


# made beyond the ones taken: one, or the queue's 3 and one waiting to be put
@pytest.mark.parametrize("nbytes, ahead", [(ONE_AHEAD_BYTES, 1), (ONE_AHEAD_BYTES - 1, 3 + 1)])
def test_large_batches_are_made_one_ahead_and_nothing_after_a_break(nbytes, ahead):
    """Batches whose rows reach ``ONE_AHEAD_BYTES`` are made one ahead of the trainer whatever the
    queue's size (two alive, as in DGL's loop); smaller ones fill the queue.  A break makes none after."""
    source = Counting(50)
    with Pipeline(source, [Rows(nbytes)], mode="thread", queue_size=3) as pipe:
        it = pipe.run_epoch(0)
        for taken in range(1, 4):
            assert next(it) == taken - 1
            deadline = time.monotonic() + 10
            while source.produced - taken < ahead and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.2)  # and no further, given the time
            assert source.produced - taken == ahead
        made = source.produced
        it.close()
        assert not producer_threads()
        assert source.produced == made  # the stop made no further item
    assert Pipeline(source, [Rows(nbytes)], mode="thread").large_batches() is False  # none made yet


def test_the_fetch_stage_says_how_large_its_last_rows_were(random_store):
    spec = SamplingSpec("store", path=str(random_store.path))
    order = OrderStage(ids=np.asarray(random_store.train_idx), batch_size=32)
    fetch = FetchStage(source=spec)
    with Pipeline(order, [SampleStage(source=spec, fanouts=(5, 5)), fetch], mode="inline") as pipe:
        assert fetch.last_rows_bytes == 0 and not pipe.large_batches()
        mb = next(iter(pipe.run_epoch((0, 1))))
        rows = mb.blocks[0].srcdata["feat"]
        assert fetch.last_rows_bytes == rows.nbytes > 0
        assert not pipe.large_batches()  # a few kB: the queue's size rules
        fetch.last_rows_bytes = ONE_AHEAD_BYTES
        assert pipe.large_batches()


def test_break_stops_the_producer_and_the_next_epoch_runs(random_store):
    with real_pipeline(random_store, "thread") as pipe:
        for _ in pipe.run_epoch((0, 1)):
            break
        assert not producer_threads()  # joined before the loop's close returned
        assert len(list(pipe.run_epoch((1, 2)))) == len(pipe.source)


def test_stage_failure_in_the_producer_names_the_stage(random_store, stages_module):
    def failing(spec):
        return stages_module.FailingSampleStage(source=spec, fanouts=(5, 5), fail_after=2)

    with real_pipeline(random_store, "thread", failing) as pipe:
        got = 0
        with pytest.raises(PipelineError, match="stage 'sample' failed: RuntimeError: injected"):
            for _ in pipe.run_epoch((0, 1)):
                got += 1
        assert got <= 2
    assert not producer_threads()


class OpenMPThreads(SourceStage):
    """Yields the OpenMP thread count torch reads in the thread that produces the items."""

    name = "openmp"

    def items(self, epoch):
        for _ in range(3):
            yield torch.get_num_threads()


def test_the_producer_runs_openmp_loops_on_its_own_thread_alone():
    """OpenMP's count is per thread: a thread the trainer did not make would run DGL's and torch's
    parallel loops on every core beside the model step.  The producer sets its own count to 1; the
    trainer's stays what it set."""
    from bgl.threads import openmp_libraries, thread_limits

    if not openmp_libraries():
        pytest.skip("no OpenMP runtime mapped into this process")
    with thread_limits(2):
        with Pipeline(OpenMPThreads(), [], mode="thread", queue_size=1) as pipe:
            # the first in the trainer's thread (idle until it comes), the others in the producer's
            assert list(pipe.run_epoch(0)) == [2, 1, 1]
        assert torch.get_num_threads() == 2


def test_openmp_runtimes_are_found_in_a_maps_text():
    from bgl.threads import openmp_libraries

    text = ("7f00-7f10 r-xp 00000000 08:01 12 /venv/torch/lib/libgomp-a34b3233.so.1\n"
            "7f10-7f20 r--p 00010000 08:01 12 /venv/torch/lib/libgomp-a34b3233.so.1\n"
            "7f20-7f30 r-xp 00000000 08:01 13 /usr/lib/libiomp5.so\n"
            "7f30-7f40 rw-p 00000000 00:00 0 \n"
            "7f40-7f50 r-xp 00000000 08:01 14 /usr/lib/libgompat-notes.txt\n"
            "7f50-7f60 r-xp 00000000 08:01 15 /usr/lib/libtorch.so\n")
    assert openmp_libraries(text) == ["/venv/torch/lib/libgomp-a34b3233.so.1", "/usr/lib/libiomp5.so"]


# ------------------------------------------------------------ the default pipeline (loader_options.default_pipeline)
@pytest.mark.parametrize("kind, device, cores, expected", [
    ("store", "cpu", 2, "thread"), ("store", "cpu", 16, "thread"), ("dgl", "cpu", 2, "thread"),
    ("store", "cpu", 1, "inline"),   # one core: a producer thread would only take turns with the model
    ("store", "cuda", 8, "inline"),  # a GPU device: the trainer's thread mostly queues kernels
    ("servers", "cpu", 1, "thread"), ("servers", "cuda", 1, "thread"),  # round trips overlap anyway
])
def test_the_default_pipeline_rule(kind, device, cores, expected):
    from bgl.loader.loader_options import default_pipeline

    assert default_pipeline(kind, device, cores) == expected


@pytest.mark.skipif(not hasattr(__import__("os"), "sched_getaffinity"), reason="CPU affinity is Linux's")
@pytest.mark.parametrize("cores, expected", [({0}, "inline"), ({0, 1}, "thread")])
def test_a_loader_without_pipeline_follows_the_rule_and_named_ones_win(random_store, monkeypatch, cores, expected):
    import os

    import bgl

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(cores))
    ids = np.asarray(random_store.train_idx)[:64]
    with bgl.DataLoader(random_store, ids, bgl.NeighborSampler([3]), batch_size=32) as loader:
        assert loader.pipeline_mode == expected
        assert sum(1 for _ in loader) == 2
    with bgl.DataLoader(random_store, ids, bgl.NeighborSampler([3]), batch_size=32, pipeline="inline") as loader:
        assert loader.pipeline_mode == "inline"
    assert not producer_threads()


# ------------------------------------------------------------ epochs of one item (chain.Pipeline.run_epoch num_items=)
class ThreadsStarted:
    """Names of the threads started (by ``threading``) inside the block: ``threading.setprofile`` hands
    each new thread a profile hook, which notes the thread's name at its first event (the thread's
    ``run``) and takes itself off that thread (called at the thread's end, ``current_thread()`` would
    make a dummy thread that Python 3.13 fails to delete at exit)."""

    def __enter__(self) -> list:
        self.names: list = []

        def note(frame, event, arg):
            sys.setprofile(None)
            self.names.append(threading.current_thread().name)

        threading.setprofile(note)
        return self.names

    def __exit__(self, *exc) -> None:
        threading.setprofile(None)


def test_an_epoch_of_one_item_runs_in_the_callers_thread():
    """A producer thread would start only to find the epoch over (the first item is made in the
    trainer's thread): with ``num_items=1`` none starts; a longer or unknown epoch still gets one."""
    for n, num_items, expect_thread in ((1, 1, False), (1, None, True), (3, 3, True)):
        source = Counting(n)
        with Pipeline(source, [], trainer_stages=[Thread()], mode="thread", queue_size=2) as pipe:
            with ThreadsStarted() as started:
                got = list(pipe.run_epoch(0, num_items=num_items))
        assert [i for i, _ in got] == list(range(n))
        assert any(name.startswith("bgl-") for name in started) == expect_thread, (n, num_items, started)
    assert not producer_threads()


def test_a_one_batch_loader_starts_no_thread_and_keeps_its_orders(random_store):
    """Cora's 140 training nodes in one 1024-seed batch, or an evaluation loader: every epoch is one
    batch.  The thread pipeline then makes it in the trainer's thread and shuffles the next epoch's
    few seeds there too; the epochs' orders are the inline loader's, seed for seed."""
    import bgl

    ids = np.asarray(random_store.train_idx)[:40]
    orders = {}
    for mode in ("inline", "thread"):
        with bgl.DataLoader(random_store, ids, bgl.NeighborSampler([3]), batch_size=64, shuffle=True,
                            pipeline=mode) as loader:
            assert len(loader) == 1
            with ThreadsStarted() as started:
                orders[mode] = [[out.clone() for _, out, _ in loader] for _ in range(3)]
            assert not [name for name in started if name.startswith("bgl-")], started
            assert loader._order_stage.prefetch_hits == 2  # epochs 1 and 2 used the order built ahead
    for a, b in zip(orders["inline"], orders["thread"]):
        assert len(a) == len(b) == 1 and torch.equal(a[0], b[0])
    assert not torch.equal(orders["thread"][0][0], orders["thread"][1][0])  # shuffled anew each epoch
    assert not producer_threads()
