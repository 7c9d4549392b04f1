"""Two processes that start together compile a kernel once (issue #56: the first ``bgl demo``'s four
processes each compiled the same kernels, 88 % of its run); the second loads it from the cache.

Each child points numba's cache at a fresh directory, imports a bgl kernel module, waits for the
other, calls the kernel and reports its cache misses (compiles) and hits (loads).
"""
from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import time

import pytest

CHILD = r'''
import pathlib, sys, time
import numpy as np
ready, go = map(pathlib.Path, sys.argv[1:3])
from bgl.sampler import _edge_kernels as K
ready.touch()
while not go.exists():
    time.sleep(0.002)
K.uniform_below(np.int64(1), np.int64(0), np.int64(10), np.empty(4, np.int64))
print("STATS", sum(K.uniform_below._cache_misses.values()), sum(K.uniform_below._cache_hits.values()), flush=True)
'''


def test_the_lock_is_installed_by_numbas_extension_entry_point():
    names = [e.value for e in importlib.metadata.entry_points(group="numba_extensions")]
    assert "bgl.kernel_cache.lock:install" in names, f"{names}: reinstall bgl (pip install -e .) to register it"


def test_two_processes_starting_together_compile_a_kernel_once(tmp_path):
    log = tmp_path / "compiles.jsonl"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache"), "BGL_COMPILE_LOG": str(log)}
    go = tmp_path / "go"
    procs = []
    try:
        for i in range(2):
            procs.append(subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path / f"ready{i}"), str(go)], env=env,
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        deadline = time.monotonic() + 120
        while not all((tmp_path / f"ready{i}").exists() for i in range(2)):
            assert time.monotonic() < deadline and all(p.poll() is None for p in procs), "children did not start"
            time.sleep(0.01)
        go.touch()  # both call the kernel now, on an empty cache
        outs = [p.communicate(timeout=180) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    stats = []
    for (out, err), p in zip(outs, procs):
        assert p.returncode == 0, err[-2000:]
        stats.append(tuple(int(x) for x in out.split("STATS")[1].split()))
    compiles, loads = sum(s[0] for s in stats), sum(s[1] for s in stats)
    assert (compiles, loads) == (1, 1), stats
    assert list((tmp_path / "numba-cache").rglob("*uniform_below*.nbi.lock"))
    # $BGL_COMPILE_LOG: each process's line for the kernel says what it did (bgl/kernel_cache/log.py)
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    mine = [r for r in lines if r["kernel"].endswith("._edge_kernels.uniform_below")]
    assert sorted(r["outcome"] for r in mine) == ["compiled", "loaded"], lines
    assert len({r["pid"] for r in mine}) == 2 and {r["process"] for r in mine} == {"python -c"}, mine
    assert all(r["wait_s"] >= 0 and r["own_s"] >= 0 for r in mine), mine


def test_the_compile_log_sums_each_process_and_names_the_costliest_kernels():
    from bgl.kernel_cache.log import summarize

    records = [{"pid": 1, "process": "a", "kernel": "k1", "outcome": "compiled", "wait_s": 0.0, "own_s": 2.0},
               {"pid": 1, "process": "a", "kernel": "k2", "outcome": "compiled", "wait_s": 0.5, "own_s": 3.0},
               {"pid": 2, "process": "b", "kernel": "k1", "outcome": "loaded", "wait_s": 1.5, "own_s": 0.25}]
    report = summarize(json.dumps(r) for r in records).splitlines()
    rows = {line.split()[0]: line.split()[2:] for line in report[1:3]}
    assert rows == {"a": ["2", "5.0", "0", "0.00", "0.5"], "b": ["0", "0.0", "1", "0.25", "1.5"]}, report
    assert [line.split()[1] for line in report[-2:]] == ["k2", "k1"], report  # costliest first


def test_the_demos_kernel_phrase_counts_only_what_its_run_appended(tmp_path):
    from bgl.kernel_cache.log import tally

    log = tmp_path / "kernels.jsonl"
    earlier = {"pid": 1, "process": "a", "kernel": "k0", "outcome": "compiled", "wait_s": 0.0, "own_s": 9.0}
    log.write_text(json.dumps(earlier) + "\n")
    offset = log.stat().st_size  # what a run finds there when it starts
    run = [{**earlier, "kernel": "k1", "own_s": 1.25}, {**earlier, "kernel": "k2", "outcome": "loaded", "own_s": 0.01},
           {**earlier, "kernel": "k3", "outcome": "present", "own_s": 0.0}]
    with open(log, "a") as f:
        f.writelines(json.dumps(r) + "\n" for r in run)
    assert tally(str(log), offset) == ("numba kernels: 1 compiled (1.2 s of compiling, all processes), "
                                       "1 loaded from the cache")
    assert tally(str(log), log.stat().st_size) == ""  # a run that ran no kernel says nothing
    assert tally(str(tmp_path / "absent.jsonl")) == ""


HOLD = """
import sys, time
from bgl.kernel_cache.lock import kernel_lock
with kernel_lock(sys.argv[1]):
    print("held", flush=True)
    time.sleep(120)
"""


@pytest.mark.parametrize("frozen", [False, True])
def test_a_stopped_holder_does_not_hold_up_the_next_compile(tmp_path, frozen):
    """A process frozen (SIGSTOP) while it holds a kernel's lock: the next one compiles on its own at once;
    a running holder is waited for."""
    import signal

    from bgl.kernel_cache import lock

    path = str(tmp_path / "kernel.nbi.lock")
    holder = subprocess.Popen([sys.executable, "-c", HOLD, path], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        if frozen:
            holder.send_signal(signal.SIGSTOP)
        limit, lock.WAIT_LIMIT_S = lock.WAIT_LIMIT_S, 2.0
        try:
            start = time.monotonic()
            with lock.kernel_lock(path):
                waited = time.monotonic() - start
                held_here = path in lock._held
        finally:
            lock.WAIT_LIMIT_S = limit
        if frozen:
            assert waited < 1.0 and not held_here, waited  # not waited out to the limit
        else:
            assert waited >= 2.0 and not held_here, waited  # a live holder: waited up to the limit
    finally:
        holder.kill()
        holder.wait()
