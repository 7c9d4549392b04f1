"""bgl's modules as an installed bgl has them, with their bytecode written, before anything is timed.

pip writes every module's bytecode when it installs a wheel, and Python writes it at a module's first
import; a checkout run with ``PYTHONDONTWRITEBYTECODE=1`` (this project's machines set it) has none,
so every benchmark process compiled bgl's modules from source on its way to its first batch: ~130
modules, 0.14 s of a first loader's 0.24 s construction (bench/results/dataloader.md, 2026-12-07
13:50).  DGL, numba and torch, installed by pip, never paid that, so every cold-start comparison
overstated bgl's side by it.  :func:`compile_checkout` writes what is missing or stale (a ``stat`` per
file when nothing is), once per interpreter per process; ``__pycache__`` is git-ignored.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("bgl", "sampler", "cache", "partition", "launch")  # what `import bgl` reads (pyproject.toml)
_done: set = set()


def compile_checkout(python: str = sys.executable) -> None:
    """The checkout's bytecode for ``python`` (an interpreter path) written; a failure is reported, not raised
    (the benchmark then measures compiling too, as before)."""
    if python in _done:
        return
    _done.add(python)
    dirs = [str(ROOT / p) for p in PACKAGES if (ROOT / p).is_dir()]
    done = subprocess.run([python, "-m", "compileall", "-q", "-j", "0", *dirs], capture_output=True, text=True)
    if done.returncode != 0:
        print(f"compileall with {python} failed (timed imports include compiling): {done.stdout[-500:]}"
              f"{done.stderr[-500:]}", file=sys.stderr, flush=True)
