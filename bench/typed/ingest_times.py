#!/usr/bin/env python
"""What keeping edge times costs typed ingest: seconds, peak RSS and build buffer, with and without times.

A generated user-item directory in the typed edge-list layout (``bgl.sources.typed.edgelist``):
``user__clicks__item.txt`` (``user item time`` per line) and ``item__links__item.npy`` with its
``.time.npy``, ingested with ``add_reverse`` (dgl.AddReverse) twice, each in its own subprocess:
without times, and with ``edge_time_column=2`` (the store's int64 ``timestamp`` edge array).
``--fill-bytes`` fixes the builder's bucket budget, so the cost of the third buffer shows as
buckets (8 B more per entry: 13 B instead of 5 B while ids fit int32).

Usage::

    python bench/typed/ingest_times.py                       # 2M clicks, 1M links, 64 MiB fill budget
    python bench/typed/ingest_times.py --clicks 200000 --links 100000
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.<area>.<script> imports
from bench.ingest.store_build import _dir_bytes, _rss_kib  # noqa: E402  (the ingest benchmark's RSS and size helpers)

USERS, ITEMS = 500_000, 200_000


def make_dir(root: Path, clicks: int, links: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    (root / "edges").mkdir(parents=True)
    (root / "nodes.json").write_text(json.dumps({"item": ITEMS, "user": USERS}))
    u, i = rng.integers(0, USERS, clicks), rng.zipf(1.3, clicks) % ITEMS  # popular items: hub rows
    t = rng.integers(1_600_000_000, 1_700_000_000, clicks)
    np.savetxt(root / "edges" / "user__clicks__item.txt", np.stack([u, i, t], 1), fmt="%d")
    np.save(root / "edges" / "item__links__item.npy", rng.integers(0, ITEMS, (2, links)).astype(np.int32))
    np.save(root / "edges" / "item__links__item.time.npy", rng.integers(1_600_000_000, 1_700_000_000, links))


def child(src: Path, out: Path, timed: bool, fill_bytes: int) -> dict:
    from bgl.sources import _parse_kernels
    from bgl.sources.typed import _csc_kernels as _typed_csc_kernels  # noqa: F401  (imports counted in the base RSS)
    from bgl.sources.typed.edgelist import read_typed_edgelist
    from bgl.sources.typed.source import with_reverse, write_typed_source

    base = _rss_kib()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=out.parent) as scratch:
        source = read_typed_edgelist(src, scratch_dir=Path(scratch), edge_time_column=2 if timed else None)
        store = write_typed_source(with_reverse(source), out, fill_bytes=fill_bytes)
    secs = time.perf_counter() - t0
    build = store.meta.extra["csc_build"]
    return dict(seconds=secs, peak_kib=_rss_kib(), base_kib=base, store_bytes=_dir_bytes(out)
                + sum(_dir_bytes(d) for d in out.iterdir() if d.is_dir()),
                edges=store.num_edges, buckets=build["buckets"], build_bytes=build["build_bytes"],
                store_bytes_per_edge=build["store_bytes_per_edge"])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--clicks", type=int, default=2_000_000)
    p.add_argument("--links", type=int, default=1_000_000)
    p.add_argument("--fill-bytes", type=int, default=64 << 20)
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--src", default=None, help=argparse.SUPPRESS)
    p.add_argument("--out", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(child(Path(args.src), Path(args.out), args.child == "times", args.fill_bytes)))
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-typed-times-") as work:
        work = Path(work)
        t0 = time.perf_counter()
        make_dir(work / "in", args.clicks, args.links)
        print(f"# generated {args.clicks:,} clicks (text) + {args.links:,} links (.npy) in "
              f"{time.perf_counter() - t0:.1f} s; load {open('/proc/loadavg').read().split()[:3]}", flush=True)
        print("| mode | edges stored | s | peak RSS MiB | over base MiB | store MiB | store B/edge | buckets "
              "| build MiB |\n|---|---|---|---|---|---|---|---|---|")
        for mode in ("plain", "times"):
            cmd = [sys.executable, __file__, "--child", mode, "--src", str(work / "in"),
                   "--out", str(work / mode), "--fill-bytes", str(args.fill_bytes)]
            r = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ))
            if r.returncode:
                print(f"# {mode}: failed: {r.stderr.strip().splitlines()[-1:]}")
                return 1
            res = json.loads(r.stdout.strip().splitlines()[-1])
            mib = 2**20
            print(f"| {mode} | {res['edges']:,} | {res['seconds']:.1f} | {res['peak_kib'] / 1024:.0f} | "
                  f"{(res['peak_kib'] - res['base_kib']) / 1024:.0f} | {res['store_bytes'] / mib:.0f} | "
                  f"{res['store_bytes_per_edge']} | {res['buckets']} | {res['build_bytes'] / mib:.0f} |", flush=True)
    print(f"# load after: {open('/proc/loadavg').read().split()[:3]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
