"""Train a user–item recommender with ``bgl.DataLoader``: typed link prediction, as recommender teams write it.

Single process on a typed store::

    python examples/train_recsys.py --graph STORE_DIR --test TEST_PAIRS.npy

Data-parallel on graph servers (``bgl launch`` starts them; ``bgl demo --task recsys`` runs this)::

    bgl launch --hosts hosts.txt --partition PART_DIR --num-trainers 2 \\
        -- python examples/train_recsys.py --graph PART_DIR --test TEST_PAIRS.npy

The graph has node types ``user`` and ``item`` and relations ``(user, rates, item)`` and its reverse
``(item, rated-by, user)`` (``bgl.sources.recsys`` generates one).  Seeds are the ``rates`` edges;
each batch excludes its edges and their reverses from its blocks (``exclude="reverse_types"``) and
draws one uniform negative item per edge.  The model: a learned embedding per user and item (plus a
projection of the features where a type has some), two typed GraphSAGE layers
(``bgl.nn.HeteroGraphConv``, one ``SAGEConv`` per relation), dot-product scores, BPR loss.  After
training, rank 0 embeds every user and item (same sampled neighbourhoods, no gradient) and ranks
all items for each test user, the user's training items masked: recall@20 and NDCG@20 of the
held-out item (``--test``: int64 [2, n] type-local (user, item) pairs, one per test user).  Runs
with or without DGL (bgl's own blocks and layers).
"""
from __future__ import annotations

import argparse
import math
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
from bgl import negative_sampler
from bgl.blocks import type_layout
from bgl.examples.data_parallel import end_data_parallel
from bgl.launch import lifecycle

REVERSE = {"rates": "rated-by", "rated-by": "rates"}


def rating_edges(path: Path):
    """(schema, ``rates`` edge ids, their (user, item) type-local endpoints) of a typed store or partition
    dir: the ids are the store's CSC positions or the partition's edge ids, what the loader takes."""
    from bgl.loader.typed_edge_ids import PartitionEdges, StoreEdges

    if (path / "partition.json").is_file():
        from bgl.partition import open_partition

        book = open_partition(path)
        schema, edges = book.schema, PartitionEdges(book)
        bounds = book.edge_bounds
        r = schema.etype_id("rates")
        eids = np.concatenate([np.flatnonzero(np.asarray(p.store.etype) == r) + bounds[k]
                               for k, p in enumerate(edges.parts)])
    else:
        store = bgl.GraphStore(path)
        schema, edges = store.schema, StoreEdges(store)
        eids = np.flatnonzero(np.asarray(store.etype) == schema.etype_id("rates"))
    src, dst = edges.endpoints(eids)
    users, items = schema.node_type("user"), schema.node_type("item")
    return schema, eids, src - users.offset, dst - items.offset


class Recommender(nn.Module):
    """Id embeddings (+ features) -> two typed SAGE layers -> per-type embeddings of a batch's seeds."""

    def __init__(self, schema, hidden: int, num_layers: int):
        super().__init__()
        self.schema, self.hidden = schema, hidden
        self.ids = nn.ModuleDict({t.name: nn.Embedding(t.count, hidden) for t in schema.node_types})
        self.feats = nn.ModuleDict({t.name: nn.Linear(t.feat_dim, hidden) for t in schema.node_types if t.feat_dim})
        rels = [rel for _, rel, _ in schema.canonical_etypes]
        self.layers = nn.ModuleList(bgl.nn.HeteroGraphConv({r: bgl.nn.SAGEConv(hidden, hidden, "mean") for r in rels})
                                    for _ in range(num_layers))

    def embed(self, block) -> dict:
        _, members, _ = type_layout(block)
        feats = block.srcdata.get("feat", {})
        out = {}
        for t in self.schema.node_types:
            if members[t.name].numel():
                h = self.ids[t.name](block.src_ids[members[t.name]] - t.offset)
                out[t.name] = h + self.feats[t.name](feats[t.name].float()) if t.name in self.feats else h
        return out

    def forward(self, blocks) -> dict:
        h = self.embed(blocks[0])
        for i, (layer, block) in enumerate(zip(self.layers, blocks)):
            h = layer(block, h)
            if i < len(self.layers) - 1:
                h = {k: F.relu(v) for k, v in h.items()}
        return h


