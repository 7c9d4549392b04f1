#!/usr/bin/env python
"""Per-part proximity order (bgl.cache.ordering.partition_order) vs random order and vs whole-graph proximity order.

What a trainer under ``bgl launch`` gets: it cannot hold the whole graph, so
``bgl.DataLoader`` orders seeds part by part on local views of the partition
dir.  This script measures, on the same sampled batches and the same FIFO
cache (10 % of the nodes), for one epoch each of several seeds:

* ``random``      : DGL's shuffle (the baseline);
* ``whole-graph`` : ``proximity_order`` on the full store (BGL's order if one
  process could hold the graph);
* ``per-part``    : :class:`bgl.cache.ordering.partition_order.PartitionOrder` over all
  training nodes (one trainer, all parts);
* ``rank 0 of P`` : the share a DDP rank gets (contiguous share of the sorted
  ids), per-part order vs random order of that share.

Also the ordering cost: view build + first epoch, and later epochs.
Batches are sampled with ``bgl.sampler.LocalSampler`` on the original store
(new ids mapped through ``orig_ids``), so every order sees the same sampler.

Usage::

    python bench/cache/partition_order.py [--datasets cora,citeseer,pubmed] [--parts 2] [--batch-size 32]
"""
from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import numpy as np
import torch

os.environ.setdefault("DGLBACKEND", "pytorch")

REPO = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("BGL_DATASETS", "/work/shared/datasets"))
DATASETS = {
    "cora": (DATA / "cora.npz", {}),
    "citeseer": (DATA / "citeseer.npz", {}),
    "pubmed": (DATA / "pubmed_adj_labels.npz", {"feat_dim": 16}),
}


def replay_order(store, orig_ids, order_new: np.ndarray, batch_size: int, fanouts, seed: int, ratio: float):
    """(fifo hit rate, mean input nodes per batch) of one epoch in ``order_new`` (new ids)."""
    from bgl.cache import make_cache
    from bgl.cache.replay import input_node_sampler, replay

    sample = input_node_sampler(store, fanouts)
    orig = np.asarray(orig_ids)[order_new]
    batches = []
    for i, b in enumerate(range(0, orig.shape[0], batch_size)):
        seeds = orig[b:b + batch_size]
        batches.append((torch.from_numpy(np.asarray(sample(seeds, seed * 1_000_003 + i), np.int64)), seeds.size))
    dim = 8
    cache = make_cache("fifo", int(ratio * store.num_nodes), store.num_nodes, dim)
    stats, _ = replay(cache, batches, lambda ids: ids.to(torch.float32).unsqueeze(1).expand(-1, dim).contiguous())
    return stats["hits"] / max(stats["requests"], 1), float(np.mean([ids.shape[0] for ids, _ in batches]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default="cora,citeseer,pubmed")
    ap.add_argument("--parts", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--fanouts", default="10,10")
    ap.add_argument("--num-sequences", type=int, default=8)
    ap.add_argument("--cache-ratio", type=float, default=0.1)
    ap.add_argument("--epochs", type=int, default=3, help="seeds averaged")
    ap.add_argument("--workdir", default="/tmp/bgl-bench-partition-order")
    args = ap.parse_args()
    torch.set_num_threads(1)

    from bgl.cache.ordering.store_order import proximity_order, random_order
    from bgl.sources.datasets import ingest
    from bgl.partition import partition_graph
    from bgl.cache.ordering.partition_order import PartitionOrder

    fanouts = [int(f) for f in args.fanouts.split(",")]
    work = Path(args.workdir)
    print(f"# {platform.machine()} {os.cpu_count()} cores, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
          f"batch {args.batch_size}, fanouts {fanouts}, fifo {args.cache_ratio:.0%}, {args.parts} parts (bgl), "
          f"{args.num_sequences} BFS sequences, mean of {args.epochs} epochs")
    print("| dataset | order | fifo hit rate | input nodes / batch | hit rate vs random |")
    print("|---|---|---|---|---|")
    timing = []
    for name in args.datasets.split(","):
        src, kw = DATASETS[name]
        store = ingest(str(src), work / name / "store", overwrite=True, **kw)
        book = partition_graph(store, "bgl", args.parts, work / name / "parts", seed=0, overwrite=True)
        orig_ids = np.asarray(book.orig_ids)
        new_of = np.empty_like(orig_ids)
        new_of[orig_ids] = np.arange(orig_ids.shape[0])
        train_new = book.split("train")
        train_orig = np.asarray(store.train_idx, np.int64)

        t = time.perf_counter()
        po = PartitionOrder(book.path, train_new, args.num_sequences)
        po.epoch_order(0)
        first = time.perf_counter() - t
        t = time.perf_counter()
        for s in range(1, 4):
            po.epoch_order(s)
        later = (time.perf_counter() - t) / 3
        proximity_order(store, train_orig, args.num_sequences, 0)  # numba warm-up
        t = time.perf_counter()
        for s in range(1, 4):
            proximity_order(store, train_orig, args.num_sequences, s)
        whole = (time.perf_counter() - t) / 3
        timing.append((name, first, later, whole))

        share = np.sort(train_new)[: -(-train_new.shape[0] // args.parts)]
        po_rank = PartitionOrder(book.path, share, args.num_sequences)
        orders = {
            "random": lambda s: random_order(train_new, s),
            "whole-graph proximity": lambda s: new_of[proximity_order(store, train_orig, args.num_sequences, s)],
            "per-part proximity": lambda s: po.epoch_order(s),
            f"rank 0 of {args.parts}: random": lambda s: random_order(share, s),
            f"rank 0 of {args.parts}: per-part proximity": lambda s: po_rank.epoch_order(s),
        }
        base = {}
        for label, fn in orders.items():
            runs = [replay_order(store, orig_ids, fn(100 + e), args.batch_size, fanouts, 100 + e, args.cache_ratio)
                    for e in range(args.epochs)]
            hit, inputs = float(np.mean([r[0] for r in runs])), float(np.mean([r[1] for r in runs]))
            key = "rank" if label.startswith("rank") else "all"
            base.setdefault(key, hit)
            print(f"| {name} | {label} | {hit:.4f} | {inputs:.0f} | {hit / base[key]:.2f}x |", flush=True)
    print("\n| dataset | per-part: views + first epoch (s) | per-part: later epochs (s) | whole-graph proximity (s) |")
    print("|---|---|---|---|")
    for name, first, later, whole in timing:
        print(f"| {name} | {first:.3f} | {later:.4f} | {whole:.4f} |")


if __name__ == "__main__":
    main()
