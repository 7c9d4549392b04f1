"""numba's one-time set-up in a process, done where its cost belongs, not in the first kernel call.

The first numba kernel a process runs -- compiled, or loaded from numba's on-disk cache --
first refreshes numba's typing and target contexts: it imports numba's typed containers,
registers their extensions and sets up the code generator (~0.2 s and ~60 MiB resident on the
2-core dev box, whatever the kernel).  Two callers pay it up front on purpose:

* a loader over graph servers (``bgl/loader/dataloader.py``), at construction: it has no local
  graph to run a seed on, so its first batch paid it -- the demo's first epoch took 0.74 s against
  0.23-0.24 s for the next ones (2026-12-04, ``bench/results/launch.md``), 0.29 s of it loading the
  first kernel.  (A loader over a local store pays it at construction already:
  ``kernel_warmup.load_kernels`` runs one seed through the stages.)  Each later kernel then
  loads in 2-8 ms;
* ``bgl partition --distributed`` (``partition/distributed/driver.py``), as a phase of its own
  (``jit``), so this fixed cost is measured apart from the per-edge phases, where it would
  otherwise land in whichever ran the first kernel.

Here, not in either caller's package, because ``partition`` may not import ``bgl.loader``
(pyproject's import layers); this package has no layer of its own.

Synchronous on purpose: a background refresh would race the first kernel load (numba's
contexts are not refreshed under a lock of their own), and the cost is the same whichever
thread pays it.
"""
from __future__ import annotations

import logging

log = logging.getLogger(__name__)


def prepare_numba() -> None:
    """Refresh numba's CPU typing and target contexts now (idempotent: cheap once done).

    Under numba's global compiler lock, the lock its own compile and cache-load paths take
    around the same refresh.  Without numba (a pure-torch pipeline), nothing happens.
    """
    try:
        from numba.core.compiler_lock import global_compiler_lock
        from numba.core.registry import cpu_target
    except ImportError:
        return
    try:
        with global_compiler_lock:
            cpu_target.typing_context.refresh()
            cpu_target.target_context.refresh()
    except Exception as e:  # pragma: no cover - a numba internals change: the first kernel pays it instead
        log.debug("numba's contexts were not refreshed ahead of the first kernel: %s", e)
