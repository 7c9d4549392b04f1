"""How long the training loop waits for its batches: the part of an epoch the loader still owns.

On a CPU box the model step dominates an epoch, so a loader's own speed shows only as the time the
trainer is blocked in ``next()`` on the epoch's iterator.  :class:`TrainerWait` measures exactly that,
per epoch, in the trainer's thread: two ``time.perf_counter()`` calls around each ``next()`` and a
few float additions (well under a microsecond a batch), whatever the pipeline.  With
``pipeline="inline"`` the wait is the whole data path of a batch (it runs inside ``next()``); with
``"thread"`` or ``"processes"`` it is what the overlap with the model step did not hide.

The epoch's wall time runs from the iterator's creation (``iter(loader)``) to the ``next()`` that
ended the epoch (or to now, while it runs), so ``wait_share`` close to 1 means the loader is the
bottleneck and close to 0 that the model is.
"""
from __future__ import annotations

import time
from typing import Optional


class TrainerWait:
    """The trainer's time blocked in one epoch's ``next()`` calls.

    ``wait_s`` includes the last call, the one that found the epoch over (draining the
    pipeline is a wait too); ``batches`` counts the batches delivered, so
    ``wait_mean_s == wait_s / batches``.
    """

    __slots__ = ("epoch", "batches", "wait_s", "wait_max_s", "_started", "_ended")

    def __init__(self, epoch: Optional[int] = None):
        self.epoch = epoch
        self.batches = 0
        self.wait_s = 0.0
        self.wait_max_s = 0.0
        self._started = time.perf_counter()
        self._ended: Optional[float] = None

    @classmethod
    def before_any_epoch(cls) -> "TrainerWait":
        """Zeros, not running: what a loader reports before its first ``iter()``."""
        wait = cls()
        wait.end(wait._started)
        return wait

    def add(self, waited: float, delivered: bool) -> None:
        """Count one ``next()`` call that blocked ``waited`` seconds (``delivered``: it returned a batch)."""
        self.wait_s += waited
        if waited > self.wait_max_s:
            self.wait_max_s = waited
        if delivered:
            self.batches += 1

    def end(self, now: Optional[float] = None) -> None:
        """The epoch is over (ended or closed): its wall time stops here (first call wins)."""
        if self._ended is None:
            self._ended = time.perf_counter() if now is None else now

    @property
    def running(self) -> bool:
        return self._ended is None

    def as_dict(self) -> dict:
        """The figures as plain data (seconds; ``wait_share`` in [0, 1] of ``epoch_s``)."""
        epoch_s = (self._ended if self._ended is not None else time.perf_counter()) - self._started
        return {"epoch": self.epoch, "running": self.running, "batches": self.batches,
                "wait_s": self.wait_s, "wait_mean_s": self.wait_s / self.batches if self.batches else 0.0,
                "wait_max_s": self.wait_max_s, "epoch_s": epoch_s,
                "wait_share": self.wait_s / epoch_s if epoch_s > 0 else 0.0}


def timed_next(items, wait: TrainerWait):
    """``next(items)``, its blocked time added to ``wait``; ends ``wait``'s epoch when ``items`` does
    (StopIteration or an error)."""
    start = time.perf_counter()
    try:
        item = next(items)
    except BaseException:
        now = time.perf_counter()
        wait.add(now - start, delivered=False)
        wait.end(now)
        raise
    wait.add(time.perf_counter() - start, delivered=True)
    return item
