"""Thread settings that are set for a scope and then given back.

bgl runs inside its users' processes (the inline DataLoader, ``LocalSampler``,
benchmarks called from Python), so nothing it does may leave the caller's
thread pools or environment changed.  Two rules follow:

- in this process, thread counts change only inside :func:`thread_limits`,
  which restores torch's and numba's counts on the way out;
- ``OMP_NUM_THREADS`` and friends are never written into ``os.environ``:
  numba re-reads ``NUMBA_*`` variables at the next first-time compile and
  raises ``RuntimeError: Cannot set NUMBA_NUM_THREADS to a different value
  once the threads have been launched`` when they changed after its pool
  started.  Child processes get them through :func:`thread_env` instead.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import threading
from typing import Any, Callable, Iterator, Mapping, Optional

THREAD_ENV_VARS = ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS", "MKL_NUM_THREADS")


def thread_env(threads: int, base: Optional[Mapping[str, str]] = None) -> dict[str, str]:
    """An environment for a child process that caps its thread pools at ``threads``.

    Parameters
    ----------
    threads : int
        Threads for OpenMP, numba and MKL in the child; 0 keeps ``base`` as it is.
    base : mapping, optional
        The environment to start from (default: a copy of ``os.environ``, never modified).

    Returns
    -------
    dict
        A new mapping; pass it as ``env=`` to ``subprocess``.
    """
    if threads < 0:
        raise ValueError(f"threads must be >= 0, got {threads}")
    env = dict(os.environ if base is None else base)
    if threads:
        env.update({var: str(threads) for var in THREAD_ENV_VARS})
    return env


def _numba_threads():
    """numba's get/set pair, or None where numba is missing or its threading layer cannot load."""
    try:
        import numba

        numba.get_num_threads()
        return numba
    except Exception:  # ImportError, or a threading layer that cannot start: torch threads only
        return None


@contextlib.contextmanager
def thread_limits(threads: int) -> Iterator[None]:
    """Run the body with torch and numba using ``threads`` threads, then restore both counts.

    ``threads`` 0 changes nothing.  numba's count is clipped to the pool it
    launched with (``NUMBA_NUM_THREADS``); it can be lowered, never raised.
    """
    if threads < 0:
        raise ValueError(f"threads must be >= 0, got {threads}")
    if not threads:
        yield
        return
    import torch

    numba = _numba_threads()
    torch_before = torch.get_num_threads()
    numba_before = numba.get_num_threads() if numba is not None else None
    torch.set_num_threads(threads)
    if numba is not None:
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        yield
    finally:
        torch.set_num_threads(torch_before)
        if numba is not None:
            numba.set_num_threads(numba_before)


OPENMP_LIBRARIES = ("libgomp", "libiomp5", "libomp")  # GNU's (torch's wheels, DGL), Intel's, LLVM's
_omp_set_num_threads: dict = {}  # {library path: its omp_set_num_threads, or None where it has none}
_last_scan: tuple = (None, [])  # ((process id, modules imported), the runtimes' paths then)


def openmp_libraries(maps_text: Optional[str] = None) -> list[str]:
    """Paths of the OpenMP runtimes mapped into this process (from ``/proc/self/maps``; [] elsewhere).

    Reading the maps costs ~1.4 ms in a process with torch and DGL loaded (the kernel writes out
    ~1,200 regions), paid by every producer thread at its start: a loader's first batch took 8.8 ms
    against 2.2 ms inline on a 262k-edge graph.  So the scan is kept while this process imports no
    new module: a runtime comes with an import (torch's, DGL's, numba's OpenMP threading layer, an
    extension module) far more often than through a bare ``ctypes.CDLL``, which this would miss
    until the next import.
    """
    global _last_scan
    if maps_text is None:
        key = (os.getpid(), len(sys.modules))
        last_key, last_paths = _last_scan  # one read of the pair: another thread may replace it
        if last_key == key:
            return list(last_paths)
        try:
            with open("/proc/self/maps") as f:
                paths = openmp_libraries(f.read())
        except OSError:
            return []
        _last_scan = (key, paths)
        return list(paths)
    paths = []
    for line in maps_text.splitlines():
        fields = line.split(None, 5)  # address, perms, offset, device, inode, path (absent: anonymous)
        path = fields[5].strip() if len(fields) == 6 else ""
        if os.path.basename(path).startswith(OPENMP_LIBRARIES) and ".so" in path and path not in paths:
            paths.append(path)
    return paths


def _set_num_threads_of(path: str):
    """``omp_set_num_threads`` of the runtime at ``path`` (looked up once per path), or None."""
    if path not in _omp_set_num_threads:
        try:
            _omp_set_num_threads[path] = ctypes.CDLL(path).omp_set_num_threads
        except (OSError, AttributeError):  # not loadable again, or not an OpenMP runtime after all
            _omp_set_num_threads[path] = None
    return _omp_set_num_threads[path]


