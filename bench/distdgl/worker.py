"""One DistDGL process for bench/distdgl/node_classification.py: a graph server or a trainer, chosen by ``DGL_ROLE``.

As with DGL's ``tools/launch.py``, servers and trainers run the same script:
``dgl.distributed.initialize`` serves forever (then exits) when ``DGL_ROLE=server``
and connects to the servers when ``DGL_ROLE=client``.  A trainer then follows
DGL's ``examples/distributed/graphsage/node_classification.py``: gloo DDP,
``DistGraph``, the ``node_split(force_even=True)`` share of a trainer on
machine r (see :func:`split_for_trainer`), ``DistNodeDataLoader`` with
``NeighborSampler``, features and labels read from the ``DistGraph``'s
``ndata`` per batch.  The model is the same ``DGLSAGE`` class bgl's
``examples/train_sage.py`` trains, so both systems run identical layers.

Rank 0 writes per-epoch time (slowest rank), seeds, loopback bytes and the
test accuracy (sampled with the training fanouts over the test nodes, as
train_sage.py scores) to ``--stats-json``.  ``--profile-batches N`` instead
times the phases of N batches (sampling, feature fetch, model) on rank 0.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))  # train_sage's model
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.<area>.<script> imports


def common_parser(description: str, batch_size: int, hidden: int, lr: float) -> argparse.ArgumentParser:
    """The options every DistDGL bench worker takes (this one, bench/distdgl/link_worker.py)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--ip-config", required=True)
    p.add_argument("--part-config", required=True)
    p.add_argument("--graph-name", required=True)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=batch_size)
    p.add_argument("--fanouts", default="10,10")
    p.add_argument("--hidden", type=int, default=hidden)
    p.add_argument("--lr", type=float, default=lr)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--stats-json", default=None)
    p.add_argument("--loader-only", action="store_true",
                   help="iterate the loader and read each batch's features (and labels), no model step")
    return p


def parse_args(argv=None) -> argparse.Namespace:
    p = common_parser(__doc__.split("\n\n")[0], batch_size=1024, hidden=128, lr=0.01)
    p.add_argument("--num-classes", type=int, required=True)
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--profile-batches", type=int, default=0)
    return p.parse_args(argv)


def connect(args):
    """``(DistGraph, rank, world)`` of a trainer; a server serves inside ``initialize`` and exits there."""
    import dgl
    import torch.distributed as dist

    dgl.distributed.initialize(args.ip_config)
    dist.init_process_group("gloo")
    torch.manual_seed(args.seed)
    return (dgl.distributed.DistGraph(args.graph_name, part_config=args.part_config), dist.get_rank(),
            dist.get_world_size())


def epoch_row(epoch: int, start: float, seeds: int, lo_before: int, wait) -> dict:
    """One epoch's row, the same on every trainer: the slowest trainer's seconds and all trainers' seeds
    (a collective: every rank calls it at its epoch's end), the loopback bytes received since
    ``lo_before`` once all trainers are done, and the trainer's wait in ``next()`` (``wait``: a
    :class:`bench.common.side_by_side.TrainerWait`)."""
    import torch.distributed as dist
    from train_sage import loopback_rx_bytes

    seconds = torch.tensor([time.perf_counter() - start])
    dist.barrier()
    loopback_bytes = loopback_rx_bytes() - lo_before
    total = torch.tensor([seeds], dtype=torch.float64)
    dist.all_reduce(seconds, op=dist.ReduceOp.MAX)
    dist.all_reduce(total)
    return {"epoch": epoch, "time": float(seconds), "seeds": int(total), "loopback_bytes": loopback_bytes,
            "wait_s": wait.wait_s[-1], "batches": wait.batches[-1]}


