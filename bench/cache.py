#!/usr/bin/env python
"""Feature-cache benchmark: hit rates of every policy × order on several graphs, plus raw fetch speed.

For each dataset the store is ingested once (into --workdir), then
``bgl bench-cache`` replays real sampled batches through every policy.
Targets checked at 10% cache capacity:

* hit rate: fifo + proximity order >= the best of presample / static-degree
  with random order (BGL vs GNNLab / PaGraph as they run, i.e. with DGL's shuffle);
* speed: lookup + insert >= 10M ids/s on CPU (pure fetch microbenchmark,
  miss-source time subtracted).

Every printed number is measured in this run.  ``--quick`` (used by
bench/run_all.py) runs Cora and CiteSeer and a smaller microbenchmark.

Usage::

    python bench/cache.py                      # all datasets (R-MAT 20 takes several minutes)
    python bench/cache.py --quick
    python bench/cache.py --datasets cora,slashdot --regimes default
"""
from __future__ import annotations

import argparse
import csv
import os
import platform
import shutil
import sys
import time
from pathlib import Path

os.environ.setdefault("DGLBACKEND", "pytorch")

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("BGL_DATASETS", REPO.parent / "shared" / "datasets"))
if not DATA.exists():
    DATA = Path("/work/shared/datasets")

# name -> (ingest source, ingest kwargs, small batch size for the "batch inputs < cache" regime, max batches)
DATASETS = {
    "cora": (lambda: str(DATA / "cora.npz"), {}, 8, None),
    "citeseer": (lambda: str(DATA / "citeseer.npz"), {}, 8, None),
    "pubmed": (lambda: str(DATA / "pubmed_adj_labels.npz"), {"feat_dim": 500}, 32, None),
    "slashdot": (lambda: str(DATA / "soc-Slashdot0902.txt.gz"),
                 {"feat_dim": 128, "num_classes": 4, "symmetrize": True}, 64, 60),
    "rmat20": (None, {"feat_dim": 32, "num_classes": 4}, 256, 25),
}
TARGET_RATIO = 0.1
TARGET_IDS_PER_S = 10e6


def ingest_dataset(name: str, workdir: Path):
    from bgl.store import GraphStore

    out = workdir / name
    if (out / "meta.json").exists():
        return GraphStore(out)
    source, kwargs, _, _ = DATASETS[name]
    if name == "rmat20":
        try:
            from bgl.sources.rmat import generate_rmat_store
        except ImportError:
            return None
        return generate_rmat_store(out, 20, edge_factor=16, seed=0, overwrite=True, **kwargs)
    from bgl.sources.datasets import ingest

    return ingest(source(), out, overwrite=True, **kwargs)


def read_rows(path: Path) -> list[dict]:
    with open(path) as f:
        return list(csv.DictReader(f))


def check_target(rows: list[dict]) -> tuple[float, float, str]:
    at = [r for r in rows if abs(float(r["cache_ratio"]) - TARGET_RATIO) < 1e-9]
    fifo = next(float(r["hit_rate"]) for r in at if (r["policy"], r["order"]) == ("fifo", "proximity"))
    best_p, best = max(((r["policy"], float(r["hit_rate"])) for r in at
                        if r["policy"] in ("presample", "static-degree") and r["order"] == "random"),
                       key=lambda x: x[1])
    return fifo, best, best_p


def bytes_at(rows, policy, order):
    return next(int(r["bytes_from_source"]) for r in rows
                if (r["policy"], r["order"]) == (policy, order) and abs(float(r["cache_ratio"]) - TARGET_RATIO) < 1e-9)


