"""First epoch vs later epochs of ``bgl.DataLoader``, on a cold and on a warm kernel cache (issue #41 item 3).

The claim measured: on a warm machine the first epoch (loader construction included, where bgl loads its
numba kernels) costs at most 2x a later epoch, and a cold machine compiles the kernels once per
installation (numba's on-disk cache), not once per run.  Each run is a fresh Python process over the same
store; ``cold`` points ``NUMBA_CACHE_DIR`` at an empty directory, ``warm 1`` / ``warm 2`` reuse what the
cold run compiled (a second and third run on the same machine).  Prints one markdown row per (pipeline,
run): construction, epoch 1, the mean of later epochs, and epoch 1 (with construction) / later.

    python bench/launch/first_epoch.py --workdir /tmp/first-epoch [--dataset data/cora.npz] [--epochs 4] [--dgl]

``--dgl`` adds the anchor: DGL's own ``DataLoader`` over the same graph as a DGLGraph, with
``num_workers=0`` and ``2`` (DGL's default ``persistent_workers=False``: its worker processes start
again every epoch), two fresh processes each; DGL compiles nothing, so it has no cold row.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# What both children run once their loader exists: the script's set-up, the epochs, one JSON line.
EPOCHS = r'''
t2 = time.perf_counter()
if setup:  # the script's own set-up: a model and its optimizer (Adam's first construction imports torch._dynamo)
    model = torch.nn.Linear(store.feat_dim, 16)
    torch.optim.Adam(model.parameters(), lr=0.01)
t3 = time.perf_counter()
times = []
for _ in range(epochs):
    t = time.perf_counter()
    for _ in loader:
        pass
    times.append(time.perf_counter() - t)
print(json.dumps({"import": t1 - t0, "construct": t2 - t1, "setup": t3 - t2, "epochs": times}))
'''

CHILD = r'''
import json, sys, time
t0 = time.perf_counter()
import numpy as np, torch, bgl
store_path, pipeline, epochs, setup = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
store = bgl.GraphStore(store_path)
t1 = time.perf_counter()
loader = bgl.DataLoader(store_path, np.asarray(store.train_idx), bgl.NeighborSampler([10, 10]), batch_size=64,
                        shuffle=True, pipeline=pipeline)
''' + EPOCHS + "loader.close()\n"

# The anchor: DGL's loader over the store's graph (bench/loader/node_classification.py's DGLGraph), the same
# batches' shape.
DGL_CHILD = r'''
import json, sys, time
t0 = time.perf_counter()
import numpy as np, torch, dgl, bgl
sys.path.insert(0, sys.argv[5])
from bench.loader.node_classification import to_dglgraph
store_path, workers, epochs, setup = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
store = bgl.GraphStore(store_path)
g = to_dglgraph(store)
t1 = time.perf_counter()
loader = dgl.dataloading.DataLoader(g, torch.from_numpy(np.asarray(store.train_idx)),
                                    dgl.dataloading.NeighborSampler([10, 10]), batch_size=64, shuffle=True,
                                    num_workers=workers)
''' + EPOCHS


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "bgl-first-epoch"))
    p.add_argument("--dataset", default=str(REPO / "data" / "cora.npz"))
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--pipelines", default="inline,processes")
    p.add_argument("--setup", action="store_true", help="build a model and Adam between construction and epoch 1")
    p.add_argument("--dgl", action="store_true", help="also DGL's DataLoader, num_workers 0 and 2 (the anchor)")
    args = p.parse_args(argv)
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    store = work / "store"
    if not (store / "meta.json").is_file():
        import bgl

        bgl.ingest(args.dataset, store)
    print(f"# {args.dataset}, batch 64, fanouts 10,10; loadavg {Path('/proc/loadavg').read_text().split()[:3]}")
    print("| loader | run | import s | construct s | setup s | epoch 1 s | later epochs s (mean) "
          "| epoch 1 / later | (construct + epoch 1) / later |")
    print("|---|---|---|---|---|---|---|---|---|")
    setup = "1" if args.setup else "0"
    for pipeline in args.pipelines.split(","):
        cache = tempfile.mkdtemp(dir=work, prefix=f"numba-{pipeline}-")  # empty: a cold machine
        for run in ("cold", "warm 1", "warm 2"):
            env = {**os.environ, "NUMBA_CACHE_DIR": cache}
            _row(f"bgl {pipeline}", run, [sys.executable, "-c", CHILD, str(store), pipeline, str(args.epochs), setup], env)
    if args.dgl:
        env = {**os.environ, "DGLBACKEND": "pytorch"}
        for workers in (0, 2):
            for run in ("warm 1", "warm 2"):
                _row(f"DGL num_workers={workers}", run, [sys.executable, "-c", DGL_CHILD, str(store), str(workers),
                                                         str(args.epochs), setup, str(REPO)], env)
    print(f"# loadavg after {Path('/proc/loadavg').read_text().split()[:3]}")
    return 0


def _row(loader: str, run: str, command: list[str], env: dict) -> None:
    """Run one child (a fresh process) and print its markdown row."""
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
    r = json.loads(out)
    later = sum(r["epochs"][1:]) / max(1, len(r["epochs"]) - 1)
    first = r["construct"] + r["epochs"][0]
    print(f"| {loader} | {run} | {r['import']:.2f} | {r['construct']:.2f} | {r['setup']:.2f} | {r['epochs'][0]:.3f} | "
          f"{later:.3f} | {r['epochs'][0] / later:.1f}x | {first / later:.1f}x |", flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
