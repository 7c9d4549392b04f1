"""Train GraphSAGE for node classification with ``bgl.DataLoader`` -- a normal DGL-style script.

Single process on a graph store::

    python examples/train_sage.py --graph STORE_DIR

Data-parallel on graph servers (``bgl launch`` starts the servers and runs
this script under ``torch.distributed.run``; ``bgl.DataLoader`` finds the
servers through the ``BGL_SERVERS`` variable that the launcher sets)::

    bgl launch --hosts hosts.txt --partition PART_DIR --num-trainers 2 \\
        -- python examples/train_sage.py --graph PART_DIR

Uses ``dgl.nn.SAGEConv`` when DGL is installed, else ``bgl.nn.SAGE`` (same
maths and parameter names) on bgl blocks.  Prints, on rank 0, the time of
each epoch (slowest rank), the feature-cache hit rate and the final test
accuracy (over all ranks).

Checkpoints (``--checkpoint-dir``, every ``--checkpoint-every`` batches and at each epoch's end):
each rank saves the model, the optimizer, the loader's position (``loader.state_dict()``) and
torch's RNG, then rank 0 marks that step complete once every rank has saved it.  At start the
script resumes from the last complete step, so under ``bgl launch --max-restarts N`` a killed
trainer costs the batches since the last checkpoint, and every seed is still trained once an
epoch (``--record-seeds`` keeps each batch's seeds in the checkpoints, which the restart test reads).
The loader also keeps each epoch's proximity order in ``CHECKPOINT_DIR/orders`` (``order_dir=``), so a
restarted trainer reads the order of the epoch it resumes instead of running the BFS again.
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

import bgl
from bgl.examples.checkpoints import Checkpoints
from bgl.examples.data_parallel import end_data_parallel
from bgl.launch import lifecycle

try:
    import dgl
    import dgl.nn as dglnn
except ImportError:  # e.g. the GPU machine: bgl's own blocks and layers
    dgl = None


class DGLSAGE(nn.Module):
    """DGL's example GraphSAGE (examples/pytorch/graphsage/node_classification.py)."""

    def __init__(self, in_size: int, hid_size: int, out_size: int, num_layers: int, dropout: float):
        super().__init__()
        sizes = [in_size] + [hid_size] * (num_layers - 1) + [out_size]
        self.layers = nn.ModuleList(dglnn.SAGEConv(sizes[i], sizes[i + 1], "mean")
                                    for i in range(num_layers))
        self.dropout = nn.Dropout(dropout)

    def forward(self, blocks, x):
        h = x
        for i, (layer, block) in enumerate(zip(self.layers, blocks)):
            h = layer(block, h)
            if i != len(self.layers) - 1:
                h = self.dropout(F.relu(h))
        return h


def load_graph_info(path: Path) -> dict:
    """Splits (int64 tensors), feature width and class count of a store or partition dir."""
    if (path / "partition.json").is_file():
        from bgl.partition import open_partition

        book = open_partition(path)
        part0 = book.part_store(0)
        splits = {name: torch.from_numpy(book.split(name)) for name in ("train", "val", "test")}
        return {"splits": splits, "in_feats": part0.feat_dim, "num_classes": part0.num_classes}
    store = bgl.GraphStore(path)
    splits = {name: torch.from_numpy(store.split(name).copy()) for name in ("train", "val", "test")}
    return {"splits": splits, "in_feats": store.feat_dim, "num_classes": store.num_classes}


def loopback_rx_bytes() -> int:
    """Bytes received on this machine's loopback so far (Linux; 0 elsewhere): all local traffic."""
    try:
        return int(Path("/sys/class/net/lo/statistics/rx_bytes").read_text())
    except OSError:
        return 0


def client_bytes() -> int:
    """Payload bytes this process's graph-server clients sent plus received so far."""
    from bgl.sampler.client import traffic

    moved = traffic()
    return moved["sent"] + moved["received"]


def make_sampler(fanouts):
    if dgl is not None:
        return dgl.dataloading.NeighborSampler(fanouts, prefetch_node_feats=["feat"],
                                               prefetch_labels=["label"])
    return bgl.NeighborSampler(fanouts)


