"""Write .ci/suite-durations.txt (seconds per test file) from a lane's ``pytest --durations=0`` output.

``make test`` hands the heaviest files to its two xdist workers first (tests/suite_schedule.py); this
list is where their weights come from.  Refresh it when files are added or grow much:

    .venv/bin/python -m pytest -q tests -m "not extended" --durations=0 -n 2 --dist loadfile > durations.log
    python .ci/record_durations.py durations.log

A test's setup, call and teardown are summed into its file.  Standard library only.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

LINE = re.compile(r"^(\d+(?:\.\d+)?)s (?:call|setup|teardown)\s+(\S+?\.py)(?:::|\s|$)")
OUT = Path(__file__).resolve().parent / "suite-durations.txt"
HEADER = ("# seconds per test file in one lane (pytest --durations=0, summed per file): the order in which\n"
          "# make test's xdist workers take files (tests/suite_schedule.py).  Written by .ci/record_durations.py.\n")


def per_file(lines) -> dict[str, float]:
    seconds: dict[str, float] = {}
    for line in lines:
        match = LINE.match(line.strip())
        if match:
            seconds[match.group(2)] = seconds.get(match.group(2), 0.0) + float(match.group(1))
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", help="a pytest run's output with --durations=0 ('-' for standard input)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    text = sys.stdin if args.log == "-" else open(args.log, encoding="utf-8", errors="replace")
    seconds = per_file(text)
    if not seconds:
        print(f"record_durations: no duration lines in {args.log} (run pytest with --durations=0)", file=sys.stderr)
        return 1
    body = "".join(f"{s:.1f} {name}\n" for name, s in sorted(seconds.items(), key=lambda kv: (-kv[1], kv[0])))
    tmp = args.out.with_name(args.out.name + ".tmp")
    tmp.write_text(HEADER + body)
    tmp.replace(args.out)
    print(f"record_durations: {len(seconds)} files, {sum(seconds.values()):.0f} s, into {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
