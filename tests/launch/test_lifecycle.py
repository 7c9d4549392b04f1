"""The lifecycle channel (a trainer's marker lines) and the ETT accounting of ``bgl launch``'s last line."""
from __future__ import annotations

import io
import re
import subprocess
import sys

import pytest

from bgl.launch import lifecycle
from bgl.launch.ett import Timeline


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _at(timeline: Timeline, clock: Clock, t: float, event: str, restart: int = 0, rank: int = 0, **fields):
    clock.now = t
    timeline.trainer_event({"event": event, "rank": rank, "restart": restart, **fields})


def test_the_wall_time_splits_into_startup_training_checkpoints_and_failures():
    clock = Clock()
    tl = Timeline(clock)
    tl.start()                                                   # t = 0
    for rank in (0, 1):
        _at(tl, clock, 2.0, "start", rank=rank)
    _at(tl, clock, 9.0, "first_batch", rank=0)
    _at(tl, clock, 10.0, "first_batch", rank=1)                  # the world trains from 10 s
    for rank in (0, 1):
        _at(tl, clock, 14.0 + rank * 0.5, "checkpoint_start", rank=rank, step=4)
        _at(tl, clock, 15.0 + rank * 0.5, "checkpoint_end", rank=rank, step=4)  # union 14 .. 15.5
    clock.now = 20.0
    tl.failure()                                                 # found at 20 s: 4.5 s since the checkpoint
    _at(tl, clock, 20.5, "checkpoint_end", rank=1, step=9)       # a late line of the killed start: ignored
    for rank in (0, 1):
        _at(tl, clock, 23.0 + rank, "start", restart=1, rank=rank)   # restart: 20 .. 24
        _at(tl, clock, 27.0, "first_batch", restart=1, rank=rank)    # resume: 24 .. 27
    _at(tl, clock, 37.0, "train_end", restart=1)
    clock.now = 40.0
    got = tl.summary()
    assert got.wall == 40.0 and got.first_batch == 10.0
    assert got.checkpointing == pytest.approx(1.5)
    (f,) = got.failures
    assert (f.since_checkpoint, f.restart, f.resume) == pytest.approx((4.5, 4.0, 3.0))
    # training: 10 .. 20 less 1.5 s checkpointing less 4.5 s thrown away, then 27 .. 37
    assert got.training == pytest.approx(4.0 + 10.0)
    assert got.other == pytest.approx(3.0)                       # 37 .. 40: evaluation, shutdown
    assert got.ett == pytest.approx(35.0)
    line = got.line()
    assert line.startswith("lifecycle: wall 40.0 s; first batch 10.0 s (25.0 %); training 14.0 s (35.0 %)")
    assert "failures 1 11.5 s (28.8 %): 11.5 s [since checkpoint 4.5 + restart 4.0 + resume 3.0]" in line
    assert line.endswith("ETT 35.0 %")


def test_an_asynchronous_checkpoint_counts_from_its_completion_not_its_snapshot():
    """checkpoint_start .. checkpoint_end is the wait (the snapshot); a failure before the step's
    checkpoint_complete has nothing newer to resume from than the step before it."""
    clock = Clock()
    tl = Timeline(clock)
    tl.start()
    _at(tl, clock, 1.0, "first_batch")
    _at(tl, clock, 4.0, "checkpoint_start", step=3)
    _at(tl, clock, 4.2, "checkpoint_end", step=3)         # training goes on while the file is written
    _at(tl, clock, 6.0, "checkpoint_complete", step=3)
    _at(tl, clock, 8.0, "checkpoint_start", step=6)
    _at(tl, clock, 8.2, "checkpoint_end", step=6)         # never completes: the failure comes first
    clock.now = 9.0
    tl.failure()
    _at(tl, clock, 10.0, "start", restart=1)
    _at(tl, clock, 11.0, "first_batch", restart=1)
    _at(tl, clock, 12.0, "train_end", restart=1)
    clock.now = 12.0
    got = tl.summary()
    assert got.checkpointing == pytest.approx(0.4)       # only the waits
    (f,) = got.failures
    assert f.since_checkpoint == pytest.approx(3.0)      # from step 3's completion at 6 s, not 8.2 s


