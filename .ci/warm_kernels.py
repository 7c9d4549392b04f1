"""Compile the numba kernel variants the test suite uses into numba's cache, once per lane's venv.

numba compiles a kernel variant (one per combination of argument types) the first time a process
calls it, and caches it per Python version.  On CI's fresh venv each lane therefore paid every
variant inside whichever test touched it first: 265 variants in the pinned lane, 225 in the
current one, about a quarter of what `tests/sampler` costs cold.  ``make test`` runs this first
(a stamp per venv, like ``bgl compile`` for ``make demo``): the lanes then load the variants
(2-8 ms each) and their tests' times are the tests' own.  It compiles in a few processes side by
side, one kernel's variants in one process (bgl's compile lock is per kernel); a test run is one
process, so its compiles used one core.

The variants are listed in ``suite-kernels.txt`` beside this file, one per line: the kernel's
``module.qualname``, a tab, and its argument types as numba writes a signature (the text
``$BGL_COMPILE_LOG`` records).  A variant missing from the list still compiles, once, in the lane;
a listed one the suite no longer uses costs only its compile here.  To list again after kernels
change, run the lane once with ``BGL_COMPILE_LOG=FILE`` set, then ``--record FILE``.

    python .ci/warm_kernels.py                 # compile every listed variant (2 processes)
    python .ci/warm_kernels.py --record LOG    # rewrite suite-kernels.txt from compile logs
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

LIST = Path(__file__).with_name("suite-kernels.txt")
ARRAY = re.compile(r"^Array\((\w+), (\d+), '([CAF])', (True|False), aligned=(True|False)\)$")
SCALAR = re.compile(r"^(bool|u?int(8|16|32|64)|float(32|64))$")


def split_types(signature: str) -> list[str]:
    """The top-level comma-separated items of ``(a, b(c, d), e)``."""
    inner = signature.strip()
    if not (inner.startswith("(") and inner.endswith(")")):
        raise ValueError(f"a signature is a parenthesised list of types, got {signature!r}")
    items, depth, start = [], 0, 1
    for i, ch in enumerate(inner[1:-1], 1):
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            items.append(inner[start:i].strip())
            start = i + 1
    last = inner[start:-1].strip()
    return items + ([last] if last else [])


def parse_type(text: str):
    """The numba type whose text is ``text``: an array or a bool/int/float scalar (all the suite's
    kernels take; anything else is refused by name)."""
    from numba.core import types

    def scalar(name: str):
        return types.boolean if name == "bool" else getattr(types, name)

    array = ARRAY.match(text)
    if array:
        dtype, ndim, layout, readonly, aligned = array.groups()
        if not SCALAR.match(dtype):
            raise ValueError(f"unsupported array dtype {dtype!r} in {text!r}")
        return types.Array(scalar(dtype), int(ndim), layout, readonly=readonly == "True", aligned=aligned == "True")
    if SCALAR.match(text):
        return scalar(text)
    raise ValueError(f"unsupported argument type {text!r} (arrays and bool/int/float scalars only)")


def parse_signature(signature: str) -> tuple:
    """``signature`` (numba's text of a tuple of argument types) as that tuple of numba types."""
    return tuple(parse_type(item) for item in split_types(signature))


def read_list(path: Path = LIST) -> list[tuple[str, str]]:
    """(kernel, signature) per line of ``path``; blank lines and ``#`` comments skipped."""
    rows = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        kernel, sep, signature = line.partition("\t")
        if not sep:
            raise ValueError(f"{path}:{number}: expected KERNEL<TAB>SIGNATURE, got {line!r}")
        rows.append((kernel, signature))
    return rows


def kernel_of(name: str):
    """The numba dispatcher ``module.qualname`` names."""
    module, _, attr = name.rpartition(".")
    found = getattr(importlib.import_module(module), attr, None)
    if found is None or not hasattr(found, "compile"):
        raise LookupError(f"{name} is not a numba kernel (renamed or removed: record the list again)")
    return found


def shards(rows: list[tuple[str, str]], count: int) -> list[list[tuple[str, str]]]:
    """``rows`` in ``count`` groups, every variant of one kernel in the same group, groups about equal."""
    by_kernel: dict[str, list[tuple[str, str]]] = {}
    for row in rows:
        by_kernel.setdefault(row[0], []).append(row)
    groups: list[list[tuple[str, str]]] = [[] for _ in range(count)]
    for variants in sorted(by_kernel.values(), key=len, reverse=True):
        min(groups, key=len).extend(variants)
    return [g for g in groups if g]


def compile_rows(rows: list[tuple[str, str]]) -> tuple[int, int, list[str]]:
    """Compile (or find in the cache) each variant; (compiled, loaded, one line per failure)."""
    compiled = loaded = 0
    failed = []
    for kernel, signature in rows:
        try:
            dispatcher = kernel_of(kernel)
            misses = sum(getattr(dispatcher, "_cache_misses", {}).values())
            dispatcher.compile(parse_signature(signature))
            if sum(getattr(dispatcher, "_cache_misses", {}).values()) > misses:
                compiled += 1
            else:
                loaded += 1
        except Exception as exc:  # one variant's failure costs only its warm-up: the lane compiles it
            failed.append(f"{kernel} {signature}: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
    return compiled, loaded, failed


def warm(jobs: int, path: Path = LIST) -> int:
    """Compile every listed variant in ``jobs`` processes; print one line; 1 when any variant failed."""
    start = time.perf_counter()
    groups = shards(read_list(path), max(1, jobs))
    procs = [subprocess.Popen([sys.executable, __file__, "--worker", str(path), str(i), str(len(groups))],
                              stdout=subprocess.PIPE, text=True) for i in range(len(groups))]
    compiled = loaded = 0
    failed: list[str] = []
    for proc in procs:
        out, _ = proc.communicate()
        try:
            result = json.loads(out.strip().splitlines()[-1])
        except (IndexError, ValueError):
            failed.append(f"a warm-up process exited with {proc.returncode} and no result")
            continue
        compiled, loaded = compiled + result["compiled"], loaded + result["loaded"]
        failed += result["failed"]
    for line in failed:
        print(f"warm_kernels: not compiled: {line}", file=sys.stderr)
    print(f"compiled {compiled} kernel variants of the suite into numba's cache ({loaded} there already, "
          f"{len(failed)} failed) in {time.perf_counter() - start:.1f} s, {len(groups)} processes", flush=True)
    return 1 if failed else 0


def record(logs: list[Path], path: Path = LIST) -> int:
    """Rewrite the list from ``$BGL_COMPILE_LOG`` files: every bgl kernel variant compiled or loaded
    whose types :func:`parse_type` takes (literal and omitted arguments are left to the lane)."""
    seen, skipped = set(), 0
    for log in logs:
        for line in log.read_text().splitlines():
            entry = json.loads(line)
            if not entry["kernel"].startswith("bgl."):
                continue
            try:
                parse_signature(entry["signature"])
            except ValueError:
                skipped += 1
                continue
            seen.add((entry["kernel"], entry["signature"]))
    header = "# written by .ci/warm_kernels.py --record (kernel<TAB>argument types); see that file\n"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(header + "".join(f"{k}\t{s}\n" for k, s in sorted(seen)))
    os.replace(tmp, path)  # whole or not at all
    print(f"{path}: {len(seen)} kernel variants ({skipped} log lines with literal or omitted arguments left out)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=min(4, os.cpu_count() or 1),
                        help="processes compiling side by side (default: the cores, at most 4)")
    parser.add_argument("--list", type=Path, default=LIST, help="the variants' list (default: %(default)s)")
    parser.add_argument("--record", nargs="+", type=Path, metavar="LOG",
                        help="rewrite the list from these $BGL_COMPILE_LOG files instead of compiling")
    parser.add_argument("--worker", nargs=3, metavar=("LIST", "INDEX", "COUNT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.record:
        return record(args.record, args.list)
    if args.worker:
        path, index, count = Path(args.worker[0]), int(args.worker[1]), int(args.worker[2])
        compiled, loaded, failed = compile_rows(shards(read_list(path), count)[index])
        print(json.dumps({"compiled": compiled, "loaded": loaded, "failed": failed}), flush=True)
        return 0
    return warm(args.jobs, args.list)


if __name__ == "__main__":
    sys.exit(main())
