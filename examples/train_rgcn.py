"""Train an R-GCN on a heterogeneous graph with ``bgl.DataLoader`` (node classification).

    python examples/train_rgcn.py --graph STORE_OR_PARTITION [--target paper] [--epochs 3]
    bgl launch --hosts HOSTS --partition PARTS --num-servers-per-host 2 --num-trainers 2 -- \\
        python examples/train_rgcn.py --graph PARTS

The graph is a typed bgl store or partition (``bgl ingest`` of a DGL heterograph, a PyG
``HeteroData``, a typed edge-list directory or OGB's ogbn-mag layout; ``bgl partition``).
Seeds are the target type's training nodes (default: the one node type with a ``train``
split); each layer samples ``--fanouts`` neighbours per relation.  The model is bgl's own
(``bgl.nn.HeteroGraphConv`` summing one ``bgl.nn.SAGEConv`` per relation) over bgl's typed
blocks, so the script runs with or without DGL.  Node types without features get a learned
embedding of their type-local ids.  Under ``bgl launch`` (``WORLD_SIZE`` > 1) it trains data
parallel (gloo) and rank 0 prints each epoch's time and loss and the test accuracy.
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import bgl
import bgl.nn
from bgl.blocks import type_layout
from bgl.examples.data_parallel import end_data_parallel
from bgl.launch import lifecycle


def graph_schema(path: Path):
    """The schema and the first part's (or the store's) per-type feature widths of a typed store or
    partition dir, and the target type's splits (type-local ids, int64 tensors)."""
    if (path / "partition.json").is_file():
        from bgl.partition import open_partition

        book = open_partition(path)
        if book.schema is None or book.schema.is_homogeneous:
            raise SystemExit(f"{path} has one node type; train it with examples/train_sage.py")

        def split(ntype, name):  # the loader takes the ORIGINAL per-type ids of a typed partition
            return np.sort(book.to_orig(book.type_split(ntype, name))[1])
        return book.schema, split
    store = bgl.GraphStore(path)
    if store.schema is None or store.schema.is_homogeneous:
        raise SystemExit(f"{path} has one node type; train it with examples/train_sage.py")
    return store.schema, lambda ntype, name: store.type_splits[ntype][name]


