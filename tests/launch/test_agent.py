"""The per-process agent: secrets via stdin, teardown of the whole tree on EOF or SIGTERM."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

# A command that leaves a grandchild in a session of its own, like torchrun's workers.
TREE_SCRIPT = textwrap.dedent("""
    import os, subprocess, sys, time
    out = sys.argv[1]
    kid = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"],
                           start_new_session=True)
    with open(out + ".tmp", "w") as f:
        f.write(f"{os.getpid()} {kid.pid} {os.environ.get('SECRET_X', '')}")
    os.rename(out + ".tmp", out)
    time.sleep(120)
""")


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def start_agent(tmp_path, grace="2"):
    script = tmp_path / "tree.py"
    script.write_text(TREE_SCRIPT)
    out = tmp_path / "pids.txt"
    agent = subprocess.Popen(
        [sys.executable, "-m", "bgl.launch.agent", "--tmpdir", str(tmp_path / "agentdir"),
         "--grace", grace, "--", sys.executable, str(script), str(out)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    agent.stdin.write(b"SECRET_X=s3cr3t\n\n")
    agent.stdin.flush()
    deadline = time.monotonic() + 30
    while not out.exists():
        assert agent.poll() is None, agent.stdout.read()
        assert time.monotonic() < deadline, "command did not start"
        time.sleep(0.05)
    parent, kid, secret = out.read_text().split()
    return agent, int(parent), int(kid), secret


def wait_gone(pids, timeout=15):
    deadline = time.monotonic() + timeout
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


@pytest.mark.parametrize("how", ["close-stdin", "sigterm"])
def test_teardown_kills_the_whole_tree(tmp_path, how):
    agent, parent, kid, secret = start_agent(tmp_path)
    try:
        assert secret == "s3cr3t"
        # The secret is in the command's environment, not in anyone's argv.
        assert not any("s3cr3t" in " ".join(p.cmdline()) for p in
                       (psutil.Process(agent.pid), psutil.Process(parent)))
        assert (tmp_path / "agentdir" / "agent.pid").read_text().strip() == str(agent.pid)
        if how == "close-stdin":
            agent.stdin.close()
        else:
            agent.send_signal(signal.SIGTERM)
        status = agent.wait(timeout=20)
        assert status == 128 + signal.SIGTERM  # the command died of our SIGTERM
        assert wait_gone([parent, kid]) == []
        assert not (tmp_path / "agentdir").exists()
    finally:
        for pid in (parent, kid):
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        if agent.poll() is None:
            agent.kill()
        agent.wait()


def test_exit_status_is_passed_through(tmp_path):
    agent = subprocess.Popen(
        [sys.executable, "-m", "bgl.launch.agent", "--tmpdir", str(tmp_path / "d"), "--",
         sys.executable, "-c", "import os, sys; print(os.environ['K']); sys.exit(3)"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        agent.stdin.write(b"K=hello\n\n")
        agent.stdin.flush()  # and keep stdin open: EOF would mean "stop"
        out = agent.stdout.read()
        assert agent.wait(timeout=60) == 3
        assert out.strip() == b"hello"
    finally:
        if agent.poll() is None:
            agent.kill()
        agent.wait()


def test_local_backend_removes_a_killed_agents_private_dir(tmp_path, monkeypatch):
    """An agent killed by SIGKILL cannot remove its dir (which holds CURVE secrets); the local
    backend's ``forget`` does, once the agent is gone, and never while it runs."""
    import tempfile

    from bgl.launch.backends import Launched, LocalBackend, spawn_agent

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    backend = LocalBackend(grace=1.0)
    tmpdir = backend.tmpdir_for("test-forget")
    assert tmpdir.startswith(str(tmp_path))
    popen = spawn_agent([sys.executable, "-m", "bgl.launch.agent", "--tmpdir", tmpdir, "--",
                         sys.executable, "-c", "import time; time.sleep(60)"], None, None, {})
    proc = Launched(name="test-forget", host=None, popen=popen, tmpdir=tmpdir)
    kids = []
    try:
        deadline = time.monotonic() + 30
        while not os.path.exists(os.path.join(tmpdir, "agent.pid")) and time.monotonic() < deadline:
            time.sleep(0.05)
        backend.forget(proc)  # still running: kept
        assert os.path.isdir(tmpdir)
        kids = psutil.Process(popen.pid).children(recursive=True)
        popen.kill()
        popen.wait(timeout=10)
        assert os.path.isdir(tmpdir)  # SIGKILL: the agent could not clean up
        backend.forget(proc)
        assert not os.path.exists(tmpdir)
    finally:
        if popen.poll() is None:
            popen.kill()
        popen.wait()
        for k in kids:  # the agent's command, orphaned by the SIGKILL
            try:
                k.kill()
            except psutil.Error:
                pass
