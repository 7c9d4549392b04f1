"""One DistDGL process for bench/distdgl/link.py: a graph server or a link-prediction trainer (``DGL_ROLE``).

As bench/distdgl/worker.py for nodes: ``dgl.distributed.initialize`` serves (servers) or connects
(trainers); a trainer follows DGL's distributed link-prediction examples: gloo DDP, ``DistGraph``,
``DistEdgeDataLoader(g, eids, NeighborSampler(fanouts), exclude="reverse_id", reverse_eids=...,
negative_sampler=Uniform(k))`` (DGL 2.1's distributed form of ``as_edge_prediction_sampler``), input features read from the
``DistGraph``'s ``ndata`` per batch, and the model bgl's examples/train_link_pred.py trains
(GraphSAGE encoder + dot scorer).  Seed edges: every edge, cut into ``world`` even contiguous
slices of the partition's edge ids (part 0's edges come first), as ``split_for_trainer`` does for
nodes.  Rank 0 writes per-epoch time (slowest rank), seed edges and loopback bytes to ``--stats-json``.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))  # train_sage's model
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.<area>.<script> imports


def parse_args(argv=None) -> argparse.Namespace:
    from bench.distdgl.worker import common_parser

    p = common_parser(__doc__.split("\n\n")[0], batch_size=512, hidden=64, lr=0.005)
    p.add_argument("--reverse-eids", required=True, help=".npy: each edge's reverse, in the partition's edge ids")
    p.add_argument("--negatives", type=int, default=1)
    p.add_argument("--max-batches", type=int, default=0)
    return p.parse_args(argv)


def main() -> None:
    from bench.distdgl.worker import connect, epoch_row

    args = parse_args()
    g, rank, world = connect(args)
    import dgl
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch import nn

    from train_link_pred import Encoder, Scorer
    from train_sage import loopback_rx_bytes

    reverse = torch.from_numpy(np.load(args.reverse_eids))
    eids = torch.arange(g.num_edges()).tensor_split(world)[rank]
    fanouts = [int(f) for f in args.fanouts.split(",")]
    # DGL 2.1's DistEdgeDataLoader takes the block sampler and the edge options itself (its
    # EdgeCollator); as_edge_prediction_sampler's wrapper is for the single-machine loader
    loader = dgl.dataloading.DistEdgeDataLoader(
        g, eids, dgl.dataloading.NeighborSampler(fanouts), exclude="reverse_id", reverse_eids=reverse,
        negative_sampler=dgl.dataloading.negative_sampler.Uniform(args.negatives), batch_size=args.batch_size,
        shuffle=True, drop_last=False)

    class Step(nn.Module):  # encoder + scorer in one forward, so DDP sees the whole step
        def __init__(self):
            super().__init__()
            self.encoder = Encoder(int(g.ndata["feat"].shape[1]), args.hidden, len(fanouts))
            self.scorer = Scorer(args.hidden, "dot")

        def forward(self, blocks, x, pair, neg):
            h = self.encoder(blocks, x)
            (s, d), (ns, nd) = pair.edges(), neg.edges()
            return self.scorer(h[s], h[d]), self.scorer(h[ns], h[nd])

    model = nn.parallel.DistributedDataParallel(Step())
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    from bench.common.side_by_side import TrainerWait

    wait = TrainerWait()  # the trainer's time blocked in next(): bgl's loader.stats() counts the same way
    epochs = []
    for epoch in range(args.epochs):
        dist.barrier()
        lo_before = loopback_rx_bytes()
        start = time.perf_counter()
        seeds = batches = 0
        with model.join():
            for input_nodes, pair, neg, blocks in wait.batches_of(loader):
                x = g.ndata["feat"][input_nodes]
                if not args.loader_only:
                    pos, negs = model(blocks, x, pair, neg)
                    loss = F.binary_cross_entropy_with_logits(
                        torch.cat([pos, negs]), torch.cat([torch.ones_like(pos), torch.zeros_like(negs)]))
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                seeds += int(pair.num_edges())
                batches += 1
                if args.max_batches and batches >= args.max_batches:
                    break
        epochs.append(epoch_row(epoch, start, seeds, lo_before, wait))
        if rank == 0:
            print(f"distdgl link epoch {epoch}: time {epochs[-1]['time']:.2f} s", flush=True)
    if rank == 0 and args.stats_json:
        Path(args.stats_json).write_text(json.dumps(
            {"system": "distdgl", "trainers": world, "epochs": epochs, "test_accuracy": float("nan")}, indent=1))
    dist.barrier()


if __name__ == "__main__":
    os.environ.setdefault("DGLBACKEND", "pytorch")
    main()
