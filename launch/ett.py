"""Effective training time: where a launch's wall time went, as the one line ``bgl launch`` ends with.

The launcher keeps a :class:`Timeline` on its own monotonic clock: when the launch began, when it
found each trainer-group failure it restarts from, and the trainers' lifecycle events as their lines
arrive (:mod:`bgl.launch.lifecycle`).  :meth:`Timeline.summary` splits the wall time into

- **first batch**: launch start to the first batch of the first trainer start (the slowest rank's: a
  DDP world trains when every rank does) -- servers, warm-up, torchrun, imports, loader build;
- **training**: from a start's first batch to its end (the next failure found, its ``train_end``, or
  for a script that does not say, the trainers' exit), less the time checkpointing and less the work a
  failure threw away;
- **checkpointing**: the union of every rank's ``checkpoint_start`` .. ``checkpoint_end``;
- **each failure**: *since checkpoint* (from the last completed checkpoint -- its ``checkpoint_complete``
  where the script says one (an asynchronous save completes after training went on), else its
  ``checkpoint_end`` -- or the start's first batch,
  to the failure being found: the work trained again plus the detection delay, which the launcher
  cannot tell apart without a heartbeat per batch), *restart* (found to every restarted script's
  ``start``) and *resume* (to every rank's first batch again: checkpoint load, loader build);
- **other**: the rest (evaluation after training, shutdown).

When the script reports its loader's wait (``lifecycle.loader_wait(loader)`` after an epoch), the line
also says what share of the trainers' reported epochs went to waiting for the next batch (all ranks'
waits over all their epochs' wall time): the part of *training* the loader still owns.

The parts are disjoint, so they add up to the wall time (a crash loop's starts that never reach a
batch count once each: the first in its failure's *since checkpoint*, a restarted one in the previous
failure's *restart* + *resume*).  ETT % is training over wall.  Events of a start that was replaced
carry its restart number, so a killed group's late lines never count for its successor.
"""
from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Optional


@dataclass(frozen=True)
class Failure:
    """One failure's cost in seconds (see the module docstring)."""

    since_checkpoint: float
    restart: float
    resume: float

    @property
    def total(self) -> float:
        return self.since_checkpoint + self.restart + self.resume


@dataclass(frozen=True)
class Lifecycle:
    """A launch's wall time split by what it did; seconds, ``first_batch`` None if no batch ever came."""

    wall: float
    first_batch: Optional[float]
    training: float
    checkpointing: float
    failures: tuple = field(default_factory=tuple)
    loader_wait: Optional[float] = None  # waits / epoch times of the reported epochs, in [0, 1]; None: none
    loader_epochs: int = 0  # epochs reported (all ranks)

    @property
    def lost(self) -> float:
        return sum(f.total for f in self.failures)

    @property
    def other(self) -> float:
        return max(0.0, self.wall - (self.first_batch or 0.0) - self.training - self.checkpointing - self.lost)

    @property
    def ett(self) -> float:
        """Effective training time: training's share of the wall time, in %."""
        return 100.0 * self.training / self.wall if self.wall > 0 else 0.0

    def to_dict(self) -> dict:
        return {**asdict(self), "failures": [asdict(f) for f in self.failures], "other": self.other,
                "ett_percent": self.ett}

    def line(self) -> str:
        """``lifecycle: wall W s; first batch ...; ETT E %`` -- each part with its share of the wall time."""
        def part(name: str, seconds: float) -> str:
            share = 100.0 * seconds / self.wall if self.wall > 0 else 0.0
            return f"{name} {seconds:.1f} s ({share:.1f} %)"

        first = part("first batch", self.first_batch) if self.first_batch is not None else "first batch none"
        each = ", ".join(f"{f.total:.1f} s [since checkpoint {f.since_checkpoint:.1f} + restart {f.restart:.1f} "
                         f"+ resume {f.resume:.1f}]" for f in self.failures)
        lost = part(f"failures {len(self.failures)}", self.lost) + (f": {each}" if each else "")
        waited = "" if self.loader_wait is None else \
            f"; trainer wait {100.0 * self.loader_wait:.1f} % of {self.loader_epochs} epoch(s)"
        return (f"lifecycle: wall {self.wall:.1f} s; {first}; {part('training', self.training)}; "
                f"{part('checkpointing', self.checkpointing)}; {lost}; {part('other', self.other)}; "
                f"ETT {self.ett:.1f} %{waited}")


