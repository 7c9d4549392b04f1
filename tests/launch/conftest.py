"""Fixtures for launch tests: a small 2-part partition, free ports, a launcher runner,
and an orphan scan.  Every launcher and every process it starts is cleaned up."""
from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

LAUNCH_TIMEOUT = 150  # seconds any single launch in a test may take before we kill it


@pytest.fixture(scope="session")
def two_part_partition(random_store_factory, tmp_path_factory) -> Path:
    """A 2-part random partition of a 400-node synthetic store (features, labels, splits)."""
    from bgl.partition import partition_graph

    store = random_store_factory(num_nodes=400, avg_degree=6.0, feat_dim=8, num_classes=3, seed=7)
    out = tmp_path_factory.mktemp("launch") / "parts"
    partition_graph(store, "random", 2, out, seed=0, measure_samples=False)
    return out


@pytest.fixture
def partition_dir(two_part_partition, tmp_path) -> Path:
    """The shared partition under this test's own tmp path, so the servers' command lines
    contain the test's unique path (the orphan scan looks for it)."""
    link = tmp_path / "parts"
    link.symlink_to(two_part_partition, target_is_directory=True)
    return link


def port_range_is_free(start: int, count: int) -> bool:
    for port in range(start, start + count):
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                return False
    return True


@pytest.fixture
def free_port_base():
    """``free_port_base(count)`` -> a port P with P..P+count-1 free on 127.0.0.1 now."""
    def find(count: int = 4) -> int:
        rng = random.Random()
        for _ in range(200):
            start = rng.randrange(20000, 60000)
            if port_range_is_free(start, count):
                return start
        raise RuntimeError("no free port range found")
    return find


def processes_mentioning(text: str) -> list[psutil.Process]:
    """Live (non-zombie) processes other than us whose command line contains ``text``."""
    found = []
    for proc in psutil.process_iter(["pid", "cmdline", "status"]):
        try:
            if proc.pid == os.getpid() or proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            if any(text in arg for arg in proc.info["cmdline"] or ()):
                found.append(proc)
        except psutil.Error:
            continue
    return found


class Launcher:
    """A ``bgl launch`` subprocess with its output in files."""

    def __init__(self, args: list[str], tmp_path: Path, env: dict | None = None):
        self.out_path = tmp_path / "launcher.out"
        self.err_path = tmp_path / "launcher.err"
        self.tmp_path = tmp_path
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.popen = subprocess.Popen(
                [sys.executable, "-m", "bgl", "launch", *args], stdout=out, stderr=err,
                stdin=subprocess.DEVNULL, cwd=tmp_path,
                env={**os.environ, "DGLBACKEND": "pytorch", **(env or {})})

    @property
    def stdout(self) -> str:
        return self.out_path.read_text(errors="replace")

    @property
    def stderr(self) -> str:
        return self.err_path.read_text(errors="replace")

    def wait_for_output(self, needle: str, timeout: float = LAUNCH_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while needle not in self.stdout:
            if self.popen.poll() is not None:
                pytest.fail(f"launcher exited ({self.popen.returncode}) before printing {needle!r}:\n"
                            f"{self.stdout[-3000:]}\n{self.stderr[-3000:]}")
            if time.monotonic() > deadline:
                pytest.fail(f"no {needle!r} within {timeout} s:\n{self.stdout[-3000:]}\n"
                            f"{self.stderr[-3000:]}")
            time.sleep(0.1)

    def wait(self, timeout: float = LAUNCH_TIMEOUT) -> int:
        return self.popen.wait(timeout=timeout)

    def describe(self) -> str:
        return f"exit {self.popen.returncode}\n--- stdout\n{self.stdout[-4000:]}\n--- stderr\n{self.stderr[-4000:]}"

    def cleanup(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        # Last resort so one failing test cannot leave servers behind for the others.
        for proc in processes_mentioning(str(self.tmp_path)):
            try:
                proc.kill()
            except psutil.Error:
                pass


@pytest.fixture
def launcher(tmp_path):
    """``launcher(args, env=None)`` starts ``bgl launch ARGS`` in tmp_path; all are cleaned up."""
    started: list[Launcher] = []

    def start(args: list[str], env: dict | None = None) -> Launcher:
        started.append(Launcher([str(a) for a in args], tmp_path, env))
        return started[-1]

    yield start
    for launched in started:
        launched.cleanup()


@pytest.fixture
def orphans(tmp_path):
    """``orphans()`` -> processes still alive that mention this test's tmp path (waits a bit,
    since processes killed a moment ago may still be exiting)."""
    def scan(timeout: float = 5.0) -> list[str]:
        deadline = time.monotonic() + timeout
        while True:
            left = processes_mentioning(str(tmp_path))
            if not left or time.monotonic() > deadline:
                out = []
                for p in left:
                    try:
                        out.append(f"{p.pid} {' '.join(p.cmdline())}")
                    except psutil.Error:
                        pass
                return out
            time.sleep(0.1)
    return scan


# Written into each test's tmp dir; a plain script with no launcher-specific code
# beyond reading BGL_SERVERS (which bgl.DataLoader would read for it).
TRAINER = textwrap.dedent("""
    import os, sys, time
    import torch
    import torch.distributed as dist
    from bgl.sampler import SamplingClient

    mode = sys.argv[1]
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    with SamplingClient(os.environ["BGL_SERVERS"], timeout=5.0) as client:
        seeds = torch.arange(rank, client.num_nodes, world)[:32]
        blocks = client.sample_blocks(seeds, [4, 4], seed=rank)
        feats = client.fetch_features(blocks[0].src_ids)
        assert torch.equal(blocks[-1].dst_ids, seeds)
        total = torch.tensor([len(seeds)])
        dist.all_reduce(total)
        print(f"rank {rank}/{world} inputs={blocks[0].num_src} feat={tuple(feats.shape)} "
              f"seeds_all_ranks={int(total)} parts={os.path.basename(os.environ['BGL_PARTITION'])}",
              flush=True)
        if mode == "fail":
            sys.exit(5)
        if mode == "loop":
            print(f"ready {rank}", flush=True)
            deadline = time.time() + 90
            while time.time() < deadline:
                client.sample_blocks(seeds, [4, 4])
                time.sleep(0.05)
            sys.exit(3)  # nobody stopped us: the test will fail on this code
    dist.destroy_process_group()
""")


@pytest.fixture
def trainer_script(tmp_path) -> Path:
    """TRAINER written into this test's tmp dir; run it with argument "finish", "fail" or "loop"."""
    path = tmp_path / "trainer.py"
    path.write_text(TRAINER)
    return path
