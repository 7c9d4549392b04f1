"""What runs inside one stage process of a :class:`~bgl.loader.pipeline.chain.Pipeline`.

A stage process is forked from the trainer's zygote (:mod:`bgl.loader.pipeline.spawn`)
and runs :func:`_stage_main`: it pins itself to its cores, sizes its thread pools,
opens its stage, then moves items from its input queue to its output queue until
told to stop, orphaned (the trainer died: :func:`~bgl.loader.pipeline.spawn.trainer_alive`)
or failed, and reports a failure on the error queue with the traceback text.  A stage
that reads ahead (``reads_ahead() > 0``, the fetch stage with a lookahead cache) gets each
epoch's items as one iterator over the received messages (:func:`_stream_epoch`).  The trainer-side half (starting,
supervising and tearing down these processes) is :mod:`bgl.loader.pipeline.chain`.
"""
from __future__ import annotations

import logging
import os
import queue
import signal
import sys
import traceback
from collections import deque
from typing import Sequence

from ...sampler.jit_pages import release_jit_pages
from .spawn import trainer_alive
from ..stages.protocol import Stage

log = logging.getLogger(__name__)

# How long a blocked get/put waits before re-checking the stop flag and the
# parent's liveness; bounds shutdown latency without busy-waiting.
POLL_S = 0.1

# ----------------------------------------------------------------- messages
# Small tuples between processes; payloads hold tensors that torch's
# ForkingPickler reduction moves to shared memory.
_EPOCH, _BATCH, _END, _STOP = "epoch", "batch", "end", "stop"


def _set_parent_death_signal() -> None:
    """Ask Linux to SIGTERM this process when its parent (the zygote) dies: a backstop to the trainer
    poll in :func:`_put` / :func:`_get`, which is what notices a SIGKILLed trainer."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:  # pragma: no cover - no libc; the trainer poll still catches it
        pass


def quiet_numba_threads() -> None:
    """Use numba's ``workqueue`` threading layer unless one is already chosen or running.

    Numba's default OpenMP layer brings its own libgomp whose idle threads
    spin-wait after each parallel kernel; in a process that also runs torch
    (its own libgomp), the two runtimes fight for the cores.  Measured on the
    2-core dev VM: a GraphSAGE epoch on Cora took ~8x longer with the
    sampler's numba kernels in the trainer process until numba used
    ``workqueue`` (or ``NUMBA_NUM_THREADS=1``).  Only applies before numba's
    first parallel launch and never overrides ``NUMBA_THREADING_LAYER``.
    """
    if os.environ.get("NUMBA_THREADING_LAYER"):
        return
    try:
        import numba
        from numba.np.ufunc import parallel
    except ImportError:  # numba is optional for a pure-torch pipeline
        return
    if not getattr(parallel, "_is_initialized", True):
        numba.config.THREADING_LAYER = "workqueue"


def _pin(cores: Sequence[int]) -> None:
    """Pin this process and size its thread pools to its cores (numba kernels and torch ops use threads)."""
    if cores and hasattr(os, "sched_setaffinity"):
        try:
            os.sched_setaffinity(0, set(cores))
        except OSError as e:  # a core vanished (cgroup change): run unpinned rather than die
            log.warning("could not pin to cores %s: %s", list(cores), e)
    n = max(1, len(cores)) if cores else None
    if n:
        import torch

        torch.set_num_threads(n)
        try:
            import numba

            numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
        except (ImportError, ValueError, RuntimeError) as e:
            # numba absent, or its threading layer cannot load (ValueError/RuntimeError): torch threads suffice
            log.debug("numba thread count not set to %d: %s", n, e)


def _record_feed_errors(q) -> None:
    """Keep what ``q``'s feeder thread fails to send (CPython only prints it and drops the item),
    so :func:`_put` raises it in the stage and the trainer hears of it."""
    errors: list = []
    q._on_queue_feeder_error = lambda e, obj: errors.append(e)
    q._bgl_feed_errors = errors


def _put(q, msg, stop) -> bool:
    """Put with backpressure; False when asked to stop or orphaned.  Raises what the queue's
    feeder thread could not send before (an unpicklable item)."""
    errors = getattr(q, "_bgl_feed_errors", None)
    if errors:
        e = errors[0]
        raise RuntimeError(f"an output of this stage could not be sent to the next: {type(e).__name__}: {e}") from e
    while True:
        if stop.is_set() or not trainer_alive():
            return False
        try:
            q.put(msg, timeout=POLL_S)
            return True
        except queue.Full:
            continue


def _get(q, stop):
    """Get, polling the stop flag; None when asked to stop or orphaned."""
    while True:
        if stop.is_set() or not trainer_alive():
            return None
        try:
            return q.get(timeout=POLL_S)
        except queue.Empty:
            continue


class _Stopped(BaseException):
    """Raised inside a stage's input stream when the stage is told to stop or is orphaned (a
    BaseException, like GeneratorExit, so a stream's own `except Exception` cannot swallow it)."""


