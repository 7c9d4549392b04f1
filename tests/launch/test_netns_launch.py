"""``bgl launch --backend ssh`` across real separate hosts: Linux network namespaces.

Three namespaces made by the test, joined by a bridge that lives inside the
first one (nothing is added to the machine's own network namespace):

* ``L`` (10.77.0.1) runs the launcher, like a login node;
* ``A`` (10.77.0.2) and ``B`` (10.77.0.3) are the hosts of the hosts file, each
  with its own sshd; each runs one graph server (bound to its own address,
  CURVE on) and one trainer.

They share the filesystem (same venv and workdir paths, as DistDGL assumes)
but not the network: a process in A reaches B only over the bridge, through
the addresses in the hosts file.  Needs root and ``ip`` (iproute2); skips
saying why otherwise.  Teardown always kills the sshds and deletes the
namespaces, and fails the test if a namespace survives.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from .conftest import require_namespaces

SUBNET = "10.77.0"
LAUNCHER_IP, HOST_IPS = f"{SUBNET}.1", (f"{SUBNET}.2", f"{SUBNET}.3")
PORT_BASE = 30050  # free by construction: the namespaces are new and empty


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Run ``ip ARGS``; on failure (with ``check``) raise with its stderr."""
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done


def netns_pids(ns: str) -> list[int]:
    """Pids of the processes in namespace ``ns`` (empty if it is gone)."""
    done = ip("netns", "pids", ns, check=False)
    return [int(p) for p in done.stdout.split()] if done.returncode == 0 else []


def kill_namespace_processes(ns: str) -> None:
    """SIGKILL every process in ``ns`` until none is left (bounded: 50 sweeps)."""
    for _ in range(50):
        pids = netns_pids(ns)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)
    raise RuntimeError(f"processes {netns_pids(ns)} in namespace {ns} survive SIGKILL")


def listening_ports(ns: str) -> set[int]:
    """TCP ports something listens on inside namespace ``ns``."""
    done = subprocess.run(["ip", "netns", "exec", ns, "ss", "-Htln"], capture_output=True, text=True,
                          timeout=30, check=True)
    return {int(line.split()[3].rsplit(":", 1)[1]) for line in done.stdout.splitlines() if line.strip()}


def build_network(names: dict[str, str]) -> None:
    """A bridge inside L holding L's address, and a veth from it into A and into B."""
    lns = names["L"]
    ip("-n", lns, "link", "add", "br0", "type", "bridge")
    ip("-n", lns, "addr", "add", f"{LAUNCHER_IP}/24", "dev", "br0")
    ip("-n", lns, "link", "set", "br0", "up")
    for key, addr in zip("AB", HOST_IPS):
        ns = names[key]
        # the veth pair is created inside L with its peer moved straight into the host namespace
        ip("-n", lns, "link", "add", f"v{key}", "type", "veth", "peer", "name", "eth0", "netns", ns)
        ip("-n", lns, "link", "set", f"v{key}", "master", "br0", "up")
        ip("-n", ns, "addr", "add", f"{addr}/24", "dev", "eth0")
        ip("-n", ns, "link", "set", "eth0", "up")


