"""Serve a typed partition with one ``bgl serve`` process per part and sample typed batches from it.

    python bench/typed/scale_serve.py PARTITION_DIR [--batches 20]

Seeds: ``--batches`` x 1024 training papers (original per-type ids), ``bgl.NeighborSampler([10, 10])``
for every relation, through ``bgl.DataLoader(PARTITION_DIR, {"paper": seeds})`` with ``BGL_SERVERS``
set (socket reads only): the servers' start time, their RSS idle and after, the first batch's time
and seeds/s.  Prints one JSON object.  ``--cache lookahead`` adds one feature cache per featured node
type (``--cache-ratio`` of each type's rows) and reports the bytes each type's cache took from the
servers (without a cache: every featured input row's bytes); ``--order proximity`` orders the seeds.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.<area>.<script> imports


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("partition_dir")
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--target", default="paper")
    ap.add_argument("--cache", default=None, help="a cache policy (e.g. lookahead): one cache per featured type")
    ap.add_argument("--cache-ratio", type=float, default=0.1)
    ap.add_argument("--order", default="random", choices=["random", "proximity"])
    args = ap.parse_args()
    import bgl
    from bgl.partition import open_partition

    part = Path(args.partition_dir)
    book = open_partition(part)
    train = np.sort(book.to_orig(book.type_split(args.target, "train"))[1])
    seeds = torch.from_numpy(np.sort(np.random.default_rng(0).choice(train, args.batches * 1024, replace=False)))
    from bench.scaling import rmat_growth  # its Servers

    t0 = time.perf_counter()
    with rmat_growth.Servers(part, book.num_parts, Path(tempfile.mkdtemp(prefix="bgl-hetero-serve-")),
                         threads=1) as servers:
        res = {"servers_ready_s": time.perf_counter() - t0, "server_rss_idle": servers.rss()}
        os.environ["BGL_SERVERS"] = ",".join(servers.addresses)
        cache = {} if args.cache is None else {"cache": args.cache, "cache_ratio": args.cache_ratio}
        loader = bgl.DataLoader(str(part), {args.target: seeds}, bgl.NeighborSampler([10, 10]), batch_size=1024,
                                blocks="bgl", order=args.order, shuffle=args.order == "proximity", **cache)
        start, inputs = time.perf_counter(), 0
        typed_inputs: dict = {}
        for i, (input_nodes, _, _) in enumerate(loader):
            if i == 0:
                res["first_batch_s"] = time.perf_counter() - start
            inputs += sum(int(v.numel()) for v in input_nodes.values())
            for nt, v in input_nodes.items():
                typed_inputs[nt] = typed_inputs.get(nt, 0) + int(v.numel())
        secs = time.perf_counter() - start
        res.update(server_rss_after=servers.rss(), seeds=int(seeds.numel()), epoch_s=secs,
                   seeds_per_s=seeds.numel() / secs, input_nodes_per_batch=inputs / args.batches,
                   cache=args.cache, cache_ratio=args.cache_ratio if args.cache else 0.0, order=args.order)
        feat_bytes = {t.name: t.count and np.dtype(t.feat_dtype or "float32").itemsize * t.feat_dim
                      for t in book.schema.node_types}
        stats = loader.cache_stats()
        if stats is not None:  # the per-type caches' own counts: rows from the servers, in bytes
            res["bytes_from_servers"] = {nt: s["bytes_from_source"] for nt, s in stats["by_type"].items()}
            res["hit_rate"] = stats["hit_rate"]
        else:  # every input row of a featured type came from a server
            res["bytes_from_servers"] = {nt: feat_bytes[nt] * int(n) for nt, n in typed_inputs.items() if feat_bytes[nt]}
    print(json.dumps(res))


if __name__ == "__main__":
    main()