def one_openmp_thread_here() -> int:
    """Make OpenMP loops started from the CALLING thread run on that thread alone; the runtimes set.

    For threads bgl makes (the thread pipeline's producer).  OpenMP's thread count is per thread, and
    a thread the trainer did not make reads the runtime's default (``OMP_NUM_THREADS``, else every
    core), not what the trainer set with ``torch.set_num_threads``: DGL's parallel loops in the
    producer (a block's CSR) ran a team of every core beside the model step, 1.5 s of CPU and ~1 s
    of a 120-batch epoch on the 2-core box (10.6M-edge user-item graph).  Only this thread's value
    changes, and it ends with the thread, so the caller's pools stay as they were (the rule above);
    torch's lazy per-thread setup runs first, so torch's own ops cannot reset it.
    """
    import torch

    torch.get_num_threads()  # torch sets up this thread's count once, on its first parallel call
    done = 0
    for path in openmp_libraries():
        set_num_threads = _set_num_threads_of(path)
        if set_num_threads is not None:
            set_num_threads(ctypes.c_int(1))
            done += 1
    return done


# How many nice levels below the trainer a background producer thread runs (Linux); BGL_PRODUCER_NICE
# overrides it, 0 keeps the trainer's priority.  Why: lower_thread_priority.
PRODUCER_NICE = 10


def producer_nice() -> int:
    """The nice steps for a producer thread: ``$BGL_PRODUCER_NICE`` if set (ValueError if not an int >= 0)."""
    text = os.environ.get("BGL_PRODUCER_NICE")
    if text is None:
        return PRODUCER_NICE
    try:
        steps = int(text)
    except ValueError:
        steps = -1
    if steps < 0:
        raise ValueError(f"BGL_PRODUCER_NICE must be an integer >= 0, got {text!r}")
    return steps


def launch_pools_here() -> None:
    """Start numba's worker threads from the CALLING thread now, if numba is imported and has none yet.

    A thread inherits its creator's nice value: numba's pool, launched by a kernel's first
    parallel call, would keep a producer's lower priority for the rest of the process and serve
    the trainer's kernels with it.  Called by the trainer's thread before a producer lowers its own.
    """
    numba = sys.modules.get("numba")
    if numba is not None:
        try:
            numba.get_num_threads()  # launches the pool, once (a no-op later)
        except Exception:  # a threading layer that cannot start: kernels run serially, no pool to inherit
            pass


def lower_thread_priority(steps: int) -> bool:
    """Lower the CALLING thread's CPU priority by ``steps`` nice levels (Linux, where nice is per thread).

    For threads bgl makes that work ahead of the trainer (the thread pipeline's producer).  On a box
    whose cores the trainer's torch threads fill, the scheduler then runs the trainer's threads first
    when both are ready, and the trainer, woken by a batch it waited for, takes the core from the
    producer at once instead of waiting for the producer's time slice: the typed R-GCN benchmark's
    trainer wait fell from 5.1 % to 2.7 % of the epoch at an unchanged epoch time (Cora paper-word,
    2-core box, nice 5 and 10 alike; bench/results/dataloader.md).  The producer still gets every
    core the trainer leaves idle, which is when the trainer waits for it.  Only this thread changes
    (an unprivileged thread cannot raise its priority back, so it is never done to the caller's);
    threads it starts inherit the value, which is why :func:`launch_pools_here` comes first.
    Returns whether the priority changed.
    """
    if steps <= 0 or not sys.platform.startswith("linux"):  # elsewhere PRIO_PROCESS takes a process id
        return False
    tid = threading.get_native_id()
    try:
        now = os.getpriority(os.PRIO_PROCESS, tid)
        if now >= 19:
            return False
        os.setpriority(os.PRIO_PROCESS, tid, min(19, now + steps))
    except OSError:  # a sandbox that forbids it: the thread runs at the trainer's priority
        return False
    return True


def start_daemon_thread(target: Callable[..., Any], args: tuple = (), name: Optional[str] = None) -> threading.Thread:
    """Start a daemon thread running ``target(*args)``, which begins only once the caller is running again.

    ``Thread.start()`` waits for the new thread to say it started; the new thread then goes on
    holding the GIL, and the caller, woken, waits for it, up to CPython's switch interval (5 ms),
    before it can force a switch.  A loader starts its producer (and a next-epoch order) on the
    way to the trainer's first batch, so that wait was the trainer's: the thread pipeline's first
    batch took 4.2 ms against 1.0 ms inline (262k-edge R-MAT graph, DGL blocks).  Here the thread
    first blocks on an event the caller sets after ``start()`` returns; the caller keeps the GIL and
    the thread takes it at the caller's next blocking call or torch op.
    """
    go = threading.Event()

    def run() -> None:
        go.wait()
        target(*args)

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    go.set()
    return thread


class Closes:
    """``with`` support and a best-effort ``close()`` at garbage collection, for the classes that own
    stage processes, threads or sockets in the user's process (loaders, server clients): the same
    rule as above, nothing left running behind the caller.  Each defines ``close()`` (safe to call
    twice) and inherits the rest here."""

    def close(self) -> None:  # pragma: no cover - every user overrides it
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown or a half-built object: nothing left to close
            pass