def combined_plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from bgl.cache.benchmark import POLICY_COLORS

    keys = list(results)
    cols = min(3, len(keys))
    nrows = -(-len(keys) // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(5.2 * cols, 3.8 * nrows), squeeze=False)
    for ax, key in zip(axes.flat, keys):
        rows = results[key]
        for policy, order in dict.fromkeys((r["policy"], r["order"]) for r in rows):
            if policy == "none" or "[" in policy:  # comparison variants stay in the CSV / table
                continue
            pts = sorted((float(r["cache_ratio"]), float(r["hit_rate"])) for r in rows
                         if (r["policy"], r["order"]) == (policy, order))
            ax.plot(*zip(*pts), marker="o", linestyle="-" if order == "proximity" else "--",
                    color=POLICY_COLORS.get(policy), label=f"{policy}/{order}")
        ax.set_title(key, fontsize=9)
        ax.set_xlabel("cache / nodes")
        ax.set_ylabel("hit rate")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(keys):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="Cora + CiteSeer and a smaller microbenchmark")
    parser.add_argument("--datasets", default="cora,citeseer,pubmed,slashdot,rmat20")
    parser.add_argument("--regimes", default="default,small-batch",
                        help="default = CLI defaults (batch 1024); small-batch = per-dataset batch whose "
                             "inputs fit the 10%% cache")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--workdir", default="/tmp/bgl-bench-cache")
    parser.add_argument("--out", default=str(REPO / "bench" / "out" / "cache"))
    parser.add_argument("--png", default=str(REPO / "bench" / "cache_hit_rate.png"))
    parser.add_argument("--micro-ids", type=int, default=20_000_000, help="ids in the fetch microbenchmark")
    args = parser.parse_args()

    import torch

    from bgl.cache.benchmark import fetch_microbenchmark
    from bgl.cli import main as bgl_main

    torch.set_num_threads(1)
    names = ["cora", "citeseer"] if args.quick else [d for d in args.datasets.split(",") if d]
    regimes = [r for r in args.regimes.split(",") if r]
    workdir, out = Path(args.workdir), Path(args.out)
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"machine: {platform.machine()} {os.cpu_count()} cores, python {platform.python_version()}, "
          f"torch {torch.__version__}, torch threads 1")
    results: dict[str, list[dict]] = {}
    summary, variants = [], []
    for name in names:
        t = time.perf_counter()
        store = ingest_dataset(name, workdir)
        if store is None:
            print(f"{name}: skipped (bgl.sources.rmat.generate_rmat_store not available)")
            continue
        print(f"\n== {name}: {store.num_nodes} nodes, {store.num_edges} edges, feat_dim {store.feat_dim}, "
              f"{len(store.train_idx)} train (ready in {time.perf_counter() - t:.1f} s)")
        _, _, small_batch, max_batches = DATASETS[name]
        for regime in regimes:
            batch = 1024 if regime == "default" else small_batch
            run_out = out / f"{name}-{regime}"
            argv = ["bench-cache", str(store.path), "--batch-size", str(batch), "--epochs", str(args.epochs),
                    "--out", str(run_out), "--no-progress", "--threads", "1",
                    "--fifo-variants", "request,reverse-no-seeds,reverse-no-priority"]
            if max_batches:
                argv += ["--max-batches", str(max_batches)]
            print(f"$ bgl {' '.join(argv)}")
            t = time.perf_counter()
            rc = bgl_main(argv)
            if rc != 0:
                print(f"{name}/{regime}: bench-cache failed with exit code {rc}")
                continue
            rows = read_rows(run_out / "hit_rate.csv")
            key = f"{name} batch {batch}"
            results[key] = rows
            fifo, best, best_p = check_target(rows)
            at = {(r["policy"], r["order"]): float(r["hit_rate"]) for r in rows
                  if abs(float(r["cache_ratio"]) - TARGET_RATIO) < 1e-9}
            print(f"[{key}] fifo+proximity insert order at 10%: reverse+seed hint+degree priority {fifo:.4f}, "
                  f"without degree priority {at[('fifo[reverse-no-priority]', 'proximity')]:.4f}, also without "
                  f"seed hint {at[('fifo[reverse-no-seeds]', 'proximity')]:.4f}, request order "
                  f"{at[('fifo[request]', 'proximity')]:.4f}")
            variants.append((key, fifo, at[('fifo[reverse-no-priority]', 'proximity')],
                             at[('fifo[reverse-no-seeds]', 'proximity')], at[('fifo[request]', 'proximity')]))
            mb_fifo = bytes_at(rows, "fifo", "proximity") / 2**20
            mb_best = bytes_at(rows, best_p, "random") / 2**20
            verdict = "MET" if fifo >= best else "MISSED"
            print(f"[{key}] {time.perf_counter() - t:.1f} s; at 10% cache: fifo+proximity hit rate {fifo:.4f} "
                  f"vs best static ({best_p}+random) {best:.4f}: ratio {fifo / max(best, 1e-12):.2f}x "
                  f"target {verdict}; bytes from source {mb_fifo:.1f} vs {mb_best:.1f} MiB "
                  f"(ratio {mb_fifo / max(mb_best, 1e-12):.2f}x)")
            summary.append((key, fifo, best_p, best, verdict, mb_fifo, mb_best))

    print("\n== fetch microbenchmark (CPU, 1 thread, skewed random stream u**3 * nodes, unique ids per "
          "batch, cache = 10% of nodes)")
    micro = []
    total = 2_000_000 if args.quick else args.micro_ids
    for policy in ("fifo", "lru"):
        for dim in (16, 128):
            for reuse in (False, True):
                res = fetch_microbenchmark(policy, num_nodes=500_000 if args.quick else 2_000_000, ratio=0.1,
                                           total_ids=total, batch=500_000 if args.quick else 1_000_000,
                                           dim=dim, reuse_out=reuse)
                verdict = "MET" if res.ids_per_cpu_s >= TARGET_IDS_PER_S else "MISSED"
                print(f"{policy} dim {dim} {'reused out buffer' if reuse else 'fresh result    '}: {res.ids} ids, "
                      f"hit rate {res.hit_rate:.3f}; cache-only {res.ids_per_cpu_s / 1e6:.1f}M ids per CPU-s, "
                      f"{res.ids_per_s / 1e6:.1f}M per wall-s (incl. source gather "
                      f"{res.ids / res.cpu_seconds_total / 1e6:.1f}M per CPU-s); ratio to the 10M ids/s target "
                      f"{res.ids_per_cpu_s / TARGET_IDS_PER_S:.2f}x {verdict}", flush=True)
                micro.append((policy, dim, reuse, res))
    for dim in (16, 128):
        res = fetch_microbenchmark("fifo", num_nodes=500_000 if args.quick else 2_000_000, ratio=0.1,
                                   total_ids=total, batch=500_000 if args.quick else 1_000_000, dim=dim,
                                   reuse_out=True, priority=True)
        print(f"fifo dim {dim} reused out buffer, with node priority: cache-only {res.ids_per_cpu_s / 1e6:.1f}M ids "
              f"per CPU-s, {res.ids_per_s / 1e6:.1f}M per wall-s, hit rate {res.hit_rate:.3f}", flush=True)
    # the row copies are the 128-wide cost: do two OpenMP threads help them on this machine?
    torch.set_num_threads(2)
    try:
        res = fetch_microbenchmark("fifo", num_nodes=500_000 if args.quick else 2_000_000, ratio=0.1,
                                   total_ids=total, batch=500_000 if args.quick else 1_000_000, dim=128,
                                   reuse_out=True)
    finally:
        torch.set_num_threads(1)
    print(f"fifo dim 128 reused out buffer, torch threads 2: cache-only {res.ids_per_cpu_s / 1e6:.1f}M ids per "
          f"CPU-s, {res.ids_per_s / 1e6:.1f}M per wall-s; ratio to target (CPU) "
          f"{res.ids_per_cpu_s / TARGET_IDS_PER_S:.2f}x", flush=True)

    if results:
        png = Path(args.png)
        combined_plot(results, out / "cache_hit_rate.png")
        png.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(out / "cache_hit_rate.png", png)
        print(f"\nplot: {png}")
    print("\n| run | fifo+prox (reverse, seeds, degree priority) | no priority | no seed hint | request order |")
    print("|---|---|---|---|---|")
    for key, *rates in variants:
        print(f"| {key} | " + " | ".join(f"{r:.4f}" for r in rates) + " |")
    print("\n| run | fifo+proximity | best static+random | target | MiB from source fifo+prox / best |")
    print("|---|---|---|---|---|")
    for key, fifo, best_p, best, verdict, mb_fifo, mb_best in summary:
        print(f"| {key} | {fifo:.4f} | {best:.4f} ({best_p}) | {verdict} | {mb_fifo:.1f} / {mb_best:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