def bpr_loss(h: dict, pair, neg) -> torch.Tensor:
    """BPR: each rated item scored above the negative item drawn for the same user."""
    u, i = pair.edges(etype="rates")
    nu, ni = neg.edges(etype="rates")
    pos = (h["user"][u] * h["item"][i]).sum(-1)
    negative = (h["user"][nu] * h["item"][ni]).sum(-1)
    return -F.logsigmoid(pos - negative).mean()


@torch.no_grad()
def embed_all(model, graph, schema, fanouts, batch_size: int) -> dict:
    """Every user's and item's embedding (rank 0; the same sampled neighbourhoods as training)."""
    out = {t.name: torch.empty(t.count, model.hidden) for t in schema.node_types}
    seeds = {t.name: torch.arange(t.count) for t in schema.node_types}
    loader = bgl.DataLoader(graph, seeds, bgl.NeighborSampler(fanouts), batch_size=batch_size, blocks="bgl")
    for _, output_nodes, blocks in loader:
        h = model(blocks)
        for nt, ids in output_nodes.items():
            out[nt][ids] = h[nt]
    loader.close()
    return out


def recall_ndcg(h: dict, test: np.ndarray, train_users: np.ndarray, train_items: np.ndarray, k: int = 20):
    """recall@k and NDCG@k of each test user's held-out item among all items, training items masked."""
    users, held = torch.from_numpy(test[0]), torch.from_numpy(test[1])
    scores = h["user"][users] @ h["item"].T
    row = {int(u): r for r, u in enumerate(test[0])}
    mask = np.array([row.get(int(u), -1) for u in train_users])
    keep = mask >= 0
    scores[torch.from_numpy(mask[keep]), torch.from_numpy(train_items[keep])] = -math.inf
    top = scores.topk(k, dim=1).indices
    hit = top == held.unsqueeze(1)
    rank = hit.float().argmax(1)
    found = hit.any(1)
    recall = float(found.float().mean())
    ndcg = float((found.float() / torch.log2(rank.float() + 2)).mean())
    return recall, ndcg


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graph", required=True, help="typed store dir or partition dir (user, item)")
    parser.add_argument("--test", default=None, help="held-out (user, item) pairs, int64 [2, n] .npy")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=1024, help="seed edges per batch")
    parser.add_argument("--fanouts", default="10,10", help="per layer (input layer first), every relation")
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--order", default="random", choices=["proximity", "random"])
    parser.add_argument("--cache", default=None, help="feature cache policy (default: none)")
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
    schema, eids, train_users, train_items = rating_edges(graph)
    fanouts = [int(f) for f in args.fanouts.split(",")]
    model = Recommender(schema, args.hidden, len(fanouts))
    wrapped = nn.parallel.DistributedDataParallel(model) if distributed else model
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    sampler = bgl.as_edge_prediction_sampler(bgl.NeighborSampler(fanouts), exclude="reverse_types",
                                             reverse_etypes=REVERSE, negative_sampler=negative_sampler.Uniform(1))
    cache = None if args.cache in (None, "none") else args.cache
    loader = bgl.DataLoader(graph, {"rates": torch.from_numpy(eids)}, sampler, batch_size=args.batch_size,
                            shuffle=True, use_ddp=distributed, ddp_seed=args.seed, order=args.order, cache=cache,
                            blocks="bgl")
    if rank == 0:
        print(f"recommendation: {schema.node_type('user').count} users, {schema.node_type('item').count} items, "
              f"{eids.shape[0]} ratings, {world} trainer(s), cache {loader.cache_policy or 'off'}", flush=True)
    for epoch in range(args.epochs):
        loader.set_epoch(epoch)
        wrapped.train()
        start, loss_sum = time.perf_counter(), torch.zeros(2)
        for _, pair, neg, blocks in loader:
            lifecycle.event("first_batch")
            loss = bpr_loss(wrapped(blocks), pair, neg)
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
            print(f"epoch {epoch}: time {float(seconds):.2f} s  BPR loss {float(loss_sum[0] / loss_sum[1]):.4f}",
                  flush=True)
    lifecycle.event("train_end")
    loader.close()
    if rank == 0 and args.test:
        model.eval()
        h = embed_all(model, graph, schema, fanouts, 4 * args.batch_size)
        recall, ndcg = recall_ndcg(h, np.load(args.test), train_users, train_items)
        print(f"test recall@20 {recall:.4f}  NDCG@20 {ndcg:.4f} ({np.load(args.test).shape[1]} users, all items "
              f"ranked, training items masked)", flush=True)
    if distributed:
        del wrapped  # the DDP wrapper, before the group ends (bgl.examples.data_parallel)
        end_data_parallel()


if __name__ == "__main__":
    main()
