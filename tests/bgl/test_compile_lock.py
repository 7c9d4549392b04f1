"""Two processes that start together compile a kernel once (issue #56: the first ``bgl demo``'s four
processes each compiled the same kernels, 88 % of its run); the second loads it from the cache.

Each child points numba's cache at a fresh directory, imports a bgl kernel module, waits for the
other, calls the kernel and reports its cache misses (compiles) and hits (loads).
"""
from __future__ import annotations

import importlib.metadata
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
    assert "bgl.compile_lock:install" in names, f"{names}: reinstall bgl (pip install -e .) to register it"


def test_two_processes_starting_together_compile_a_kernel_once(tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}
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
