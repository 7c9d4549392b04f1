"""Start stage processes with ``spawn`` without re-running the user's script.

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
bgl's own stage classes and torch queues.  :class:`StageProcess` is a spawn
process whose start-up data leaves the main module out, so the child imports
bgl only, whatever the script does at module level.
"""
from __future__ import annotations

import threading
from multiprocessing import context, popen_spawn_posix, spawn

# get_preparation_data is swapped for the duration of one launch; a lock keeps two
# threads starting stage processes at once from restoring each other's swap.
_LAUNCH_LOCK = threading.Lock()
_MAIN_KEYS = ("init_main_from_path", "init_main_from_name")


class _PopenWithoutMain(popen_spawn_posix.Popen):
    """CPython's spawn launcher, with the main module left out of the child's start-up data."""

    def _launch(self, process_obj):
        with _LAUNCH_LOCK:
            original = spawn.get_preparation_data

            def without_main(name):
                data = original(name)
                for key in _MAIN_KEYS:
                    data.pop(key, None)
                return data

            spawn.get_preparation_data = without_main
            try:
                super()._launch(process_obj)
            finally:
                spawn.get_preparation_data = original


class StageProcess(context.SpawnProcess):
    """A ``spawn`` process that does not re-import the parent's ``__main__``.

    Its target and arguments must be importable from installed modules (bgl's
    stages are); anything defined in the user's script would not unpickle.
    """

    @staticmethod
    def _Popen(process_obj):
        return _PopenWithoutMain(process_obj)
