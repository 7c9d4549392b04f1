"""The graph server's command-line options, shared by ``bgl serve`` and ``python -m bgl.sampler.server``.

The server owns its options; the ``bgl serve`` command (:mod:`bgl.commands.serve`)
imports them from here.  Only ``argparse`` and ``os`` are imported, so
``bgl --help`` stays fast.
"""
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
