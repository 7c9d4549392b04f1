"""Fixtures for bgl-level tests that need real graph servers."""
from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time

import pytest

SERVER_TOKEN = "test-token"


@contextlib.contextmanager
def _serve_partition(book, root):
    """Start one real ``bgl serve`` process per part of ``book`` on 127.0.0.1; yield their addresses.

    Servers pick free ports and report them through ready files; they are always
    shut down (token, then kill) on exit, whatever happened in between.
    """
    from bgl.sampler.client import ping, shutdown

    procs, addresses = [], []
    try:
        for k in range(book.num_parts):
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "bgl", "serve", "--partition", str(book.path), "--part", str(k),
                 "--bind", "tcp://127.0.0.1:*", "--token", SERVER_TOKEN, "--threads", "1",
                 "--ready-file", str(root / f"ready-{k}.json")],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
        for k, proc in enumerate(procs):
            ready = root / f"ready-{k}.json"
            deadline = time.monotonic() + 120
            while not ready.exists():
                assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
                assert time.monotonic() < deadline, "graph server did not come up"
                time.sleep(0.1)
            addresses.append(json.loads(ready.read_text())["address"])
        assert all(ping(a, timeout=5.0) for a in addresses)
        yield addresses
    finally:
        for a in addresses:
            try:
                shutdown(a, SERVER_TOKEN)
            except Exception:
                pass
        for proc in procs:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture(scope="session")
def serve_partition():
    """``with serve_partition(book, tmp_dir) as addresses:`` runs real servers for a partition."""
    return _serve_partition


def _spawned_children() -> list:
    """Live stage processes of this process: forks of its zygote (bgl/loader/spawn_start.py) and any
    child started through multiprocessing's spawn; not the zygote itself, nor the resource tracker."""
    import psutil

    from bgl.loader.spawn_start import zygote_pid

    zygote = zygote_pid()
    out = []
    for p in psutil.Process().children(recursive=True):
        try:
            stage = p.ppid() == zygote or "spawn_main" in " ".join(p.cmdline())
            if stage and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.NoSuchProcess:
            continue
    return out


@pytest.fixture
def spawned_children():
    """Call it to list the pipeline's stage processes still alive (orphan checks)."""
    return _spawned_children


@pytest.fixture
def one_torch_thread():
    """Two OpenMP threads on a shared 2-core box run ~5x slower than one (bench/results/dataloader.md)."""
    from bgl.threads import thread_limits

    with thread_limits(1):
        yield
