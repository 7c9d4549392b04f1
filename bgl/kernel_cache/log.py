"""Where a cold run's seconds go: one JSON line per bgl kernel compile or cache load (``$BGL_COMPILE_LOG``).

A first run's cost is spread over processes (graph servers, trainers, the partitioner) that each
compile or load dozens of kernels, some while waiting on another process's compile
(:mod:`bgl.kernel_cache.lock`).  With ``BGL_COMPILE_LOG=FILE`` set, every process appends one line per
kernel signature it compiles or loads::

    {"pid": 4711, "process": "bgl serve", "kernel": "bgl.sampler._kernels.sample_positions_serial",
     "signature": "(int64, ...)", "outcome": "compiled", "wait_s": 0.0, "own_s": 1.93}

``outcome`` is ``compiled`` (a cache miss), ``loaded`` (numba's cache hit) or ``present`` (another
thread of the process got there first); ``wait_s`` is the time spent waiting for the kernel's compile
lock (another process compiling it); ``own_s`` is the compile or load itself, less the kernels it
called that compiled inside it (they have their own lines), so the lines add up.  Each line is one
``write`` on an ``O_APPEND`` file, so processes writing at once do not interleave.  Unset: nothing is
timed (the compile path is numba's own plus the lock).  ``python -m bgl.kernel_cache.log FILE`` sums a log
per process and lists the costliest kernels.
"""
from __future__ import annotations

import json
import os
import sys
import time
from collections import defaultdict

ENV_COMPILE_LOG = "BGL_COMPILE_LOG"
_nested: list[float] = []  # per compile in progress: seconds its callees' compiles took (subtracted from its own)


def process_name() -> str:
    """A short name for this process in the log: the script or command and its first argument."""
    argv = sys.argv or ["?"]
    head = os.path.basename(argv[0]) or "python"
    if head == "-c":
        return "python -c"
    if head == "__main__.py":  # python -m bgl: the package's name
        head = os.path.basename(os.path.dirname(argv[0]))
    return " ".join([head, *argv[1:2]])


def timed_compile(dispatcher, sig, compile_under_lock, log_path: str):
    """Run ``compile_under_lock(on_locked)`` (numba's compile of ``sig`` behind the kernel's lock; it calls
    ``on_locked()`` once the lock is held) and append the line described above to ``log_path``."""
    start = time.perf_counter()
    locked_at = [start]
    misses, hits = _count(dispatcher, "_cache_misses"), _count(dispatcher, "_cache_hits")
    _nested.append(0.0)
    try:
        return compile_under_lock(lambda: locked_at.__setitem__(0, time.perf_counter()))
    finally:
        callees = _nested.pop()
        total = time.perf_counter() - start
        if _nested:
            _nested[-1] += total
        outcome = ("compiled" if _count(dispatcher, "_cache_misses") > misses
                   else "loaded" if _count(dispatcher, "_cache_hits") > hits else "present")
        py = dispatcher.py_func
        record = {"pid": os.getpid(), "process": process_name(), "kernel": f"{py.__module__}.{py.__qualname__}",
                  "signature": str(sig), "outcome": outcome, "wait_s": round(locked_at[0] - start, 4),
                  "own_s": round(max(0.0, total - (locked_at[0] - start) - callees), 4)}
        _append(log_path, json.dumps(record) + "\n")


def _count(dispatcher, counter: str) -> int:
    """Total of one of numba's per-signature cache counters (``Dispatcher.stats()``'s), 0 where absent."""
    return sum(getattr(dispatcher, counter, {}).values())


def _append(path: str, line: str) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError:
        return  # a diagnostic: a log that cannot be written must not fail the compile
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def tally(path: str, offset: int = 0) -> str:
    """One phrase for the lines of ``path`` from byte ``offset`` on (what one run appended): how many
    kernel variants its processes compiled and in how many seconds of compiling, and how many they loaded
    from numba's cache; ``""`` when no kernel ran (or the log is unreadable)."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            records = [json.loads(line) for line in f.read().decode().splitlines() if line.strip()]
    except (OSError, ValueError):
        return ""
    if not records:
        return ""
    compiled = [r["own_s"] for r in records if r["outcome"] == "compiled"]
    loaded = sum(r["outcome"] == "loaded" for r in records)
    return (f"numba kernels: {len(compiled)} compiled ({sum(compiled):.1f} s of compiling, all processes), "
            f"{loaded} loaded from the cache")


def summarize(lines) -> str:
    """A short report of a log's lines: per process (compiles, loads, compile / load / wait seconds),
    then the ten kernels that took longest to compile, over all processes."""
    per_process = defaultdict(lambda: defaultdict(float))
    per_kernel = defaultdict(float)
    for line in lines:
        r = json.loads(line)
        p = per_process[(r["pid"], r["process"])]
        p[r["outcome"]] += 1
        p[r["outcome"] + "_s"] += r["own_s"]
        p["wait_s"] += r["wait_s"]
        if r["outcome"] == "compiled":
            per_kernel[r["kernel"]] += r["own_s"]
    out = ["process                              compiled  s      loaded  s     wait s"]
    for (pid, name), p in sorted(per_process.items(), key=lambda kv: -kv[1]["compiled_s"]):
        out.append(f"{(name + ' [' + str(pid) + ']')[:36]:36} {int(p['compiled']):5} {p['compiled_s']:6.1f}"
                   f"   {int(p['loaded']):5} {p['loaded_s']:5.2f}   {p['wait_s']:6.1f}")
    out.append("costliest compiles (seconds, all processes):")
    out += [f"  {s:6.2f}  {k}" for k, s in sorted(per_kernel.items(), key=lambda kv: -kv[1])[:10]]
    return "\n".join(out)


if __name__ == "__main__":  # pragma: no cover - a reading aid
    with open(sys.argv[1]) as f:
        print(summarize(f))
