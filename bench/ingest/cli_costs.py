"""What two issue-#44 CLI changes cost: ``bgl info`` on a compressed store, and counting what a
typed ingest keeps.

1. ``bgl info`` wall time (fresh process each run, median) on the embedded Cora ingested plain
   and compressed with int8: opening a compressed store used to import torch and the numba
   kernels (1.9 s against 0.2 s).
2. ``bgl ingest rmat-hetero:SCALE`` wall time, and the time of the counting kernel
   (``_typed_csc_kernels.count_loops_and_repeats``) over the written store's whole CSC in one
   bucket: the share of a typed ingest that reporting its kept self-loops and repeats adds.

    python bench/ingest/cli_costs.py [--runs 5] [--scale 18]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def bgl(*args) -> float:
    """Seconds one ``python -m bgl ARGS`` process takes, start to exit."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "bgl", *map(str, args)], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--scale", type=int, default=18, help="rmat-hetero scale of the typed ingest")
    args = p.parse_args()
    print(f"load average before: {Path('/proc/loadavg').read_text().strip()}")
    with tempfile.TemporaryDirectory(prefix="bgl-cli-costs-") as tmp:
        tmp = Path(tmp)
        bgl("ingest", REPO / "data" / "cora.npz", tmp / "plain")
        bgl("compress", tmp / "plain", "--codec", "int8", "--out", tmp / "int8")
        times = {name: [] for name in ("plain", "int8")}
        for _ in range(args.runs):  # alternate, so load changes hit both alike
            for name in times:
                times[name].append(bgl("info", tmp / name))
        for name, ts in times.items():
            print(f"bgl info {name:5s}: median {statistics.median(ts):.2f} s  (runs: "
                  + ", ".join(f"{t:.2f}" for t in ts) + ")")

        ingest = [bgl("ingest", f"rmat-hetero:{args.scale}", tmp / f"h{i}") for i in range(min(args.runs, 3))]
        import numpy as np

        from bgl.sources.typed import _csc_kernels as K
        from bgl.store import GraphStore

        store = GraphStore(tmp / "h0")
        ptr = np.asarray(store.indptr)
        ids = np.asarray(store.indices)
        rels = np.load(tmp / "h0" / "etype.npy")
        K.count_loops_and_repeats(ptr[:2], ids, rels, 0)  # compile / load from cache first
        count = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            loops, repeats = K.count_loops_and_repeats(ptr, ids, rels, 0)
            count.append(time.perf_counter() - t0)
        kept = store.meta.extra["kept"]
        assert (loops, repeats) == (kept["self_loops"], kept["duplicates"])
        print(f"bgl ingest rmat-hetero:{args.scale}: {store.num_nodes:,} nodes, {store.num_edges:,} edges, "
              f"median {statistics.median(ingest):.2f} s; counting kept self-loops ({loops:,}) and repeats "
              f"({repeats:,}) over the whole CSC: median {statistics.median(count) * 1e3:.1f} ms "
              f"({100 * statistics.median(count) / statistics.median(ingest):.1f} % of the ingest; "
              f"numba threads {os.environ.get('NUMBA_NUM_THREADS', 'default')})")
    print(f"load average after: {Path('/proc/loadavg').read_text().strip()}")


if __name__ == "__main__":
    main()
