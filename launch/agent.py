"""Per-process launch agent: runs one command and guarantees its teardown.

Every process the launcher starts (locally or over ssh) runs as::

    python -m bgl.launch.agent --tmpdir DIR --grace S -- CMD ...

The agent

* reads ``KEY=VALUE`` lines from stdin up to an empty line and adds them
  to the command's environment -- secrets (the SHUTDOWN token) travel
  this way, never on a command line where ``ps`` would show them;
* writes the CURVE keys it received that way (``BGL_CURVE_KEYS``) as key
  files, mode 0600, in ``DIR/curve`` and points ``BGL_CURVE_DIR`` there
  (so they live exactly as long as the run, in its private directory);
* starts ``CMD`` in its own session/process group with stdin from
  ``/dev/null`` and stdout/stderr inherited (so they reach the launcher);
* keeps reading stdin: end-of-file means the launcher closed the pipe,
  was killed, or its ssh connection dropped, and the agent tears the
  command down.  SIGTERM/SIGINT/SIGHUP to the agent (the ssh "kill
  command" reads the agent's pid from ``DIR/agent.pid``) do the same;
* tears down = SIGTERM to the command's process group *and* to every
  descendant (``torch.distributed.run`` puts its workers in sessions of
  their own, so the group alone is not enough), SIGKILL to whatever is
  left after ``--grace`` seconds, and a final sweep for processes that
  carry this agent's marker in their environment (orphans whose parent
  died first);
* exits with the command's exit status (``128 + signal`` if it was
  killed) and removes ``DIR``.

It imports nothing heavy (no torch, no zmq), so it starts fast.
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import psutil

from bgl.sampler import curve_keys

# Each agent marks its command's environment with a unique value of this variable.
ENV_AGENT_MARK = "BGL_AGENT_MARK"
PIDFILE_NAME = "agent.pid"


def exit_status(returncode: int) -> int:
    """Popen's returncode as a shell exit status (-9 -> 137)."""
    return 128 - returncode if returncode < 0 else returncode


def marked_processes(mark: str) -> list[psutil.Process]:
    """Live processes whose environment has ``BGL_AGENT_MARK=mark``."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.pid != os.getpid() and proc.environ().get(ENV_AGENT_MARK) == mark:
                found.append(proc)
        except (psutil.Error, OSError):
            continue  # vanished, a kernel thread, or another user's process
    return found


def tree_of(pid: int) -> list[psutil.Process]:
    """``pid`` and all its descendants that are alive now."""
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def terminate(child: subprocess.Popen, others: list[psutil.Process], grace: float) -> None:
    """SIGTERM ``child``'s group and ``others``, wait ``grace`` s, then SIGKILL what is left.

    ``child`` is waited on through Popen so its exit status is kept (psutil
    would reap it and Popen would then report 0).
    """
    def signal_all(sig: int, targets: list[psutil.Process]) -> None:
        try:
            os.killpg(child.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        for p in targets:
            try:
                p.send_signal(sig)
            except psutil.Error:
                pass

    deadline = time.monotonic() + grace
    signal_all(signal.SIGTERM, others)
    try:
        child.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    _, alive = psutil.wait_procs(others, timeout=max(0.0, deadline - time.monotonic()))
    if alive or child.poll() is None:
        signal_all(signal.SIGKILL, alive)
        psutil.wait_procs(alive, timeout=5)


def read_env_block(stream) -> dict[str, str]:
    """``KEY=VALUE`` lines up to an empty line (or EOF)."""
    env = {}
    for raw in stream:
        line = raw.rstrip("\n")
        if not line:
            break
        key, sep, value = line.partition("=")
        if not sep or not key:
            raise SystemExit(f"bgl-agent: bad environment line on stdin: {key!r}")
        env[key] = value
    return env


def run_agent(cmd: list[str], tmpdir: Path, grace: float) -> int:
    """Run ``cmd`` under supervision (see module docstring); returns its exit status."""
    tmpdir.mkdir(mode=0o700, parents=True, exist_ok=True)
    (tmpdir / PIDFILE_NAME).write_text(f"{os.getpid()}\n")
    stop = threading.Event()
    try:
        env = {**os.environ, **read_env_block(sys.stdin)}
        bundle = env.pop(curve_keys.ENV_CURVE_KEYS, None)
        if bundle:
            try:
                env[curve_keys.ENV_CURVE_DIR] = str(curve_keys.materialize_bundle(bundle, tmpdir / "curve"))
            except (curve_keys.CurveKeyError, OSError) as e:
                print(f"bgl-agent: cannot write the CURVE keys: {e}", file=sys.stderr, flush=True)
                return 2
        mark = uuid.uuid4().hex
        env[ENV_AGENT_MARK] = mark
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, lambda *_: stop.set())

        def watch_stdin() -> None:
            # Blocks until the launcher (or ssh) closes our stdin.
            for _ in sys.stdin:
                pass
            stop.set()

        try:
            child = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        except OSError as e:
            print(f"bgl-agent: cannot start {cmd[0]!r}: {e}", file=sys.stderr, flush=True)
            return 127
        threading.Thread(target=watch_stdin, daemon=True).start()
        while child.poll() is None:
            if stop.wait(0.2):
                terminate(child, tree_of(child.pid)[1:], grace)
                break
        returncode = child.wait()
        # Sweep strays: processes of this command left behind after it ended.
        leftovers = marked_processes(mark)
        if leftovers:
            terminate(child, leftovers, min(grace, 2.0))
        return exit_status(returncode)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """``python -m bgl.launch.agent --tmpdir DIR --grace S -- CMD ...``; returns the command's exit status."""
    parser = argparse.ArgumentParser(prog="python -m bgl.launch.agent",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--tmpdir", required=True, help="private dir, removed at exit")
    parser.add_argument("--grace", type=float, default=5.0,
                        help="seconds between SIGTERM and SIGKILL on teardown")
    parser.add_argument("cmd", nargs=argparse.REMAINDER, help="-- command ...")
    args = parser.parse_args(argv)
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        parser.error("no command given after --")
    return run_agent(cmd, Path(args.tmpdir), args.grace)


if __name__ == "__main__":
    sys.exit(main())
