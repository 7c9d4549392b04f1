"""Billion-edge measurement: partition one big store, serve its parts, sample from them.

    nice .venv/bin/bgl ingest rmat:25 --edge-factor 16 /work/scratch/rmat25      # once (~15+ min)
    DGLBACKEND=pytorch .venv/bin/python bench/billion.py /work/scratch/rmat25 /work/scratch/rmat25-bgl \\
        --parts 4 --batches 20 --memory-budget 14G

Steps, each measured in its own child process (peak RSS from ``os.wait4``, so it is that
step's alone): ``bgl partition --method METHOD --parts P`` (skipped with ``--skip-partition``
when the partition dir exists), then P ``bgl serve --partition DIR --part K`` servers and
a ``SamplingClient`` sampling fanouts 15,10,5 at batch 1024 from the training nodes:
time from launching the servers to the first sampled batch, seeds/s over ``--batches``
batches, and each server's RSS.  Prints one JSON object (and a markdown row).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def _scaling():
    """bench/scaling.py as a module (its ``run_child`` and ``Servers``)."""
    spec = importlib.util.spec_from_file_location("bgl_bench_scaling", HERE / "scaling.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("store")
    ap.add_argument("partition_dir")
    ap.add_argument("--method", default="bgl")
    ap.add_argument("--parts", type=int, default=4)
    ap.add_argument("--num-batches", type=int, default=20, help="remote-share batches inside the partition step")
    ap.add_argument("--batches", type=int, default=20, help="sampled batches against the servers")
    ap.add_argument("--batch-size", type=int, default=1024)
    ap.add_argument("--fanouts", default="15,10,5")
    ap.add_argument("--memory-budget", default=None, help="passed to bgl partition, e.g. 14G")
    ap.add_argument("--skip-partition", action="store_true")
    ap.add_argument("--timeout", type=float, default=3600)
    args = ap.parse_args()
    sc = _scaling()
    from bgl.partition.format import open_partition
    from bgl.sampler import SamplingClient

    fanouts = [int(f) for f in args.fanouts.split(",")]
    res: dict = {"store": args.store, "method": args.method, "parts": args.parts}
    part_dir = Path(args.partition_dir)
    if not args.skip_partition:
        budget = ["--memory-budget", args.memory_budget] if args.memory_budget else []
        rc, secs, rss, out = sc.run_child(["-v", "partition", "--method", args.method, "--parts", str(args.parts),
                                           "--num-batches", str(args.num_batches), *budget, "--overwrite",
                                           args.store, str(part_dir)], timeout=args.timeout)
        res.update(partition_rc=rc, partition_s=secs, partition_peak_rss=rss, partition_tail=out[-1500:])
        print(out[-3000:], file=sys.stderr)
        if rc != 0:
            print(json.dumps(res))
            return 1
    book = open_partition(part_dir)
    res["metrics"] = book.meta.get("metrics")
    seeds_pool = np.asarray(book.split("train"))
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    ready_dir = Path(tempfile.mkdtemp(prefix="bgl-billion-"))  # the servers' ready files
    with sc.Servers(part_dir, book.num_parts, ready_dir, threads=1) as servers:
        res["servers_ready_s"] = time.perf_counter() - t0
        res["server_rss_idle"] = servers.rss()
        with SamplingClient(servers.addresses, timeout=300.0) as client:
            seeds = np.sort(rng.choice(seeds_pool, args.batch_size, replace=False))
            client.sample_blocks(seeds, fanouts, seed=0)
            res["time_to_first_sample_s"] = time.perf_counter() - t0
            done, secs = 0, 0.0
            for i in range(args.batches):
                seeds = np.sort(rng.choice(seeds_pool, args.batch_size, replace=False))
                t1 = time.perf_counter()
                client.sample_blocks(seeds, fanouts, seed=i + 1)
                secs += time.perf_counter() - t1
                done += seeds.size
            res["seeds_per_s"] = done / secs
            res["server_rss_after"] = servers.rss()
    shutil.rmtree(ready_dir, ignore_errors=True)
    print(json.dumps(res, default=str))
    gb = lambda b: f"{b / 2**30:.2f}"  # noqa: E731
    print(f"| {book.num_nodes} | {book.num_edges} | {res.get('partition_s', float('nan')):.0f} s | "
          f"{gb(res.get('partition_peak_rss', 0))} GiB | {res['time_to_first_sample_s']:.1f} s | "
          f"{res['seeds_per_s']:.0f} | {' / '.join(gb(r) for r in res['server_rss_after'])} GiB |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
