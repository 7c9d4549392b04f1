"""Watch this process's descendants while a benchmark phase runs: each one's peak memory by kind.

Why: one number, a child's ``ru_maxrss``, mixes two kinds of pages.  Anonymous pages are memory
the process owns; file-backed pages of a memory-mapped store are the kernel's page cache, shared
by every process that maps the file and dropped under pressure.  A trainer that reads a
co-located part in place shows the part's pages in its RSS, so "no process above 14 GB" needs
the two apart.  A thread reads ``/proc/<pid>/status`` (``RssAnon``, ``RssFile``, ``RssShmem``)
of every descendant every ``interval`` seconds and keeps each one's peak, the machine's lowest
``MemAvailable``, and the CPU time the hypervisor stole from this VM (``/proc/stat`` steal),
which says whether a slow phase was the code or the host.

Sampling can miss a peak shorter than ``interval``; ``VmHWM`` (the kernel's own high-water mark
of anonymous + file + shmem) is kept beside it, so the total is exact even when the split is not.
"""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path

_FIELDS = ("RssAnon", "RssFile", "RssShmem", "VmHWM")


def _status(pid: int) -> dict[str, int] | None:
    """The memory fields of one process in bytes; None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    out: dict = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        if key in _FIELDS:
            out[key] = int(rest.split()[0]) * 1024
    return out


def _command(pid: int) -> str:
    """A process's command line, shortened (which server, trainer or engine it is)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "?"
    words = [Path(a.decode(errors="replace")).name if i < 2 else a.decode(errors="replace")
             for i, a in enumerate(argv[:8]) if a]
    return " ".join(words)[:120]


def _descendants(root: int) -> list[int]:
    """Pids whose parent chain reaches ``root`` (one pass over /proc/*/stat)."""
    parent: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        parent[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])  # field 4, after the name
    found = []
    for pid in parent:
        p, hops = parent.get(pid, 0), 0
        while p and p != root and hops < 64:
            p, hops = parent.get(p, 0), hops + 1
        if p == root:
            found.append(pid)
    return found


def _steal_seconds() -> float:
    """CPU seconds stolen from this VM since boot (all CPUs; /proc/stat's 8th field of ``cpu``)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    return int(fields[8]) / os.sysconf("SC_CLK_TCK")


def _mem_available() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


class ProcWatch:
    """``with ProcWatch() as w: run_phase()``; then ``w.report()``: peaks per process, in bytes."""

    def __init__(self, interval: float = 1.0):
        self.interval = interval
        self.peaks: dict[int, dict] = {}
        self.min_available = _mem_available()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "ProcWatch":
        self._steal0, self._t0 = _steal_seconds(), time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.steal_s = _steal_seconds() - self._steal0
        self.wall_s = time.monotonic() - self._t0

    def _run(self) -> None:
        root = os.getpid()
        while not self._stop.wait(self.interval):
            self.min_available = min(self.min_available, _mem_available())
            for pid in _descendants(root):
                got = _status(pid)
                if not got or "RssAnon" not in got:
                    continue
                peak = self.peaks.get(pid) or self.peaks.setdefault(pid, {"command": _command(pid)})
                for key in _FIELDS:
                    peak[key] = max(peak.get(key, 0), got.get(key, 0))

    def report(self) -> dict:
        """Largest anonymous peak, largest VmHWM, the processes ranked by anonymous peak, steal."""
        ranked = sorted(self.peaks.values(), key=lambda p: -p.get("RssAnon", 0))
        return {"max_anon_bytes": ranked[0]["RssAnon"] if ranked else 0,
                "max_hwm_bytes": max((p.get("VmHWM", 0) for p in ranked), default=0),
                "processes": ranked[:8], "min_mem_available_bytes": self.min_available,
                "steal_s": round(self.steal_s, 1), "wall_s": round(self.wall_s, 1)}