class _EpochItems:
    """Payloads of one epoch's ``_BATCH`` messages, ``first`` included, read as the consumer asks.

    Appends each message's ``(epoch, index)`` to ``headers`` as its payload is handed out and the
    closing ``_END`` message to ``end``; raises :class:`_Stopped` when told to stop meanwhile.
    :meth:`ready` says whether reading one more costs the stage downstream nothing (a lookahead
    window reads past :data:`bgl.cache.lookahead_feeder.READY_MIN_AHEAD` batches only then).
    """

    def __init__(self, first, in_q, stop, headers: deque, end: list, out_q=None):
        self._next, self._q, self._stop, self._headers, self._end = first, in_q, stop, headers, end
        self._out_q = out_q

    def __iter__(self) -> "_EpochItems":
        return self

    def __next__(self):
        if self._end:
            raise StopIteration
        if self._next is None:
            msg = _get(self._q, self._stop)
            if msg is None or msg[0] == _STOP:
                raise _Stopped
            if msg[0] != _BATCH:
                self._end.append(msg)
                raise StopIteration
            self._next = msg
        _, epoch, index, item = self._next
        self._next = None
        self._headers.append((epoch, index))
        return item

    def ready(self) -> bool:
        """True when the next item is already queued and the stage downstream still has a batch to
        work on (its queue is not empty): reading ahead then delays no one.  When the downstream
        queue runs dry, the stage should hand over what it holds instead of reading on."""
        queued = self._next is not None or bool(self._end) or not self._q.empty()
        return queued and (self._out_q is None or not self._out_q.empty())


def _stream_epoch(stage: Stage, first, in_q, out_q, stop) -> bool:
    """Run one epoch through ``stage.stream`` (a stage that reads ahead); False when told to stop.

    The stream gives one output per input in order, so outputs take the input headers
    first in, first out; the epoch's ``_END`` follows the last output.
    """
    headers: deque = deque()
    end: list = []
    out = stage.stream(_EpochItems(first, in_q, stop, headers, end, out_q))
    try:
        for result in out:
            epoch, index = headers.popleft()
            if not _put(out_q, (_BATCH, epoch, index, result), stop):
                return False
    except _Stopped:
        return False
    finally:
        out.close()
    if headers or not end:
        raise RuntimeError(f"stage {stage.name!r}: stream() did not give one output per input item")
    return _put(out_q, end[0], stop)


def _stage_main(stage: Stage, is_source: bool, in_q, out_q, err_q, stop, cores) -> None:
    """Entry point of one stage process (module level so ``spawn`` can import it)."""
    _set_parent_death_signal()
    quiet_numba_threads()
    # Ctrl-C in a terminal reaches the whole process group; the trainer owns
    # the shutdown so a stage must not die half-way through a queue write.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Never block process exit on a feeder thread whose items nobody reads.
    out_q.cancel_join_thread()
    _record_feed_errors(out_q)
    exit_code = 0
    try:
        _pin(cores)
        stage.open()
        handled = 0
        while True:
            if handled == 1:  # this stage's kernels are loaded: LLVM's pages can go (jit_pages.py)
                release_jit_pages()
            handled += 1
            msg = _get(in_q, stop)
            if msg is None or msg[0] == _STOP:
                break
            if is_source:
                epoch = msg[1]
                count = 0
                for item in stage.items(epoch):
                    if not _put(out_q, (_BATCH, epoch, count, item), stop):
                        return
                    count += 1
                if not _put(out_q, (_END, epoch, count, None), stop):
                    return
            elif msg[0] == _BATCH and stage.reads_ahead() > 0:
                if not _stream_epoch(stage, msg, in_q, out_q, stop):
                    return
            elif msg[0] == _BATCH:
                _, epoch, index, item = msg
                if not _put(out_q, (_BATCH, epoch, index, stage(item)), stop):
                    return
            else:  # _END passes through so the trainer knows the epoch is complete
                if not _put(out_q, msg, stop):
                    return
    except BaseException as e:  # report everything, including SystemExit from user code
        text = "".join(traceback.format_exception(type(e), e, e.__traceback__))
        try:
            err_q.put((stage.name, f"{type(e).__name__}: {e}", text), timeout=1.0)
        except Exception:
            pass
        stop.set()
        exit_code = 1
    finally:
        try:
            stage.close()
        except Exception:
            pass
        # Deliver the error report, then leave without interpreter teardown:
        # spawn's sys.exit would run C++ destructors while numba/torch worker
        # threads still exist, which can abort ("terminate called ...").
        try:
            err_q.close()
            err_q.join_thread()
        except Exception:
            pass
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(exit_code)
