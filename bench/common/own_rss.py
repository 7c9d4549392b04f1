"""A benchmark child's own peak RSS, read in the child from ``/proc/self/status`` (``VmHWM``).

Why not the parent's ``os.wait4`` ``ru_maxrss``: CPython starts children with vfork + exec, and
Linux carries the replaced address space's high-water mark into the child's maxrss at exec, so a
child started by a large parent reports at least the parent's peak (measured here: the
``python -c pass`` child of a parent holding 1 GiB reports 1,057 MB).  ``VmHWM`` belongs to the
child's own address space alone.  :func:`run_child` is the parent's side: it runs a benchmark child
that prints its result (``own_peak_rss_mb`` among it) as the last line of its output.
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import tempfile


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


def run_child(cmd: list[str], what: str, env: dict | None = None, unit: str = "mb") -> dict:
    """Run a benchmark child; return the JSON object its last stdout line holds, with its own peak RSS
    as ``peak_rss_<unit>`` (MiB) and, for the record only, ``wait4_maxrss_<unit>`` (at least this
    parent's own peak, see above).  Its stderr goes to a file, so a chatty child cannot block on a full
    pipe; a child that fails raises RuntimeError naming ``what``, its exit code and its stderr's end.
    bgl's bytecode is written for the child's interpreter first (:mod:`bench.common.bytecode`)."""
    from bench.common.bytecode import compile_checkout

    compile_checkout(cmd[0])
    with tempfile.TemporaryFile(mode="w+") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, env=env)
        out = proc.stdout.read()
        proc.stdout.close()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            raise RuntimeError(f"{what} failed (exit {proc.returncode}):\n{err.read()[-3000:]}")
    row = json.loads(out.strip().splitlines()[-1])
    row[f"wait4_maxrss_{unit}"] = usage.ru_maxrss / 1024  # Linux: KiB
    row[f"peak_rss_{unit}"] = row.pop("own_peak_rss_mb")
    return row
