#!/usr/bin/env python
"""Run every benchmark in bench/ at a quick size and rewrite bench/RESULTS.md from what it measured.

Each benchmark script is asked for ``--help`` first; if it offers ``--quick``
that flag is passed, otherwise the small-size arguments listed below.  Output
is captured verbatim: RESULTS.md holds only numbers this run printed, with
the machine, date and exact command.  The scripts run in a sandbox copy of
``bench/`` (the rest of the repo symlinked), so the plots and per-area result
files they write (``bench/results/*``, which hold full-size runs) are left alone;
``--update-artifacts`` runs them in place instead.

Usage::

    python bench/run_all.py                 # all benchmarks, writes bench/RESULTS.md
    python bench/run_all.py --only cache scaling --results /tmp/R.md
"""
from __future__ import annotations

import argparse
import datetime as _dt
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent

# (name, script, extra args used when the script has no --quick flag, timeout seconds).
# Order: cheap and foundational first, so a timeout late in the list loses least.
BENCHMARKS: list[tuple[str, str, list[str], int]] = [
# The timeouts add up to 19.5 min, the budget for `make bench` on a 2-core machine.
    ("ingest", "ingest/store_build.py", [], 120),
    ("sampling", "sampling/throughput.py", [], 150),
    ("partition", "partition/methods.py", ["--datasets", "cora,citeseer,pubmed", "--parts", "2,4"], 210),
    ("cache", "cache/policies.py", [], 150),
    ("dataloader", "loader/node_classification.py", ["--datasets", "cora,rmat", "--scale", "16",
                                                     "--max-batches", "8", "--epochs", "1"], 210),
    ("scaling", "scaling/rmat_growth.py", [], 330),
]

# Lines worth lifting into the summary: ratios and speedups against a baseline.
_HIGHLIGHT = re.compile(r"(ratio|speed-?up|faster|slower|\bvs\.?\b|×|\d\s*x\b)", re.IGNORECASE)


@dataclass
class RunResult:
    """One benchmark run: what ran, how it ended, what it printed."""

    name: str
    command: list[str]
    returncode: Optional[int]  # None = timed out / not run
    seconds: float
    stdout: str
    stderr: str = ""
    note: str = ""
    highlights: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def help_flags(help_text: str) -> set[str]:
    """Long options an argparse ``--help`` text offers (``--quick``, ``--size``, ...)."""
    return set(re.findall(r"(?<![\w-])(--[a-zA-Z][\w-]*)", help_text))


def choose_args(flags: set[str], fallback: Sequence[str]) -> list[str]:
    """``--quick`` when the script has it, else the fallback arguments."""
    if "--quick" in flags:
        return ["--quick"]
    return list(fallback)


def highlights(output: str, limit: int = 12) -> list[str]:
    """Lines of a benchmark's output that state a ratio or speedup (at most ``limit``)."""
    # table rows stay in the verbatim output; highlights are the sentences that state a ratio
    keep = [ln.strip() for ln in output.splitlines()
            if not ln.lstrip().startswith("|") and _HIGHLIGHT.search(ln) and re.search(r"\d", ln)]
    return keep[:limit]


