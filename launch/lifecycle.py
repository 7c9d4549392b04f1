"""What a training script tells ``bgl launch`` about its lifecycle: one marker line per event on stdout.

``bgl launch`` ends with one line saying where the wall time went -- to the first batch, training,
checkpointing, each failure -- and the share that advanced training (effective training time, ETT %;
:mod:`bgl.launch.ett`).  Only the script knows when its first batch came or a checkpoint was written, so
it says so::

    from bgl.launch import lifecycle

    lifecycle.event("start")              # top of main(): a restart's clock stops here
    for batch in loader:
        lifecycle.event("first_batch")    # once per process: training (again) from here
        ...
    lifecycle.event("checkpoint_start", step=s) ... lifecycle.event("checkpoint_end", step=s)
    lifecycle.event("checkpoint_complete", step=s)  # the step is on disk for every rank (rank 0 says)
    lifecycle.event("train_end")          # before evaluation and exit
    lifecycle.loader_wait(loader)         # after each epoch (optional): the trainer's wait for batches

``checkpoint_start`` .. ``checkpoint_end`` is the time training waited; ``checkpoint_complete`` is when
a restart could resume from the step.  ``loader_wait`` passes on a loader's ``stats()`` (the time the loop
was blocked in ``next()`` in the epoch just run, :mod:`bgl.loader.trainer_wait`): the launch line then says
what share of the trainers' epochs went to waiting for batches.  A synchronous save says both at once; an asynchronous one
(written in the background while training goes on) says ``checkpoint_end`` after its snapshot and
``checkpoint_complete`` when the files are whole, so a failure in between counts from the step before.

The channel is the trainer's stdout, which the launcher already reads on every backend (local, ssh,
Slurm; torchrun tees each worker's lines): no file to share across hosts, no port, no clock to agree
on -- the launcher stamps each line with its own monotonic clock when it arrives (torchrun's tee adds
about 0.1 s).  The launcher hides these lines from the output.  Outside ``bgl launch`` (no
``$BGL_LIFECYCLE``) :func:`event` does nothing, so scripts call it unconditionally.
"""
from __future__ import annotations

import json
import os
import sys

from .spec import ENV_LIFECYCLE, ENV_RESTART_COUNT

MARKER = "bgl-lifecycle "
EVENTS = ("start", "first_batch", "checkpoint_start", "checkpoint_end", "checkpoint_complete", "train_end",
          "loader_wait")

_first_batch_sent = False


def event(name: str, **fields: int) -> None:
    """Report ``name`` (one of :data:`EVENTS`) to the launcher, with this process's rank and restart count.

    ``first_batch`` is sent once per process (later calls return at once, so it can sit in the training
    loop).  ``fields`` are small ints (``step=``).  ValueError for an unknown event name.
    """
    global _first_batch_sent
    if name == "first_batch" and _first_batch_sent:  # the call in a training loop: return at once
        return
    if name not in EVENTS:
        raise ValueError(f"lifecycle event must be one of {', '.join(EVENTS)}, got {name!r}")
    if os.environ.get(ENV_LIFECYCLE) != "1":
        return
    _first_batch_sent = _first_batch_sent or name == "first_batch"
    payload = {"event": name, "rank": int(os.environ.get("RANK", "0")),
               "restart": int(os.environ.get(ENV_RESTART_COUNT, "0")), **fields}
    sys.stdout.write(MARKER + json.dumps(payload) + "\n")
    sys.stdout.flush()


def loader_wait(loader) -> None:
    """Report the trainer's wait in ``loader``'s latest epoch (its ``stats()``: ``bgl.DataLoader`` or a
    ``bgl.pyg`` loader) to the launcher, in whole microseconds; call it after each epoch."""
    stats = loader.stats()
    event("loader_wait", wait_us=round(1e6 * stats["wait_s"]), epoch_us=round(1e6 * stats["epoch_s"]),
          batches=int(stats["batches"]))


def parse(line: str) -> dict | None:
    """The event of a marker line (as :func:`event` wrote it), or None for any other line.

    A line that starts with the marker but does not hold a well-formed event is not an event (None):
    the launcher then prints it as ordinary output rather than guessing.
    """
    if not line.startswith(MARKER):
        return None
    try:
        payload = json.loads(line[len(MARKER):])
        ok = (isinstance(payload, dict) and payload.get("event") in EVENTS
              and all(isinstance(payload.get(k), int) for k in ("rank", "restart")))
    except ValueError:
        return None
    return payload if ok else None
