"""Fixtures for launch tests: a small 2-part partition, free ports, a launcher runner,
and an orphan scan.  Every launcher and every process it starts is cleaned up."""
from __future__ import annotations

import os
import random
import shutil
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
REPO = Path(__file__).resolve().parents[2]
SSHD = "/usr/sbin/sshd"


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


@pytest.fixture
def hosts_file(tmp_path):
    """A hosts file naming only 127.0.0.1."""
    path = tmp_path / "hosts.txt"
    path.write_text("# this machine\n127.0.0.1\n")
    return path


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
    """``free_port_base(count)`` -> a port P with P..P+count-1 free on 127.0.0.1 now.

    Drawn below the kernel's ephemeral range: a port in that range can be handed to some
    outgoing connection (a client, a rendezvous) between this probe and the server's bind,
    which made a launch test fail once with "Address already in use".
    """
    try:
        ephemeral_low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        ephemeral_low = 32768  # Linux's default

    def find(count: int = 4) -> int:
        rng = random.Random()
        high = max(10000 + count, ephemeral_low - count)
        for _ in range(200):
            start = rng.randrange(10000, high)
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

    def __init__(self, args: list[str], tmp_path: Path, env: dict | None = None,
                 prefix: list[str] = ()):
        self.out_path = tmp_path / "launcher.out"
        self.err_path = tmp_path / "launcher.err"
        self.tmp_path = tmp_path
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.popen = subprocess.Popen(
                [*prefix, sys.executable, "-m", "bgl", "launch", *args], stdout=out, stderr=err,
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
    """``launcher(args, env=None, prefix=())`` starts ``[*prefix] bgl launch ARGS`` in tmp_path
    (``prefix`` e.g. ``ip netns exec NS``); all are cleaned up."""
    started: list[Launcher] = []

    def start(args: list[str], env: dict | None = None, prefix: list[str] = ()) -> Launcher:
        started.append(Launcher([str(a) for a in args], tmp_path, env, list(prefix)))
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
              f"seeds_all_ranks={int(total)} parts={os.path.basename(os.environ['BGL_PARTITION'])} "
              f"local={','.join(client.local_servers) or '-'}",
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


# ------------------------------------------------------------------------- sshd
def ensure_sshd() -> None:
    """Install openssh-server through .ci/setup-sshd.sh if needed; skip, saying why, if impossible."""
    if os.path.exists(SSHD) and shutil.which("ssh") and shutil.which("ssh-keygen"):
        return
    setup = REPO / ".ci" / "setup-sshd.sh"
    done = subprocess.run(["bash", str(setup)], capture_output=True, text=True, timeout=600)
    if done.returncode != 0 or not os.path.exists(SSHD):
        pytest.skip(f"openssh-server is not installed and {setup} could not install it: "
                    f"{(done.stderr or done.stdout).strip()[-500:]}")


@pytest.fixture(scope="session")
def ssh_keys(tmp_path_factory) -> dict:
    """Throwaway sshd host key and client key (authorized) in one dir:
    ``{"dir", "host_key", "key", "authorized_keys", "known_hosts"}``."""
    ensure_sshd()
    d = tmp_path_factory.mktemp("sshkeys")
    for name in ("host_key", "client_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / name)],
                       check=True, timeout=60)
    (d / "authorized_keys").write_text((d / "client_key.pub").read_text())
    os.chmod(d / "authorized_keys", 0o600)
    return {"dir": d, "host_key": str(d / "host_key"), "key": str(d / "client_key"),
            "authorized_keys": str(d / "authorized_keys"), "known_hosts": str(d / "known_hosts")}


def spawn_sshd(keys: dict, listen: str, port: int, log_path: Path,
               prefix: list[str] = ()) -> subprocess.Popen:
    """A private sshd on ``listen:port`` (under ``prefix``, e.g. ``ip netns exec NS``) accepting
    ``keys``' client key; returns once it accepts connections (skips if it never does).

    The connect check runs under the same prefix, so it works inside a namespace too.
    """
    os.makedirs("/run/sshd", exist_ok=True)  # privilege-separation dir sshd insists on
    log = open(log_path, "wb")
    proc = subprocess.Popen(
        [*prefix, SSHD, "-D", "-e", "-f", "/dev/null", "-p", str(port), "-h", keys["host_key"],
         "-o", f"ListenAddress={listen}", "-o", f"AuthorizedKeysFile={keys['authorized_keys']}",
         "-o", "StrictModes=no", "-o", "PasswordAuthentication=no", "-o", "UsePAM=no",
         "-o", "PidFile=none", "-o", "PermitRootLogin=prohibit-password"],
        stdout=subprocess.DEVNULL, stderr=log)
    log.close()
    probe = [*prefix, sys.executable, "-c",
             f"import socket; socket.create_connection(({listen!r}, {port}), timeout=1).close()"]
    deadline = time.monotonic() + 30
    while subprocess.run(probe, capture_output=True, timeout=30).returncode != 0:
        if proc.poll() is not None or time.monotonic() > deadline:
            stop_process(proc)
            pytest.skip(f"sshd on {listen}:{port} did not start: {log_path.read_text()[-500:]}")
        time.sleep(0.2)
    return proc


def stop_process(proc: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL after 10 s; always reaped."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class SshdTools:
    """What test modules need to run their own sshd (conftest functions are not importable)."""

    spawn = staticmethod(spawn_sshd)
    stop = staticmethod(stop_process)


@pytest.fixture(scope="session")
def sshd_tools() -> type[SshdTools]:
    """``sshd_tools.spawn(ssh_keys, listen, port, log_path, prefix=())`` and ``sshd_tools.stop(proc)``."""
    return SshdTools
