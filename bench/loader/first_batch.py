"""A script's time to its first batch, from its imports: DGL against bgl, each run in a fresh process.

    python bench/loader/first_batch.py [--runs 5] [--scale 15] [--variants plain,prob]
                                       [--current-python PATH]

``bench/loader/start.py`` times a loader's construction and first batch inside one process, where
only the first round pays what a process pays once: its imports, numba setting up its CPU target
(~0.5 s, on the first kernel a process loads) and each kernel variant loaded from numba's cache.
A user pays those once per script, and DGL pays its own once-per-process costs in ``import dgl``.
So this times what a script waits from its first import line to its first batch, each run in a
fresh interpreter, ``torch`` imported before the clock starts (the same for every system on a
stack):

- ``dgl``: DGL 2.1 on the pinned stack: ``import dgl``, ``dgl.graph``, ``NeighborSampler([10, 10])``,
  ``dgl.dataloading.DataLoader``;
- ``bgl``: the same script with only the loader swapped (``import dgl`` and ``from bgl import
  DataLoader``: a DGL user on the pinned stack);
- ``bgl.dgl``: the same script with ``import bgl.dgl as dgl`` on the current stack (newest torch, no
  DGL; ``--current-python``, default ``.venv-current-3.13/bin/python``): a DGL user moved off DGL.

The graph: 2^scale nodes, 8 random in-edges a node (torch's generator, seed 0), 128-dim float32
features, int64 labels, float32 edge weights ``w`` (``prob="w"`` in the ``prob`` variant); batch
1024 of 10,240 shuffled seeds.  Printed: each run's import / graph / construction / first-batch ms,
then per system the medians and the total against DGL's.  Runs alternate the systems.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STEPS = ("import", "graph", "construct", "first")


def one(system: str, variant: str, scale: int) -> None:
    """In this process: time the script's steps after ``import torch``; print one RESULT line."""
    os.environ.setdefault("DGLBACKEND", "pytorch")
    import torch

    torch.set_num_threads(1)
    t = [time.perf_counter()]
    if system == "bgl.dgl":
        import bgl.dgl as dgl

        DataLoader = dgl.dataloading.DataLoader
    else:
        import dgl

        if system == "bgl":
            from bgl import DataLoader
        else:
            DataLoader = dgl.dataloading.DataLoader
    t.append(time.perf_counter())
    n = 1 << scale
    gen = torch.Generator().manual_seed(0)
    g = dgl.graph((torch.randint(0, n, (8 * n,), generator=gen), torch.randint(0, n, (8 * n,), generator=gen)),
                  num_nodes=n)
    g.ndata["feat"] = torch.randn(n, 128, generator=gen)
    g.ndata["label"] = torch.randint(0, 8, (n,), generator=gen)
    g.edata["w"] = torch.rand(g.num_edges(), generator=gen)
    seeds = torch.randperm(n, generator=torch.Generator().manual_seed(1))[:10240]
    t.append(time.perf_counter())
    sampler = dgl.dataloading.NeighborSampler([10, 10], **({"prob": "w"} if variant == "prob" else {}))
    torch.manual_seed(0)
    loader = DataLoader(g, seeds, sampler, batch_size=1024, shuffle=True)
    t.append(time.perf_counter())
    next(iter(loader))
    t.append(time.perf_counter())
    print("RESULT " + " ".join(f"{1000 * (b - a):.2f}" for a, b in zip(t, t[1:])), flush=True)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", default="plain,prob")
    ap.add_argument("--runs", type=int, default=5, help="fresh processes per system and variant")
    ap.add_argument("--scale", type=int, default=15)
    ap.add_argument("--pinned-python", default=sys.executable, help="the interpreter with DGL 2.1")
    ap.add_argument("--current-python", default=str(ROOT / ".venv-current-3.13" / "bin" / "python"))
    ap.add_argument("--systems", default="dgl,bgl,bgl.dgl")
    ap.add_argument("--one", nargs=2, metavar=("SYSTEM", "VARIANT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        one(*args.one, args.scale)
        return
    sys.path.insert(0, str(ROOT))
    from bench.common.bytecode import compile_checkout

    systems = args.systems.split(",")
    for python in {args.current_python if s == "bgl.dgl" else args.pinned_python for s in systems}:
        compile_checkout(python)  # bgl's modules as installed, with bytecode: no child compiles them
    print(f"load average at start: {open('/proc/loadavg').read().strip()} ({os.cpu_count()} cores)", flush=True)
    for variant in args.variants.split(","):
        times: dict = {s: [] for s in systems}
        for r in range(args.runs):
            for system in (systems if r % 2 == 0 else systems[::-1]):
                python = args.current_python if system == "bgl.dgl" else args.pinned_python
                cmd = [python, os.path.abspath(__file__), "--one", system, variant, "--scale", str(args.scale)]
                out = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=ROOT).stdout
                steps = [float(x) for x in out.split("RESULT", 1)[1].split()]
                times[system].append(steps)
                print(f"{variant:5s} {system:8s} run {r}: " + " + ".join(f"{k} {v:7.1f}" for k, v in zip(STEPS, steps))
                      + f" = {sum(steps):7.1f} ms", flush=True)
        base = statistics.median(sum(s) for s in times[systems[0]])
        for system, runs in times.items():
            med = [statistics.median(s[i] for s in runs) for i in range(len(STEPS))]
            total = statistics.median(sum(s) for s in runs)
            print(f"{variant:5s} {system:8s} median " + " + ".join(f"{k} {v:7.1f}" for k, v in zip(STEPS, med))
                  + f"; total {total:7.1f} ms, {total / base:.2f}x {systems[0]}'s", flush=True)
    print(f"load average at end: {open('/proc/loadavg').read().strip()}", flush=True)


if __name__ == "__main__":
    main()
