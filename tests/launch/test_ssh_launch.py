"""``bgl launch --backend ssh`` for real: a throwaway sshd on 127.0.0.1 with temporary keys.

sshd comes from Debian's openssh-server; ``.ci/setup-sshd.sh`` installs it when
missing (CI runs as root with network).  The test skips, saying why, only if
that install is impossible.
"""
from __future__ import annotations

import os
import signal
import sys
import textwrap

import psutil
import pytest

from bgl.launch.backends import SshBackend, port_is_free
from bgl.launch.hosts import Host
from bgl.launch.spec import build_cluster_spec


@pytest.fixture(scope="module")
def sshd(free_port, ssh_keys, sshd_tools, tmp_path_factory):
    """A private sshd on 127.0.0.1:PORT accepting one throwaway key; yields ssh CLI options."""
    port = free_port()
    proc = sshd_tools.spawn(ssh_keys, "127.0.0.1", port, tmp_path_factory.mktemp("sshd") / "sshd.log")
    try:
        yield {"port": port, "key": ssh_keys["key"], "known_hosts": ssh_keys["known_hosts"],
               "dir": ssh_keys["dir"]}
    finally:
        sshd_tools.stop(proc)


def ssh_backend(sshd, grace=2.0) -> SshBackend:
    return SshBackend(grace=grace, ssh_port=sshd["port"], ssh_key=sshd["key"],
                      extra_options=(f"UserKnownHostsFile={sshd['known_hosts']}",))


def test_ssh_launch_end_to_end(sshd, launcher, tmp_path, partition_dir, trainer_script,
                               free_port_base, orphans):
    """2 servers + 2 DDP trainers through ssh; servers stop on the SHUTDOWN token."""
    hosts = tmp_path / "hosts.txt"
    hosts.write_text("127.0.0.1  # this machine, reached through sshd\n")
    base = free_port_base(3)
    run = launcher(["--hosts", hosts, "--partition", partition_dir, "--backend", "ssh",
                    "--ssh-port", sshd["port"], "--ssh-key", sshd["key"],
                    "--ssh-option", f"UserKnownHostsFile={sshd['known_hosts']}",
                    "--num-servers-per-host", 2, "--num-trainers", 2, "--port-base", base,
                    "--server-threads", 1, "--server-timeout", 120, "--grace", 3,
                    "--workdir", tmp_path, "--", "python", trainer_script, "finish"])
    assert run.wait() == 0, run.describe()
    out = run.stdout
    # Each worker's lines carry its global rank; DDP all_reduce saw both ranks' seeds.
    for rank in (0, 1):
        assert f"[127.0.0.1:trainer:{rank}] rank {rank}/2 inputs=" in out, run.describe()
    assert "seeds_all_ranks=64 parts=parts" in out, run.describe()
    assert "[127.0.0.1:server:0]" in out and "[127.0.0.1:server:1]" in out
    assert "SHUTDOWN" not in run.stderr, run.describe()  # servers stopped on the token
    assert orphans() == []
    assert all(port_is_free("127.0.0.1", p) for p in range(base, base + 3))


# A remote command whose tree includes a grandchild in its own session (like torchrun workers).
TREE = textwrap.dedent("""
    import subprocess, sys, time
    kid = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", sys.argv[1]],
                           start_new_session=True)
    print("tree up", kid.pid, flush=True)
    time.sleep(120)
""")


@pytest.mark.parametrize("how", ["kill-ssh-client", "kill-command", "close-stdin"])
def test_remote_process_group_is_torn_down(sshd, tmp_path, orphans, how):
    script = tmp_path / "tree.py"
    script.write_text(TREE)
    backend = ssh_backend(sshd)
    spec = build_cluster_spec([Host("127.0.0.1", line=1)], tmp_path, 1, ["unused"],
                              workdir=tmp_path)
    backend.preflight(spec)
    proc = backend.start(f"test-{os.getpid()}-{how}", Host("127.0.0.1", line=1),
                         [sys.executable, str(script), str(tmp_path)], {}, {"SECRET": "x"}, spec)
    try:
        line = proc.popen.stdout.readline()
        assert line.startswith(b"tree up"), line
        assert len(orphans(timeout=0)) >= 2  # the command and its grandchild are running
        if how == "kill-ssh-client":
            proc.popen.send_signal(signal.SIGKILL)  # the connection drops: remote stdin EOF
        elif how == "kill-command":
            backend.kill_remote(proc)  # over a second connection; the client exits by itself
        else:
            backend.stop(proc)
        status = proc.popen.wait(timeout=30)
        if how != "kill-ssh-client":
            assert status == 128 + signal.SIGTERM  # the remote command died of the agent's SIGTERM
        assert orphans(timeout=15) == []
    finally:
        if proc.popen.poll() is None:
            proc.popen.kill()
        proc.popen.wait()
        for p in psutil.process_iter(["cmdline"]):
            if any(str(tmp_path) in a for a in p.info["cmdline"] or ()):
                p.kill()
