"""Run a chain of small stages either inline or as one pinned process per stage.

A pipeline is a *source* stage (yields the items of one epoch) followed by
*map* stages (one item in, one item out) and optional *trainer* stages that
always run in the trainer process (e.g. the copy to the GPU, which must happen
where the CUDA context lives).  The same stage objects run two ways:

``inline``
    A plain generator in the caller's process: source -> map -> ... -> trainer.
``thread``
    The same generator chain, run by one background thread a few items
    (``queue_size``) ahead of the trainer, which runs the trainer stages
    (:mod:`bgl.loader.pipeline.background` says why and how it stops).
``processes``
    Every source/map stage runs in its own process, forked from a zygote that imported
    torch and bgl once (:mod:`bgl.loader.pipeline.spawn`; no ``__main__`` re-run), and
    pinned to its cores with ``os.sched_setaffinity``.  Stages are connected by bounded
    ``torch.multiprocessing`` queues: tensors travel as shared-memory handles (the
    storage is moved to shared memory once, never re-pickled element by element), and
    a full queue blocks the producer, so a slow stage shows up as backpressure instead
    of unbounded memory.

Stage objects are *specs*: picklable dataclasses holding paths, addresses and
numbers.  Live resources (stores, sockets, caches) are created by ``open()``
inside the process that runs the stage.

Processes persist across epochs (starting one costs ~1 s of kernel loading), and
are torn down when an epoch is abandoned early (``break``), when the epoch
iterator is closed or garbage-collected mid-epoch, on any stage failure, on
``KeyboardInterrupt``, or by :meth:`Pipeline.close`.  A stage that raises or
dies ends every stage and surfaces in the trainer as :class:`PipelineError`
naming the stage, with the original traceback text.

This module is the trainer's side; what runs inside a stage process is
:mod:`bgl.loader.pipeline.stage_process`.
"""
from __future__ import annotations

import logging
import queue
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence

from ...errors import PipelineError
from ..loader_options import ONE_AHEAD_BYTES
from .background import background_items
from .inline import apply_stage, close_quietly, run_chain, source_items
from .spawn import StageProcess
# the stage contract; also importable from here, as it was before it had a module of its own
from ..stages.protocol import SourceStage, Stage
# quiet_numba_threads is re-exported: the DataLoader and test setup call it from here.
from .stage_process import _END, _EPOCH, POLL_S, _stage_main
from .stage_process import quiet_numba_threads  # noqa: F401

log = logging.getLogger(__name__)

MODES = ("inline", "thread", "processes")
# Shutdown budget: polite stop, then SIGTERM, then SIGKILL; well under the 5 s promised for Ctrl-C.
JOIN_S = 1.5
TERM_S = 1.0


@dataclass(frozen=True)
class _StageProc:
    name: str
    process: Any
    cores: tuple[int, ...]



