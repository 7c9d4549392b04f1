"""``bgl launch --max-restarts``: trainers killed with SIGKILL mid-epoch are restarted, resume from their
checkpoints (examples/train_sage.py), and every training seed is trained exactly once an epoch.

The checkpoints here are asynchronous (``--checkpoint-async``: 2 DDP ranks, each writing in a thread and
meeting on a gloo group of its own); the ssh restart test (test_netns_launch.py) saves synchronously."""
from __future__ import annotations

import re
import signal
import time
from pathlib import Path

import psutil
import pytest
import torch

REPO = Path(__file__).resolve().parents[2]


def _train_sage():
    """examples/train_sage.py as a module (its load_graph_info reads the seeds the trainers use)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("train_sage_example", REPO / "examples" / "train_sage.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _complete_step(ck: Path) -> int:
    marker = ck / "complete"
    try:
        return int(marker.read_text())
    except (OSError, ValueError):
        return -1


def _wait_for_step(run, ck: Path, step: int, timeout: float = 150.0) -> None:
    deadline = time.monotonic() + timeout
    while _complete_step(ck) < step:
        if run.popen.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"no checkpoint step {step} (at {_complete_step(ck)}):\n{run.describe()}")
        time.sleep(0.05)


def _kill_a_worker(tmp_path: Path, rank_hint: int) -> int:
    """SIGKILL one torchrun worker running train_sage.py in this test (not torchrun itself)."""
    workers = sorted((p for p in psutil.process_iter(["cmdline", "pid"])
                      if len(p.info["cmdline"] or []) > 1 and p.info["cmdline"][1].endswith("train_sage.py")
                      and str(tmp_path) in " ".join(p.info["cmdline"])), key=lambda p: p.pid)
    assert len(workers) == 2, [p.info["cmdline"] for p in workers]
    victim = workers[rank_hint % 2]
    victim.send_signal(signal.SIGKILL)
    return victim.pid


def test_killed_trainers_restart_and_resume_each_seed_once(launcher, free_port_base, orphans, tmp_path):
    import bgl
    from bgl.partition import partition_graph

    store = bgl.ingest(str(REPO / "data" / "cora.npz"), tmp_path / "cora")
    parts = partition_graph(store, "random", 2, tmp_path / "parts", measure_samples=False).path
    (tmp_path / "hosts.txt").write_text("127.0.0.1\n")
    ck = tmp_path / "ck"
    base = free_port_base(4)
    run = launcher(["--hosts", tmp_path / "hosts.txt", "--partition", parts, "--num-trainers", 2,
                    "--num-servers-per-host", 2, "--port-base", base, "--server-timeout", 120, "--server-threads", 1,
                    "--grace", 3, "--max-restarts", 2, "--", "python", REPO / "examples" / "train_sage.py",
                    "--graph", parts, "--epochs", 2, "--batch-size", 16, "--order", "random", "--cache", "none",
                    "--checkpoint-dir", ck, "--checkpoint-every", 1, "--checkpoint-async", "--record-seeds"])
    _wait_for_step(run, ck, 3)  # mid-epoch 0
    _kill_a_worker(tmp_path, 1)
    run.wait_for_output("restart 1)")
    _wait_for_step(run, ck, _complete_step(ck) + 2)  # epoch 0 or 1 after the resume
    _kill_a_worker(tmp_path, 0)
    code = run.wait(timeout=240)
    assert code == 0, run.describe()
    assert "restarting the trainers (1 of 2 restarts)" in run.stderr, run.describe()
    assert "restarting the trainers (2 of 2 restarts)" in run.stderr, run.describe()
    assert run.stdout.count("test accuracy") == 1, run.describe()
    train = set(_train_sage().load_graph_info(parts)["splits"]["train"].tolist())  # the loader's ids
    final = _complete_step(ck)
    for rank in (0, 1):
        assert (ck / f"rank{rank}-{final}.pt").is_file()
    batches = [b for r in (0, 1) for b in torch.load(ck / f"rank{r}-{final}.pt", weights_only=False)["seeds"]]
    for epoch in (0, 1):
        seen = torch.cat([ids for e, ids in batches if e == epoch]).tolist()
        assert len(seen) == len(train) and set(seen) == train, f"epoch {epoch}: {len(seen)} seeds trained"
    _check_lifecycle_line(run.stderr, failures=2)
    assert orphans() == []


def _check_lifecycle_line(stderr: str, failures: int) -> None:
    """``bgl launch`` ended with its lifecycle line: every part present, >= 0, shares summing to 100 % and
    seconds to the wall (within rounding)."""
    last = [line for line in stderr.splitlines() if line.strip()][-1]
    assert last.startswith("bgl launch: lifecycle: wall "), stderr[-3000:]
    wall = float(re.search(r"wall ([\d.]+) s", last).group(1))
    parts = {name: (float(sec), float(share)) for name, sec, share in
             re.findall(r"(first batch|training|checkpointing|failures \d+|other) ([\d.]+) s \(([\d.]+) %\)", last)}
    assert set(parts) == {"first batch", "training", "checkpointing", f"failures {failures}", "other"}, last
    assert all(sec >= 0 and share >= 0 for sec, share in parts.values()), last
    assert abs(sum(share for _, share in parts.values()) - 100.0) <= 0.05 * len(parts), last  # each rounded to 0.1
    assert abs(sum(sec for sec, _ in parts.values()) - wall) <= 0.05 * len(parts), last
    assert parts["training"][0] > 0 and parts["checkpointing"][0] > 0 and parts[f"failures {failures}"][0] > 0, last
    each = re.findall(r"([\d.]+) s \[since checkpoint ([\d.]+) \+ restart ([\d.]+) \+ resume ([\d.]+)\]", last)
    assert len(each) == failures, last
    for total, *split in each:
        assert abs(float(total) - sum(map(float, split))) <= 0.2, last
    ett = float(re.search(r"ETT ([\d.]+) %(?:; trainer wait [\d.]+ % of \d+ epoch\(s\))?$", last).group(1))
    assert ett == parts["training"][1], last