def test_a_start_without_a_batch_is_lost_whole_and_no_event_means_no_training():
    clock = Clock()
    tl = Timeline(clock)
    clock.now = 6.0
    tl.failure()                                                 # died before any batch
    _at(tl, clock, 8.0, "first_batch", restart=1)
    clock.now = 10.0
    got = tl.summary()
    assert got.first_batch is None and got.training == pytest.approx(2.0)
    (f,) = got.failures
    assert (f.since_checkpoint, f.restart, f.resume) == pytest.approx((6.0, 2.0, 0.0))  # no start event
    assert "first batch none" in got.line()
    silent = Timeline(clock)
    clock.now = 15.0
    quiet = silent.summary()  # a script that reports nothing: all of it is "other"
    assert quiet.training == 0.0 and quiet.other == pytest.approx(5.0) and quiet.ett == 0.0


def test_without_train_end_training_ends_when_the_trainers_do():
    clock = Clock()
    tl = Timeline(clock)
    _at(tl, clock, 3.0, "first_batch")
    clock.now = 9.0
    tl.stop()      # trainers exited (or the launch is being stopped)
    clock.now = 12.0
    tl.stop()      # the first call counts
    clock.now = 14.0
    got = tl.summary()
    assert got.training == pytest.approx(6.0) and got.other == pytest.approx(5.0)


def test_event_writes_a_marker_line_only_under_bgl_launch(monkeypatch, capsys):
    monkeypatch.setattr(lifecycle, "_first_batch_sent", False)
    monkeypatch.delenv("BGL_LIFECYCLE", raising=False)
    lifecycle.event("start")
    assert capsys.readouterr().out == ""
    monkeypatch.setenv("BGL_LIFECYCLE", "1")
    monkeypatch.setenv("BGL_RESTART_COUNT", "2")
    monkeypatch.setenv("RANK", "3")
    lifecycle.event("checkpoint_end", step=7)
    lifecycle.event("first_batch")
    lifecycle.event("first_batch")  # once per process
    lines = capsys.readouterr().out.splitlines()
    assert [lifecycle.parse(x) for x in lines] == [
        {"event": "checkpoint_end", "rank": 3, "restart": 2, "step": 7},
        {"event": "first_batch", "rank": 3, "restart": 2}]
    with pytest.raises(ValueError, match="got 'checkpoint'"):
        lifecycle.event("checkpoint")
    for text in ("epoch 0: loss 1.2", "bgl-lifecycle {not json", 'bgl-lifecycle {"event": "bogus", "rank": 0, '
                 '"restart": 0}', 'bgl-lifecycle ["start"]'):
        assert lifecycle.parse(text) is None, text


def test_the_output_pump_hands_marker_lines_over_and_prints_the_rest():
    """Through torchrun's rank prefix, as ``bgl launch`` reads a trainer."""
    from types import SimpleNamespace

    from bgl.launch.members import Member, OutputPump

    script = ("print('[bgl-rank 1]:epoch 0 done');"
              "print('[bgl-rank 1]:bgl-lifecycle {\"event\": \"first_batch\", \"rank\": 1, \"restart\": 0}');"
              "print('bgl-lifecycle not an event')")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
    sink, events = io.StringIO(), []
    host = SimpleNamespace(tag="h0")
    member = Member(role="trainer", what="trainers", prefix="[h0:torchrun:0]",
                    launched=SimpleNamespace(popen=proc, host=host), placement=None)
    OutputPump(sink, on_event=events.append).start(member).join(timeout=30)
    proc.wait(timeout=30)
    assert events == [{"event": "first_batch", "rank": 1, "restart": 0}]
    assert sink.getvalue().splitlines() == ["[h0:trainer:1] epoch 0 done", "[h0:torchrun:0] bgl-lifecycle not an event"]


def _parts_sum(got) -> float:
    return (got.first_batch or 0.0) + got.training + got.checkpointing + got.lost + got.other


