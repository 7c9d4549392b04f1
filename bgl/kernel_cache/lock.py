"""Compile each numba kernel once per install, not once per process: a file lock around first compile.

Every bgl kernel is ``njit(cache=True)``: a process loads it from numba's on-disk cache (2-8 ms)
when one is there, else compiles it (0.1-3 s each) and writes it.  The first ``bgl demo`` after
installing starts two graph servers and two trainers together; each found no cache and compiled
the same kernels, four times over on a 2-core machine: its first batch came after 23.2 s, 88 % of
the run (issue #56).

:func:`install` wraps numba's ``Dispatcher.compile`` for bgl's cached kernels: before looking in the
cache, the process takes an exclusive ``flock`` on a lock file beside that kernel's cache index.  The
first process compiles and writes the cache while holding it; the others wait for that kernel only,
then find it in the cache and load it.  Kernels are locked one by one, so four processes compile
different kernels side by side, and a process compiles only the kernels it calls (numba compiles
lazily, at the first call).

Costs: one ``open`` + ``flock`` per kernel and signature per process (microseconds; a cache hit
costs 2-8 ms); one empty ``*.lock`` file per kernel in numba's cache directory (``__pycache__``
beside the source, or ``$NUMBA_CACHE_DIR``).  The lock is taken under numba's own in-process
compiler lock (a re-entrant lock every compile takes first), so threads of one process never hold
file locks against each other; a kernel that calls another takes the callee's lock inside its own,
and since calls do not form cycles, neither do the locks.

A holder that cannot finish does not hold the others up: the lock file names its holder's pid, and a
waiter stops waiting when that process is stopped (``SIGSTOP``, a debugger) or a zombie, or after
:data:`WAIT_LIMIT_S`, and compiles on its own (numba replaces cache files whole, so two writers cost
only time).  Seen in the suite: an ingest frozen mid-compile by ``SIGSTOP`` left the next ingest
waiting on its kernel until the test's timeout.

Installed by numba itself, ahead of any compilation in any process where bgl is installed: the
``numba_extensions`` entry point ``init`` in ``pyproject.toml`` names :func:`install`.  With
``$BGL_COMPILE_LOG`` set, the same wrapper times each compile or load and the wait for its lock
(:mod:`bgl.kernel_cache.log`).  Compiling before the first run at all is ``bgl compile``'s job.
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import time

from .log import ENV_COMPILE_LOG, timed_compile

log = logging.getLogger(__name__)

PACKAGE = "bgl"
WAIT_LIMIT_S = 300.0  # the longest a process waits for another's compile of one kernel (one takes 0.1-30 s)
_held: dict[str, int] = {}  # lock path -> its fd, while this process holds it (a kernel compiling itself again)


def _is_bgl(module: str) -> bool:
    return module == PACKAGE or module.startswith(PACKAGE + ".")


def lock_path(dispatcher) -> str | None:
    """The lock file of ``dispatcher``'s kernel (beside its cache index), or None for a kernel that is
    not bgl's or not cached (numba's ``NullCache``)."""
    if not _is_bgl(getattr(dispatcher.py_func, "__module__", "") or ""):
        return None
    index = getattr(getattr(getattr(dispatcher, "_cache", None), "_cache_file", None), "_index_path", None)
    return None if index is None else index + ".lock"


@contextlib.contextmanager
def kernel_lock(path: str | None):
    """Hold the exclusive lock at ``path`` (None: no lock; re-entered by this process: held already).
    A cache directory that cannot take a lock file (read-only, full) loses only the sharing: the
    process compiles on its own, as without this module."""
    if path is None or path in _held:
        yield
        return
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        if e.errno not in (errno.EACCES, errno.EROFS, errno.ENOSPC, errno.EPERM):
            raise
        log.debug("no compile lock at %s (%s): this process compiles on its own", path, e)
        yield
        return
    try:
        if not _acquire(fd, path):
            yield  # the holder is stopped or stuck: compile on our own
            return
        _held[path] = fd
        try:
            yield
        finally:
            del _held[path]
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _acquire(fd: int, path: str) -> bool:
    """Take the exclusive lock on ``fd`` and write this pid into it; False (not held) when the holder is
    stopped or a zombie, or after :data:`WAIT_LIMIT_S`.  Polls (5-100 ms) so that the holder can be watched."""
    deadline, delay = time.monotonic() + WAIT_LIMIT_S, 0.005
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if _holder_cannot_finish(fd) or time.monotonic() > deadline:
                log.warning("the compile lock %s is held by a stopped or stuck process: compiling here", path)
                return False
            time.sleep(delay)
            delay = min(2 * delay, 0.1)
            continue
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return True


def _holder_cannot_finish(fd: int) -> bool:
    """Whether the pid written in the lock file is a stopped (``T``, ``t``) or zombie process (Linux's
    ``/proc``; elsewhere, or with no pid written yet, False: keep waiting)."""
    try:
        pid = int(os.pread(fd, 32, 0).split()[0])
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (ValueError, IndexError, OSError):
        return False
    return state in ("T", "t", "Z")


def install() -> None:
    """Wrap ``numba.core.dispatcher.Dispatcher.compile`` once (idempotent): bgl's cached kernels are
    compiled under :func:`kernel_lock`, everything else as before."""
    from numba.core.compiler_lock import global_compiler_lock
    from numba.core.dispatcher import Dispatcher

    original = Dispatcher.compile
    if getattr(original, "_bgl_compile_lock", False):
        return

    def compile(self, sig):
        path = lock_path(self)
        if path is None:
            return original(self, sig)
        with global_compiler_lock:
            log_path = os.environ.get(ENV_COMPILE_LOG)
            if not log_path:
                with kernel_lock(path):
                    return original(self, sig)

            def under_lock(on_locked):
                with kernel_lock(path):
                    on_locked()
                    return original(self, sig)
            return timed_compile(self, sig, under_lock, log_path)

    compile._bgl_compile_lock = True
    compile.__doc__ = original.__doc__
    Dispatcher.compile = compile
