"""Real signals during ``python -m bgl ingest``: SIGTERM cleans up, SIGKILL's leftovers go next run."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

# R-MAT 17 (2M generated edges) ingests in a few seconds; the signal lands during its CSC build.
RMAT = ["rmat:17", "--edge-factor", "16"]
TIMEOUT = 120


def start_ingest(out, source=RMAT):
    return subprocess.Popen([sys.executable, "-m", "bgl", "ingest", *source, str(out), "--no-progress"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def wait_for_scratch(proc, parent, name, kind="scratch"):
    """The run's hidden ``kind`` work dir (scratch, or the store's tmp dir), once it holds data (so the
    run is mid-build)."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"ingest ended before it could be signalled: {proc.stderr.read()}"
        for entry in os.scandir(parent):
            if entry.name.startswith(f".{name}.{kind}-") and _holds_data(entry):
                return parent / entry.name
        time.sleep(0.05)
    raise AssertionError("no scratch dir appeared")


def _holds_data(entry):
    """A directory with something in it; the run's lock file (and the ``.lock.new`` it is renamed from, which
    can vanish between listing and looking) is not one."""
    try:
        return entry.is_dir(follow_symlinks=False) and any(os.scandir(entry.path))
    except FileNotFoundError:
        return False


def leftovers(parent):
    return sorted(p for p in os.listdir(parent) if p.startswith("."))


def test_sigterm_removes_scratch_and_exits_nonzero(tmp_path):
    proc = start_ingest(tmp_path / "r")
    scratch = wait_for_scratch(proc, tmp_path, "r")
    assert str(proc.pid) in scratch.name  # which run a leftover belongs to
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 128 + signal.SIGTERM
    assert err.splitlines()[-1] == "bgl ingest: error: terminated by SIGTERM; its partial output was removed"
    assert "Traceback" not in err
    assert os.listdir(tmp_path) == []


def test_sigterm_during_a_typed_build_leaves_no_half_written_store(tmp_path):
    """The typed writer appends indices straight into the store's tmp dir: SIGTERM removes it whole."""
    proc = start_ingest(tmp_path / "r", ["rmat-hetero:16", "--add-reverse"])
    wait_for_scratch(proc, tmp_path, "r", kind="tmp")
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert err.splitlines()[-1] == "bgl ingest: error: terminated by SIGTERM; its partial output was removed"
    assert os.listdir(tmp_path) == []


def test_sigkill_leftovers_are_removed_by_the_next_run_but_a_live_runs_are_not(tmp_path):
    killed = start_ingest(tmp_path / "r")
    dead_scratch = wait_for_scratch(killed, tmp_path, "r")
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=TIMEOUT)
    assert dead_scratch.is_dir() and leftovers(tmp_path)  # what SIGKILL leaves

    live = start_ingest(tmp_path / "live")
    try:
        live_scratch = wait_for_scratch(live, tmp_path, "live")
        live.send_signal(signal.SIGSTOP)  # alive (its lock held) but frozen mid-build while the next run cleans
        (tmp_path / "g.txt").write_text("0 1\n1 2\n")
        r = subprocess.run([sys.executable, "-m", "bgl", "ingest", str(tmp_path / "g.txt"), str(tmp_path / "s"),
                            "--no-progress"], capture_output=True, text=True, timeout=TIMEOUT)
        assert r.returncode == 0, r.stderr
        assert not dead_scratch.exists()
        assert not [p for p in leftovers(tmp_path) if f"-{killed.pid}-" in p]  # its lock file too
        assert live_scratch.is_dir() and any(os.scandir(live_scratch))  # a live run's is never touched
        assert live.poll() is None
    finally:
        live.send_signal(signal.SIGTERM)
        live.send_signal(signal.SIGCONT)
        live.communicate(timeout=TIMEOUT)
    assert live.returncode == 128 + signal.SIGTERM
    assert sorted(os.listdir(tmp_path)) == ["g.txt", "s"]


def test_sigterm_handler_is_restored_after_an_in_process_run(tmp_path, capsys):
    from bgl.cli import main

    (tmp_path / "g.txt").write_text("0 1\n")
    before = signal.getsignal(signal.SIGTERM)
    assert main(["ingest", str(tmp_path / "g.txt"), str(tmp_path / "s"), "--no-progress"]) == 0
    assert signal.getsignal(signal.SIGTERM) is before
