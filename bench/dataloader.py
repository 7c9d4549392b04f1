"""bgl.DataLoader vs dgl.dataloading.DataLoader: epoch time and batches/s, same model and data.

One run measures, side by side on the same machine:

* ``dgl-w0`` / ``dgl-w1``: DGL 2.1's DataLoader on a DGLGraph built from the store
  (``num_workers`` 0 and 1),
* ``bgl-inline`` / ``bgl-processes``: bgl's pipeline inline and as pinned stage processes,
* ``...+fifo-prox``: the same with BGL's FIFO feature cache (10 % of nodes) and proximity order.

Each configuration trains a 2-layer GraphSAGE (``dgl.nn.SAGEConv``, fanouts 10,10) for
one warm-up epoch and ``--epochs`` timed epochs, and separately iterates the loader
alone (no model) for the loader's own batches/s.  Epochs are bounded by taking the
first ``--max-batches * --batch-size`` training ids (so every loader finishes its
epochs normally).  Ratios are against ``dgl-w0``.

Usage::

    python bench/dataloader.py --workdir /tmp/bgl-bench-dl [--scale 20] [--max-batches 20]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

os.environ.setdefault("DGLBACKEND", "pytorch")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from bgl.loader.pipeline import quiet_numba_threads  # noqa: E402

quiet_numba_threads()


def build_stores(workdir: Path, scale: int, feat_dim: int):
    from bgl.data import default_dataset_path
    from bgl.sources.datasets import ingest
    from bgl.sources.rmat import generate_rmat_store
    from bgl.store import GraphStore

    stores = {}
    cora = workdir / "cora"
    stores["cora"] = GraphStore(cora) if (cora / "meta.json").exists() else ingest(str(default_dataset_path()), cora)
    rmat = workdir / f"rmat{scale}-f{feat_dim}"
    if (rmat / "meta.json").exists():
        stores[f"rmat{scale}"] = GraphStore(rmat)
    else:
        t = time.perf_counter()
        stores[f"rmat{scale}"] = generate_rmat_store(rmat, scale, 16, seed=0, feat_dim=feat_dim, num_classes=16)
        print(f"generated R-MAT scale {scale} in {time.perf_counter() - t:.1f} s")
    return stores


def to_dglgraph(store):
    import dgl

    src = np.asarray(store.indices).astype(np.int64)
    dst = np.repeat(np.arange(store.num_nodes, dtype=np.int64), np.diff(store.indptr))
    g = dgl.graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=store.num_nodes)
    g.ndata["feat"] = torch.from_numpy(np.array(store.feat))
    g.ndata["label"] = torch.from_numpy(np.array(store.label))
    return g


class SAGE(torch.nn.Module):
    def __init__(self, in_size, hid_size, out_size):
        import dgl.nn as dglnn

        super().__init__()
        self.layers = torch.nn.ModuleList([dglnn.SAGEConv(in_size, hid_size, "mean"),
                                           dglnn.SAGEConv(hid_size, out_size, "mean")])

    def forward(self, blocks, x):
        x = torch.relu(self.layers[0](blocks[0], x))
        return self.layers[1](blocks[1], x)


def timed_epochs(loader, epochs: int, model=None, opt=None) -> tuple[float, int]:
    """(seconds of the timed epochs, batches in them) after one untimed warm-up epoch."""
    def one_epoch():
        n = 0
        for _, _, blocks in loader:
            if model is not None:
                loss = torch.nn.functional.cross_entropy(model(blocks, blocks[0].srcdata["feat"]),
                                                         blocks[-1].dstdata["label"])
                opt.zero_grad()
                loss.backward()
                opt.step()
            n += 1
        return n

    one_epoch()
    t = time.perf_counter()
    n = sum(one_epoch() for _ in range(epochs))
    return time.perf_counter() - t, n


def run_dataset(name, store, args) -> list[dict]:
    import dgl

    import bgl

    train = np.array(store.train_idx)[: args.max_batches * args.batch_size]
    g = to_dglgraph(store)
    fanouts = [10, 10]
    num_classes = int(store.num_classes)

    def dgl_loader(workers):
        return dgl.dataloading.DataLoader(g, torch.from_numpy(train), dgl.dataloading.NeighborSampler(fanouts),
                                          batch_size=args.batch_size, shuffle=True, num_workers=workers)

    def bgl_loader(pipeline, cache=None, order="random"):
        return bgl.DataLoader(store, train, bgl.NeighborSampler(fanouts), batch_size=args.batch_size,
                              shuffle=True, pipeline=pipeline, cache=cache, order=order, blocks="dgl")

    configs = {
        "dgl-w0": lambda: dgl_loader(0),
        "dgl-w1": lambda: dgl_loader(1),
        "bgl-inline": lambda: bgl_loader("inline"),
        "bgl-inline+fifo-prox": lambda: bgl_loader("inline", "fifo", "proximity"),
        "bgl-processes": lambda: bgl_loader("processes"),
        "bgl-processes+fifo-prox": lambda: bgl_loader("processes", "fifo", "proximity"),
    }
    rows = []
    for cname, make in configs.items():
        torch.manual_seed(0)
        loader = make()
        try:
            load_s, load_n = timed_epochs(loader, args.epochs)
            model = SAGE(store.feat_dim, 64, num_classes)
            opt = torch.optim.Adam(model.parameters(), lr=1e-2)
            train_s, train_n = timed_epochs(loader, args.epochs, model, opt)
            stats = loader.cache_stats() if hasattr(loader, "cache_stats") else None
            split = getattr(loader, "core_split", None)
        finally:
            if hasattr(loader, "close"):
                loader.close()
        row = dict(dataset=name, config=cname, batches_per_epoch=load_n // args.epochs,
                   load_batches_per_s=load_n / load_s, train_epoch_s=train_s / args.epochs,
                   train_batches_per_s=train_n / train_s,
                   cache_hit_rate=None if not stats else stats["hits"] / max(1, stats["requests"]),
                   stage_cores=None if split is None else split.cores)
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def print_table(rows) -> str:
    lines = ["| dataset | loader | batches/epoch | loader-only batches/s | x dgl-w0 | train epoch s | "
             "train batches/s | x dgl-w0 | cache hit rate |", "|---|---|---|---|---|---|---|---|---|"]
    for ds in dict.fromkeys(r["dataset"] for r in rows):
        base = next(r for r in rows if r["dataset"] == ds and r["config"] == "dgl-w0")
        for r in (r for r in rows if r["dataset"] == ds):
            hit = "" if r["cache_hit_rate"] is None else f"{r['cache_hit_rate']:.3f}"
            lines.append(
                f"| {ds} | {r['config']} | {r['batches_per_epoch']} | {r['load_batches_per_s']:.1f} | "
                f"{r['load_batches_per_s'] / base['load_batches_per_s']:.2f} | {r['train_epoch_s']:.2f} | "
                f"{r['train_batches_per_s']:.2f} | {r['train_batches_per_s'] / base['train_batches_per_s']:.2f} | {hit} |")
    table = "\n".join(lines)
    print(table)
    return table


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--workdir", default="/tmp/bgl-bench-dataloader", help="stores are built/reused here")
    p.add_argument("--scale", type=int, default=20, help="R-MAT scale (log2 nodes)")
    p.add_argument("--feat-dim", type=int, default=128)
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--max-batches", type=int, default=20, help="batches per epoch (bounds runtime)")
    p.add_argument("--epochs", type=int, default=2, help="timed epochs after one warm-up epoch")
    p.add_argument("--datasets", default="cora,rmat", help="comma list of cora,rmat")
    p.add_argument("--torch-threads", type=int, default=1,
                   help="trainer torch threads (0 = one per core of this process)")
    p.add_argument("--json", help="also write the rows here")
    args = p.parse_args()
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(args.torch_threads or max(1, len(os.sched_getaffinity(0))))
    print(f"machine: {platform.machine()}, {len(os.sched_getaffinity(0))} cores, load {os.getloadavg()}, "
          f"torch {torch.__version__}, trainer torch threads {torch.get_num_threads()}")
    stores = build_stores(workdir, args.scale, args.feat_dim)
    wanted = args.datasets.split(",")
    rows = []
    for name, store in stores.items():
        if name.rstrip("0123456789") in wanted or name in wanted:
            rows += run_dataset(name, store, args)
    print_table(rows)
    print(f"load average after: {os.getloadavg()}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
