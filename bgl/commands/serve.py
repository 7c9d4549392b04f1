"""``bgl serve``: run one graph server for a store or one partition part."""
from __future__ import annotations

import argparse
import os

DESCRIPTION = ("Serve neighbour sampling and feature reads of one graph store (or one part of a "
               "partition dir) over ZeroMQ. Stops on SHUTDOWN with the token, SIGTERM or Ctrl-C.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    src = p.add_argument_group("what to serve (one of)")
    src.add_argument("--store", metavar="DIR", help="graph store directory")
    src.add_argument("--partition", metavar="DIR", help="partition directory (with partition.json)")
    src.add_argument("--part", type=int, metavar="K", help="part number, with --partition")
    p.add_argument("--bind", default="tcp://127.0.0.1:*",
                   help="ZeroMQ endpoint; '*' as port picks a free one (see --ready-file)")
    p.add_argument("--token", default=os.environ.get("BGL_SERVER_TOKEN"),
                   help="SHUTDOWN token (default: $BGL_SERVER_TOKEN, else random)")
    p.add_argument("--token-file", metavar="PATH", help="write the token here (mode 0600) instead of logging it")
    p.add_argument("--threads", type=int, default=min(4, os.cpu_count() or 1), help="worker threads")
    sec = p.add_argument_group("security (CURVE: authenticated, encrypted traffic)")
    sec.add_argument("--curve-secret", metavar="FILE",
                     help="the server's CURVE key pair file (.key_secret, mode 0600); enables CURVE")
    sec.add_argument("--curve-clients", metavar="DIR",
                     help="directory of the allowed clients' public .key files (with --curve-secret)")
    sec.add_argument("--curve-dir", metavar="DIR", default=os.environ.get("BGL_CURVE_DIR"),
                     help="key directory holding server.key_secret and allowed_clients/ (default: "
                          "$BGL_CURVE_DIR, which bgl launch sets); shorthand for the two above")
    sec.add_argument("--insecure-plaintext", action="store_true",
                     help="allow a plaintext (unauthenticated) server on a non-loopback address")
    p.add_argument("--ready-file", metavar="PATH",
                   help="once bound, write JSON {address, pid, node_offset, num_nodes} here (atomically)")


def register(subparsers) -> None:
    """Add the ``serve`` parser (one graph server) to ``subparsers``."""
    p = subparsers.add_parser("serve", help="run a graph server", description=DESCRIPTION,
                              formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    add_arguments(p)
    p.set_defaults(func=run)


def check_source(args) -> None:
    """Refuse a bad ``--store`` / ``--partition`` / ``--part`` before any socket is bound.

    A partition dir is opened with :class:`~bgl.partition.format.PartitionBook`, which checks
    ``partition.json`` in full (format, contiguous ranges, part stores present) and names the
    problem, so a damaged one never reaches the server as an AttributeError; the part's store
    itself is opened (and checked) once, by the server.
    """
    if (args.store is None) == (args.partition is None):
        raise ValueError("give exactly one of --store DIR or --partition DIR --part K")
    if args.store is not None and args.part is not None:
        raise ValueError("--part K goes with --partition DIR, not --store")
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
