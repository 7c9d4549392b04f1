#!/usr/bin/env python
"""Weighted and LABOR sampling throughput beside DGL's, and LABOR's rows from source under a cache.

One R-MAT store (``--scale``, default 18), weights ``w`` uniform in [0, 1) with
a quarter of them 0, 3 layers with fanouts 15,10,5 (DGL order), batches of
1024 seeds; the methods take turns batch by batch (order rotating) so the
shared machine's load drifts evenly over them:

(a) DGL ``NeighborSampler(fanouts, prob="w").sample_blocks`` vs bgl
    ``LocalSampler.sample_blocks(..., prob="w")``;
(b) DGL ``LaborSampler(fanouts).sample_blocks`` vs bgl ``LocalSampler.sample_blocks(..., labor=Labor())``;

printing seeds/s, bgl / DGL, and the mean distinct input rows per batch.  Then
(c) the input rows of ``--epochs`` random-order epochs sampled by bgl's
neighbour sampler and by LABOR go through the lookahead cache (10 % of the
nodes, 4 batches ahead): rows and bytes it had to read from the source.

Usage::

    python bench/sampling/weighted.py             # scale 18
    python bench/sampling/weighted.py --quick     # scale 16, fewer batches
"""
from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from pathlib import Path

os.environ.setdefault("DGLBACKEND", "pytorch")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402
import torch  # noqa: E402


def make_graph(scale: int, workdir: Path):
    from bgl.rmat import generate_rmat_store
    from bgl.store import write_store

    base = generate_rmat_store(workdir / "rmat", scale, feat_dim=0)
    rng = np.random.default_rng(0)
    w = rng.random(base.num_edges).astype(np.float32)
    w[rng.random(base.num_edges) < 0.25] = 0
    return write_store(workdir / "rmat-w", np.asarray(base.indptr), np.asarray(base.indices),
                       splits={k: np.asarray(v) for k, v in base.splits.items()}, edata={"w": w})


def timed_turns(methods: dict, batches: list) -> tuple[dict, dict]:
    """``(seconds, summed results)`` per method over ``batches[2:]`` (the first two warm each method up):
    the methods take turns batch by batch, the order rotating, so the machine's load drifts evenly."""
    for fn in methods.values():
        for b in batches[:2]:
            fn(b)
    wall, rows, names = dict.fromkeys(methods, 0.0), dict.fromkeys(methods, 0), list(methods)
    for i, b in enumerate(batches[2:]):
        for name in names[i % len(names):] + names[:i % len(names)]:
            t0 = time.perf_counter()
            rows[name] += methods[name](b)
            wall[name] += time.perf_counter() - t0
    return wall, rows


def run(args) -> None:
    import dgl

    from bgl.cache import make_cache
    from bgl.cache.replay import replay
    from bgl.sampler import LocalSampler
    from bgl.sampler.multilayer import Labor

    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        store = make_graph(args.scale, Path(tmp))
        indptr = torch.from_numpy(np.array(store.indptr))
        indices = torch.from_numpy(np.asarray(store.indices).astype(np.int64))
        g = dgl.graph(("csc", (indptr, indices, torch.empty(0, dtype=torch.int64))), num_nodes=store.num_nodes)
        g.edata["w"] = torch.from_numpy(np.asarray(store.edge_array("w")))  # csc eids are 0..E-1
        fanouts = [15, 10, 5]
        ours = LocalSampler(store)
        dgl_w = dgl.dataloading.NeighborSampler(fanouts, prob="w")
        dgl_labor = dgl.dataloading.LaborSampler(fanouts)
        dgl_labor1 = dgl.dataloading.LaborSampler(fanouts, importance_sampling=1)
        counter = iter(range(10**9))
        methods = {
            "DGL NeighborSampler(prob='w')": lambda s: dgl_w.sample_blocks(g, s)[2][0].num_src_nodes(),
            "bgl LocalSampler(prob='w')": lambda s: ours.sample_blocks(s, fanouts, seed=next(counter),
                                                                       prob="w")[0].num_src,
            "DGL LaborSampler": lambda s: dgl_labor.sample_blocks(g, s)[2][0].num_src_nodes(),
            "bgl LABOR-0": lambda s: ours.sample_blocks(s, fanouts, seed=next(counter), labor=Labor())[0].num_src,
            "DGL LaborSampler(importance_sampling=1)": lambda s: dgl_labor1.sample_blocks(g, s)[2][0].num_src_nodes(),
            "bgl LABOR-1": lambda s: ours.sample_blocks(s, fanouts, seed=next(counter),
                                                        labor=Labor(importance_sampling=1))[0].num_src,
            "bgl NeighborSampler (uniform)": lambda s: ours.sample_blocks(s, fanouts, seed=next(counter))[0].num_src,
        }
        rng = np.random.default_rng(1)
        train = np.asarray(store.train_idx)
        batches = [torch.from_numpy(rng.choice(train, args.batch_size, replace=False))
                   for _ in range(args.batches + 2)]
        wall, rows = timed_turns(methods, batches)
        names = list(methods)
        n = args.batches * args.batch_size
        print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs (shared; under load)")
        print(f"graph: R-MAT scale {args.scale}, {store.num_nodes} nodes, {store.num_edges} edges; "
              f"fanouts {fanouts}, batch {args.batch_size}, {args.batches} batches per method")
        print(f"{'method':40s} {'seeds/s':>10s} {'vs DGL':>7s} {'input rows/batch':>17s}")
        anchors = {"bgl LocalSampler(prob='w')": "DGL NeighborSampler(prob='w')", "bgl LABOR-0": "DGL LaborSampler",
                   "bgl LABOR-1": "DGL LaborSampler(importance_sampling=1)"}
        for name in names:
            ratio = wall[anchors[name]] / wall[name] if name in anchors else float("nan")
            print(f"{name:40s} {n / wall[name]:10.0f} {ratio:7.2f} {rows[name] / args.batches:17.0f}")

        cap = int(0.1 * store.num_nodes)
        dim = 128
        print(f"\nlookahead cache, {cap} rows (10 % of nodes), 4 batches ahead, rows of {dim} float32:")
        for label, kwargs in (("neighbour sampling", {}), ("LABOR-0", {"labor": Labor()}),
                              ("LABOR-1", {"labor": Labor(importance_sampling=1)})):
            stream = []
            for epoch in range(args.epochs):
                order = np.random.default_rng(100 + epoch).permutation(train)
                for b in range(0, min(order.size, args.batch_size * args.batches), args.batch_size):
                    seeds = order[b:b + args.batch_size]
                    blocks = ours.sample_blocks(seeds, fanouts, seed=epoch * 10**6 + b, **kwargs)
                    stream.append((blocks[0].src_ids, int(seeds.size)))
            cache = make_cache("lookahead", cap, store.num_nodes, dim, degrees=np.asarray(store.in_degrees()))
            stats, _ = replay(cache, stream, lambda ids: torch.zeros(len(ids), dim), lookahead=4)
            print(f"  {label:20s} input rows {stats['requests']:>10d}  from source {stats['misses']:>9d}  "
                  f"({stats['bytes_from_source'] / 2**20:8.1f} MiB)")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scale", type=int, default=18)
    p.add_argument("--batches", type=int, default=30)
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--workdir", default=None)
    p.add_argument("--quick", action="store_true", help="scale 16, 10 batches")
    args = p.parse_args()
    if args.quick:
        args.scale, args.batches = 16, 10
    torch.manual_seed(0)
    run(args)


if __name__ == "__main__":
    main()
