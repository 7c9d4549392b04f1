"""The ``bgl`` command: one entry point, one sub-command per module in ``bgl.commands``.

Each command module defines ``register(subparsers)`` which adds its parser
and sets ``func(args) -> int``.  Modules import their heavy dependencies
(torch, numba, zmq) inside ``func`` so ``bgl --help`` stays fast.

Failures: every bad input ends with exit status 1 (2 for a usage error, 143
for SIGTERM during ``ingest``) and ONE line on stderr,
``bgl <cmd>: error: <what, naming the offending value or path>``; there is no
traceback unless ``-v``/``--verbose`` or ``BGL_DEBUG=1`` asks for it.  Log
lines (INFO) and progress bars may precede that line on stderr.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import os
import sys
import traceback

# Order is the order shown in --help.
COMMAND_MODULES = [
    "ingest", "compress", "info", "partition", "serve", "launch", "bench_cache", "demo",
]


#: Commands whose SIGTERM becomes an exception, so their ``finally`` blocks remove the scratch and
#: work dirs (``bgl.output_dir``).  Not ``partition``: its engine runs in one long C++ call, which
#: would defer the exception (and the exit) until it returns; a killed partition run's work dirs
#: are removed by the next writer instead.
SIGTERM_CLEANUP_COMMANDS = ("ingest",)
DEBUG_ENV = "BGL_DEBUG"


class UsageError(Exception):
    """A command line argparse rejects; carries argparse's message (one line)."""

    def __init__(self, prog: str, message: str):
        self.prog = prog
        super().__init__(message)


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (``bgl <cmd>: error: ...``), not usage + error."""

    def error(self, message: str):
        raise UsageError(self.prog, message)


def build_parser() -> argparse.ArgumentParser:
    """The ``bgl`` parser with every sub-command module that is present registered."""
    parser = OneLineParser(
        prog="bgl", description="bgl: GPU-efficient GNN training data pipeline",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        module_name = f"bgl.commands.{name}"
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as e:
            if e.name == module_name:  # command not built yet; anything else is a real error
                continue
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one ``bgl`` sub-command; returns its exit code (non-zero with one stderr line on failure)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageError as e:
        print(f"{e.prog}: error: {_one_line(str(e))} (see {e.prog} --help)", file=sys.stderr)
        return 2
    except SystemExit as e:  # --help / --version
        return e.code if isinstance(e.code, int) else 0
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(name)s %(levelname)s: %(message)s",
    )
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from .output_dir import Terminated, sigterm_raises

    debug = args.verbose or os.environ.get(DEBUG_ENV, "") not in ("", "0")
    guard = sigterm_raises() if args.command in SIGTERM_CLEANUP_COMMANDS else contextlib.nullcontext()
    try:
        with guard:
            return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print(f"bgl {args.command}: interrupted", file=sys.stderr)
        return 130
    except Terminated:
        print(f"bgl {args.command}: error: terminated by SIGTERM; its partial output was removed", file=sys.stderr)
        return Terminated.exit_code
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            raise
        print(f"bgl {args.command}: error: {_one_line(str(e.code))}", file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001 - the one place every failure becomes one line
        if debug:
            traceback.print_exc()
        print(f"bgl {args.command}: error: {error_message(e, debug)}", file=sys.stderr)
        return 1


def error_message(e: BaseException, debug: bool = False) -> str:
    """The one-line text of a failure: bgl's own message, ``path: reason`` for an OS error, and the
    exception type (plus a hint to ``-v``) for anything unexpected."""
    from .errors import BglError

    if isinstance(e, BglError):
        text = str(e)
    elif isinstance(e, OSError) and e.strerror:  # raised by the OS: "[Errno 13] ..." -> path: reason
        where = f"{e.filename}: " if e.filename else ""
        text = f"{where}{e.strerror}" + (f" (-> {e.filename2})" if e.filename2 else "")
    elif isinstance(e, (OSError, ValueError, IndexError)):  # bgl's own messages name the value
        text = str(e)
    elif isinstance(e, MemoryError):  # numpy's "Unable to allocate ..." or a planner's refusal
        text = str(e) or "out of memory"
    else:
        text = f"{type(e).__name__}: {e}" + ("" if debug else " (run with -v for the traceback)")
    return _one_line(text)


def _one_line(text: str) -> str:
    return " ".join(part.strip() for part in text.strip().splitlines() if part.strip()) or "(no message)"


if __name__ == "__main__":
    sys.exit(main())