class Pipeline:
    """A source stage, map stages and trainer-side stages, run inline or as processes.

    Parameters
    ----------
    source : SourceStage
        Yields the items of one epoch from ``source.items(epoch)``.
    stages : sequence of Stage
        Map stages applied in order (each in its own process in ``processes`` mode).
    trainer_stages : sequence of Stage
        Map stages that always run in the trainer process, after the others.
    mode : ``"inline"``, ``"thread"`` or ``"processes"``
    cores : {stage name: [core ids]}, optional
        Affinity per process stage; a missing name runs unpinned.
    queue_size : int
        Capacity of each inter-stage queue (items in flight per hop).
    producer_nice : int
        ``"thread"``: nice levels the producer runs below the trainer (``bgl.threads.lower_thread_priority``).

    Raises
    ------
    ValueError
        for an unknown mode, duplicate stage names, or cores naming unknown stages.
    """

    def __init__(self, source: SourceStage, stages: Sequence[Stage] = (), *,
                 trainer_stages: Sequence[Stage] = (), mode: str = "inline",
                 cores: Mapping[str, Sequence[int]] | None = None, queue_size: int = 4, producer_nice: int = 0):
        if mode not in MODES:
            raise ValueError(f"pipeline mode must be one of {MODES}, got {mode!r}")
        if queue_size < 1:
            raise ValueError(f"queue_size must be >= 1, got {queue_size}")
        self.source = source
        self.producer_nice = producer_nice  # mode "thread": the producer's nice steps (background_items)
        self.stages = list(stages)
        self.trainer_stages = list(trainer_stages)
        names = [s.name for s in (source, *self.stages, *self.trainer_stages)]
        if len(set(names)) != len(names):
            raise ValueError(f"stage names must be unique, got {names}")
        self.cores = {k: tuple(int(c) for c in v) for k, v in (cores or {}).items()}
        unknown = set(self.cores) - set(names)
        if unknown:
            raise ValueError(f"cores given for unknown stages {sorted(unknown)}; stages are {names}")
        self.mode = mode
        self.queue_size = int(queue_size)
        self._procs: list[_StageProc] = []
        self._queues: list[Any] = []
        self._stop = None
        self._err_q = None
        self._inline_open = False
        self._trainer_open = False
        self._finalizer = None
        self._starter: _Starter | None = None  # start_in_background's thread, until joined

    # ------------------------------------------------------------ lifecycle
    @property
    def running(self) -> bool:
        """True while stage processes are alive (always False inline)."""
        return bool(self._procs)

    def stage_pids(self) -> dict[str, int]:
        """{stage name: pid} of the live stage processes (empty inline or when stopped)."""
        return {p.name: p.process.pid for p in self._procs if p.process.pid is not None}

    def start_in_background(self) -> None:
        """Start the stage processes now, from a thread (``processes`` mode; otherwise a no-op).

        What a stage process costs before its first batch -- the zygote importing torch, each
        stage opening its store or graph-server clients and loading its kernels (~2-2.6 s on the
        2-core box, bench/results/launch.md) -- then overlaps what the trainer does between
        building its loader and its first ``iter()`` (the model, DDP, a checkpoint's load)
        instead of delaying the first batch.  The thread mostly waits on the zygote (forking from
        it is thread-safe); the first epoch and :meth:`close` join it, and an error it met is
        raised by the first epoch.
        """
        if self.mode == "processes" and not self.running and self._starter is None:
            self._starter = _Starter(self._start)

    def _join_starter(self) -> None:
        """Wait for :meth:`start_in_background`'s thread; re-raise what it raised."""
        starter, self._starter = self._starter, None
        if starter is not None:
            starter.join()

    def _open_trainer_stages(self) -> None:
        if not self._trainer_open:
            for s in self.trainer_stages:
                s.open()
            self._trainer_open = True

    def _start(self) -> None:
        import torch.multiprocessing as tmp

        ctx = tmp.get_context("spawn")
        self._stop = ctx.Event()
        self._err_q = ctx.Queue(maxsize=64)
        proc_stages = [self.source, *self.stages]
        self._queues = [ctx.Queue(maxsize=self.queue_size) for _ in range(len(proc_stages) + 1)]
        # Index messages only on the control queue; data queues are bounded for backpressure.
        procs = []
        try:
            for i, stage in enumerate(proc_stages):
                cores = self.cores.get(stage.name, ())
                # Forked from the zygote without re-running the user's script (bgl/loader/pipeline/spawn.py), so a
                # loader built at module level, DGL-example style, works unguarded.
                p = StageProcess(
                    target=_stage_main, name=f"bgl-{stage.name}", daemon=True,
                    args=(stage, i == 0, self._queues[i], self._queues[i + 1], self._err_q,
                          self._stop, cores),
                )
                p.start()
                procs.append(_StageProc(stage.name, p, cores))
        finally:
            self._procs = procs
            # weakref.finalize runs at GC *and* at interpreter exit, so an
            # abandoned pipeline never outlives its trainer.
            self._finalizer = weakref.finalize(self, _shutdown, procs, self._stop, self._queues, self._err_q)
        log.info("pipeline started: %s", ", ".join(
            f"{p.name}(pid {p.process.pid}, cores {list(p.cores) or 'any'})" for p in procs))

    def close(self) -> None:
        """Stop every stage process and close the inline/trainer stages; idempotent."""
        self.close_processes()
        if self._inline_open:
            for s in (self.source, *self.stages):
                close_quietly(s)
            self._inline_open = False
        if self._trainer_open:
            for s in self.trainer_stages:
                close_quietly(s)
            self._trainer_open = False

    def __enter__(self) -> "Pipeline":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---------------------------------------------------------------- epochs
    def run_epoch(self, epoch: Any, after_first: Optional[Callable[[], None]] = None,
                  num_items: Optional[int] = None) -> Iterator[Any]:
        """Items of one epoch, after every stage.  See the module docstring for teardown rules.

        ``after_first``: called once the first item is made: in the caller's thread before the item is
        yielded, or with ``mode="thread"`` by the producer thread as it starts (off the trainer's way to
        its first batch); the loader starts the next epoch's order there.  Not called with
        ``mode="processes"``.

        ``num_items``: how many items the epoch yields, where the caller knows.  With
        ``mode="thread"`` an epoch of at most one item runs in the caller's thread: the first item
        is made there anyway, so a producer thread would only start, find the epoch over and hand
        that back, ~1-4 ms of thread start and GIL hand-off an epoch (an evaluation loader of one
        batch, or Cora's 140 training nodes in one 1024-seed batch, pays it every epoch).
        """
        if self.mode == "processes":
            return self._process_epoch(epoch)
        in_thread = self.mode == "thread" and (num_items is None or num_items > 1)
        return self._inline_epoch(epoch, after_first, in_thread)

    def large_batches(self) -> bool:
        """True when the last batch's input rows (a stage's ``last_rows_bytes``, the fetch stage's) were
        ``ONE_AHEAD_BYTES`` or more: a producer thread then keeps one batch ahead (:mod:`.background`)."""
        return any(getattr(s, "last_rows_bytes", 0) >= ONE_AHEAD_BYTES for s in self.stages)

    def _inline_epoch(self, epoch: Any, after_first: Optional[Callable[[], None]], in_thread: bool) -> Iterator[Any]:
        if not self._inline_open:
            for s in (self.source, *self.stages):
                s.open()
            self._inline_open = True
        self._open_trainer_stages()
        if in_thread:
            produced = background_items(lambda: run_chain(source_items(self.source, epoch), self.stages),
                                        self.queue_size, name=f"bgl-{self.source.name}", after_first=after_first,
                                        nice=self.producer_nice, one_ahead=self.large_batches)
            yield from run_chain(produced, self.trainer_stages)
        else:
            items = run_chain(source_items(self.source, epoch), (*self.stages, *self.trainer_stages))
            if after_first is None:
                yield from items
                return
            held: list = []  # the item being yielded, popped as it goes: a suspended frame keeps no batch
            try:
                for item in items:
                    held.append(item)
                    del item
                    if after_first is not None:
                        after_first()
                        after_first = None
                    yield held.pop()
            finally:
                items.close()

    def _process_epoch(self, epoch: Any) -> Iterator[Any]:
        self._join_starter()
        if not self.running:
            self._start()
        self._open_trainer_stages()
        finished = False
        try:
            self._send_control((_EPOCH, epoch))
            out_q = self._queues[-1]
            received = 0
            while True:
                msg = self._receive(out_q)
                kind, msg_epoch, index, item = msg
                if kind == _END:
                    # The source's item count rides on the end marker: a batch lost on the way
                    # (an output no queue could send) must not end the epoch short in silence.
                    if index != received:
                        self._raise_if_failed(wait=1.0)
                        raise PipelineError(f"pipeline lost {index - received} of {index} batches of this epoch "
                                            f"between stages (an output could not be sent; see the stage's stderr)")
                    finished = True
                    return
                received += 1
                for s in self.trainer_stages:
                    item = apply_stage(s, item)
                yield item
        finally:
            # An abandoned epoch leaves items in flight; restarting is simpler
            # and safer than draining queues whose producers may be blocked.
            if not finished:
                self.close_processes()

    def close_processes(self) -> None:
        """Stop and reap every stage process (runs the finalizer once); safe to call twice.

        The queues and events go too: each holds named semaphores (``/dev/shm/sem.mp-*``)
        that are unlinked only when the object is collected.
        """
        try:
            self._join_starter()
        except Exception as e:  # closing: what started is stopped below, the error has no one to go to
            log.debug("stage processes failed to start before close: %s", e)
        if self._finalizer is not None:
            self._finalizer()
            self._finalizer = None
        self._procs = []
        self._queues, self._stop, self._err_q = [], None, None

    def _send_control(self, msg) -> None:
        q = self._queues[0]
        deadline = time.monotonic() + 30.0
        while True:
            self._raise_if_failed()
            try:
                q.put(msg, timeout=POLL_S)
                return
            except queue.Full:
                if time.monotonic() > deadline:  # pragma: no cover - source never reads
                    raise PipelineError(f"stage {self.source.name!r} does not accept epochs")

    def _receive(self, q):
        while True:
            try:
                return q.get(timeout=POLL_S)
            except queue.Empty:
                self._raise_if_failed()
            except Exception as e:
                # Unpickling a tensor fetches its shared-memory fd from the
                # sending process; if that process died this raises here.
                self._raise_if_failed(wait=1.0)
                last = self.stages[-1].name if self.stages else self.source.name
                self.close_processes()
                raise PipelineError(f"pipeline stage {last!r} failed: receiving its output raised "
                                    f"{type(e).__name__}: {e}") from e

    def _raise_if_failed(self, wait: float = 0.0) -> None:
        """Turn a dead stage process or a reported exception into PipelineError, after stopping all.

        A process that died without reporting (killed, segfault) is the root
        cause; stages downstream of it then report secondary errors (e.g. a
        reset connection), so it wins over reports.  ``wait`` gives a dying
        process time to be noticed.
        """
        if self._err_q is None:  # stopped already: nothing left to report
            return
        deadline = time.monotonic() + wait
        while True:
            reports = []
            while True:
                try:
                    reports.append(self._err_q.get_nowait())
                except queue.Empty:
                    break
                except Exception:  # a half-written report from a killed process
                    break
            reported = {r[0] for r in reports}
            dead = [p for p in self._procs if p.process.exitcode not in (None, 0) and p.name not in reported]
            if dead or reports or time.monotonic() >= deadline:
                break
            time.sleep(0.05)
        if not dead and not reports:
            silent = [p for p in self._procs if p.process.exitcode == 0]
            if not silent:
                return
            # Exit code 0 mid-epoch without a report: give the report a moment to arrive.
            try:
                reports.append(self._err_q.get(timeout=0.5))
            except queue.Empty:
                dead = silent
        if dead:
            p = dead[0]
            code = p.process.exitcode
            why = f"signal {-code}" if code < 0 else f"exit code {code}"
            err = (p.name, f"process {p.process.pid} died ({why})", "")
        else:
            err = reports[0]
        name, summary, text = err
        self.close_processes()
        message = f"pipeline stage {name!r} failed: {summary}"
        if text:
            message += f"\n--- traceback from stage {name!r} ---\n{text.rstrip()}"
        raise PipelineError(message)


