"""DGL's heterogeneous NeighborSampler loop (R-GCN, 2 layers) with DGL's loader vs bgl's, side by side.

The graphs are the paper-word graphs of Cora and CiteSeer (bgl/sources/paper_word.py:
paper-cites-paper, paper-has-word, word-in-paper; paper bag-of-words features, words
get a learned embedding).  Each (graph, loader, seed) runs in its own child process
(peak RSS: the child's own ``VmHWM``, bench/common/own_rss.py), loaders alternating; the loop is the same code for both,
only the loader class differs (``dgl.dataloading.DataLoader`` vs ``bgl.DataLoader``, the
import swap), both over the same DGLGraph.

    python bench/typed/rgcn.py --workdir /tmp/bgl-hetero [--epochs 5] [--seeds 3]

Prints one JSON row per run and a summary: epoch time and peak RSS as bgl/DGL ratios,
test accuracy and trainer wait (``wait_ms`` a batch, ``wait_share`` of the epoch: time blocked in
``next()``, bench/common/side_by_side.py's timer for both loaders) of each (mean over seeds).
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("DGLBACKEND", "pytorch")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.<area>.<script> imports

DATASETS = {"cora": "cora.npz", "citeseer": "citeseer.npz"}
# shared/ beside the checkout; $BGL_SHARED_DATASETS where it is elsewhere (a worktree's checkout)
SHARED = Path(os.environ.get("BGL_SHARED_DATASETS", Path(__file__).resolve().parents[3] / "shared" / "datasets"))


def build(workdir: Path, name: str) -> Path:
    """The paper-word typed store of dataset ``name`` (built once under ``workdir``)."""
    import bgl
    from bgl.sources.paper_word import paper_word_store
    from bgl.store import GraphStore

    out = workdir / f"{name}-pw"
    if not (out / "meta.json").exists():
        base = workdir / name
        store = GraphStore(base) if (base / "meta.json").exists() else bgl.ingest(str(SHARED / DATASETS[name]), base)
        paper_word_store(store, out)
    return out


def to_dglgraph(store):
    """A DGL heterograph of a typed store (features, labels, train/test masks of papers)."""
    import dgl
    import numpy as np
    import torch

    s = store.schema
    dst = np.repeat(np.arange(store.num_nodes), np.diff(store.indptr))
    src = np.asarray(store.indices, np.int64)
    et = np.asarray(store.etype)
    off = s.offsets
    data = {}
    for r, (a, rel, b) in enumerate(s.canonical_etypes):
        sel = et == r
        data[(a, rel, b)] = (torch.from_numpy(src[sel] - off[s.ntype_id(a)]), torch.from_numpy(dst[sel] - off[s.ntype_id(b)]))
    g = dgl.heterograph(data, num_nodes_dict={t.name: t.count for t in s.node_types})
    g.nodes["paper"].data["feat"] = torch.from_numpy(np.array(store.type_feat["paper"]))
    g.nodes["paper"].data["label"] = torch.from_numpy(np.array(store.type_label["paper"]))
    return g


def worker(store_dir: str, loader_kind: str, seed: int, epochs: int, batch_size: int) -> dict:
    import dgl
    import dgl.nn as dglnn
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    import bgl
    from bgl.store import GraphStore

    torch.manual_seed(seed)
    store = GraphStore(store_dir)
    g = to_dglgraph(store)
    train = torch.from_numpy(store.type_splits["paper"]["train"].copy())
    test = torch.from_numpy(store.type_splits["paper"]["test"].copy())
    from bench.common.side_by_side import bgl_loader_options

    # "bgl-keep": bgl with LLVM's pages kept; "bgl-<pipeline>": that pipeline (bench/loader/pipeline_modes.py)
    Loader = (dgl.dataloading.DataLoader if loader_kind == "dgl" else bgl.DataLoader if loader_kind == "bgl-keep"
              else functools.partial(bgl.DataLoader, **bgl_loader_options(loader_kind)))
    sampler = dgl.dataloading.NeighborSampler([10, 10])
    rels = [c[1] for c in g.canonical_etypes]

    class RGCN(nn.Module):
        def __init__(self, in_paper, num_words, hid, out):
            super().__init__()
            self.word = nn.Embedding(num_words, hid)
            self.proj = nn.Linear(in_paper, hid)
            self.l1 = dglnn.HeteroGraphConv({r: dglnn.SAGEConv(hid, hid, "mean") for r in rels}, aggregate="sum")
            self.l2 = dglnn.HeteroGraphConv({r: dglnn.SAGEConv(hid, out, "mean") for r in rels}, aggregate="sum")

        def forward(self, blocks):
            b0 = blocks[0]
            h = {"paper": self.proj(b0.srcnodes["paper"].data["feat"]),
                 "word": self.word(b0.srcnodes["word"].data[dgl.NID])}
            h = {k: F.relu(v) for k, v in self.l1(b0, h).items()}
            return self.l2(blocks[1], h)["paper"]

    model = RGCN(g.nodes["paper"].data["feat"].shape[1], g.num_nodes("word"), 64,
                 int(g.nodes["paper"].data["label"].max()) + 1)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    train_loader = Loader(g, {"paper": train}, sampler, batch_size=batch_size, shuffle=True)
    test_loader = Loader(g, {"paper": test}, sampler, batch_size=batch_size)
    from bench.common.side_by_side import TrainerWait

    wait = TrainerWait()  # the trainer's time blocked in next(), the same timer for both systems
    times = []
    for _ in range(epochs + 1):
        model.train()
        t = time.perf_counter()
        for _, _, blocks in wait.batches_of(train_loader):
            y = blocks[-1].dstnodes["paper"].data["label"]
            loss = F.cross_entropy(model(blocks), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        times.append(time.perf_counter() - t)
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for _, _, blocks in test_loader:
            y = blocks[-1].dstnodes["paper"].data["label"]
            correct += int((model(blocks).argmax(1) == y).sum())
            total += int(y.shape[0])
    from bench.common.own_rss import own_peak_rss_mb

    return {"epoch_s": statistics.median(times[1:]), "first_epoch_s": times[0], "acc": correct / total,
            "own_peak_rss_mb": own_peak_rss_mb(), **wait.figures(times)}


def run_child(store: Path, kind: str, seed: int, epochs: int, batch_size: int) -> dict:
    cmd = [sys.executable, __file__, "--worker", str(store), kind, str(seed), str(epochs), str(batch_size)]
    # "bgl-keep": bgl with LLVM's library pages left resident (sampler/jit_pages.py), for comparison
    env = {**os.environ, "BGL_KEEP_JIT_PAGES": "1"} if kind == "bgl-keep" else None
    from bench.common.own_rss import run_child as run

    return run(cmd, f"{kind} run", env=env)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/bgl-hetero"))
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--datasets", nargs="*", default=list(DATASETS))
    ap.add_argument("--also-keep-jit-pages", action="store_true",
                    help="also run bgl with LLVM's library pages kept resident (BGL_KEEP_JIT_PAGES=1)")
    ap.add_argument("--worker", nargs=5, metavar=("STORE", "LOADER", "SEED", "EPOCHS", "BATCH"))
    ap.add_argument("--build", metavar="DATASET", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        store, kind, seed, epochs, batch = args.worker
        print(json.dumps(worker(store, kind, int(seed), int(epochs), int(batch))))
        return
    if args.build:
        print(build(args.workdir, args.build))
        return
    args.workdir.mkdir(parents=True, exist_ok=True)
    print(f"load average at start: {os.getloadavg()}")
    for name in args.datasets:
        # built in a child: this process stays free of bgl's imports (numba, LLVM), whose mapped
        # library pages would change what the children's own peak RSS counts (bench/common/own_rss.py)
        store = Path(subprocess.run([sys.executable, __file__, "--workdir", str(args.workdir), "--build", name],
                                    check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1])
        kinds = ("dgl", "bgl", "bgl-keep") if args.also_keep_jit_pages else ("dgl", "bgl")
        rows = {k: [] for k in kinds}
        for seed in range(args.seeds):
            for kind in (kinds if seed % 2 == 0 else kinds[::-1]):
                row = run_child(store, kind, seed, args.epochs, args.batch_size)
                rows[kind].append(row)
                print(json.dumps({"dataset": name, "loader": kind, "seed": seed, **row}))
        mean = {k: {f: statistics.mean(r[f] for r in v) for f in ("epoch_s", "acc", "peak_rss_mb", "wait_share", "wait_ms")}
                for k, v in rows.items()}
        print(json.dumps({"dataset": name, "summary": mean,
                          "epoch_ratio_bgl_over_dgl": mean["bgl"]["epoch_s"] / mean["dgl"]["epoch_s"],
                          "rss_ratio_bgl_over_dgl": mean["bgl"]["peak_rss_mb"] / mean["dgl"]["peak_rss_mb"],
                          "acc_diff_points": 100 * (mean["bgl"]["acc"] - mean["dgl"]["acc"]),
                          **({"rss_ratio_bgl_keep_over_dgl": mean["bgl-keep"]["peak_rss_mb"] / mean["dgl"]["peak_rss_mb"]}
                             if "bgl-keep" in mean else {})}))
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