class Timeline:
    """The launch's lifecycle events on the launcher's clock; thread-safe (output pumps add to it)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self.lock = threading.Lock()
        self.begin = clock()
        self.failures: list[float] = []  # when failure n + 1 was found (it starts restart n + 1)
        self.events: list[tuple[float, dict]] = []
        self.stopped: Optional[float] = None

    def start(self) -> None:
        """The launch begins now (forgets anything recorded before)."""
        with self.lock:
            self.begin, self.failures, self.events, self.stopped = self.clock(), [], [], None

    def stop(self) -> None:
        """The trainers are done now (all exited, or the launch is being stopped): teardown follows."""
        with self.lock:
            self.stopped = self.clock() if self.stopped is None else self.stopped

    def failure(self) -> None:
        """The trainer group failed and is being restarted (found now)."""
        with self.lock:
            self.failures.append(self.clock())

    def trainer_event(self, payload: dict) -> None:
        """A trainer's event (:func:`bgl.launch.lifecycle.parse`), stamped now."""
        with self.lock:
            self.events.append((self.clock(), payload))

    def summary(self) -> Lifecycle:
        """The wall time so far, split as the module docstring says."""
        with self.lock:
            end, events, found, stopped = self.clock(), list(self.events), list(self.failures), self.stopped
        bounds = [self.begin] + found + [end]  # start g runs from bounds[g] to bounds[g + 1]

        def latest(kind: str, g: int) -> Optional[float]:
            times = [t for t, e in events if e["event"] == kind and e["restart"] == g and t <= bounds[g + 1]]
            return max(times) if times else None

        windows, ends, firsts = [], [], []
        for g in range(len(bounds) - 1):
            first = latest("first_batch", g)
            last = g == len(bounds) - 2
            stop = latest("train_end", g) if last else None
            stop = stop if stop is not None else stopped if last and stopped is not None else bounds[g + 1]
            firsts.append(first)
            ends.append(stop)
            if first is not None and first < stop:
                windows.append((first, stop))
        checkpoints = _checkpoint_intervals(events)
        ck_time = sum(_overlap(a, b, windows) for a, b in checkpoints)
        failures, thrown = [], 0.0
        for f in range(1, len(bounds) - 1):
            g, found_at = f - 1, bounds[f]
            completes = [t for t, e in events if e["event"] == "checkpoint_complete" and e["restart"] == g]
            if completes:  # the script says when a step is whole: only those count
                done = [t for t in completes if bounds[g] <= t <= found_at]
            else:
                done = [b for a, b in checkpoints if b <= found_at and a >= bounds[g]]
            # A start that never reached a batch: the first one's time is lost to this failure; a
            # restarted one's is already the previous failure's restart + resume (counted once).
            no_batch = bounds[g] if g == 0 else found_at
            since = max(done + [firsts[g] if firsts[g] is not None else no_batch])
            work_lost = found_at - since if firsts[g] is not None else 0.0
            thrown += work_lost
            started = latest("start", f)
            back = firsts[f] if firsts[f] is not None else max(ends[f], found_at)  # never trained: until it ended
            started = min(max(started, found_at), back) if started is not None else back
            failures.append(Failure(found_at - since, started - found_at, back - started))
        training = max(0.0, sum(b - a for a, b in windows) - ck_time - thrown)
        first_batch = firsts[0] - self.begin if firsts[0] is not None else None
        waits = [(e["wait_us"], e["epoch_us"]) for _, e in events if e["event"] == "loader_wait"
                 and isinstance(e.get("wait_us"), int) and isinstance(e.get("epoch_us"), int)]
        epoch_us = sum(b for _, b in waits)
        loader_wait = sum(a for a, _ in waits) / epoch_us if epoch_us > 0 else None
        return Lifecycle(end - self.begin, first_batch, training, ck_time, tuple(failures), loader_wait, len(waits))


def _checkpoint_intervals(events: list[tuple[float, dict]]) -> list[tuple[float, float]]:
    """Each rank's ``checkpoint_start`` .. ``checkpoint_end`` pairs, merged where they overlap."""
    open_at: dict[tuple[int, int], float] = {}
    spans = []
    for t, e in events:
        who = (e["restart"], e["rank"])
        if e["event"] == "checkpoint_start":
            open_at[who] = t
        elif e["event"] == "checkpoint_end" and who in open_at:
            spans.append((open_at.pop(who), t))
    merged: list[tuple[float, float]] = []
    for a, b in sorted(spans):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
        else:
            merged.append((a, b))
    return merged


def _overlap(a: float, b: float, windows: list[tuple[float, float]]) -> float:
    return sum(max(0.0, min(b, hi) - max(a, lo)) for lo, hi in windows)