@pytest.fixture
def cluster(ssh_keys, sshd_tools, tmp_path):
    """Namespaces L, A, B on a bridge, an sshd in A and B; yields names, hosts file and ssh options."""
    require_namespaces()
    tag = f"bgl{os.getpid()}x{time.monotonic_ns() % 10**6}"
    names = {"L": f"{tag}L", "A": f"{tag}A", "B": f"{tag}B"}
    made: list[str] = []
    sshds: list[subprocess.Popen] = []
    try:
        for ns in names.values():
            done = ip("netns", "add", ns, check=False)
            if done.returncode != 0:
                pytest.skip(f"cannot create a network namespace: {done.stderr.strip()}")
            made.append(ns)
            ip("-n", ns, "link", "set", "lo", "up")
        try:
            build_network(names)
        except RuntimeError as e:  # e.g. a kernel without bridge or veth support
            pytest.skip(f"cannot build the namespaces' network: {e}")
        for key, addr in zip("AB", HOST_IPS):
            sshds.append(sshd_tools.spawn(ssh_keys, addr, 22, tmp_path / f"sshd-{key}.log",
                                          prefix=["ip", "netns", "exec", names[key]]))
        hosts = tmp_path / "hosts.txt"
        hosts.write_text("".join(f"{a}   # namespace {names[k]}\n" for k, a in zip("AB", HOST_IPS)))
        yield {"ns": names, "hosts": hosts, "sshds": sshds,
               "ssh_args": ["--backend", "ssh", "--ssh-port", 22, "--ssh-key", ssh_keys["key"],
                            "--ssh-option", f"UserKnownHostsFile={tmp_path / 'known_hosts'}",
                            "--ssh-remote-tmp", tmp_path]}
    finally:
        for proc in sshds:
            sshd_tools.stop(proc)
        errors = []
        for ns in made:
            try:
                kill_namespace_processes(ns)  # a launch that went wrong must not keep a namespace alive
            except RuntimeError as e:
                errors.append(str(e))
            ip("netns", "del", ns, check=False)
        left = [ns for ns in made if ns in ip("netns", "list", check=False).stdout]
        assert not left and not errors, f"namespaces left behind: {left}; {errors}"


def launch_args(cluster, partition_dir, trainer_script, tmp_path, mode: str) -> list:
    return ["--hosts", cluster["hosts"], "--partition", partition_dir, *cluster["ssh_args"],
            "--num-trainers", 1, "--port-base", PORT_BASE, "--server-threads", 1,
            "--server-timeout", 120, "--grace", 2, "--workdir", tmp_path,
            "--", "python", trainer_script, mode]


def in_namespace(cluster, key: str) -> list[str]:
    return ["ip", "netns", "exec", cluster["ns"][key]]


# gloo must use the namespace's own interface (the machine's hostname resolves elsewhere)
LAUNCH_ENV = {"GLOO_SOCKET_IFNAME": "eth0"}


def assert_only_sshd_left(cluster, orphans):
    """Nothing of the launch runs anywhere; only the fixture's sshd listens in A and B."""
    assert orphans() == []
    assert netns_pids(cluster["ns"]["L"]) == []
    for key, sshd in zip("AB", cluster["sshds"]):
        if sshd.poll() is None:
            assert netns_pids(cluster["ns"][key]) == [sshd.pid], f"processes left in namespace {key}"
            assert listening_ports(cluster["ns"][key]) == {22}, f"ports still bound in namespace {key}"
        else:
            assert netns_pids(cluster["ns"][key]) == []


def test_launch_across_namespaces(cluster, launcher, tmp_path, partition_dir, trainer_script, orphans):
    """Servers bound to each namespace's address, a trainer in each, DDP over the bridge."""
    run = launcher(launch_args(cluster, partition_dir, trainer_script, tmp_path, "finish"),
                   env=LAUNCH_ENV, prefix=in_namespace(cluster, "L"))
    assert run.wait() == 0, run.describe()
    out = run.stdout
    for rank, addr in enumerate(HOST_IPS):
        assert f"[{addr}:trainer:{rank}] rank {rank}/2 inputs=" in out, run.describe()
        assert f"[{addr}:server:{rank}]" in out and f"tcp://{addr}:{PORT_BASE}" in out, run.describe()
    assert "seeds_all_ranks=64" in out, run.describe()
    assert out.count("(CURVE, 3 allowed client key(s))") == 2, run.describe()  # launcher + 2 hosts
    assert_only_sshd_left(cluster, orphans)


