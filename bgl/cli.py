"""The ``bgl`` command: one entry point, one sub-command per module in ``bgl.commands``.

Each command module defines ``register(subparsers)`` which adds its parser
and sets ``func(args) -> int``.  Modules import their heavy dependencies
(torch, numba, zmq) inside ``func`` so ``bgl --help`` stays fast.

Failures: every bad input ends with exit status 1 (2 for a usage error, 143
for SIGTERM during ``ingest``) and ONE line on stderr,
``bgl <cmd>: error: <what, naming the offending value or path>``; there is no
traceback unless ``-v``/``--verbose`` or ``BGL_DEBUG=1`` asks for it.  Warnings
may precede that line on stderr; progress bars are drawn only on a terminal, and
erased when their pass ends (``leave=False``), so none is left above it.

Output is for a person by default: each command prints one summary per phase
on stdout and logs only warnings; ``-v`` adds the INFO detail (each partitioner
round, each server's start and stop), ``-vv`` debug lines.  Long-running
services (``serve``, ``launch``) log INFO by default, since their status lines
are what their user watches.  ``$BGL_LOG_LEVEL`` (a level name) overrides both,
and reaches the processes a command starts (``bgl demo`` sets it so its graph
servers stay quiet too).  ``bgl info --json`` is the form for machines.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import os
import shutil
import sys
import traceback

# Order is the order shown in --help.
COMMAND_MODULES = [
    "ingest", "compress", "info", "partition", "serve", "launch", "bench_cache", "demo", "compile",
]


#: Commands whose SIGTERM becomes an exception, so their ``finally`` blocks remove the scratch and
#: work dirs (``bgl.output_dir``).  Not ``partition``: its engine runs in one long C++ call, which
#: would defer the exception (and the exit) until it returns; a killed partition run's work dirs
#: are removed by the next writer instead.
SIGTERM_CLEANUP_COMMANDS = ("ingest",)
DEBUG_ENV = "BGL_DEBUG"
LOG_LEVEL_ENV = "BGL_LOG_LEVEL"
#: Commands whose INFO lines are their status (a server's address, a launch's members).
INFO_BY_DEFAULT = ("serve", "launch")


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
    from . import __version__

    parser.add_argument("--version", action="version", version=f"bgl {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="-v: detailed (INFO) log lines and tracebacks; -vv: debug lines")
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
    try:
        level = log_level(args.verbose, args.command)
    except ValueError as e:
        print(f"bgl: error: {e}", file=sys.stderr)
        return 2
    logging.basicConfig(level=level, format="%(asctime)s %(name)s %(levelname)s: %(message)s")
    status = StatusLine.install(level)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from .output_dir import Terminated, sigterm_raises

    debug = args.verbose > 0 or os.environ.get(DEBUG_ENV, "") not in ("", "0")
    guard = sigterm_raises() if args.command in SIGTERM_CLEANUP_COMMANDS else contextlib.nullcontext()
    try:
        with guard, status:
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


class StatusLine(logging.Handler):
    """On a terminal, at the quiet default, the latest INFO line of bgl's loggers as one status line
    on stderr, rewritten in place and erased when the command ends: a long partition or ingest shows
    what it is doing without filling the screen; warnings still print as whole lines.  Not installed
    when stderr is not a terminal or when the INFO lines are shown anyway."""

    def __init__(self, stream):
        super().__init__(logging.INFO)
        self.stream = stream
        self.showing = False  # a status line is on screen; the next stdout write erases it first
        self.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s: %(message)s"))

    @classmethod
    def install(cls, level: int):
        """A context manager: the handler on the ``bgl`` logger while the command runs (or nothing)."""
        if level <= logging.INFO or not sys.stderr.isatty():
            return contextlib.nullcontext()
        return cls(sys.stderr)

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno > logging.INFO:
            self.stream.write("\r\x1b[K" + self.format(record) + "\n")
        else:
            width = max(20, shutil.get_terminal_size().columns - 1)
            self.stream.write("\r\x1b[K" + record.getMessage()[:width])
        self.showing = record.levelno == logging.INFO
        self.stream.flush()

    def erase(self) -> None:
        """Take the status line off the screen (before the command prints a line of its own)."""
        if self.showing:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.showing = False

    def __enter__(self):
        logger = logging.getLogger("bgl")
        self._saved = (logger.level, logger.propagate)
        logger.setLevel(logging.INFO)
        logger.propagate = False  # this handler prints bgl's warnings; other loggers go to the root's
        logger.addHandler(self)
        self._stdout = sys.stdout
        sys.stdout = _ErasingStdout(self._stdout, self)
        return self

    def __exit__(self, *exc):
        logger = logging.getLogger("bgl")
        logger.removeHandler(self)
        logger.level, logger.propagate = self._saved
        sys.stdout = self._stdout
        self.erase()
        return False


class _ErasingStdout:
    """``sys.stdout`` while a :class:`StatusLine` runs: a write first erases the status line, so a
    command's own lines never land behind it on the terminal."""

    def __init__(self, stream, status: StatusLine):
        self._stream, self._status = stream, status

    def write(self, text: str) -> int:
        self._status.erase()
        return self._stream.write(text)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def log_level(verbose: int, command: str | None) -> int:
    """The logging level of one run: ``-vv`` DEBUG, ``-v`` INFO, else ``$BGL_LOG_LEVEL`` if set, else
    INFO for the services in :data:`INFO_BY_DEFAULT` and WARNING for every other command."""
    if verbose:
        return logging.DEBUG if verbose > 1 else logging.INFO
    named = os.environ.get(LOG_LEVEL_ENV, "").strip().upper()
    if named:
        level = logging.getLevelName(named)
        if not isinstance(level, int):
            raise ValueError(f"${LOG_LEVEL_ENV}={named!r} is not a logging level (DEBUG, INFO, WARNING, ERROR)")
        return level
    return logging.INFO if command in INFO_BY_DEFAULT else logging.WARNING


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
