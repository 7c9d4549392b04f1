"""Where a bgl training batch's time goes, on graph servers started by ``bgl launch``
(bench/distdgl/node_classification.py --profile).

Run as the training command of ``bgl launch`` (it reads ``BGL_SERVERS``), one
process per trainer under torch DDP like examples/train_sage.py.  Each batch
repeats what the inline DataLoader does, with a timer around every step:

* per layer: ``SamplingClient.sample_layer`` (one SAMPLE request per owning
  server, in flight together: one round trip), the relabel of the sampled
  neighbours to block-local ids, and the block build (indptr + Block);
* feature fetch of ``blocks[0]``'s src nodes and label fetch of the seeds
  (one FEATURES round trip each);
* conversion to ``dgl.Block`` and the model step (same DGLSAGE, DDP).

No cache, random seed order: the feature-cache and ordering effects show in
the epoch rows of bench/distdgl/node_classification.py.  Rank 0 prints seconds per batch
(the first batch, which warms up, is not counted) and the bytes moved.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--graph", required=True, help="partition dir")
    p.add_argument("--batches", type=int, default=6)
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--fanouts", default="10,10")
    p.add_argument("--hidden", type=int, default=128)
    args = p.parse_args()

    import torch.distributed as dist
    import torch.nn.functional as F
    from torch import nn

    from bgl.blocks import Block
    from bgl.dgl.real_dgl.blocks import to_dgl_blocks
    from bgl.sampler import ops
    from bgl.sampler.client import SamplingClient, traffic
    from train_sage import DGLSAGE, load_graph_info

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    info = load_graph_info(Path(args.graph))
    fanouts = [int(f) for f in args.fanouts.split(",")]
    model = nn.parallel.DistributedDataParallel(
        DGLSAGE(info["in_feats"], args.hidden, info["num_classes"], len(fanouts), 0.5))
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    client = SamplingClient(os.environ["BGL_SERVERS"].split(","), timeout=60)
    train = info["splits"]["train"].numpy()
    mine = np.random.default_rng(rank).permutation(np.array_split(train, world)[rank])
    # combined_fetch: the same features + labels again through fetch_features_and_labels (one
    # round trip); not part of the batch, measured beside the two separate fetches
    keys = ["sample_rpc", "relabel", "block_build", "feat_fetch", "label_fetch", "combined_fetch", "to_dgl",
            "model"]
    times = dict.fromkeys(keys, 0.0)
    rpcs = 0
    counted = 0
    input_nodes = 0
    before = traffic()
    for b in range(args.batches):
        if b == 1:  # batch 0 warms up (kernel compiles, first connections): not counted
            times = dict.fromkeys(keys, 0.0)
            rpcs, before, input_nodes = 0, traffic(), 0
        seeds = np.sort(mine[(b * args.batch_size) % len(mine):][:args.batch_size])
        dst = ops.as_ids(seeds, "seeds")
        blocks = []
        for layer in range(len(fanouts) - 1, -1, -1):
            t0 = time.perf_counter()
            counts, nbrs, _ = client.sample_layer(dst, fanouts[layer], False, ops.layer_seed(b, layer))
            t1 = time.perf_counter()
            src, local = client._relabel(dst, nbrs)
            t2 = time.perf_counter()
            indptr = np.zeros(dst.shape[0] + 1, np.int64)
            np.cumsum(counts, out=indptr[1:])
            blocks.append(Block(torch.from_numpy(src), int(dst.shape[0]), torch.from_numpy(indptr),
                                torch.from_numpy(local), None))
            t3 = time.perf_counter()
            times["sample_rpc"] += t1 - t0
            times["relabel"] += t2 - t1
            times["block_build"] += t3 - t2
            rpcs += 1
            dst = src
        blocks.reverse()
        t0 = time.perf_counter()
        x = client.fetch_features(blocks[0].src_ids.numpy())
        t1 = time.perf_counter()
        y = client.fetch_labels(blocks[-1].dst_ids.numpy())
        t2 = time.perf_counter()
        client.fetch_features_and_labels(blocks[0].src_ids.numpy(), blocks[-1].dst_ids.numpy())
        times["combined_fetch"] += time.perf_counter() - t2
        t2 = time.perf_counter()
        dgl_blocks = to_dgl_blocks(blocks)
        t3 = time.perf_counter()
        loss = F.cross_entropy(model(dgl_blocks, x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        t4 = time.perf_counter()
        times["feat_fetch"] += t1 - t0
        times["label_fetch"] += t2 - t1
        times["to_dgl"] += t3 - t2
        times["model"] += t4 - t3
        rpcs += 2
        input_nodes += int(blocks[0].src_ids.numel())
        counted = b
    after = traffic()
    if rank == 0:
        n = max(counted, 1)
        out = {k: round(v / n, 5) for k, v in times.items()}
        out |= {"round_trips_per_batch (separate fetches)": rpcs / n, "input_nodes_per_batch": input_nodes / n,
                "client_bytes_per_batch (incl. combined_fetch)": (after["sent"] + after["received"]
                                                             - before["sent"] - before["received"]) / n,
                "batches": n}
        print("bgl profile (s per batch) " + json.dumps(out), flush=True)
    client.close()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