@pytest.mark.extended
def test_lost_host_stops_the_launch(cluster, launcher, tmp_path, partition_dir, trainer_script, orphans):
    """Every process of host B (its sshd too) is killed mid-epoch: the launcher names B, exits
    non-zero within 10 s and leaves nothing running anywhere."""
    run = launcher(launch_args(cluster, partition_dir, trainer_script, tmp_path, "loop"),
                   env=LAUNCH_ENV, prefix=in_namespace(cluster, "L"))
    run.wait_for_output("ready 0")
    run.wait_for_output("ready 1")
    kill_namespace_processes(cluster["ns"]["B"])
    t0 = time.monotonic()
    code = run.wait(timeout=60)
    elapsed = time.monotonic() - t0
    assert code == 1, run.describe()
    lost = HOST_IPS[1]
    assert f"bgl launch: failed: host {lost}: " in run.stderr, run.describe()
    assert elapsed < 10, f"the launcher took {elapsed:.1f} s to stop\n{run.describe()}"
    assert_only_sshd_left(cluster, orphans)
    # the lost host's agents died by SIGKILL and could not remove their run dirs (with the
    # run's keys); every other run dir is gone
    left = sorted(p.name for p in tmp_path.glob("bgl-*"))
    assert all(name.endswith(("-server1", "-node1")) for name in left), left


def _kill_trainers_in(ns: str, tmp_path: Path) -> int:
    """SIGKILL the train_sage.py workers of this test running in namespace ``ns``; how many."""
    victims = []
    for pid in netns_pids(ns):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if len(cmd) > 1 and cmd[1].endswith(b"train_sage.py") and str(tmp_path).encode() in b" ".join(cmd):
            victims.append(pid)
    for pid in victims:
        os.kill(pid, signal.SIGKILL)
    return len(victims)


@pytest.mark.extended
def test_trainers_restart_across_hosts_and_train_each_seed_once(cluster, launcher, tmp_path, orphans):
    """``--max-restarts 2`` over ssh: host B's trainer killed mid-epoch, then every trainer of host A; the
    run restarts its DDP world twice, resumes from the checkpoints and trains each seed once an epoch.

    Extended (~31 s): ``make test`` keeps the same two restarts, resume and each-seed-once check on one
    host (tests/launch/test_trainer_restarts.py) and a launch across these namespaces
    (``test_launch_across_namespaces``); this adds the restarts over ssh and a whole host's trainers."""
    import torch

    import bgl
    from bgl.partition import partition_graph

    from .test_trainer_restarts import _complete_step, _train_sage, _wait_for_step

    repo = Path(__file__).resolve().parents[2]
    store = bgl.ingest(str(repo / "data" / "cora.npz"), tmp_path / "cora")
    parts = partition_graph(store, "random", 2, tmp_path / "parts", measure_samples=False).path
    ck = tmp_path / "ck"
    run = launcher(["--hosts", cluster["hosts"], "--partition", parts, *cluster["ssh_args"], "--num-trainers", 1,
                    "--port-base", PORT_BASE, "--server-threads", 1, "--server-timeout", 120, "--grace", 3,
                    "--workdir", tmp_path, "--max-restarts", 2, "--", "python", repo / "examples" / "train_sage.py",
                    "--graph", parts, "--epochs", 2, "--batch-size", 16, "--order", "random", "--cache", "none",
                    "--checkpoint-dir", ck, "--checkpoint-every", 1, "--record-seeds"],
                   env=LAUNCH_ENV, prefix=in_namespace(cluster, "L"))
    _wait_for_step(run, ck, 3)
    assert _kill_trainers_in(cluster["ns"]["B"], tmp_path) == 1, run.describe()
    run.wait_for_output("restart 1)")
    _wait_for_step(run, ck, _complete_step(ck) + 2)
    assert _kill_trainers_in(cluster["ns"]["A"], tmp_path) == 1, run.describe()  # a whole host's trainers
    code = run.wait(timeout=240)
    assert code == 0, run.describe()
    assert "restarting the trainers (2 of 2 restarts)" in run.stderr, run.describe()
    train = set(_train_sage().load_graph_info(parts)["splits"]["train"].tolist())
    final = _complete_step(ck)
    batches = [b for r in (0, 1) for b in torch.load(ck / f"rank{r}-{final}.pt", weights_only=False)["seeds"]]
    for epoch in (0, 1):
        seen = torch.cat([ids for e, ids in batches if e == epoch]).tolist()
        assert len(seen) == len(train) and set(seen) == train, f"epoch {epoch}: {len(seen)} seeds trained"
    assert_only_sshd_left(cluster, orphans)
