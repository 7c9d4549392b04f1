"""Where a small graph's extra peak RSS goes: DGL's loader against bgl's, step by step, in fresh processes.

On graphs of Cora's size bgl's peak RSS is DGL's plus a roughly fixed amount (bench/results/hetero.md,
dataloader.md's pipeline-mode tables), so the ratio against DGL depends on how big DGL's own peak is.
This script says what that amount is made of.  Each (workload, system, run) is its own child process;
after each step the child reads its own ``/proc/self/status`` (``VmRSS``, ``VmHWM``, ``RssAnon``) and
``/proc/self/smaps`` (the resident pages of numba's LLVM library, ``libllvmlite.so``).  The steps:

* ``base``: torch, DGL and ``bgl`` imported, the graph built (the same for both systems);
* ``numba``: bgl only: ``import numba`` (LLVM's library loaded, its static initialisers run);
* ``target``: bgl only: numba's CPU target set up (``bgl/kernel_cache/numba_setup.py``: what the first
  kernel call of a process does);
* ``loader``: the loader built (bgl loads its kernels from numba's cache here);
* ``epoch``: one epoch iterated (no model), then 0.3 s for a background page release to finish.

The workloads are DGL's own loops' graphs and samplers: ``node`` (Cora as a DGLGraph, ``NeighborSampler([10,
10])``, batch 256) and ``typed`` (Cora's paper-word heterograph, the R-GCN's loader: bench/typed/rgcn.py).

    python bench/loader/rss_steps.py --workdir /tmp/bgl-rss-steps [--runs 3] [--workloads node,typed]

Prints one JSON row per child and a table: each step's VmRSS and VmHWM (MiB) per system (medians over runs),
and bgl's peak against DGL's.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("DGLBACKEND", "pytorch")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.<area>.<script> imports

STEPS = ("base", "numba", "target", "loader", "epoch")
WORKLOADS = ("node", "typed")


def memory() -> dict:
    """This process's resident set now, its peak, its anonymous part, and LLVM's library pages (MiB)."""
    status = dict(line.split(":", 1) for line in open("/proc/self/status"))
    out = {k: int(status[k].split()[0]) / 1024 for k in ("VmRSS", "VmHWM", "RssAnon")}
    llvm, inside = 0, False
    for line in open("/proc/self/smaps"):
        head = line.split(None, 6)
        if "-" in head[0] and not head[0].endswith(":"):
            inside = len(head) >= 6 and head[-1].strip().endswith("libllvmlite.so")
        elif inside and head[0] == "Rss:":
            llvm += int(head[1])
    out["llvm"] = llvm / 1024
    return out


def child(workload: str, system: str, workdir: str) -> dict:
    """One run: the steps' memory figures, in this (fresh) process."""
    import dgl
    import torch

    import bgl
    from bgl.store import GraphStore

    from bench.common.side_by_side import dgl_graph
    from bench.typed.rgcn import to_dglgraph

    steps = {}
    store = GraphStore(Path(workdir) / ("cora-pw" if workload == "typed" else "cora"))  # built by main()
    if workload == "typed":
        g = to_dglgraph(store)
        seeds = {"paper": torch.from_numpy(store.type_splits["paper"]["train"].copy())}
    else:
        g = dgl_graph(store, labels=7)
        seeds = torch.from_numpy(store.split("train").astype("int64"))
    steps["base"] = memory()
    if system == "bgl":
        import numba  # noqa: F401  (the step measured: LLVM's library loaded)

        steps["numba"] = memory()
        from bgl.kernel_cache.numba_setup import prepare_numba

        prepare_numba()
        steps["target"] = memory()
    Loader = dgl.dataloading.DataLoader if system == "dgl" else bgl.DataLoader
    loader = Loader(g, seeds, dgl.dataloading.NeighborSampler([10, 10]), batch_size=256, shuffle=True)
    steps["loader"] = memory()
    for _ in loader:
        pass
    time.sleep(0.3)
    steps["epoch"] = memory()
    return {"workload": workload, "system": system, "steps": steps, "own_peak_rss_mb": steps["epoch"]["VmHWM"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/bgl-rss-steps"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--child", nargs=2, metavar=("WORKLOAD", "SYSTEM"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(*args.child, str(args.workdir))))
        return
    args.workdir.mkdir(parents=True, exist_ok=True)
    # the stores built in a child (bench/typed/rgcn.py --build: Cora, then its paper-word graph), so this
    # process stays free of bgl's imports
    subprocess.run([sys.executable, str(Path(__file__).resolve().parents[1] / "typed" / "rgcn.py"), "--workdir",
                    str(args.workdir), "--build", "cora"], check=True, capture_output=True)
    print(f"load average at start: {open('/proc/loadavg').read().strip()}")
    from bench.common.own_rss import run_child

    for workload in args.workloads.split(","):
        rows = {"dgl": [], "bgl": []}
        for run in range(args.runs):
            for system in (("dgl", "bgl") if run % 2 == 0 else ("bgl", "dgl")):
                cmd = [sys.executable, __file__, "--workdir", str(args.workdir), "--child", workload, system]
                row = run_child(cmd, f"{workload} {system} run {run}")
                rows[system].append(row)
                print(json.dumps(row))
        print(f"\n### {workload} (MiB, medians of {args.runs} runs)\n")
        print("| step | DGL VmRSS / VmHWM | bgl VmRSS / VmHWM | bgl RssAnon | bgl LLVM library |")
        print("|---|---|---|---|---|")
        for step in STEPS:
            cells = []
            for system in ("dgl", "bgl"):
                have = [r["steps"][step] for r in rows[system] if step in r["steps"]]
                cells.append(" / ".join(f"{statistics.median(h[k] for h in have):.0f}" for k in ("VmRSS", "VmHWM"))
                             if have else "-")
            have = [r["steps"][step] for r in rows["bgl"]]
            print(f"| {step} | {cells[0]} | {cells[1]} | {statistics.median(h['RssAnon'] for h in have):.0f} | "
                  f"{statistics.median(h['llvm'] for h in have):.0f} |")
        peak = {s: statistics.median(r["peak_rss_mb"] for r in rows[s]) for s in rows}
        print(f"\npeak RSS: DGL {peak['dgl']:.0f}, bgl {peak['bgl']:.0f} MiB: {peak['bgl'] / peak['dgl']:.3f}x "
              f"(+{peak['bgl'] - peak['dgl']:.0f} MiB)")
    print(f"load average at end: {open('/proc/loadavg').read().strip()}")


if __name__ == "__main__":
    main()
