"""The ``bgl`` command: one entry point, one sub-command per module in ``bgl.commands``.

Each command module defines ``register(subparsers)`` which adds its parser
and sets ``func(args) -> int``.  Modules import their heavy dependencies
(torch, numba, zmq) inside ``func`` so ``bgl --help`` stays fast.
"""
from __future__ import annotations

import argparse
import importlib
import logging
import sys

# Order is the order shown in --help.
COMMAND_MODULES = [
    "ingest", "info", "partition", "serve", "launch", "bench_cache", "demo",
]


def build_parser() -> argparse.ArgumentParser:
    """The ``bgl`` parser with every sub-command module that is present registered."""
    parser = argparse.ArgumentParser(
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
    """Run one ``bgl`` sub-command; returns its exit code (1 with a one-line message on a bgl error)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(name)s %(levelname)s: %(message)s",
    )
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from .errors import BglError

    try:
        return int(args.func(args) or 0)
    except (BglError, FileExistsError, FileNotFoundError, ValueError) as e:
        print(f"bgl {args.command}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"bgl {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
