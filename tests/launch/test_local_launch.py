"""``bgl launch --backend local`` end to end: real graph servers, real torchrun trainers.

Covers a server killed mid-training with no restarts allowed, Ctrl-C to the launcher, and errors
found before anything starts.  After every launch: no process mentioning
the test's tmp path survives and every port can be bound again.  A
successful local launch (2 DDP trainers) is tests/launch/test_demo.py; the
ssh test runs the trainer script below to completion.
"""
from __future__ import annotations

import re
import signal
import socket
import time

import psutil
import pytest

from bgl.launch.backends import port_is_free

def launch_args(hosts_file, partition_dir, port_base, trainers, script, *mode, extra=()):
    return ["--hosts", hosts_file, "--partition", partition_dir, "--num-trainers", trainers,
            "--num-servers-per-host", 2, "--port-base", port_base, "--server-timeout", 120,
            "--server-threads", 1, "--grace", 3, *extra, "--", "python", script, *mode]


def assert_clean(port_base, orphans):
    left = orphans()
    assert left == [], f"processes left behind: {left}"
    busy = [p for p in range(port_base, port_base + 3) if not port_is_free("127.0.0.1", p)]
    assert busy == [], f"ports still bound: {busy}"


@pytest.mark.extended
def test_failing_trainer_stops_everything(launcher, hosts_file, partition_dir, trainer_script,
                                         free_port_base, orphans):
    base = free_port_base(3)
    run = launcher(launch_args(hosts_file, partition_dir, base, 1, trainer_script, "fail"))
    assert run.wait() == 1, run.describe()
    # torchrun exits 1 when a worker fails; the launcher names the host and node.
    assert "failed: host 127.0.0.1: trainers on 127.0.0.1 (torchrun node_rank 0) exited with exit status 1" \
        in run.stderr, run.describe()
    assert "[127.0.0.1:trainer:0] rank 0/1 inputs=" in run.stdout, run.describe()
    assert_clean(base, orphans)


def test_local_backend_without_hosts_runs_on_this_machine(launcher, partition_dir, trainer_script,
                                                         free_port_base, orphans):
    """``--backend local`` needs no hosts file, as ``torchrun --standalone``: one machine on loopback,
    serving every part (2 here) without --num-servers-per-host."""
    base = free_port_base(3)
    run = launcher(["--backend", "local", "--partition", partition_dir, "--num-trainers", 2, "--port-base", base,
                    "--server-timeout", 120, "--server-threads", 1, "--grace", 3, "--", "python", trainer_script,
                    "finish"])
    assert run.wait() == 0, run.describe()
    for rank in (0, 1):
        assert f"rank {rank}/2 inputs=" in run.stdout, run.describe()
    assert_clean(base, orphans)


@pytest.mark.extended
def test_a_crash_loop_ends_with_a_lifecycle_line_that_adds_up(launcher, hosts_file, partition_dir, trainer_script,
                                                             free_port_base, orphans):
    """Trainers that die at once under ``--max-restarts 2`` (issue #56: failures were 129.6 % of the wall):
    the lifecycle line's shares add up to 100 %, each at most 100 %."""
    base = free_port_base(3)
    run = launcher(launch_args(hosts_file, partition_dir, base, 1, trainer_script, "crash",
                               extra=["--max-restarts", 2]))
    assert run.wait() != 0, run.describe()
    last = [line for line in run.stderr.splitlines() if "lifecycle: wall" in line][-1]
    shares = [float(x) for x in re.findall(r"\(([\d.]+) %\)", last)]
    assert "failures 2 " in last and "first batch none" in last, last
    assert all(0.0 <= x <= 100.0 for x in shares) and abs(sum(shares) - 100.0) <= 0.05 * len(shares), last
    assert_clean(base, orphans)


