"""``bgl demo``: ingest the embedded dataset and print its summary (first version)."""
from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "demo", help="end-to-end demo on the embedded dataset",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--workdir", default=None,
                        help="where to write the store (default: a temporary directory)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from bgl.data import default_dataset_path
    from bgl.datasets import ingest

    with tempfile.TemporaryDirectory(prefix="bgl-demo-") as tmp:
        root = Path(args.workdir) if args.workdir else Path(tmp)
        store = ingest(str(default_dataset_path()), root / "store", overwrite=True)
        print(json.dumps(store.summary(), indent=2))
    return 0