def machine_description() -> dict[str, str]:
    """CPU model, core count, RAM, OS, Python/torch versions of this machine."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = "unknown"
    try:
        import psutil

        mem = f"{psutil.virtual_memory().total / 2**30:.0f} GiB"
    except ImportError:
        pass
    desc = {
        "cpu": f"{cpu}, {os.cpu_count()} cores ({platform.machine()})",
        "memory": mem,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
    }
    try:
        import torch

        desc["torch"] = torch.__version__
        desc["gpu"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    except ImportError:
        pass
    return desc


def git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                              text=True, timeout=10).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def make_sandbox(repo: Path = REPO) -> Path:
    """A temp repo view: a real copy of ``bench/`` (without ``bench/out``), every other
    top-level entry symlinked.

    Benchmarks locate their outputs relative to their own file, so in the
    sandbox they write into the copy; the repo's recorded plots and results
    stay as their owners left them (restoring files afterwards would instead
    undo edits other people make while the benchmarks run).
    """
    root = Path(tempfile.mkdtemp(prefix="bgl_bench_sandbox_"))
    for entry in repo.iterdir():
        if entry.name == "bench":
            shutil.copytree(entry, root / "bench", symlinks=True,
                            ignore=lambda d, names: [n for n in names if n in ("out", "__pycache__")]
                            if Path(d) == entry else [n for n in names if n == "__pycache__"])
        else:
            (root / entry.name).symlink_to(entry)
    return root


def run_benchmark(name: str, script: Path, fallback: Sequence[str], timeout: float,
                  python: str = sys.executable, root: Path = REPO) -> RunResult:
    """Run one script (after asking its ``--help``) and capture everything it prints.

    ``script`` is given relative to ``root`` (the repo or a sandbox) or absolute.
    """
    script = script if script.is_absolute() else root / script
    if not script.exists():
        return RunResult(name, [str(script)], None, 0.0, "", note=f"{script.name} does not exist yet")
    env = {**os.environ, "DGLBACKEND": "pytorch", "PYTHONUNBUFFERED": "1"}
    try:
        help_text = subprocess.run([python, str(script), "--help"], capture_output=True, text=True,
                                   timeout=120, env=env, cwd=root).stdout
    except subprocess.TimeoutExpired:
        help_text = ""
    args = [str(script.relative_to(root)), *choose_args(help_flags(help_text), fallback)]
    shown = ["python", *args]  # the command as a reader would type it
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([python, *args], capture_output=True, text=True, timeout=timeout, env=env, cwd=root)
        res = RunResult(name, shown, proc.returncode, time.perf_counter() - t0, proc.stdout, proc.stderr)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        res = RunResult(name, shown, None, time.perf_counter() - t0, out, err,
                        note=f"timed out after {timeout:.0f} s; output up to then is shown")
    res.highlights = highlights(res.stdout)
    return res


def _fence(text: str, max_lines: int = 80) -> str:
    lines = text.rstrip("\n").splitlines()
    if len(lines) > max_lines:
        cut = len(lines) - max_lines
        lines = lines[:max_lines // 2] + [f"... ({cut} lines omitted) ..."] + lines[-max_lines // 2:]
    body = "\n".join(lines).replace("```", "'''")
    return f"```\n{body}\n```"


def render_results(runs: Sequence[RunResult], machine: dict[str, str], command: str, date: str,
                   commit: str = "unknown") -> str:
    """The RESULTS.md text for a set of runs (pure function, so it is testable on sample output)."""
    out = ["# bgl benchmark results", "",
           f"Rewritten by `{command}` on {date} (commit `{commit}`). Every number below was printed",
           "by the benchmark named in its section during that run; nothing is copied from elsewhere.",
           "", "Full-size runs, with their commands and analysis, are kept per area in",
           "`bench/results/<area>.md` (ingest, sampling, partition, cache, dataloader, launch, scaling);",
           "this file is the quick-size run of every benchmark in one go.",
           "", "## Machine", ""]
    out += [f"- {k}: {v}" for k, v in machine.items()]
    out += ["", "## Summary", "", "| benchmark | status | wall time (s) | command |", "|---|---|---|---|"]
    for r in runs:
        status = "ok" if r.ok else ("not run" if r.returncode is None and not r.seconds else
                                    "timed out" if r.returncode is None else f"failed (exit {r.returncode})")
        out.append(f"| {r.name} | {status} | {r.seconds:.1f} | `{shlex.join(r.command)}` |")
    for r in runs:
        out += ["", f"## {r.name}", ""]
        if r.note:
            out += [f"_{r.note}_", ""]
        out += [f"Command: `{shlex.join(r.command)}` — {r.seconds:.1f} s, exit status "
                f"{r.returncode if r.returncode is not None else 'none'}."]
        if r.highlights:
            out += ["", "Ratios and speedups it reported:", ""] + [f"- {h}" for h in r.highlights]
        if r.stdout.strip():
            out += ["", "Output:", "", _fence(r.stdout)]
        if not r.ok and r.stderr.strip():
            out += ["", "Error output (last lines):", "", _fence("\n".join(r.stderr.splitlines()[-30:]))]
    return "\n".join(out) + "\n"


def write_atomic(path: Path, text: str) -> None:
    write_atomic_bytes(path, text.encode())


def write_atomic_bytes(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--only", nargs="+", choices=[b[0] for b in BENCHMARKS], help="run just these")
    p.add_argument("--results", type=Path, default=BENCH_DIR / "RESULTS.md", help="file to rewrite")
    p.add_argument("--timeout-scale", type=float, default=1.0, help="multiply every per-script timeout")
    p.add_argument("--update-artifacts", action="store_true",
                   help="run in the repo itself, letting the quick runs rewrite bench/results/* "
                        "(default: a sandbox copy of bench/)")
    args = p.parse_args(argv)
    command = shlex.join(["python", "bench/run_all.py", *(argv if argv is not None else sys.argv[1:])])
    date = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    runs = []
    root = REPO if args.update_artifacts else make_sandbox()
    try:
        for name, script, fallback, timeout in BENCHMARKS:
            if args.only and name not in args.only:
                continue
            print(f"[run_all] {name} ...", flush=True)
            r = run_benchmark(name, Path("bench") / script, fallback, timeout * args.timeout_scale, root=root)
            print(f"[run_all] {name}: exit {r.returncode} in {r.seconds:.1f} s {r.note}", flush=True)
            runs.append(r)
    finally:
        if root != REPO:
            shutil.rmtree(root, ignore_errors=True)  # symlinks are removed, never followed
    write_atomic(args.results, render_results(runs, machine_description(), command, date, git_commit()))
    print(f"[run_all] wrote {args.results}")
    return 0 if all(r.ok for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
