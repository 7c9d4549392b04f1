"""Peak resident memory of one process phase by phase (``bgl partition --distributed``'s
``metrics["distributed"]["phases"]``: where a rank's peak goes).

Linux keeps a process's high-water mark of resident memory (``VmHWM`` in ``/proc/self/status``,
the same number ``getrusage`` reports) and resets it to the current resident size when ``5`` is
written to ``/proc/self/clear_refs`` (Linux >= 4.0).  :class:`PhaseMemory` resets it as each phase
begins and reads it as the phase ends, so a phase's peak is its own; :meth:`PhaseMemory.peak_bytes`
keeps the whole process's peak across the resets.  Where the reset is not possible (not Linux, or
``/proc`` read-only) each phase reports the process's peak so far (monotone, still an upper bound),
and ``resettable`` is False.
"""
from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import re
import resource
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def _status_kib(field: str) -> int | None:
    try:
        m = re.search(rf"^{field}:\s+(\d+) kB", _STATUS.read_text(), re.M)
    except OSError:
        return None
    return int(m.group(1)) if m else None


def current_rss_bytes() -> int:
    """Resident set size now, in bytes (0 where ``/proc`` is missing)."""
    kib = _status_kib("VmRSS")
    return 0 if kib is None else kib * 1024


def high_water_bytes() -> int:
    """Peak resident set size since the last reset (or since the start), in bytes."""
    kib = _status_kib("VmHWM")
    if kib is not None:
        return kib * 1024
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(r if sys.platform == "darwin" else r * 1024)


def reset_high_water() -> bool:
    """Reset the peak to the current resident size; False where the kernel does not allow it."""
    try:
        _CLEAR_REFS.write_text("5")
    except OSError:
        return False
    return True


def release_free_heap() -> None:
    """Hand the heap's free pages back to the kernel (glibc ``malloc_trim``; nothing elsewhere).

    An engine's C/C++ allocations, freed when it returns, otherwise stay resident in glibc's
    arenas and count against the rank's memory for the rest of the run."""
    name = ctypes.util.find_library("c")
    if sys.platform != "linux" or not name:
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(name).malloc_trim(0)


@dataclass(frozen=True)
class Phase:
    """One phase: ``start_bytes`` resident when it began, ``peak_bytes`` its own peak (bytes)."""

    name: str
    seconds: float
    start_bytes: int
    peak_bytes: int

    def to_dict(self) -> dict:
        return asdict(self)


class PhaseMemory:
    """Records each phase's peak resident memory (``with mem.phase("engine"): ...``)."""

    def __init__(self):
        self.phases: list[Phase] = []
        self._peak = high_water_bytes()  # before any reset: imports and start-up
        self.resettable = True

    @contextlib.contextmanager
    def phase(self, name: str):
        """Measure the block as phase ``name`` (appended to :attr:`phases` when it ends, even on error)."""
        self._peak = max(self._peak, high_water_bytes())
        self.resettable = reset_high_water() and self.resettable
        start, t0 = current_rss_bytes(), time.perf_counter()
        try:
            yield
        finally:
            peak = high_water_bytes()
            self._peak = max(self._peak, peak)
            self.phases.append(Phase(name, time.perf_counter() - t0, start, peak))

    def peak_bytes(self) -> int:
        """The process's peak resident memory so far, across the phases' resets."""
        return max(self._peak, high_water_bytes())
