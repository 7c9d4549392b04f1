"""Per-rank training checkpoints the example scripts share (``--checkpoint-dir`` / ``--checkpoint-every``).

Each rank saves its own state (model, optimizer, ``loader.state_dict()``, torch's RNG, ...) as
``rank{r}-{step}.pt``, written to a temporary name and renamed, so a trainer killed mid-write leaves
the previous file whole; rank 0 then names the step in ``complete`` once every rank has saved it
(after a barrier), and removes the step before.  A script resumes from :meth:`Checkpoints.latest`:
under ``bgl launch --max-restarts N`` a killed trainer costs the batches since the last complete
step.  Each save is reported to the launcher as a lifecycle event (its time counts as checkpointing
in the line ``bgl launch`` ends with).

:meth:`Checkpoints.save_training` / :meth:`Checkpoints.resume_training` hold what a training script
saves and restores -- model, optimizer, the loader's position, torch's RNG, epoch and step -- so
every example resumes the same way.

Asynchronous saves (``background=True``, the scripts' ``--checkpoint-async``): training waits only for
a snapshot of the state (its tensors copied in memory, one state's size extra); a thread writes the
files, waits for the other ranks on a gloo group of its own (never the training's process group,
whose collectives the main thread is running) and marks the step complete.  One save is in flight at
a time: the next one first waits for it, and :meth:`Checkpoints.wait` before the script ends.
"""
from __future__ import annotations

import copy
import os
import threading
from pathlib import Path

import torch
import torch.distributed as dist

from bgl.launch import lifecycle


class Checkpoints:
    """Per-rank checkpoints in ``root``: ``rank{r}-{step}.pt`` written atomically, ``complete`` naming the
    last step every rank saved (rank 0 writes it after a barrier), the step before kept until then."""

    def __init__(self, root: Path, rank: int, world: int, distributed: bool, background: bool = False):
        self.root, self.rank, self.world, self.distributed = Path(root), rank, world, distributed
        self.root.mkdir(parents=True, exist_ok=True)
        self.background = background
        self._writer: threading.Thread | None = None
        self._error: BaseException | None = None
        # Every rank creates it, in the same order (a collective); the writer thread's barrier runs on it.
        self._group = dist.new_group(backend="gloo") if background and distributed else None

    def latest(self):
        """The last complete step's state of this rank, or None."""
        marker = self.root / "complete"
        if not marker.is_file():
            return None
        return torch.load(self.root / f"rank{self.rank}-{int(marker.read_text())}.pt", weights_only=False)

    def save(self, step: int, state: dict) -> None:
        """Save this rank's ``state`` as ``step``; returns once every rank has (the step is complete), or
        with ``background``, once a snapshot of it is taken (the step completes in a thread)."""
        lifecycle.event("checkpoint_start", step=step)
        if not self.background:
            self._write(step, state, self.distributed and dist.barrier)
            lifecycle.event("checkpoint_end", step=step)
            return
        self.wait()  # one save in flight: its snapshot is the memory this costs
        snapshot = _snapshot(state)
        self._writer = threading.Thread(target=self._write_in_background, args=(step, snapshot),
                                        name=f"checkpoint-{step}", daemon=True)
        self._writer.start()
        lifecycle.event("checkpoint_end", step=step)

    def wait(self) -> None:
        """Return once the save in flight (if any) is complete; re-raise its error here."""
        if self._writer is not None:
            self._writer.join()
            self._writer = None
        if self._error is not None:
            error, self._error = self._error, None
            raise RuntimeError(f"an asynchronous checkpoint failed: {error}") from error

    def _write_in_background(self, step: int, state: dict) -> None:
        try:
            self._write(step, state, self.distributed and (lambda: dist.barrier(group=self._group)))
        except BaseException as e:  # noqa: BLE001 - handed to the training thread by wait()
            self._error = e

    def _write(self, step: int, state: dict, barrier) -> None:
        """Write this rank's file, wait for every rank's (``barrier``), then rank 0 marks the step complete."""
        tmp = self.root / f"rank{self.rank}-{step}.pt.tmp"
        try:
            torch.save(state, tmp)
        except BaseException:
            tmp.unlink(missing_ok=True)  # nothing half-written stays
            raise
        os.replace(tmp, self.root / f"rank{self.rank}-{step}.pt")
        if barrier:
            barrier()  # every rank has this step: it is complete
        if self.rank == 0:
            previous = self.root / "complete"
            old = int(previous.read_text()) if previous.is_file() else None
            (self.root / "complete.tmp").write_text(str(step))
            os.replace(self.root / "complete.tmp", previous)
            for r in range(self.world):
                if old is not None and old != step:
                    (self.root / f"rank{r}-{old}.pt").unlink(missing_ok=True)
            lifecycle.event("checkpoint_complete", step=step)

    def save_training(self, step: int, epoch: int, model, optimizer, loader, **extra) -> None:
        """Save ``step``: ``model`` (unwrapped from DDP) and ``optimizer`` state, ``loader.state_dict()``,
        torch's RNG, ``epoch`` (the one the loader is in, or the next when between epochs) and ``extra``."""
        self.save(step, {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                         "loader": loader.state_dict(), "rng": torch.get_rng_state(), "epoch": epoch,
                         "step": step, **extra})

    def resume_training(self, model, optimizer, loader):
        """Restore the last complete step into ``model``, ``optimizer``, ``loader`` and torch's RNG; returns
        the saved dict (``epoch``, ``step`` and the extras) or None when there is no checkpoint yet."""
        state = self.latest()
        if state is None:
            return None
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        loader.load_state_dict(state["loader"])
        torch.set_rng_state(state["rng"])
        if self.rank == 0:
            print(f"resumed from checkpoint step {state['step']} (epoch {state['epoch']}, restart "
                  f"{os.environ.get('BGL_RESTART_COUNT', '0')})", flush=True)
        return state


def _snapshot(state):
    """A copy of ``state`` that training can no longer change: tensors copied (to the CPU), containers
    rebuilt, anything else deep-copied (the loader's state is plain data)."""
    if isinstance(state, torch.Tensor):
        return state.detach().to("cpu", copy=True)
    if isinstance(state, dict):
        return {k: _snapshot(v) for k, v in state.items()}
    if isinstance(state, (list, tuple)):
        return type(state)(_snapshot(v) for v in state)
    return copy.deepcopy(state)
