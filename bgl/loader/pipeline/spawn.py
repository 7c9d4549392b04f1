"""Start stage processes without re-running the user's script, and without paying
``import torch`` once per stage.

A ``spawn`` child normally re-imports the parent's ``__main__`` (as
``__mp_main__``) before it unpickles its target, so that functions and classes
defined in the script can be found.  For a training script that builds its
loader at module level -- DGL's examples, PyG's ``reddit.py``, most notebooks
turned scripts -- that re-import runs the script body again in every stage
process: it loads the dataset, builds a loader, tries to start processes
of its own and dies, and the trainer sees a ``PipelineError``.  DGL gets away
with ``fork``; bgl cannot fork a trainer that already runs torch, numba and
ZeroMQ threads (a forked child inherits their locks held).

A stage process needs nothing from ``__main__``: its target and arguments are
bgl's own stage classes and torch queues.  So stage processes are forked from a
*zygote*: one server process per trainer (CPython's forkserver machinery, an
instance of our own so a user's ``forkserver`` is left as it is) that imported
torch, numba and bgl's stages once and runs no threads of its own; each stage is
a fork of it, started in well under a second instead of the seconds a fresh
interpreter takes to import torch (three stages on a 2-core box: ~8 s to the
first batch).  The start-up data leaves the main module out, so the child runs
bgl's code only, whatever the script does at module level.  A stage forked from
the zygote is a child of the zygote, not of the trainer: it watches the trainer
through multiprocessing's parent sentinel (:func:`trainer_alive`).
"""
from __future__ import annotations

import io
import multiprocessing
import os
from multiprocessing import context, forkserver, popen_forkserver, reduction, spawn, util

# What the zygote imports before it forks anything: torch (seconds), numba and the stage code.
ZYGOTE_PRELOAD = ["bgl.loader.pipeline._zygote_warm"]
_MAIN_KEYS = ("init_main_from_path", "init_main_from_name")


def _new_zygote() -> forkserver.ForkServer:
    server = forkserver.ForkServer()
    server.set_forkserver_preload(ZYGOTE_PRELOAD)  # no "__main__": the script is never imported there
    return server


def _forget_the_parents_zygote() -> None:
    """In a child forked from a trainer (a user's fork, DGL's fork workers): the parent's zygote is
    not this process's child (and its lock may have been held by another thread at the fork), so
    this process starts its own when it needs one."""
    global _ZYGOTE
    _ZYGOTE = _new_zygote()


_ZYGOTE = _new_zygote()
os.register_at_fork(after_in_child=_forget_the_parents_zygote)


def _preparation_data(name: str) -> dict:
    """spawn's start-up data for a child, less the main module."""
    data = spawn.get_preparation_data(name)
    for key in _MAIN_KEYS:
        data.pop(key, None)
    return data


class _PopenFromZygote(popen_forkserver.Popen):
    """CPython's forkserver launcher (3.8-3.13), pointed at bgl's zygote, without the main module."""

    def _launch(self, process_obj):
        prep_data = _preparation_data(process_obj._name)
        buf = io.BytesIO()
        context.set_spawning_popen(self)
        try:
            reduction.dump(prep_data, buf)
            reduction.dump(process_obj, buf)
        finally:
            context.set_spawning_popen(None)
        self.sentinel, w = _ZYGOTE.connect_to_new_process(self._fds)  # thread-safe: the server's own lock
        # the data pipe's write end, kept open: the child's parent sentinel (trainer_alive)
        _parent_w = os.dup(w)
        self.finalizer = util.Finalize(self, util.close_fds, (_parent_w, self.sentinel))
        with open(w, "wb", closefd=True) as f:
            f.write(buf.getbuffer())
        self.pid = forkserver.read_signed(self.sentinel)


class StageProcess(context.SpawnProcess):
    """A stage process forked from the trainer's zygote (see the module docstring).

    Its target and arguments must be importable from installed modules (bgl's
    stages are); anything defined in the user's script would not unpickle.  It runs
    with the trainer's environment as it is when the stage starts (the zygote's is that
    of the first start): ``$BGL_LOCAL_PARTS``, ``$CUDA_VISIBLE_DEVICES`` and the like
    set later still reach the stage, as they would a spawned one.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._trainer_environ = dict(os.environ)

    def run(self):
        os.environ.clear()
        os.environ.update(self._trainer_environ)
        super().run()

    @staticmethod
    def _Popen(process_obj):
        return _PopenFromZygote(process_obj)


def start_zygote() -> None:
    """Start this process's zygote now if it is not running; returns at once (it imports in the background)."""
    _ZYGOTE.ensure_running()


def zygote_pid() -> int | None:
    """pid of this process's zygote while it runs, else None."""
    return _ZYGOTE._forkserver_pid


def trainer_alive() -> bool:
    """In a stage process: True while the process that started it (the trainer) is alive."""
    parent = multiprocessing.parent_process()
    return parent is None or parent.is_alive()