class _Starter:
    """One call of ``start`` in a daemon thread; :meth:`join` waits and re-raises its error."""

    def __init__(self, start):
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(start,), name="bgl-pipeline-start", daemon=True)
        self._thread.start()

    def _run(self, start) -> None:
        try:
            start()
        except BaseException as e:  # raised again by join(), in the trainer's thread
            self._error = e

    def join(self) -> None:
        self._thread.join()
        if self._error is not None:
            raise self._error


def _shutdown(procs: Sequence[_StageProc], stop, queues, err_q) -> None:
    """Stop politely, then SIGTERM, then SIGKILL; always reap.  Safe to call twice."""
    if stop is not None:
        stop.set()
    deadline = time.monotonic() + JOIN_S
    for p in procs:
        p.process.join(timeout=max(0.0, deadline - time.monotonic()))
    alive = [p for p in procs if p.process.is_alive()]
    for p in alive:
        p.process.terminate()
    deadline = time.monotonic() + TERM_S
    for p in alive:
        p.process.join(timeout=max(0.0, deadline - time.monotonic()))
    for p in alive:
        if p.process.is_alive():
            p.process.kill()
            p.process.join(timeout=1.0)
    for q in (*queues, err_q):
        if q is None:
            continue
        try:
            q.cancel_join_thread()  # items nobody will read must not block our exit
            q.close()
        except Exception:
            pass
    for p in procs:
        try:
            p.process.close()
        except (ValueError, AttributeError):
            pass
