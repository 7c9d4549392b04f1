"""``bgl serve``: run one graph server for a store or one partition part."""
from __future__ import annotations

import argparse

from bgl.sampler.server_options import DESCRIPTION, add_arguments


def register(subparsers) -> None:
    """Add the ``serve`` parser (one graph server) to ``subparsers``."""
    p = subparsers.add_parser("serve", help="run a graph server", description=DESCRIPTION,
                              formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    add_arguments(p)
    p.set_defaults(func=run)


def check_source(args) -> None:
    """Refuse a bad ``--store`` / ``--partition`` / ``--part`` / ``--bind`` before any socket is bound.

    A partition dir is opened with :class:`~bgl.partition.format.PartitionBook`, which checks
    ``partition.json`` in full (format, contiguous ranges, part stores present) and names the
    problem, so a damaged one never reaches the server as an AttributeError; the part's store
    itself is opened (and checked) once, by the server.
    """
    if (args.store is None) == (args.partition is None):
        raise ValueError("give exactly one of --store DIR or --partition DIR --part K")
    if args.store is not None and args.part is not None:
        raise ValueError("--part K goes with --partition DIR, not --store")
    from bgl.sampler.endpoints import check_endpoint

    check_endpoint(args.bind, "--bind", bind=True)
    if args.threads < 1:
        raise ValueError(f"--threads must be >= 1, got {args.threads}")
    if args.partition is not None:
        from bgl.partition.format import open_partition

        book = open_partition(args.partition)
        if args.part is None:
            raise ValueError(f"--partition needs --part K (K in [0, {book.num_parts}))")
        if not 0 <= args.part < book.num_parts:
            raise ValueError(f"--part must be in [0, {book.num_parts}) for {args.partition}, got {args.part}")


def run(args) -> int:
    """Serve the store or part until stopped; return the exit code (0 = clean stop)."""
    from bgl.sampler.server import run_server

    check_source(args)
    return run_server(args)
