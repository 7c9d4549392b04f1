#!/usr/bin/env python
"""Feature-cache benchmark: rows / MiB each policy × order fetches from the source, with Belady's bound.

For each dataset the store is ingested once (into --workdir), then
``bgl bench-cache`` replays real sampled batches through every policy (every
run includes ``lookahead`` and ``belady``) at a 10 % cache, in two regimes:
batch 32 with fanouts 10,5 and batch 256 with fanouts 10,10, 2 epochs.
Targets checked, on MiB from the source (rows fetched x row bytes):

* lookahead + proximity <= 0.85x the best other policy x order pair;
* lookahead + proximity <= 0.65x GNNLab's presample + random;
* lookahead + proximity <= 1.35x Belady's offline optimum (proximity stream);
* bookkeeping: lookahead's own time per batch <= a memmap gather of the batch's rows.

A fetch microbenchmark then times lookahead and fifo on a large random stream
with a memmap gather of the same rows side by side.  Every printed number is
measured in this run.  ``--quick`` (used by bench/run_all.py) runs Cora and
CiteSeer and a smaller microbenchmark.

Usage::

    python bench/cache/policies.py                      # all datasets (R-MAT 20 last, several minutes)
    python bench/cache/policies.py --quick
    python bench/cache/policies.py --datasets cora,slashdot --regimes b32
"""
from __future__ import annotations

import argparse
import csv
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("DGLBACKEND", "pytorch")

REPO = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("BGL_DATASETS", REPO.parent / "shared" / "datasets"))
if not DATA.exists():
    DATA = Path("/work/shared/datasets")

# name -> (ingest source, ingest kwargs, {regime: max batches per epoch or None})
DATASETS = {
    "cora": (lambda: str(DATA / "cora.npz"), {}, {}),
    "citeseer": (lambda: str(DATA / "citeseer.npz"), {}, {}),
    "pubmed": (lambda: str(DATA / "pubmed_adj_labels.npz"), {"feat_dim": 500}, {}),
    "slashdot": (lambda: str(DATA / "soc-Slashdot0902.txt.gz"),
                 {"feat_dim": 128, "num_classes": 4, "symmetrize": True}, {}),
    "rmat20": (None, {"feat_dim": 32, "num_classes": 4}, {"b32": 2000, "b256": 500}),
}
# regime -> (batch size, fanouts)
REGIMES = {"b32": (32, "10,5"), "b64": (64, "10,5"), "b256": (256, "10,10"), "b1024": (1024, "10,10")}
TARGET_RATIO = 0.1
TARGET_VS_BEST, TARGET_VS_GNNLAB, TARGET_VS_BELADY = 0.85, 0.65, 1.35
LOOKAHEAD_VARIANTS = "k0,k1,k4,k16,recency,presample"  # plain "lookahead" = the default window
# --window: only these, to compare lookahead windows with Belady's bound (rows are load-independent)
WINDOW_POLICIES, WINDOW_VARIANTS, TARGET_WINDOW_VS_BELADY = "lookahead,belady", "k4,k16", 1.1
TARGET_IDS_PER_S = 10e6


def ingest_dataset(name: str, workdir: Path):
    from bgl.store import GraphStore

    out = workdir / name
    if (out / "meta.json").exists():
        return GraphStore(out)
    source, kwargs, _ = DATASETS[name]
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



def at_target(rows: list[dict]) -> dict[tuple[str, str], dict]:
    """{(policy, order): row} at the 10 % cache."""
    return {(r["policy"], r["order"]): r for r in rows if abs(float(r["cache_ratio"]) - TARGET_RATIO) < 1e-9}


def verdicts(rows: list[dict], policy: str = "lookahead") -> dict:
    """MiB from source of ``policy`` + proximity against the three anchors, with the ratios."""
    at = at_target(rows)
    mib = {key: float(r["mib_from_source"]) for key, r in at.items()}
    look = mib[(policy, "proximity")]
    others = {key: v for key, v in mib.items()
              if key[0] not in ("none", "belady") and not key[0].startswith("lookahead")}
    best_key = min(others, key=others.get)
    gnnlab = mib[("presample", "random")]
    belady = mib[("belady", "proximity")]
    r = at[(policy, "proximity")]
    return {"lookahead": look, "best_key": best_key, "best": others[best_key], "gnnlab": gnnlab,
            "belady": belady, "vs_best": look / max(others[best_key], 1e-12), "vs_gnnlab": look / max(gnnlab, 1e-12),
            "vs_belady": look / max(belady, 1e-12), "own_ms": float(r["own_ms_per_batch"]),
            "policy_ms": float(r["policy_ms_per_batch"]),
            "fifo_ms": float(at[("fifo", "proximity")]["own_ms_per_batch"]),
            "gather_ms": float(r["gather_ms_per_batch"]), "mib": mib,
            "rows": {key: int(x["rows_from_source"]) for key, x in at.items()},
            "hit": {key: float(x["hit_rate"]) for key, x in at.items()}}


