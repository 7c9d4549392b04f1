"""Serve a typed partition with one ``bgl serve`` process per part and sample typed batches from it.

    python bench/hetero_scale_serve.py PARTITION_DIR [--batches 20]

Seeds: ``--batches`` x 1024 training papers (original per-type ids), ``bgl.NeighborSampler([10, 10])``
for every relation, through ``bgl.DataLoader(PARTITION_DIR, {"paper": seeds})`` with ``BGL_SERVERS``
set (socket reads only): the servers' start time, their RSS idle and after, the first batch's time
and seeds/s.  Prints one JSON object.
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

HERE = Path(__file__).resolve().parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("partition_dir")
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--target", default="paper")
    args = ap.parse_args()
    import bgl
    from bgl.partition import open_partition

    part = Path(args.partition_dir)
    book = open_partition(part)
    train = np.sort(book.to_orig(book.type_split(args.target, "train"))[1])
    seeds = torch.from_numpy(np.sort(np.random.default_rng(0).choice(train, args.batches * 1024, replace=False)))
    sys.path.insert(0, str(HERE))  # bench/scaling.py's Servers (bench/ is not a package)
    import scaling

    t0 = time.perf_counter()
    with scaling.Servers(part, book.num_parts, Path(tempfile.mkdtemp(prefix="bgl-hetero-serve-")),
                         threads=1) as servers:
        res = {"servers_ready_s": time.perf_counter() - t0, "server_rss_idle": servers.rss()}
        os.environ["BGL_SERVERS"] = ",".join(servers.addresses)
        loader = bgl.DataLoader(str(part), {args.target: seeds}, bgl.NeighborSampler([10, 10]), batch_size=1024,
                                blocks="bgl")
        start, inputs = time.perf_counter(), 0
        for i, (input_nodes, _, _) in enumerate(loader):
            if i == 0:
                res["first_batch_s"] = time.perf_counter() - start
            inputs += sum(int(v.numel()) for v in input_nodes.values())
        secs = time.perf_counter() - start
        res.update(server_rss_after=servers.rss(), seeds=int(seeds.numel()), epoch_s=secs,
                   seeds_per_s=seeds.numel() / secs, input_nodes_per_batch=inputs / args.batches)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