def main() -> None:
    args = parse_args()
    g, rank, world = connect(args)
    import dgl
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch import nn

    from train_sage import DGLSAGE, loopback_rx_bytes

    pb = g.get_partition_book()
    train_nid = split_for_trainer(g.ndata["train_mask"], pb, rank, world)
    test_nid = split_for_trainer(g.ndata["test_mask"], pb, rank, world)
    fanouts = [int(f) for f in args.fanouts.split(",")]
    sampler = dgl.dataloading.NeighborSampler(fanouts)
    loader = dgl.dataloading.DistNodeDataLoader(g, train_nid, sampler, batch_size=args.batch_size,
                                                shuffle=True, drop_last=False)
    in_feats = int(g.ndata["feat"].shape[1])
    model = nn.parallel.DistributedDataParallel(
        DGLSAGE(in_feats, args.hidden, args.num_classes, len(fanouts), args.dropout))
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    if args.profile_batches:
        profile(g, loader, model, optimizer, args.profile_batches, rank)
        dist.barrier()
        return

    from bench.common.side_by_side import TrainerWait

    wait = TrainerWait()  # the trainer's time blocked in next(): bgl's loader.stats() counts the same way
    epochs = []
    for epoch in range(args.epochs):
        model.train()
        dist.barrier()
        lo_before = loopback_rx_bytes()
        start = time.perf_counter()
        seeds = 0
        loss = torch.zeros(())
        with model.join():  # ranks may differ by one batch (the split is even to one node)
            for input_nodes, out_nodes, blocks in wait.batches_of(loader):
                x = g.ndata["feat"][input_nodes]
                y = g.ndata["label"][out_nodes].long()
                if not args.loader_only:
                    loss = F.cross_entropy(model(blocks, x), y)
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                seeds += int(out_nodes.numel())
        epochs.append({**epoch_row(epoch, start, seeds, lo_before, wait), "loss": loss.item()})
        if rank == 0:
            print(f"distdgl epoch {epoch}: time {epochs[-1]['time']:.2f} s", flush=True)

    net = model.module
    net.eval()
    test_loader = dgl.dataloading.DistNodeDataLoader(g, test_nid, sampler, batch_size=args.batch_size)
    correct = torch.zeros(2, dtype=torch.float64)
    with torch.no_grad():
        for input_nodes, out_nodes, blocks in test_loader:
            pred = net(blocks, g.ndata["feat"][input_nodes]).argmax(1)
            correct += torch.tensor([float((pred == g.ndata["label"][out_nodes].long()).sum()),
                                     float(out_nodes.numel())], dtype=torch.float64)
    dist.all_reduce(correct)
    if rank == 0:
        acc = float(correct[0] / correct[1])
        print(f"distdgl test accuracy {acc:.4f}", flush=True)
        if args.stats_json:
            Path(args.stats_json).write_text(json.dumps(
                {"system": "distdgl", "trainers": world, "epochs": epochs, "test_accuracy": acc}, indent=1))
    dist.barrier()


def split_for_trainer(mask, pb, rank: int, world: int) -> torch.Tensor:
    """The ids ``node_split(mask, pb, force_even=True)`` gives trainer ``rank`` when trainer r runs on
    machine r (one trainer per part).

    Here every trainer runs on "machine 0" (DistDGL takes the first ip_config line that is a
    local address), so ``node_split`` itself would hand *both* trainers part 0's half of the
    nodes.  As in ``_split_even_to_part``: the masked ids (contiguous per part after
    partition_graph's relabelling; balance_train evens the parts' counts) cut into ``world``
    even contiguous slices.
    """
    assert world % pb.num_partitions() == 0, "trainers must be a multiple of the parts"
    ids = torch.nonzero(mask[0:len(mask)]).squeeze(1)
    return ids.tensor_split(world)[rank]


def profile(g, loader, model, optimizer, num_batches: int, rank: int) -> None:
    """Time sampling (incl. RPCs), feature/label fetch and model step for ``num_batches`` batches.

    Inside sampling, the per-layer ``DistGraph.sample_neighbors`` calls (local part through
    shared memory + RPC to the other server) and ``to_block`` (relabel + block build) are timed
    by wrapping the two functions DGL's NeighborSampler calls.
    """
    import dgl
    import dgl.dataloading.neighbor_sampler as ns
    import torch.nn.functional as F

    times = {"sample": 0.0, "sample_neighbors": 0.0, "to_block": 0.0, "fetch": 0.0, "model": 0.0}

    def timed(fn, key):
        def wrapper(*a, **kw):
            t = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                times[key] += time.perf_counter() - t
        return wrapper

    ns.to_block = timed(ns.to_block, "to_block")
    dgl.distributed.DistGraph.sample_neighbors = timed(dgl.distributed.DistGraph.sample_neighbors,
                                                       "sample_neighbors")
    it = iter(loader)
    done = 0
    model.train()
    with model.join():
        while done < num_batches:
            t0 = time.perf_counter()
            try:
                input_nodes, out_nodes, blocks = next(it)
            except StopIteration:
                break
            t1 = time.perf_counter()
            if done == 0:  # the first batch warms up: not counted
                for k in times:
                    times[k] = 0.0
            x = g.ndata["feat"][input_nodes]
            y = g.ndata["label"][out_nodes].long()
            t2 = time.perf_counter()
            loss = F.cross_entropy(model(blocks, x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            t3 = time.perf_counter()
            if done > 0:
                times["sample"] += t1 - t0
            times["fetch"] += t2 - t1
            times["model"] += t3 - t2
            done += 1
    if rank == 0:
        counted = max(done - 1, 1)
        print("distdgl profile (s per batch) " + json.dumps(
            {k: round(v / counted, 5) for k, v in times.items()}
            | {"batches": counted, "input_nodes_last": int(input_nodes.numel())}), flush=True)


if __name__ == "__main__":
    os.environ.setdefault("DGLBACKEND", "pytorch")
    main()