@pytest.mark.parametrize("how", [pytest.param("kill-server", marks=pytest.mark.extended), "sigint"])
def test_failure_or_ctrl_c_stops_everything(launcher, hosts_file, partition_dir, trainer_script,
                                            free_port_base, orphans, how):
    base = free_port_base(3)
    # --server-restarts 0: a dead server stops the launch (with restarts, see test_server_restart.py)
    run = launcher(launch_args(hosts_file, partition_dir, base, 1, trainer_script, "loop",
                               extra=["--server-restarts", 0]))
    run.wait_for_output("ready 0")
    if how == "kill-server":
        victims = [p for p in psutil.process_iter(["cmdline"])
                   if (p.info["cmdline"] or [])[1:3] == ["-m", "bgl.sampler.server"]
                   and str(partition_dir) in (p.info["cmdline"] or [])
                   and f"tcp://127.0.0.1:{base + 1}" in (p.info["cmdline"] or [])]
        assert len(victims) == 1, victims
        victims[0].kill()
    else:
        run.popen.send_signal(signal.SIGINT)
    t0 = time.monotonic()
    code = run.wait(timeout=60)
    elapsed = time.monotonic() - t0
    assert code != 0, run.describe()
    if how == "kill-server":
        assert f"graph server for part 1 at tcp://127.0.0.1:{base + 1} exited with exit status " \
               "137 (killed by SIGKILL) while trainers ran; it died 1 time(s) within 600 s, more than " \
               "--server-restarts 0 allows" in run.stderr, run.describe()
    else:
        assert code == 130, run.describe()
        assert "launcher received SIGINT" in run.stderr, run.describe()
    assert elapsed < 10, f"teardown took {elapsed:.1f} s\n{run.describe()}"
    assert_clean(base, orphans)


@pytest.mark.extended
def test_launcher_killed_hard_leaves_nothing_behind(launcher, hosts_file, partition_dir,
                                                    trainer_script, free_port_base, orphans):
    """SIGKILL gives the launcher no chance to clean up: its agents see their stdin close
    and tear their process trees down by themselves.  (Plaintext servers here, --no-curve:
    every other launch test runs CURVE.)"""
    base = free_port_base(3)
    run = launcher(["--no-curve", *launch_args(hosts_file, partition_dir, base, 1, trainer_script, "loop")])
    run.wait_for_output("ready 0")
    assert run.stdout.count("(plaintext)") == 2, run.describe()  # both servers, and nobody failed
    run.popen.kill()
    assert run.wait(timeout=10) == -signal.SIGKILL
    left = orphans(timeout=20)  # the agents' grace (3 s) plus their SIGKILL sweep
    assert left == [], f"processes left behind: {left}"
    assert all(port_is_free("127.0.0.1", p) for p in range(base, base + 3))


def run_cli(args) -> int:
    from bgl.cli import main

    return main(["launch", *[str(a) for a in args]])


def test_bad_hosts_fail_before_anything_starts(tmp_path, partition_dir, trainer_script,
                                                free_port_base, orphans, capsys):
    base = free_port_base(3)
    cases = {
        "bad-ip": ("127.0.0.1\n10.0.0.999\n", [], "hosts.txt:2: '10.0.0.999' is not an IP address"),
        "bad-port": ("127.0.0.1 99999\n", [], "hosts.txt:1: port must be in 1..65535, got 99999"),
        "empty": ("# nothing\n", [], "no hosts"),
        "not-local": ("127.0.0.1\n192.0.2.1\n", [],
                      "host 192.0.2.1 (hosts file line 2) is not an address of this machine"),
        "unreachable-ssh": ("192.0.2.1\n", ["--backend", "ssh", "--ssh-port", "22",
                                            "--ssh-connect-timeout", "2"],
                            "host 192.0.2.1 (hosts file line 1): cannot reach ssh port 22"),
        "no-partition": ("127.0.0.1\n", [], "partition.json: missing"),
        "bad-restarts": ("127.0.0.1\n", ["--server-restarts", "-1"], "--server-restarts must be >= 0, got -1"),
        "bad-window": ("127.0.0.1\n", ["--server-restart-window", "0"],
                       "--server-restart-window must be > 0, got 0"),
        "bad-ping": ("127.0.0.1\n", ["--server-ping-interval", "-2"], "--server-ping-interval must be > 0, got -2"),
        "bad-hang": ("127.0.0.1\n", ["--server-hang-timeout", "0"], "--server-hang-timeout must be > 0, got 0"),
        "plaintext-remote": ("127.0.0.1\n192.0.2.1\n", ["--no-curve", "--dry-run"],
                             "--no-curve (plaintext graph servers) is for loopback hosts only; 192.0.2.1"),
    }
    for name, (text, extra, needle) in cases.items():
        hosts = tmp_path / name / "hosts.txt"
        hosts.parent.mkdir()
        hosts.write_text(text)
        parts = tmp_path / "nowhere" if name == "no-partition" else partition_dir
        code = run_cli(["--hosts", hosts, "--partition", parts, "--num-servers-per-host", 2,
                        "--port-base", base, *extra, "--", "python", trainer_script, "finish"])
        out, err = capsys.readouterr()
        assert code == 1, f"{name}: {out}{err}"
        assert needle in err, f"{name}: {err}"
        assert "[127.0.0.1:" not in out, f"{name}: something started\n{out}"
    assert orphans(timeout=0) == []