class RGCN(nn.Module):
    """Two or more relational layers: per relation a SAGEConv, summed over relations per dst type."""

    def __init__(self, schema, target: str, hidden: int, num_classes: int, num_layers: int, dropout: float):
        super().__init__()
        self.schema, self.target = schema, target
        self.inputs = nn.ModuleDict()
        for t in schema.node_types:  # features -> hidden, or an embedding of the type-local ids
            self.inputs[t.name] = nn.Linear(t.feat_dim, hidden) if t.feat_dim else nn.Embedding(t.count, hidden)
        rels = [rel for _, rel, _ in schema.canonical_etypes]
        sizes = [hidden] * num_layers + [num_classes]
        self.layers = nn.ModuleList(
            bgl.nn.HeteroGraphConv({r: bgl.nn.SAGEConv(sizes[i], sizes[i + 1], "mean") for r in rels})
            for i in range(num_layers))
        self.dropout = nn.Dropout(dropout)

    def embed(self, block) -> dict:
        """Hidden input rows of every type among ``block``'s src nodes."""
        _, members, _ = type_layout(block)
        feats = block.srcdata.get("feat", {})
        out = {}
        for t in self.schema.node_types:
            if members[t.name].numel() == 0:
                continue
            if t.feat_dim:
                out[t.name] = self.inputs[t.name](feats[t.name].float())
            else:
                local = block.src_ids[members[t.name]] - t.offset
                out[t.name] = self.inputs[t.name](local)
        return out

    def forward(self, blocks):
        h = self.embed(blocks[0])
        for i, (layer, block) in enumerate(zip(self.layers, blocks)):
            h = layer(block, h)
            if i < len(self.layers) - 1:
                h = {k: self.dropout(F.relu(v)) for k, v in h.items()}
        return h[self.target]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graph", required=True, help="typed graph store dir or partition dir")
    parser.add_argument("--target", default=None, help="node type to classify (default: the one with a train split)")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--fanouts", default="10,10", help="per layer (input layer first), for every relation")
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--dropout", type=float, default=0.5)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    lifecycle.event("start")  # under bgl launch: where the wall time goes (bgl.launch.ett)

    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if distributed:
        dist.init_process_group("gloo")
    rank = dist.get_rank() if distributed else 0
    world = dist.get_world_size() if distributed else 1
    torch.manual_seed(args.seed)

    graph = Path(args.graph)
    schema, split = graph_schema(graph)
    labelled = [t for t in schema.node_types if t.has_label and "train" in (t.splits or {})]
    target = args.target or (labelled[0].name if len(labelled) == 1 else None)
    if target is None:
        raise SystemExit(f"name the type to classify with --target (labelled types: {[t.name for t in labelled]})")
    node_type = schema.node_type(target)
    fanouts = [int(f) for f in args.fanouts.split(",")]
    model = RGCN(schema, target, args.hidden, node_type.num_classes, len(fanouts), args.dropout)
    if distributed:
        # the last layer's relations into other types than the target produce nothing the loss reads
        model = nn.parallel.DistributedDataParallel(model, find_unused_parameters=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    train_ids = torch.from_numpy(np.array(split(target, "train"), dtype=np.int64))
    loader = bgl.DataLoader(graph, {target: train_ids}, bgl.NeighborSampler(fanouts), batch_size=args.batch_size,
                            shuffle=True, use_ddp=distributed, ddp_seed=args.seed, blocks="bgl")
    if rank == 0:
        print(f"R-GCN on {target}: {len(schema.node_types)} node types, {len(schema.edge_types)} relations, "
              f"{train_ids.numel()} training nodes", flush=True)
    for epoch in range(args.epochs):
        model.train()
        if hasattr(loader, "set_epoch"):
            loader.set_epoch(epoch)
        start, loss_sum = time.perf_counter(), torch.zeros(2)
        for _, _, blocks in loader:
            lifecycle.event("first_batch")
            loss = F.cross_entropy(model(blocks), blocks[-1].dstdata["label"][target])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            loss_sum += torch.tensor([loss.item(), 1.0])
        seconds = torch.tensor([time.perf_counter() - start])
        lifecycle.loader_wait(loader)  # under bgl launch: the launch line's trainer-wait share
        if distributed:
            dist.all_reduce(seconds, op=dist.ReduceOp.MAX)
            dist.all_reduce(loss_sum)
        if rank == 0:
            print(f"epoch {epoch}: time {float(seconds):.2f} s  loss {float(loss_sum[0] / loss_sum[1]):.4f}", flush=True)

    lifecycle.event("train_end")
    scored = "test" if "test" in (node_type.splits or {}) else "val"  # the split the accuracy is of
    test_ids = torch.from_numpy(np.array(split(target, scored), dtype=np.int64)).tensor_split(world)[rank]
    net = model.module if distributed else model
    net.eval()
    result = torch.zeros(2, dtype=torch.float64)
    if test_ids.numel():
        with torch.no_grad():
            for _, _, blocks in bgl.DataLoader(graph, {target: test_ids}, bgl.NeighborSampler(fanouts),
                                               batch_size=args.batch_size, blocks="bgl"):
                y = blocks[-1].dstdata["label"][target]
                result += torch.tensor([float((net(blocks).argmax(1) == y).sum()), float(y.numel())],
                                       dtype=torch.float64)
    if distributed:
        dist.all_reduce(result)
    if rank == 0:
        print(f"{scored} accuracy {float(result[0] / max(result[1], 1)):.4f} ({int(result[0])}/{int(result[1])} "
              f"{scored} nodes of {target})", flush=True)
    if distributed:
        del model  # the DDP wrapper, before the group ends (bgl.examples.data_parallel)
        end_data_parallel()


if __name__ == "__main__":
    main()