def evaluate(model, graph, ids, fanouts, batch_size) -> tuple[int, int]:
    """(correct, total) over ``ids`` (this rank's share)."""
    loader = bgl.DataLoader(graph, ids, make_sampler(fanouts), batch_size=batch_size)
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for _, _, blocks in loader:
            logits = model(blocks, blocks[0].srcdata["feat"])
            labels = blocks[-1].dstdata["label"]
            correct += int((logits.argmax(1) == labels).sum())
            total += int(labels.numel())
    return correct, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--graph", required=True, help="graph store dir or partition dir")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--fanouts", default="10,10", help="per layer, input layer first")
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--dropout", type=float, default=0.5)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--cache", default=None,
                        help="feature cache policy (lookahead, fifo, lru, static-degree, presample, none); "
                             "default: the DataLoader's (lookahead)")
    parser.add_argument("--cache-ratio", type=float, default=0.2, help="share of nodes cached")
    parser.add_argument("--order", default="proximity", choices=["proximity", "random"],
                        help="seed order: BGL's BFS proximity order or random")
    parser.add_argument("--pipeline", default=None, choices=["inline", "thread", "processes"],
                        help="bgl.DataLoader's pipeline (default: the loader's choice, thread over graph servers)")
    parser.add_argument("--loader-only", action="store_true",
                        help="iterate the loader (features and labels arrive) without the model step: "
                             "the data path's own speed, what a fast GPU would wait on")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--checkpoint-dir", default=None, help="save and resume from checkpoints here")
    parser.add_argument("--checkpoint-every", type=int, default=0, metavar="N",
                        help="also checkpoint every N batches (0: at each epoch's end only)")
    parser.add_argument("--checkpoint-async", action="store_true",
                        help="write checkpoints in the background: training waits for a snapshot only")
    parser.add_argument("--record-seeds", action="store_true",
                        help="keep each batch's (epoch, seed ids) in the checkpoints (what the restart test reads)")
    parser.add_argument("--max-batches", type=int, default=None, metavar="N",
                        help="stop each epoch after N batches per trainer and score at most N batches' "
                             "worth of test nodes (a bounded run on a graph too big for whole epochs)")
    parser.add_argument("--stats-json", default=None, metavar="PATH",
                        help="rank 0 writes per-epoch time, seeds, bytes to/from the graph servers "
                             "and the test accuracy here (read by bench/distdgl/node_classification.py)")
    args = parser.parse_args()
    lifecycle.event("start")  # under bgl launch: a restart's clock stops here (bgl.launch.ett)

    # Standard torch.distributed.run convention: RANK/WORLD_SIZE present -> data parallel.
    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if distributed:
        dist.init_process_group("gloo")
    rank = dist.get_rank() if distributed else 0
    world = dist.get_world_size() if distributed else 1
    torch.manual_seed(args.seed)

    graph = Path(args.graph)
    info = load_graph_info(graph)
    if not info["num_classes"] or not info["in_feats"]:
        raise SystemExit(f"{graph} has no {'labels' if not info['num_classes'] else 'features'} to train on "
                         "(bgl ingest --num-classes / --feat-dim add synthetic ones)")
    fanouts = [int(f) for f in args.fanouts.split(",")]
    if dgl is not None:
        model = DGLSAGE(info["in_feats"], args.hidden, info["num_classes"], len(fanouts), args.dropout)
    else:
        from bgl.nn import SAGE

        model = SAGE(info["in_feats"], args.hidden, info["num_classes"], len(fanouts), args.dropout)
    if distributed:
        model = nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    loader = bgl.DataLoader(graph, info["splits"]["train"], make_sampler(fanouts),
                            batch_size=args.batch_size, shuffle=True, use_ddp=distributed,
                            ddp_seed=args.seed, cache=args.cache, cache_ratio=args.cache_ratio,
                            order=args.order, pipeline=args.pipeline,
                            # a restarted trainer reads its epoch's proximity order instead of redoing the BFS
                            order_dir=Path(args.checkpoint_dir) / "orders" if args.checkpoint_dir else None)
    if rank == 0:
        print(f"feature cache: {loader.cache_policy or 'off'} ({args.cache_ratio:.0%} of nodes), "
              f"order {args.order}", flush=True)
    checkpoints = Checkpoints(Path(args.checkpoint_dir), rank, world, distributed,
                              background=args.checkpoint_async) if args.checkpoint_dir else None
    net = model.module if distributed else model
    resumed = checkpoints.resume_training(net, optimizer, loader) if checkpoints else None
    first_epoch, step_count, trained = 0, 0, []
    if resumed is not None:
        first_epoch, step_count, trained = resumed["epoch"], resumed["step"], list(resumed["seeds"])

    def checkpoint(epoch: int) -> None:  # seeds: (epoch, seed ids) per batch with --record-seeds, else empty
        checkpoints.save_training(step_count, epoch, net, optimizer, loader, seeds=trained)

    epochs_stats = []
    for epoch in range(first_epoch, args.epochs):
        model.train()
        if hasattr(loader, "set_epoch"):
            loader.set_epoch(epoch)
        if args.stats_json and distributed:
            dist.barrier()  # every rank starts together, so the loopback window is this epoch's
        lo_before, client_before = loopback_rx_bytes(), client_bytes()
        start = time.perf_counter()
        loss_sum = torch.zeros(2)
        seeds = 0
        for step, (_, _, blocks) in enumerate(loader):
            lifecycle.event("first_batch")  # once per process: training (again) from here
            if args.max_batches is not None and step >= args.max_batches:
                break  # every rank has the same number of batches, so all stop at the same step
            if args.loader_only:
                seeds += int(blocks[-1].dstdata["label"].numel())
                loss_sum += torch.tensor([0.0, 1.0])
                continue
            logits = model(blocks, blocks[0].srcdata["feat"])
            labels = blocks[-1].dstdata["label"]
            loss = F.cross_entropy(logits, labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step_count += 1
            if args.record_seeds:
                trained.append((epoch, blocks[-1].dst_ids.cpu() if hasattr(blocks[-1], "dst_ids")
                                else blocks[-1].dstdata[dgl.NID].cpu()))
            if checkpoints and args.checkpoint_every and step_count % args.checkpoint_every == 0:
                checkpoint(epoch)
            loss_sum += torch.tensor([loss.item(), 1.0])
            seeds += int(labels.numel())
        seconds = torch.tensor([time.perf_counter() - start])
        lifecycle.loader_wait(loader)  # under bgl launch: the launch line's trainer-wait share
        if checkpoints:
            checkpoint(epoch + 1)  # the loader's state is "between epochs": the next epoch starts afresh
        if args.stats_json:
            moved = torch.tensor([seeds, client_bytes() - client_before], dtype=torch.float64)
            if distributed:
                dist.barrier()
                dist.all_reduce(moved)
            epochs_stats.append({"epoch": epoch, "seeds": int(moved[0]), "client_bytes": int(moved[1]),
                                 "loopback_bytes": loopback_rx_bytes() - lo_before})
        stats = loader.cache_stats() or {"hits": 0, "requests": 0}
        counts = torch.tensor([stats["hits"], stats["requests"]], dtype=torch.float64)
        if distributed:
            dist.all_reduce(seconds, op=dist.ReduceOp.MAX)
            dist.all_reduce(loss_sum)
            dist.all_reduce(counts)
        if epochs_stats:
            # this rank's time blocked in next() (bench/distdgl/node_classification.py's wait column)
            waited = loader.stats()
            epochs_stats[-1].update(time=float(seconds), loss=float(loss_sum[0] / loss_sum[1]),
                                    wait_s=waited["wait_s"], batches=waited["batches"],
                                    cache_hit_rate=float(counts[0] / counts[1]) if counts[1] > 0 else 0.0)
        if rank == 0:
            hit = float(counts[0] / counts[1]) if counts[1] > 0 else 0.0
            print(f"epoch {epoch}: time {float(seconds):.2f} s  loss {float(loss_sum[0] / loss_sum[1]):.4f}  "
                  f"cache hit rate {hit:.1%}  (cumulative, {world} trainer(s))", flush=True)

    if checkpoints:
        checkpoints.wait()  # the last (asynchronous) save is whole before the script goes on
    lifecycle.event("train_end")
    loader.close()  # its stages and server sockets, now rather than at interpreter exit
    # Each rank scores its own slice of the test nodes; rank 0 reports the total.
    test_ids = info["splits"]["test"].tensor_split(world)[rank]
    if args.max_batches is not None:
        test_ids = test_ids[: args.max_batches * args.batch_size]
    correct, total = evaluate(net, graph, test_ids, fanouts, args.batch_size)
    result = torch.tensor([correct, total], dtype=torch.float64)
    if distributed:
        dist.all_reduce(result)
    if rank == 0:
        print(f"test accuracy {float(result[0] / result[1]):.4f} "
              f"({int(result[0])}/{int(result[1])} test nodes)", flush=True)
        if args.stats_json:
            Path(args.stats_json).write_text(json.dumps(
                {"system": "bgl", "trainers": world, "epochs": epochs_stats,
                 "test_accuracy": float(result[0] / result[1])}, indent=1))
    if distributed:
        del model  # the DDP wrapper, before the group ends (bgl.examples.data_parallel)
        end_data_parallel()


if __name__ == "__main__":
    main()