def test_a_crash_loop_counts_each_start_once_and_the_shares_add_up_to_the_wall():
    """Issue #56: trainers that die at once under ``--max-restarts 2`` printed failures of 129.6 % of
    the wall.  Each start that never reached a batch is counted once: the parts add up to the wall."""
    clock = Clock()
    tl = Timeline(clock)
    tl.start()
    _at(tl, clock, 1.0, "start")
    clock.now = 2.0
    tl.failure()                                   # start 0 died before a batch: 0 .. 2 lost
    _at(tl, clock, 3.0, "start", restart=1)        # restart 2 .. 3, resume 3 .. 5 (no batch)
    clock.now = 5.0
    tl.failure()
    _at(tl, clock, 6.5, "start", restart=2)        # restart 5 .. 6.5, resume 6.5 .. 7.5 (it exits)
    clock.now = 7.5
    tl.stop()
    clock.now = 8.0                                # teardown: other
    got = tl.summary()
    first, second = got.failures
    assert (first.since_checkpoint, first.restart, first.resume) == pytest.approx((2.0, 1.0, 2.0))
    assert (second.since_checkpoint, second.restart, second.resume) == pytest.approx((0.0, 1.5, 1.0))
    assert got.other == pytest.approx(0.5) and got.training == 0.0
    assert _parts_sum(got) == pytest.approx(got.wall)
    shares = [float(s) for s in re.findall(r"\(([\d.]+) %\)", got.line())]
    assert all(0.0 <= s <= 100.0 for s in shares) and sum(shares) == pytest.approx(100.0, abs=0.3)


@pytest.mark.parametrize("crash_at", [None, 0, 1])
def test_the_parts_add_up_to_the_wall_with_training_checkpoints_and_failures(crash_at):
    """Starts that train and checkpoint, with a start (the first, or a restarted one) that dies before
    its first batch: first batch + training + checkpointing + failures + other == wall."""
    clock = Clock()
    tl = Timeline(clock)
    tl.start()
    t = 0.0
    for g in range(3):
        _at(tl, clock, t + 0.5, "start", restart=g)
        if g != crash_at:
            _at(tl, clock, t + 1.0, "first_batch", restart=g)
            _at(tl, clock, t + 2.0, "checkpoint_start", restart=g, step=1)
            _at(tl, clock, t + 2.4, "checkpoint_end", restart=g, step=1)
        clock.now = t + 4.0
        if g < 2:
            tl.failure()
        t += 4.0
    _at(tl, clock, 11.5, "train_end", restart=2)
    clock.now = 13.0
    got = tl.summary()
    assert _parts_sum(got) == pytest.approx(got.wall) and got.other >= 0.0


def test_reported_loader_waits_add_up_over_ranks_and_epochs_in_the_line():
    clock = Clock()
    tl = Timeline(clock)
    tl.start()
    _at(tl, clock, 1.0, "first_batch")
    assert tl.summary().loader_wait is None and "trainer wait" not in tl.summary().line()
    # rank 0: two epochs of 4 s, waiting 0.2 s and 0.6 s; rank 1: one of 8 s, waiting 0.4 s
    _at(tl, clock, 5.0, "loader_wait", wait_us=200_000, epoch_us=4_000_000, batches=10)
    _at(tl, clock, 9.0, "loader_wait", wait_us=600_000, epoch_us=4_000_000, batches=10)
    _at(tl, clock, 9.0, "loader_wait", rank=1, wait_us=400_000, epoch_us=8_000_000, batches=20)
    clock.now = 10.0
    got = tl.summary()
    assert got.loader_wait == pytest.approx(1.2 / 16.0) and got.loader_epochs == 3
    assert got.line().endswith("ETT 90.0 %; trainer wait 7.5 % of 3 epoch(s)")
    assert got.training == pytest.approx(9.0)  # the reports are not lifecycle boundaries


def test_loader_wait_sends_the_loaders_stats_as_a_marker_line(monkeypatch, capsys):
    class Loader:
        def stats(self):
            return {"wait_s": 0.25, "epoch_s": 2.0000004, "batches": 7}

    monkeypatch.setenv("BGL_LIFECYCLE", "1")
    monkeypatch.setenv("BGL_RESTART_COUNT", "0")
    monkeypatch.setenv("RANK", "1")
    lifecycle.loader_wait(Loader())
    (line,) = capsys.readouterr().out.splitlines()
    assert lifecycle.parse(line) == {"event": "loader_wait", "rank": 1, "restart": 0, "wait_us": 250_000,
                                     "epoch_us": 2_000_000, "batches": 7}
