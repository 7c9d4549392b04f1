"""Billion-edge measurement: partition one big store, serve its parts, sample from them.

    nice .venv/bin/bgl ingest rmat:25 --edge-factor 16 /work/scratch/rmat25      # once (~15+ min)
    DGLBACKEND=pytorch .venv/bin/python bench/scaling/billion.py /work/scratch/rmat25 /work/scratch/rmat25-bgl \\
        --parts 4 --batches 20 --memory-budget 14G

Steps, each measured in its own child process (peak RSS from ``os.wait4``, so it is that
step's alone): ``bgl partition --method METHOD --parts P`` (skipped with ``--skip-partition``
when the partition dir exists), then P ``bgl serve --partition DIR --part K`` servers and
a ``SamplingClient`` sampling fanouts 15,10,5 at batch 1024 from the training nodes:
time from launching the servers to the first sampled batch, seeds/s over ``--batches``
batches, and each server's RSS.  Prints one JSON object (and a markdown row).

``--train`` is the whole chain in one command (issue #28 item 5): ``--ingest-scale S`` first
ingests R-MAT S (edge factor 16, ``--feat-dim`` 64 float32 features, 16 classes) when STORE does not exist,
then partitions, then ``bgl launch --backend local`` runs P graph servers and
``--trainers`` GraphSAGE trainers (``examples/train_sage.py --max-batches``, lookahead cache,
proximity order) instead of the sampling client.  Each phase's wall time and peak RSS (the
launch's is its largest process, from ``os.wait4``), the page cache the run took
(``/proc/meminfo`` Cached, before and after) and the bytes to and from the graph servers per batch::

    nice python bench/scaling/billion.py /work/scratch/rmat25 /work/scratch/rmat25-parts --train \
        --ingest-scale 25 --parts 4 --trainers 2 --train-batches 100 --memory-budget 14G
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))  # the checkout: bench.<area>.<script> imports
from bench.scaling.proc_watch import ProcWatch  # noqa: E402


def page_cache_bytes() -> int:
    """``Cached`` of /proc/meminfo: the page cache now, in bytes."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("Cached:"):
            return int(line.split()[1]) * 1024
    return 0


def ingest_step(args, res: dict, sc) -> bool:
    """``bgl ingest rmat:SCALE`` into ``args.store`` unless it exists; False on failure."""
    if args.ingest_scale is None or (Path(args.store) / "meta.json").is_file():
        return True
    with ProcWatch() as watch:
        rc, secs, rss, out = sc.run_child(["ingest", f"rmat:{args.ingest_scale}", args.store, "--edge-factor", "16",
                                           "--feat-dim", str(args.feat_dim), "--num-classes", "16", "--no-progress"],
                                          timeout=args.timeout)
    res.update(ingest_rc=rc, ingest_s=secs, ingest_peak_rss=rss, ingest_tail=out[-1500:], ingest_watch=watch.report())
    return rc == 0


def train_step(args, part_dir: Path, res: dict, sc) -> int:
    """``bgl launch --backend local``: P servers + ``args.trainers`` trainers of examples/train_sage.py."""
    work = Path(tempfile.mkdtemp(prefix="bgl-billion-train-"))
    try:
        (work / "hosts").write_text("127.0.0.1\n")
        stats = work / "stats.json"
        cmd = ["launch", "--backend", "local", "--hosts", str(work / "hosts"), "--partition", str(part_dir),
               "--num-trainers", str(args.trainers), "--num-servers-per-host", str(args.parts),
               "--server-timeout", "600", "--workdir", str(work), "--",
               sys.executable, str(REPO / "examples" / "train_sage.py"), "--graph", str(part_dir),
               "--epochs", "1", "--max-batches", str(args.train_batches), "--batch-size", str(args.batch_size),
               "--fanouts", args.fanouts, "--cache", "lookahead", "--order", "proximity", "--stats-json", str(stats)]
        cached = page_cache_bytes()
        with ProcWatch() as watch:
            rc, secs, rss, out = sc.run_child(cmd, timeout=args.timeout)
        res.update(train_rc=rc, train_s=secs, train_largest_process_rss=rss, train_tail=out[-2500:],
                   page_cache_taken=page_cache_bytes() - cached, train_watch=watch.report())
        if stats.is_file():
            got = json.loads(stats.read_text())
            epoch = got["epochs"][0]
            batches = args.train_batches * args.trainers
            # client bytes: the graph-server clients' payload (co-located parts are read, not sent);
            # loopback: everything on lo during the epoch (rendezvous and gradients included)
            res.update(train_stats=got, client_bytes_per_batch=epoch["client_bytes"] / batches,
                       loopback_bytes_per_batch=epoch["loopback_bytes"] / batches)
        return rc
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
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
    ap.add_argument("--train", action="store_true", help="train GraphSAGE under bgl launch after partitioning")
    ap.add_argument("--ingest-scale", type=int, default=None, help="ingest rmat:SCALE into STORE if missing")
    ap.add_argument("--feat-dim", type=int, default=64)
    ap.add_argument("--trainers", type=int, default=2)
    ap.add_argument("--train-batches", type=int, default=100, help="batches per trainer")
    args = ap.parse_args(argv)
    from bench.scaling import rmat_growth as sc  # its run_child and Servers
    from bgl.partition.format import open_partition
    from bgl.sampler import SamplingClient

    fanouts = [int(f) for f in args.fanouts.split(",")]
    res: dict = {"store": args.store, "method": args.method, "parts": args.parts}
    part_dir = Path(args.partition_dir)
    if not ingest_step(args, res, sc):
        print(json.dumps(res))
        return 1
    if not args.skip_partition:
        budget = ["--memory-budget", args.memory_budget] if args.memory_budget else []
        with ProcWatch() as watch:
            rc, secs, rss, out = sc.run_child(["-v", "partition", "--method", args.method, "--parts",
                                               str(args.parts), "--num-batches", str(args.num_batches), *budget,
                                               "--overwrite", args.store, str(part_dir)], timeout=args.timeout)
        res.update(partition_rc=rc, partition_s=secs, partition_peak_rss=rss, partition_tail=out[-1500:],
                   partition_watch=watch.report())
        print(out[-3000:], file=sys.stderr)
        if rc != 0:
            print(json.dumps(res))
            return 1
    book = open_partition(part_dir)
    res["metrics"] = book.meta.get("metrics")
    if args.train:
        rc = train_step(args, part_dir, res, sc)
        print(json.dumps(res, default=str))
        return rc
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
