"""Run the test suite once per lane (one interpreter, i.e. one venv, each) and close on one summary.

``make test`` runs two lanes: the pinned DGL stack (.venv) and the current stack without DGL
(.venv-current-3.1x).  Each lane's pytest output streams through as it runs; at the end this prints
each lane's stack and pytest summary line, then a last line in pytest's own form that adds them up,
so CI, which reads the closing line, sees both.  Above those lines it repeats why a lane failed (its
``FAILED``/``ERROR`` lines and ``--strict-suite``'s problems) and its slowest tests, which a CI log's
tail would otherwise cut off with the lane's own output.  Exits non-zero when any lane failed or ran no test
(pytest's exit 5).  Standard library only: it runs before any venv exists.

    python .ci/lanes.py --lane "pinned DGL=.venv/bin/python" --lane "current=.venv-current-3.12/bin/python" \\
        -- -m "not extended" --durations=25
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time

# pytest -q closes on e.g. "1 failed, 950 passed, 12 skipped, 38 deselected in 561.20s (0:09:21)"
SUMMARY = re.compile(r"^=*\s*((?:\d+ [a-z]+(?:, )?)+) in ([\d.]+)s")
COUNT = re.compile(r"(\d+) ([a-z]+)")
# pytest's order of the words in its closing line
# what says why a lane failed: pytest's short summary lines and --strict-suite's block (tests/conftest.py)
WHY = re.compile(r"^(FAILED |ERROR |--strict-suite:|skipped outside the allowed reasons: |left in /)")
WHY_KEPT = 20  # lines a lane repeats at the end at most
# --durations' lines ("123.45s call     tests/x.py::test_y"): a lane repeats its slowest few at the end too
DURATION = re.compile(r"^\d+\.\d+s (call|setup|teardown) ")
SLOWEST_KEPT = 5
ORDER = ("failed", "passed", "skipped", "deselected", "xfailed", "xpassed", "warning", "warnings", "error", "errors")
STACK = ("import sys, importlib.metadata as m\n"
         "def v(name):\n"
         "    try:\n"
         "        return m.version(name)\n"
         "    except m.PackageNotFoundError:\n"
         "        return 'none'\n"
         "print(f'Python {sys.version.split()[0]}, torch {v(\"torch\")}, numpy {v(\"numpy\")}, '\n"
         "      f'numba {v(\"numba\")}, DGL {v(\"dgl\")}, PyG {v(\"torch-geometric\")}')\n")


def stack_of(python: str) -> str:
    """One line naming the lane's interpreter and library versions (read from metadata, nothing imported)."""
    done = subprocess.run([python, "-c", STACK], capture_output=True, text=True, timeout=60)
    return done.stdout.strip() if done.returncode == 0 else f"({python}: {done.stderr.strip()[-200:]})"


def run_lane(python: str, pytest_args: list[str]) -> tuple[int, str, float, list[str]]:
    """Run pytest under ``python``, streaming its output; (exit code, closing summary line, seconds,
    the lines saying why it failed)."""
    start = time.monotonic()
    last = ""
    why: list[str] = []
    slowest: list[str] = []
    with subprocess.Popen([python, "-m", "pytest", *pytest_args], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, bufsize=1) as proc:
        for line in proc.stdout:
            sys.stdout.write(line)
            if SUMMARY.match(line.strip()):
                last = line.strip().strip("= ")
            elif WHY.match(line) or (DURATION.match(line) and len(slowest) < SLOWEST_KEPT):
                (why if WHY.match(line) else slowest).append(line.rstrip()[:400])
    sys.stdout.flush()
    return proc.returncode, last, time.monotonic() - start, [*why, *(f"slow: {d}" for d in slowest)]


def add_up(summaries: list[str], seconds: float) -> str:
    """The lanes' pytest summary lines as one, in pytest's words and order."""
    total: dict[str, int] = {}
    for line in summaries:
        match = SUMMARY.match(line)
        for n, word in COUNT.findall(match.group(1) if match else ""):
            total[word] = total.get(word, 0) + int(n)
    words = sorted(total, key=lambda w: ORDER.index(w) if w in ORDER else len(ORDER))
    counts = ", ".join(f"{total[w]} {w}" for w in words) or "no tests ran"
    return f"{counts} in {seconds:.2f}s"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lane", action="append", required=True, metavar="NAME=PYTHON",
                        help="a lane's name and its interpreter (repeat; lanes run in the order given)")
    parser.add_argument("pytest_args", nargs="*", help="after --: arguments for pytest (default: tests)")
    args = parser.parse_args(argv)
    lanes = []
    for spec in args.lane:
        name, sep, python = spec.partition("=")
        if not sep or not name or not python:
            parser.error(f"--lane takes NAME=PYTHON, got {spec!r}")
        lanes.append((name, python))
    pytest_args = args.pytest_args or ["tests"]
    results, reasons = [], []
    for i, (name, python) in enumerate(lanes, 1):
        stack = stack_of(python)
        print(f"\n=== lane {i}/{len(lanes)}: {name}: {stack}", flush=True)
        code, summary, seconds, why = run_lane(python, pytest_args)
        results.append((name, stack, code, summary, seconds))
        reasons.append(why)
    print("\n=== lanes")
    for i, why in enumerate(reasons, 1):
        for line in why[:WHY_KEPT]:
            print(f"lane {i}: {line}")
        if len(why) > WHY_KEPT:
            print(f"lane {i}: ... and {len(why) - WHY_KEPT} more such lines above")
    for i, (name, stack, code, summary, seconds) in enumerate(results, 1):
        outcome = "ok" if code == 0 else f"FAILED (pytest exit {code})"
        print(f"lane {i} {name} ({stack}): {summary or 'no summary line'}; wall {seconds:.0f} s; {outcome}")
    print(add_up([r[3] for r in results], sum(r[4] for r in results)), flush=True)
    return 0 if all(r[2] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
