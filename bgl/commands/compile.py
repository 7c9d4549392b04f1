"""``bgl compile``: fill numba's on-disk cache with the kernels a ``bgl demo`` run uses, ahead of it.

Every bgl kernel is compiled on first use and kept in numba's cache (``__pycache__`` beside the
sources, or ``$NUMBA_CACHE_DIR``).  A first run on a fresh install paid those compiles inside its
first batch: ``make demo``'s first lifecycle line showed the first batch after 24.7 s, 85 % of the
run (issue #56).  This command runs the demo once, one epoch, with its output kept back, so the
compiles happen here -- the install's time, ``make venv`` / ``make demo`` run it once per change
of the kernel sources -- and the demo after it loads every kernel (2-8 ms each).

The demo is the warm-up on purpose: it is the run whose kernels are wanted, with the same dtypes
and array flags (numba compiles one variant per combination), so nothing is missed or guessed.
Kernels a run only uses with other settings (another dtype, a weighted or temporal request) are
still compiled on their first use, once per install (:mod:`bgl.kernel_cache.lock`).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TASKS = ("node", "link", "recsys")


def register(subparsers) -> None:
    """Add the ``compile`` parser (one quiet demo epoch per task, to fill numba's cache) to ``subparsers``."""
    parser = subparsers.add_parser(
        "compile", help="compile the kernels `bgl demo` uses into numba's cache (an install-time step)",
        description=__doc__.split("\n\n", 1)[1], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--task", default="node", choices=[*TASKS, "all"],
                        help="the demo task(s) whose kernels to compile (`make demo` runs node)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """One quiet ``bgl demo --epochs 1`` per task, counting the compiles; exit code as the demo's."""
    for task in TASKS if args.task == "all" else (args.task,):
        code = compile_task(task)
        if code != 0:
            return code
    return 0


def compile_task(task: str) -> int:
    """Run the demo's ``task`` for one epoch with ``$BGL_COMPILE_LOG`` set, print one line saying what
    was compiled, and return its exit code (its output's tail on stderr when it failed)."""
    from bgl.kernel_cache.log import ENV_COMPILE_LOG

    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bgl-compile-") as tmp:
        log = Path(tmp) / "compiles.jsonl"
        env = {**os.environ, ENV_COMPILE_LOG: str(log)}
        done = subprocess.run([sys.executable, "-m", "bgl", "demo", "--task", task, "--epochs", "1",
                               "--workdir", str(Path(tmp) / "demo")],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        outcomes = [json.loads(line)["outcome"] for line in log.read_text().splitlines()] if log.exists() else []
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        print(done.stdout[-4000:], file=sys.stderr)
        print(f"bgl compile: error: the demo's {task} task exited with {done.returncode}", file=sys.stderr)
        return done.returncode
    print(f"compiled {outcomes.count('compiled')} kernel variants for the demo's {task} task into numba's cache "
          f"({outcomes.count('loaded')} loads of variants already there; {seconds:.1f} s)", flush=True)
    return 0
