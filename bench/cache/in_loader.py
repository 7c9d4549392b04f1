"""bgl.DataLoader epochs with the lookahead cache vs BGL's FIFO vs no cache, inline and in processes.

The cache benchmark (bench/cache/policies.py) replays recorded batch streams; this one runs the
real loader, so the fetch stage's lookahead (``cache_lookahead``: by default the window sized
to the cache; ``--lookaheads auto,4`` adds a row per window) is what the pipeline actually
gives it.  For each pipeline mode and policy, side by side in one run on one store: seconds
per epoch and to each epoch's first batch (the epochs after a first, untimed one that starts
processes and compiles kernels) and rows / MiB read from the source over the timed epochs
(the fetch stage's cache counters; ``none`` reads every requested row).  Ratios are against
``fifo`` in the same mode.  Same torch seed for every configuration: the same
seeds and samples for all.

Usage::

    python bench/cache/in_loader.py [--dataset pubmed | --store DIR] [--epochs 3] [--batch-size 256] [--lookaheads auto,4]
"""
from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from pathlib import Path

os.environ.setdefault("DGLBACKEND", "pytorch")

import numpy as np  # noqa: E402
import torch  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("BGL_DATASETS", REPO.parent / "shared" / "datasets"))
if not DATA.exists():
    DATA = Path("/work/shared/datasets")
DATASETS = {"cora": ("cora.npz", {}), "citeseer": ("citeseer.npz", {}),
            "pubmed": ("pubmed_adj_labels.npz", {"feat_dim": 500})}


def open_store(args):
    from bgl.sources.datasets import ingest
    from bgl.store import GraphStore

    if args.store:
        return GraphStore(args.store)
    out = Path(args.workdir) / args.dataset
    if (out / "meta.json").exists():
        return GraphStore(out)
    name, kwargs = DATASETS[args.dataset]
    return ingest(str(DATA / name), out, overwrite=True, **kwargs)


def run(store, mode: str, policy: str, args, lookahead=None) -> dict:
    """Timed epochs and source traffic of one (mode, policy) loader (``lookahead``: its
    ``cache_lookahead``, None for the default)."""
    import bgl

    torch.manual_seed(args.seed)
    cores = sorted(os.sched_getaffinity(0))
    extra = {"stage_cores": {"sample": [cores[0]], "fetch": [cores[-1]]}} if mode == "processes" else {}
    if lookahead is not None:
        extra["cache_lookahead"] = lookahead
    fanouts = [int(f) for f in args.fanouts.split(",")]
    loader = bgl.DataLoader(store, np.asarray(store.train_idx), bgl.NeighborSampler(fanouts),
                            batch_size=args.batch_size, shuffle=True, order=args.order, pipeline=mode,
                            cache=policy, cache_ratio=args.cache_ratio, **extra)
    try:
        for _ in loader:  # processes start, kernels compile, caches warm
            pass
        before = loader.cache_stats()
        times, firsts, waits = [], [], []
        for _ in range(args.epochs):
            t = time.perf_counter()
            for i, _ in enumerate(loader):
                if i == 0:
                    firsts.append(time.perf_counter() - t)
                if args.train_ms:
                    _busy(args.train_ms / 1e3)  # the trainer's step, as a fixed CPU-free wait
            times.append(time.perf_counter() - t)
            waits.append(loader.stats())  # the trainer's time blocked in next() this epoch
        after = loader.cache_stats()
    finally:
        loader.close()
    row_bytes = store.feat_dim * store.feat.dtype.itemsize
    moved = after["bytes_from_source"] - before["bytes_from_source"]
    return {"s_per_epoch": float(np.mean(times)), "s_min": float(np.min(times)), "rows": moved // row_bytes,
            "first_ms": 1e3 * float(np.mean(firsts)),
            "wait_ms": 1e3 * float(np.mean([w["wait_mean_s"] for w in waits])),
            "wait_share": sum(w["wait_s"] for w in waits) / sum(times),
            "mib": moved / 2**20, "hit_rate": (after["hits"] - before["hits"]) /
            max(1, after["requests"] - before["requests"]), "policy": loader.cache_policy}


def _busy(seconds: float) -> None:
    """Stand in for a model step of ``seconds`` (a GPU step leaves the CPU to the loader: sleep)."""
    time.sleep(seconds)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", default="pubmed", choices=sorted(DATASETS))
    p.add_argument("--store", default=None, help="an existing store dir (instead of --dataset)")
    p.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "bgl-bench-loader-cache"))
    p.add_argument("--epochs", type=int, default=3, help="timed epochs after one untimed")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--fanouts", default="10,10")
    p.add_argument("--cache-ratio", type=float, default=0.1)
    p.add_argument("--order", default="proximity", choices=["proximity", "random"])
    p.add_argument("--modes", default="inline,processes")
    p.add_argument("--policies", default="none,fifo,lookahead")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lookaheads", default="", help="cache_lookahead values, one lookahead row each "
                   "(e.g. auto,4); empty: the loader's default only")
    p.add_argument("--train-ms", type=float, default=0.0, help="a model step of this many ms per batch (a sleep: "
                   "the GPU's share of a step), so the loader runs ahead of a trainer as in training")
    args = p.parse_args()
    Path(args.workdir).mkdir(parents=True, exist_ok=True)
    store = open_store(args)
    print(f"# {platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__}; store {store.path.name}: "
          f"{store.num_nodes} nodes, {store.num_edges} edges, {store.feat_dim}-dim "
          f"{store.feat.dtype}, {len(store.train_idx)} train ids")
    print(f"# batch {args.batch_size}, fanouts {args.fanouts}, order {args.order}, cache "
          f"{args.cache_ratio:.0%} of nodes, {args.epochs} timed epochs after 1 untimed, model step {args.train_ms} ms")
    print("\n| mode | policy | s/epoch (mean, min) | first batch ms | trainer wait ms / batch (share) "
          "| rows from source | MiB from source | hit rate | rows vs fifo | time vs fifo |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    windows = [w if w == "auto" else int(w) for w in args.lookaheads.split(",") if w] or [None]
    for mode in args.modes.split(","):
        results = {}
        for pol in args.policies.split(","):
            for w in (windows if pol == "lookahead" else [None]):
                results[pol if w is None else f"{pol}[{w}]"] = run(store, mode, pol, args, w)
        fifo = results.get("fifo")
        for pol, r in results.items():
            rows_ratio = f"{r['rows'] / fifo['rows']:.2f}x" if fifo and fifo["rows"] else "-"
            time_ratio = f"{r['s_per_epoch'] / fifo['s_per_epoch']:.2f}x" if fifo else "-"
            print(f"| {mode} | {pol} | {r['s_per_epoch']:.2f}, {r['s_min']:.2f} | {r['first_ms']:.1f} | "
                  f"{r['wait_ms']:.2f} ({100 * r['wait_share']:.0f} %) | {r['rows']:,} | "
                  f"{r['mib']:.1f} | {r['hit_rate']:.3f} | {rows_ratio} | {time_ratio} |", flush=True)


if __name__ == "__main__":
    main()
