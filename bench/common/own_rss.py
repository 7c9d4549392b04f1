"""A benchmark child's own peak RSS, read in the child from ``/proc/self/status`` (``VmHWM``).

Why not the parent's ``os.wait4`` ``ru_maxrss``: CPython starts children with vfork + exec, and
Linux carries the replaced address space's high-water mark into the child's maxrss at exec, so a
child started by a large parent reports at least the parent's peak (measured here: the
``python -c pass`` child of a parent holding 1 GiB reports 1,057 MB).  ``VmHWM`` belongs to the
child's own address space alone.
"""
from __future__ import annotations

import resource


def own_peak_rss_mb() -> float:
    """This process's peak resident set in MiB (``VmHWM``; ``ru_maxrss`` where /proc is absent)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