def test_bad_counts_ports_and_a_missing_script_fail_before_anything_starts(
        tmp_path, hosts_file, partition_dir, trainer_script, free_port_base, orphans, capsys):
    """``--num-trainers 0`` used to run one trainer, a port past 65535 to wrap, and a missing script
    to surface as torchrun's traceback after every server had started (issue #44)."""
    base = free_port_base(3)
    usage = {  # argparse refuses these: exit 2, one line naming the flag and the value
        "--num-trainers 0": (["--num-trainers", 0], "argument --num-trainers: must be >= 1, got 0"),
        "--num-trainers -1": (["--num-trainers", -1], "argument --num-trainers: must be >= 1, got -1"),
        "servers-per-host 0": (["--num-servers-per-host", 0], "must be >= 1, got 0"),
        "server-threads 0": (["--server-threads", 0], "argument --server-threads: must be >= 1, got 0"),
        "server-timeout 0": (["--server-timeout", 0], "argument --server-timeout: must be > 0, got 0"),
        "grace -1": (["--grace", -1], "argument --grace: must be >= 0, got -1"),
        "port-base 99999": (["--port-base", 99999], "argument --port-base: port must be in 1..65535, got 99999"),
        "master-port 0": (["--master-port", 0], "argument --master-port: port must be in 1..65535, got 0"),
    }
    for name, (extra, needle) in usage.items():
        code = run_cli(["--hosts", hosts_file, "--partition", partition_dir, "--port-base", base, *extra,
                        "--", "python", trainer_script, "finish"])
        out, err = capsys.readouterr()
        assert code == 2 and needle in err and len(err.splitlines()) == 1, f"{name}: {code} {out}{err}"
    missing = {
        "script": (["python", "-u", "no_such_train.py"], f"training script no_such_train.py not found (in {tmp_path})"),
        "absolute": (["python", str(tmp_path / "gone.py")], f"training script {tmp_path / 'gone.py'} not found;"),
        "program": (["no-such-trainer-program"], "training program 'no-such-trainer-program' is not on PATH"),
    }
    for name, (command, needle) in missing.items():
        code = run_cli(["--hosts", hosts_file, "--partition", partition_dir, "--port-base", base,
                        "--workdir", tmp_path, "--", *command])
        out, err = capsys.readouterr()
        assert code == 1 and needle in err and "nothing was started" in err, f"{name}: {out}{err}"
        assert len(err.splitlines()) == 1 and "[127.0.0.1:" not in out, f"{name}: something started\n{out}{err}"
    assert orphans(timeout=0) == []


def test_port_in_use_fails_before_anything_starts(hosts_file, partition_dir, trainer_script,
                                                  free_port_base, orphans, capsys):
    base = free_port_base(3)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", base + 1))
        busy.listen()
        code = run_cli(launch_args(hosts_file, partition_dir, base, 1, trainer_script, "finish"))
    assert code == 1
    assert f"port {base + 1} on 127.0.0.1 (graph server for part 1) is already in use" in \
        capsys.readouterr().err
    assert orphans(timeout=0) == []


# 17 s a run; co-located reads stay in make test: tests/sampler/test_colocated.py, test_spec.py, the demo
@pytest.mark.extended
@pytest.mark.parametrize("local_reads", [True, False])
def test_each_trainer_reads_the_part_served_on_its_own_host(launcher, tmp_path, partition_dir, trainer_script,
                                                           free_port_base, orphans, local_reads):
    """Two loopback "machines": part k's server and node k's trainer on 127.0.0.(k+1); the trainer's
    client reads its own host's part from the files (BGL_LOCAL_PARTS), unless --no-local-reads."""
    hosts = tmp_path / "two-hosts.txt"
    hosts.write_text("127.0.0.1\n127.0.0.2\n")
    base = free_port_base(3)
    args = ["--hosts", hosts, "--partition", partition_dir, "--num-trainers", 1, "--num-servers-per-host", 1,
            "--port-base", base, "--server-timeout", 120, "--server-threads", 1, "--grace", 3,
            *([] if local_reads else ["--no-local-reads"]), "--", "python", trainer_script, "ok"]
    run = launcher(args)
    assert run.wait() == 0, run.describe()
    for rank, ip in ((0, "127.0.0.1"), (1, "127.0.0.2")):
        local = f"tcp://{ip}:{base}" if local_reads else "-"
        assert f"[{ip}:trainer:{rank}] rank {rank}/2 inputs=" in run.stdout, run.describe()
        line = next(x for x in run.stdout.splitlines() if x.startswith(f"[{ip}:trainer:{rank}] rank {rank}/2"))
        assert line.endswith(f"local={local}"), run.describe()
    assert_clean(base, orphans)
