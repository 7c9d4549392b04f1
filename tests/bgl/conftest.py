"""Fixtures for bgl-level tests that need real graph servers."""
from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time

import pytest

SERVER_TOKEN = "test-token"


def _launch_part_server(book, k: int, root, bind: str, prefix=()) -> tuple:
    ready = root / f"ready-{k}-{time.monotonic_ns()}.json"
    proc = subprocess.Popen(
        [*prefix, sys.executable, "-m", "bgl", "serve", "--partition", str(book.path), "--part", str(k),
         "--bind", bind, "--token", SERVER_TOKEN, "--threads", "1", "--ready-file", str(ready)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return proc, ready


def _await_part_server(proc, ready, k: int) -> str:
    deadline = time.monotonic() + 120
    while not ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            if proc.poll() is None:
                proc.kill()
            err = proc.stderr.read().decode()[-2000:]
            stop_server(proc)
            raise RuntimeError(f"graph server of part {k} did not come up: {err}")
        time.sleep(0.1)
    return json.loads(ready.read_text())["address"]


def start_part_server(book, k: int, root, bind: str = "tcp://127.0.0.1:*", prefix=()) -> tuple:
    """Start a real ``bgl serve`` of part ``k`` of ``book`` bound to ``bind`` (under the command ``prefix``,
    e.g. one entering a network namespace); ``(process, address)`` once it is ready (a ready file under
    ``root`` names the port it picked). The caller stops it (:func:`stop_server`)."""
    proc, ready = _launch_part_server(book, k, root, bind, prefix)
    return proc, _await_part_server(proc, ready, k)


def stop_server(proc, address=None) -> None:
    """Shut a server down (its token, when ``address`` is known), kill it if it lingers, and reap it."""
    from bgl.sampler.client import shutdown

    if address is not None and proc.poll() is None:
        try:
            shutdown(address, SERVER_TOKEN)
        except Exception:
            pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if proc.stderr:
        proc.stderr.close()


@contextlib.contextmanager
def _serve_partition(book, root):
    """Start one real ``bgl serve`` process per part of ``book`` on 127.0.0.1; yield their addresses.

    Servers pick free ports and report them through ready files; they are always
    shut down (token, then kill) on exit, whatever happened in between.
    """
    from bgl.sampler.client import ping

    launched, addresses = [], []
    try:
        for k in range(book.num_parts):  # all start at once; then each is waited for
            launched.append(_launch_part_server(book, k, root, "tcp://127.0.0.1:*"))
        for k, (proc, ready) in enumerate(launched):
            addresses.append(_await_part_server(proc, ready, k))
        assert all(ping(a, timeout=5.0) for a in addresses)
        yield addresses
    finally:
        for k, (proc, _) in enumerate(launched):
            stop_server(proc, addresses[k] if k < len(addresses) else None)


@pytest.fixture(scope="session")
def serve_partition():
    """``with serve_partition(book, tmp_dir) as addresses:`` runs real servers for a partition."""
    return _serve_partition


@pytest.fixture(scope="session")
def part_server():
    """``part_server.start(book, k, root, bind)`` -> ``(process, address)``, ``part_server.stop(process, address)``:
    one part's server, for tests that kill and restart it."""
    import types

    return types.SimpleNamespace(start=start_part_server, stop=stop_server)


def _spawned_children() -> list:
    """Live stage processes of this process: forks of its zygote (bgl/loader/pipeline/spawn.py) and any
    child started through multiprocessing's spawn; not the zygote itself, nor the resource tracker."""
    import psutil

    from bgl.loader.pipeline.spawn import zygote_pid

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