def window_line(key: str, rows: list[dict]) -> str:
    """Rows from source of lookahead k=4, k=16 and the default window (sized to the cache) vs Belady's."""
    at = at_target(rows)
    belady = int(at[("belady", "proximity")]["rows_from_source"])
    parts = [f"[{key}] rows from source at 10% cache, proximity order: belady {belady}"]
    for label, policy in (("k=4", "lookahead[k4]"), ("k=16", "lookahead[k16]"), ("default window", "lookahead")):
        r = at[(policy, "proximity")]
        rows_ = int(r["rows_from_source"])
        parts.append(f"{label} {rows_} ({mark(rows_ / max(belady, 1), TARGET_WINDOW_VS_BELADY)}, mean depth "
                     f"{float(r['mean_depth']):.1f}, bookkeeping {float(r['policy_ms_per_batch']):.2f} ms/batch)")
    return "; ".join(parts)


def mark(ratio: float, target: float) -> str:
    return f"{ratio:.2f}x {'met' if ratio <= target else 'MISSED'}"


def combined_plot(results: dict, path: Path) -> None:
    """One panel per run: MiB from source at 10 % cache, one bar per policy, random vs proximity order."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from bgl.cache.benchmark import POLICY_COLORS

    keys = list(results)
    cols = min(4, len(keys))
    nrows = -(-len(keys) // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(4.4 * cols, 3.3 * nrows), squeeze=False)
    policies = ["static-degree", "presample", "lru", "fifo", "lookahead", "belady"]
    for ax, key in zip(axes.flat, keys):
        at = at_target(results[key])
        for j, order in enumerate(("random", "proximity")):
            xs = [i + (j - 0.5) * 0.4 for i in range(len(policies))]
            ys = [float(at[(p, order)]["mib_from_source"]) if (p, order) in at else 0.0 for p in policies]
            ax.bar(xs, ys, width=0.4, color=[POLICY_COLORS.get(p) for p in policies],
                   alpha=0.45 if order == "random" else 1.0, hatch="//" if order == "random" else None,
                   edgecolor="black", linewidth=0.3)
        ax.set_xticks(range(len(policies)))
        ax.set_xticklabels(["static-deg", "presample", "lru", "fifo", "lookahead", "belady\n(bound)"],
                           fontsize=7, rotation=30)
        ax.set_title(key, fontsize=9)
        ax.set_ylabel("MiB from source", fontsize=8)
        ax.tick_params(axis="y", labelsize=7)
        ax.grid(alpha=0.3, axis="y")
    for ax in list(axes.flat)[len(keys):]:
        ax.axis("off")
    fig.suptitle("Feature rows fetched from the source at a 10 % cache, 2 epochs "
                 "(hatched light = random order, solid = proximity order; lower is better)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="Cora + CiteSeer and a smaller microbenchmark")
    parser.add_argument("--datasets", default="cora,citeseer,pubmed,slashdot,rmat20")
    parser.add_argument("--regimes", default="b32,b256",
                        help="b32 / b64 = batch 32 / 64, fanouts 10,5; b256 / b1024 = batch 256 / 1024, "
                             "fanouts 10,10")
    parser.add_argument("--window", action="store_true",
                        help="only lookahead (k=4, k=16, window sized to the cache) and Belady, proximity order: "
                             "rows vs Belady's per run (target <= 1.1x)")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--workdir", default="/tmp/bgl-bench-cache")
    parser.add_argument("--out", default=str(REPO / "bench" / "out" / "cache"))
    parser.add_argument("--png", default=str(REPO / "docs" / "img" / "cache_hit_rate.png"))
    parser.add_argument("--micro-ids", type=int, default=12_000_000,
                        help="ids in the fetch microbenchmark (0 = skip it)")
    args = parser.parse_args()

    import torch

    from bgl.cache.benchmark import fetch_microbenchmark
    from bgl.cli import main as bgl_main

    torch.set_num_threads(1)
    names = ["cora", "citeseer"] if args.quick else [d for d in args.datasets.split(",") if d]
    regimes = [r for r in args.regimes.split(",") if r]
    bad = [r for r in regimes if r not in REGIMES]
    if bad:
        parser.error(f"unknown regime {bad[0]!r}; choose from {', '.join(REGIMES)}")
    workdir, out = Path(args.workdir), Path(args.out)
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"machine: {platform.machine()} {os.cpu_count()} cores, python {platform.python_version()}, "
          f"torch {torch.__version__}, torch threads 1")
    results: dict[str, list[dict]] = {}
    summary = []
    for name in names:
        t = time.perf_counter()
        store = ingest_dataset(name, workdir)
        if store is None:
            print(f"{name}: skipped (bgl.sources.rmat.generate_rmat_store not available)")
            continue
        print(f"\n== {name}: {store.num_nodes} nodes, {store.num_edges} edges, feat_dim {store.feat_dim}, "
              f"{len(store.train_idx)} train (ready in {time.perf_counter() - t:.1f} s)")
        _, _, max_batches = DATASETS[name]
        for regime in regimes:
            batch, fanouts = REGIMES[regime]
            run_out = out / f"{name}-{regime}"
            argv = ["bench-cache", str(store.path), "--batch-size", str(batch), "--fanouts", fanouts,
                    "--epochs", str(args.epochs), "--cache-ratios", str(TARGET_RATIO), "--out", str(run_out),
                    "--no-progress", "--threads", "1", "--lookahead-variants",
                    WINDOW_VARIANTS if args.window else LOOKAHEAD_VARIANTS]
            if args.window:
                argv += ["--policies", WINDOW_POLICIES, "--orders", "proximity"]
            if max_batches.get(regime):
                argv += ["--max-batches", str(max_batches[regime])]
            print(f"$ bgl {' '.join(argv)}", flush=True)
            t = time.perf_counter()
            rc = bgl_main(argv)
            if rc != 0:
                print(f"{name}/{regime}: bench-cache failed with exit code {rc}")
                continue
            rows = read_rows(run_out / "hit_rate.csv")
            key = f"{name} b{batch} f{fanouts.replace(',', '-')}"
            results[key] = rows
            if args.window:
                print(f"{window_line(key, rows)} ({time.perf_counter() - t:.0f} s)", flush=True)
                continue
            v = verdicts(rows)
            print(f"[{key}] {time.perf_counter() - t:.1f} s; MiB from source at 10% cache: lookahead+proximity "
                  f"{v['lookahead']:.1f}; vs best other ({'+'.join(v['best_key'])}) {v['best']:.1f}: "
                  f"{mark(v['vs_best'], TARGET_VS_BEST)}; vs presample+random {v['gnnlab']:.1f}: "
                  f"{mark(v['vs_gnnlab'], TARGET_VS_GNNLAB)}; vs belady {v['belady']:.1f}: "
                  f"{mark(v['vs_belady'], TARGET_VS_BELADY)}; CPU ms/batch: policy bookkeeping {v['policy_ms']:.2f} "
                  f"(whole cache {v['own_ms']:.2f}, fifo's whole cache {v['fifo_ms']:.2f}) vs memmap gather of the "
                  f"same rows {v['gather_ms']:.2f} ({v['policy_ms'] / max(v['gather_ms'], 1e-9):.2f}x)",
                  flush=True)
            summary.append((key, v, verdicts(rows, "lookahead[k16]")))

    print("\n== fetch microbenchmark (CPU, 1 thread, skewed random stream u**3 * nodes, unique ids per batch, "
          "cache = 10% of nodes, reused out buffer; lookahead announces 4 batches ahead)")
    total = 1_000_000 if args.quick else args.micro_ids
    micro = []
    with tempfile.TemporaryDirectory(prefix="bgl-micro-") as gdir:
        for dim in ((16, 128) if total > 0 else ()):
            for policy in ("fifo", "lookahead"):
                for batch in ((100_000, 500_000) if args.quick else (50_000, 1_000_000)):
                    res = fetch_microbenchmark(policy, num_nodes=500_000 if args.quick else 2_000_000, ratio=0.1,
                                               total_ids=total, batch=batch, dim=dim, reuse_out=True,
                                               gather_dir=gdir)
                    own = 1e3 * res.policy_seconds / res.batches
                    own_cpu = 1e3 * res.policy_cpu_seconds / res.batches
                    whole_cpu = 1e3 * res.cpu_seconds_cache / res.batches
                    gather = 1e3 * res.seconds_gather / res.batches
                    gather_cpu = 1e3 * res.cpu_seconds_gather / res.batches
                    print(f"{policy:<9} dim {dim:>3} batch {batch:>8}: hit rate {res.hit_rate:.3f}; policy bookkeeping "
                          f"{own:.2f} ms/batch wall, {own_cpu:.2f} CPU (whole cache {whole_cpu:.2f} CPU); memmap gather of the same rows {gather:.2f} "
                          f"ms wall, {gather_cpu:.2f} CPU; ratio (CPU) {own_cpu / max(gather_cpu, 1e-9):.2f}x; "
                          f"{res.ids_per_cpu_s / 1e6:.1f}M ids per CPU-s", flush=True)
                    micro.append((policy, dim, batch, res.hit_rate, own, own_cpu, whole_cpu, gather, gather_cpu))

    if results and not args.window:  # the window rows alone would overwrite the README's plot
        png = Path(args.png)
        out.mkdir(parents=True, exist_ok=True)
        combined_plot(results, out / "cache_hit_rate.png")
        png.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(out / "cache_hit_rate.png", png)
        print(f"\nplot: {png}")
    pairs = [("none", "random"), ("static-degree", "random"), ("presample", "random"), ("lru", "random"),
             ("fifo", "random"), ("static-degree", "proximity"), ("presample", "proximity"), ("lru", "proximity"),
             ("fifo", "proximity"), ("lookahead", "random"), ("lookahead", "proximity"),
             ("lookahead[k0]", "proximity"), ("lookahead[k1]", "proximity"), ("lookahead[k16]", "proximity"),
             ("lookahead[recency]", "proximity"), ("lookahead[presample]", "proximity"), ("belady", "random"),
             ("belady", "proximity")]
    print("\nMiB from source at 10 % cache (rows from source in thousands)\n")
    print("| policy + order | " + " | ".join(k for k, _, _ in summary) + " |")
    print("|---|" + "---|" * len(summary))
    for p in pairs:
        label = f"{p[0]} + {p[1]}" + (" (offline bound)" if p[0] == "belady" else "")
        cells = [f"{v['mib'][p]:.1f} ({v['rows'][p] / 1e3:.1f}k)" if p in v["mib"] else "-" for _, v, _ in summary]
        print(f"| {label} | " + " | ".join(cells) + " |")
    print("\n| run | lookahead+prox MiB (default window) | vs best other pair | vs presample+random | vs belady | "
          "CPU ms/batch: policy bookkeeping / whole lookahead cache / whole fifo cache | memmap gather ms/batch |")
    print("|---|---|---|---|---|---|---|")
    for key, v, v16 in summary:
        print(f"| {key} | {v['lookahead']:.1f} (k16: {v16['lookahead']:.1f}) | {mark(v['vs_best'], TARGET_VS_BEST)} ({'+'.join(v['best_key'])} "
              f"{v['best']:.1f}); k16 {mark(v16['vs_best'], TARGET_VS_BEST)} | {mark(v['vs_gnnlab'], TARGET_VS_GNNLAB)} "
              f"({v['gnnlab']:.1f}); k16 {mark(v16['vs_gnnlab'], TARGET_VS_GNNLAB)}; belady/presample+random "
              f"{v['belady'] / max(v['gnnlab'], 1e-12):.2f}x | {mark(v['vs_belady'], TARGET_VS_BELADY)} "
              f"({v['belady']:.1f}); k16 {mark(v16['vs_belady'], TARGET_VS_BELADY)} | {v['policy_ms']:.2f} / "
              f"{v['own_ms']:.2f} / {v['fifo_ms']:.2f} | {v['gather_ms']:.2f} |")
    print("\n| policy | dim | batch ids | hit rate | policy bookkeeping ms/batch (wall / CPU) | whole cache CPU "
          "ms/batch | memmap gather ms/batch (wall / CPU) | bookkeeping / gather (CPU) |")
    print("|---|---|---|---|---|---|---|---|")
    for policy, dim, batch, hit, own, own_cpu, whole_cpu, gather, gather_cpu in micro:
        print(f"| {policy} | {dim} | {batch} | {hit:.3f} | {own:.2f} / {own_cpu:.2f} | {whole_cpu:.2f} | "
              f"{gather:.2f} / {gather_cpu:.2f} | {own_cpu / max(gather_cpu, 1e-9):.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
