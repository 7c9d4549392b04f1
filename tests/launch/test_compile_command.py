"""``bgl compile`` (the install-time step of ``make venv`` / ``make demo``): after it, the demo's
processes -- the partitioner, two graph servers, two trainers -- compile nothing; each kernel they run is
a numba cache hit (issue #56: a first run spent 85 % of its wall compiling).

What each process compiled or loaded is read from ``$BGL_COMPILE_LOG`` (bgl/kernel_cache/log.py), whose
outcome comes from the dispatchers' own cache-hit / cache-miss counters.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest


@pytest.mark.extended  # two demo runs on an empty cache: ~1 min on a quiet 2-core box
def test_after_bgl_compile_the_demo_compiles_no_kernel(tmp_path, orphans):
    env = {**os.environ, "DGLBACKEND": "pytorch", "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}
    env.pop("BGL_COMPILE_LOG", None)
    built = subprocess.run([sys.executable, "-m", "bgl", "compile"], capture_output=True, text=True,
                           timeout=600, cwd=tmp_path, env=env)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    compiled = re.search(r"compiled (\d+) kernel variants for the demo's node task", built.stdout)
    assert compiled and int(compiled.group(1)) > 0, built.stdout  # the cache was empty: it compiled them

    log = tmp_path / "demo-compiles.jsonl"
    done = subprocess.run([sys.executable, "-m", "bgl", "demo", "--epochs", "1", "--workdir", str(tmp_path / "demo")],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env={**env, "BGL_COMPILE_LOG": str(log)})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    records = [json.loads(line) for line in log.read_text().splitlines()]
    processes = {r["process"].split()[0] for r in records}
    assert {"server.py", "train_sage.py"} <= processes, processes  # servers and trainers ran kernels
    assert [r for r in records if r["outcome"] == "compiled"] == [], "compiled after bgl compile"
    assert any(r["outcome"] == "loaded" for r in records), records
    assert orphans() == []
