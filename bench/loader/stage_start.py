"""Time to a loader's first batch with worker processes: bgl's stage processes vs DGL's workers.

The anchor is DGL's ``DataLoader(num_workers=3)`` (it forks the trainer); bgl runs
``pipeline="processes"`` (three stage processes: order, sample, fetch).  Both on the embedded Cora
as a DGLGraph, fanouts 10,10, batch 256.  Each run is a fresh interpreter (so the first loader pays
every start-up cost) that times two loaders one after the other: ``first`` (bgl: starts the zygote
too) and ``second`` (bgl: forks from the running zygote).  Runs alternate between the two loaders.

    python bench/loader/stage_start.py [--runs 3]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

CHILD = r'''
import json, os, sys, time
os.environ.setdefault("DGLBACKEND", "pytorch")
import dgl, torch
which = sys.argv[1]
if which.startswith("bgl"):
    import bgl
from bgl.data import default_dataset_path
from bgl.sources.readers.npz import read_gnn_benchmark
import numpy as np

if __name__ == "__main__":
    src = read_gnn_benchmark(default_dataset_path())
    s, d = (np.concatenate(parts) for parts in zip(*src.edges()))
    g = dgl.to_bidirected(dgl.graph((torch.from_numpy(s), torch.from_numpy(d)), num_nodes=src.num_nodes))
    g.ndata["feat"] = torch.from_numpy(np.ascontiguousarray(src.feat, dtype=np.float32))
    g.ndata["label"] = torch.from_numpy(np.asarray(src.label, dtype=np.int64))
    ids = torch.arange(g.num_nodes())
    out = {}
    for name in ("first", "second"):
        t0 = time.perf_counter()
        sampler = dgl.dataloading.NeighborSampler([10, 10])
        if which == "dgl":
            loader = dgl.dataloading.DataLoader(g, ids, sampler, batch_size=256, shuffle=True, num_workers=3)
        else:
            loader = bgl.DataLoader(g, ids, sampler, batch_size=256, shuffle=True, pipeline="processes")
        it = iter(loader)
        next(it)
        out[name] = time.perf_counter() - t0
        for _ in it:
            pass
        del it, loader
    print(json.dumps(out))
'''


def run_one(which: str) -> dict:
    """One fresh interpreter timing two loaders of kind ``which`` ("dgl" or "bgl")."""
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(CHILD)
    try:
        done = subprocess.run([sys.executable, f.name, which], capture_output=True, text=True, cwd=REPO,
                              env={**os.environ, "DGLBACKEND": "pytorch"}, timeout=600)
    finally:
        os.unlink(f.name)
    if done.returncode != 0:
        raise RuntimeError(f"{which} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    rows: dict[str, list[dict]] = {"dgl": [], "bgl": []}
    for r in range(args.runs):
        for which in rows:
            res = run_one(which)
            rows[which].append(res)
            print(json.dumps({"run": r, "loader": which, **{k: round(v, 2) for k, v in res.items()}}), flush=True)
    med = {k: {n: statistics.median(x[n] for x in v) for n in ("first", "second")} for k, v in rows.items()}
    for k, m in med.items():
        print(f"{k:>16}: first loader {m['first']:.2f} s, second {m['second']:.2f} s "
              f"({m['first'] / med['dgl']['first']:.2f}x / {m['second'] / med['dgl']['second']:.2f}x DGL's)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
