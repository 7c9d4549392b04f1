"""Hand LLVM's library pages back once a process's kernels are loaded.

numba's kernels run as machine code that LLVM (llvmlite's ``libllvmlite.so``, LLVM linked in)
loads into the process.  Loading them faults in ~70 MB of that library's code and read-only
data, which then stay counted in the process's resident set although nothing runs them again
until another kernel is compiled or loaded: on Cora-sized graphs most of the extra peak RSS a
bgl trainer has over DGL's (bench/results/hetero.md, bench/results/dataloader.md).

After a loader's first batch (every stage's kernels loaded) :func:`release_jit_pages` advises
the kernel to page those mappings out (``madvise(MADV_PAGEOUT)``, Linux 5.4+).  Clean file pages
leave the resident set; they stay in the page cache, shared and reclaimable, and a later kernel
load faults back what it touches.  Dirty or anonymous pages stay where there is no swap, so
nothing the library wrote is lost.  Anywhere else (another OS, an older kernel, no llvmlite
loaded) it does nothing.  A release (reading ``/proc/self/maps``, then ``madvise``) takes ~20 ms the
first time and ~3 ms after: too much to pay at every epoch or every loader of a small graph.  So a
call pages out only when numba compiled or loaded a kernel since the last release: the count of
symbols numba's JIT engine has defined (:func:`jit_symbols`, a ``len()``) grew.  Only then did
LLVM's code run, and only then can its pages be back.  Where numba's internals do not expose that
count, the fallback is the process's file-backed resident set (``/proc/self/statm``, ~10 us) having
grown by :data:`GROWTH` (which memory-mapped feature pages also do, hence not the first choice).
``BGL_KEEP_JIT_PAGES=1`` turns it off (bench/typed/rgcn.py measures both).

A loader's paths (the end of its construction-time kernel loading, an epoch's first batch, the
inline chain's first item) call :func:`release_jit_pages_soon`: the cheap check in the caller, the
``/proc/self/maps`` walk and the ``madvise`` calls (~15-19 ms of page-out work in a process's first
loader, all of it in its first batch before) in a short-lived daemon thread, one at a time, named
``llvm-pages-release`` (not a ``bgl-`` pipeline thread).  ``madvise`` runs without the GIL, so the
first batch reaches the trainer while the pages go.  Processes that fork or exit right after (the
zygote, a stage process's warm-up, a graph server) keep the synchronous call.
"""
from __future__ import annotations

import ctypes
import os
import sys
import threading

MADV_PAGEOUT = 21  # linux/mman.h
LIBRARY = "libllvmlite"
GROWTH = 8 << 20  # bytes of file-backed resident pages gained that make another release worth it
_last_shared = [0]  # the file-backed resident bytes after the last release
_last_symbols = [0]  # jit_symbols() at the last release
_releasing = threading.Lock()  # held while a background release runs (one at a time)


def _shared_bytes() -> int:
    """Resident file-backed (and shared) bytes of this process (``/proc/self/statm``'s third field)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[2]) * os.sysconf("SC_PAGE_SIZE")


def jit_symbols() -> int | None:
    """How many symbols numba's CPU JIT engine has defined in this process: it grows with every kernel
    compiled or loaded from numba's cache, and only then.  0 before numba's CPU target is set up (not
    set up here: that would load LLVM); None where numba's internals differ from the ones read here."""
    registry = sys.modules.get("numba.core.registry")
    if registry is None:
        return 0
    try:
        context = vars(registry.cpu_target).get("_toplevel_target_context")
        return 0 if context is None else len(context.codegen()._engine._defined_symbols)
    except (AttributeError, TypeError):
        return None


def _nothing_new_to_release() -> bool:
    """True when no kernel was compiled or loaded since the last release (see the module's doc)."""
    symbols = jit_symbols()
    if symbols is not None:
        return symbols == _last_symbols[0]
    return _shared_bytes() - _last_shared[0] < GROWTH


def llvm_mappings(maps_text: str) -> list[tuple[int, int]]:
    """``(start, length)`` of each mapping of LLVM's library in a ``/proc/PID/maps`` text."""
    out = []
    for line in maps_text.splitlines():
        fields = line.split()
        if len(fields) >= 6 and LIBRARY in fields[-1].rsplit("/", 1)[-1]:
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            out.append((lo, hi - lo))
    return out


def _worth_a_release() -> bool:
    """True where a release can run (Linux, LLVM loaded, not turned off) and a kernel was loaded since the
    last one."""
    if not sys.platform.startswith("linux") or "llvmlite.binding" not in sys.modules \
            or os.environ.get("BGL_KEEP_JIT_PAGES", "") not in ("", "0"):
        return False
    try:
        return not _nothing_new_to_release()
    except OSError:
        return False


def release_jit_pages() -> int:
    """Page out LLVM's library mappings in this process; returns the bytes advised (0: nothing done)."""
    if not _worth_a_release():
        return 0
    symbols = jit_symbols() or 0  # read first: a kernel loaded during the release counts as new next time
    try:
        with open("/proc/self/maps") as f:
            spans = llvm_mappings(f.read())
        madvise = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return 0
    madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    done = 0
    for start, length in spans:
        if madvise(start, length, MADV_PAGEOUT) != 0:
            break  # EINVAL before Linux 5.4: nothing to gain from the rest
        done += length
    _last_shared[0] = _shared_bytes()
    _last_symbols[0] = symbols
    return done


def release_jit_pages_soon() -> bool:
    """:func:`release_jit_pages` in a daemon thread when there is something to release and no release is
    running; returns whether one was started.  The check (a ``len()``) runs here, in the caller."""
    if not _worth_a_release() or not _releasing.acquire(blocking=False):
        return False

    def release() -> None:
        try:
            release_jit_pages()
        finally:
            _releasing.release()

    try:
        threading.Thread(target=release, name="llvm-pages-release", daemon=True).start()
    except RuntimeError:  # no new threads (interpreter shutting down): leave the pages where they are
        _releasing.release()
        return False
    return True
