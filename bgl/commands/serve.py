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


def run(args) -> int:
    """Serve the store or part until stopped; return the exit code (0 = clean stop)."""
    from bgl.sampler.server import run_server

    return run_server(args)
