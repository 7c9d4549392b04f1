"""The examples' checkpoints (bgl.examples.checkpoints): ``examples/train_link_pred.py --checkpoint-every``
killed with SIGKILL mid-epoch and started again resumes from its last complete step and ends with the
very model an uninterrupted run trains."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from bgl.examples.checkpoints import Checkpoints

REPO = Path(__file__).resolve().parents[2]


def _command(store, ck: Path, *extra: str) -> list[str]:
    return [sys.executable, str(REPO / "examples" / "train_link_pred.py"), "--graph", str(store.path),
            "--epochs", "2", "--batch-size", "128", "--fanouts", "4,4", "--hidden", "16", "--order", "random",
            "--pipeline", "inline", "--skip-eval", "--checkpoint-dir", str(ck), "--checkpoint-every", "3", *extra]


def _env() -> dict:
    return {**os.environ, "OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}


def _complete(ck: Path) -> int:
    try:
        return int((ck / "complete").read_text())
    except (OSError, ValueError):
        return -1


def _final_model(ck: Path) -> dict:
    return torch.load(ck / f"rank0-{_complete(ck)}.pt", weights_only=False)["model"]


def test_a_background_save_keeps_the_state_of_its_step_and_completes_on_wait(tmp_path):
    ck = Checkpoints(tmp_path / "ck", rank=0, world=1, distributed=False, background=True)
    weights = torch.zeros(4)
    for step in (1, 2):
        weights += 1
        ck.save(step, {"w": weights, "seeds": [[step]], "step": step})
    weights += 100  # training goes on: the snapshot of step 2 must not see it
    ck.wait()
    state = ck.latest()
    assert state["step"] == 2 and torch.equal(state["w"], torch.full((4,), 2.0)) and state["seeds"] == [[2]]
    assert sorted(p.name for p in (tmp_path / "ck").iterdir()) == ["complete", "rank0-2.pt"]
    ck.save(3, {"unpicklable": lambda: None})  # the writer thread fails: the training thread hears of it
    with pytest.raises(RuntimeError, match="an asynchronous checkpoint failed"):
        ck.wait()
    assert ck.latest()["step"] == 2
    assert sorted(p.name for p in (tmp_path / "ck").iterdir()) == ["complete", "rank0-2.pt"]  # no half file


@pytest.mark.parametrize("mode", [pytest.param("sync", marks=pytest.mark.extended), "async"])
def test_a_killed_link_prediction_run_resumes_to_the_same_model(random_store, tmp_path, mode):
    """A run SIGKILLed mid-epoch and started again ends with the uninterrupted run's model.

    ``make test`` runs it with ``--checkpoint-async`` (the kill can land during a background save);
    ``make test-extended`` adds the synchronous save."""
    extra = ("--checkpoint-async",) if mode == "async" else ()
    whole = subprocess.run(_command(random_store, tmp_path / "whole", *extra), env=_env(), capture_output=True,
                           text=True, timeout=300)
    assert whole.returncode == 0, whole.stderr[-3000:]
    final = _complete(tmp_path / "whole")
    assert final > 6, final

    ck = tmp_path / "killed"
    proc = subprocess.Popen(_command(random_store, ck, *extra), env=_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300
        while _complete(ck) < 3 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        proc.kill()  # SIGKILL, mid-epoch 0 unless the run raced ahead
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -9 and 3 <= _complete(ck) < final, (proc.returncode, _complete(ck))

    again = subprocess.run(_command(random_store, ck, *extra), env=_env(), capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "resumed from checkpoint step" in again.stdout, again.stdout
    assert _complete(ck) == final
    want, got = _final_model(tmp_path / "whole"), _final_model(ck)
    assert want.keys() == got.keys() and all(torch.equal(want[k], got[k]) for k in want)
