"""Train GraphSAGE for link prediction with ``bgl.DataLoader`` -- DGL's link_pred.py loop on bgl.

Single process on a graph store::

    python examples/train_link_pred.py --graph STORE_DIR

Data-parallel on graph servers (``bgl launch`` starts them; the loader finds them through
``BGL_SERVERS``)::

    bgl launch --hosts hosts.txt --partition PART_DIR --num-trainers 2 \\
        -- python examples/train_link_pred.py --graph PART_DIR

Seed edges are every edge but a held-out test share; each batch's edges and their
reverses are excluded from its blocks (``exclude="reverse_id"``), with ``k`` uniform
negatives per edge.  The score is a dot product or an MLP over the two endpoint
embeddings.  After training, node embeddings come from layer-wise full-neighbour
inference and the test edges are ranked against sampled negatives: rank 0 prints the
mean reciprocal rank (MRR).  The held-out edges stay in the graph for message passing
(as in a transductive split), so MRR is comparable between loaders, not with papers.
Uses ``dgl.nn.SAGEConv`` on DGL blocks when DGL is installed, else ``bgl.nn.SAGE``.

Checkpoints (``--checkpoint-dir``, every ``--checkpoint-every`` batches and at each epoch's end) as in
``train_sage.py`` (:class:`bgl.examples.checkpoints.Checkpoints`): the script resumes from the last step
every rank completed, so under ``bgl launch --max-restarts N`` a killed trainer costs the batches since.
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

import bgl
from bgl import negative_sampler
from bgl.examples.checkpoints import Checkpoints
from bgl.examples.data_parallel import end_data_parallel
from bgl.launch import lifecycle

try:
    import dgl.nn as dglnn
except ImportError:
    dglnn = None

try:  # the node-classification example beside this one: loopback and graph-client byte counters
    from train_sage import client_bytes, loopback_rx_bytes
except ImportError:  # copied elsewhere: no byte counts in --stats-json
    def client_bytes() -> int:
        return 0

    loopback_rx_bytes = client_bytes


class Encoder(nn.Module):
    """GraphSAGE over blocks (DGL's SAGEConv, or bgl's with the same maths)."""

    def __init__(self, in_size: int, hid_size: int, num_layers: int):
        super().__init__()
        if dglnn is not None:
            self.layers = nn.ModuleList(dglnn.SAGEConv(in_size if i == 0 else hid_size, hid_size, "mean")
                                        for i in range(num_layers))
        else:
            from bgl.nn import SAGEConv

            self.layers = nn.ModuleList(SAGEConv(in_size if i == 0 else hid_size, hid_size, "mean")
                                        for i in range(num_layers))

    def layer(self, i: int, block, h):
        h = self.layers[i](block, h)
        return F.relu(h) if i != len(self.layers) - 1 else h

    def forward(self, blocks, x):
        h = x
        for i, block in enumerate(blocks):
            h = self.layer(i, block, h)
        return h


class Scorer(nn.Module):
    """Edge score from two endpoint embeddings: ``dot`` or DGL example's ``mlp``."""

    def __init__(self, hid_size: int, kind: str):
        super().__init__()
        self.kind = kind
        if kind == "mlp":
            self.mlp = nn.Sequential(nn.Linear(hid_size, hid_size), nn.ReLU(), nn.Linear(hid_size, 1))

    def forward(self, hu, hv):
        return (hu * hv).sum(-1) if self.kind == "dot" else self.mlp(hu * hv).squeeze(-1)


def graph_facts(path: Path):
    """(feature width, number of nodes, number of edges, reverse edge ids) of a store or partition dir."""
    if (path / "partition.json").is_file():
        from bgl.partition import open_partition

        graph = open_partition(path)
        feat_dim = graph.part_store(0).feat_dim
    else:
        graph = bgl.GraphStore(path)
        feat_dim = graph.feat_dim
    return feat_dim, int(graph.num_nodes), int(graph.num_edges), bgl.reverse_edge_ids(graph)


def split_edges(num_edges: int, reverse: np.ndarray, test_share: float, seed: int):
    """(train, test) edge ids: a test edge's reverse is held out with it."""
    rng = np.random.default_rng(seed)
    test = np.zeros(num_edges, bool)
    test[rng.choice(num_edges, int(test_share * num_edges), replace=False)] = True
    test |= test[reverse]
    return torch.from_numpy(np.flatnonzero(~test)), torch.from_numpy(np.flatnonzero(test))


class LinkPredictor(nn.Module):
    """Encoder + scorer; ``forward(batch)`` gives the positive and negative pair scores (one module,
    so DistributedDataParallel sees the whole step)."""

    def __init__(self, encoder: Encoder, scorer: Scorer):
        super().__init__()
        self.encoder, self.scorer = encoder, scorer

    def forward(self, batch):
        input_nodes, pair, neg, blocks = batch
        h = self.encoder(blocks, blocks[0].srcdata["feat"])
        s, d = pair.edges()
        ns, nd = neg.edges()
        return self.scorer(h[s], h[d]), self.scorer(h[ns], h[nd])


@torch.no_grad()
def inference(model, graph, num_nodes: int, batch_size: int) -> torch.Tensor:
    """Embeddings of every node, one layer at a time over all in-neighbours (DGL's layer-wise
    inference): each layer reads the previous layer's output rows, never a sampled neighbourhood."""
    ids = torch.arange(num_nodes)
    h = None
    for i in range(len(model.layers)):
        loader = bgl.DataLoader(graph, ids, bgl.NeighborSampler([-1]), batch_size=batch_size,
                                blocks="dgl" if dglnn is not None else "bgl")
        out = None
        for input_nodes, output_nodes, blocks in loader:
            x = blocks[0].srcdata["feat"] if h is None else h[input_nodes]
            y = model.layer(i, blocks[0], x)
            if out is None:
                out = torch.empty(num_nodes, y.shape[1])
            out[output_nodes] = y
        loader.close()
        h = out
    return h


@torch.no_grad()
def mrr(h, scorer, edges: torch.Tensor, src, dst, num_nodes: int, k: int, seed: int) -> tuple[float, int]:
    """(sum of reciprocal ranks, count) of ``edges`` each against ``k`` uniform negative destinations."""
    g = torch.Generator().manual_seed(seed)
    u, v = src[edges], dst[edges]
    pos = scorer(h[u], h[v])
    neg_dst = torch.randint(0, num_nodes, (edges.shape[0], k), generator=g)
    neg = scorer(h[u].unsqueeze(1).expand(-1, k, -1), h[neg_dst])
    rank = 1 + (neg >= pos.unsqueeze(1)).sum(1)
    return float((1.0 / rank).sum()), int(edges.shape[0])


def endpoints(path: Path, eids: torch.Tensor):
    """(src, dst) of edge ids, from the store or the partition's parts."""
    from bgl.loader.seeds.edges import partition_endpoints, store_endpoints

    if (path / "partition.json").is_file():
        from bgl.partition import open_partition

        s, d = partition_endpoints(open_partition(path), eids.numpy())
    else:
        s, d = store_endpoints(bgl.GraphStore(path), eids.numpy())
    return torch.from_numpy(s), torch.from_numpy(d)


def blocks_feat_sum(batch) -> torch.Tensor:
    """Touch a batch's input features (what a model step would read first), for ``--loader-only``."""
    return batch[3][0].srcdata["feat"].sum()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--graph", required=True, help="graph store dir or partition dir")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=512, help="seed edges per batch")
    parser.add_argument("--fanouts", default="10,10", help="per layer, input layer first")
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.005)
    parser.add_argument("--negatives", type=int, default=1, help="uniform negatives per seed edge")
    parser.add_argument("--scorer", default="dot", choices=["dot", "mlp"])
    parser.add_argument("--test-share", type=float, default=0.05, help="edges held out for MRR")
    parser.add_argument("--eval-negatives", type=int, default=100, help="negatives per test edge for MRR")
    parser.add_argument("--order", default="proximity", choices=["proximity", "random"])
    parser.add_argument("--cache", default=None, help="feature cache policy (default: the loader's)")
    parser.add_argument("--cache-ratio", type=float, default=0.2)
    parser.add_argument("--pipeline", default=None, choices=["inline", "thread", "processes"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--stats-json", default=None, metavar="PATH", help="rank 0 writes epoch times and MRR")
    parser.add_argument("--loader-only", action="store_true",
                        help="iterate the loader (features read) without the model step: the data path alone")
    parser.add_argument("--max-batches", type=int, default=0, help="stop each epoch after this many batches (0: all)")
    parser.add_argument("--skip-eval", action="store_true", help="no inference / MRR after training")
    parser.add_argument("--checkpoint-dir", default=None, help="save and resume from checkpoints here")
    parser.add_argument("--checkpoint-every", type=int, default=0, metavar="N",
                        help="also checkpoint every N batches (0: at each epoch's end only)")
    parser.add_argument("--checkpoint-async", action="store_true",
                        help="write checkpoints in the background: training waits for a snapshot only")
    args = parser.parse_args()
    lifecycle.event("start")  # under bgl launch: a restart's clock stops here

    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if distributed:
        dist.init_process_group("gloo")
    rank = dist.get_rank() if distributed else 0
    world = dist.get_world_size() if distributed else 1
    torch.manual_seed(args.seed)

    path = Path(args.graph)
    feat_dim, num_nodes, num_edges, reverse = graph_facts(path)
    train_eids, test_eids = split_edges(num_edges, reverse, args.test_share, args.seed)
    fanouts = [int(f) for f in args.fanouts.split(",")]
    model, scorer = Encoder(feat_dim, args.hidden, len(fanouts)), Scorer(args.hidden, args.scorer)
    predictor = LinkPredictor(model, scorer)
    wrapped = nn.parallel.DistributedDataParallel(predictor) if distributed else predictor
    optimizer = torch.optim.Adam(predictor.parameters(), lr=args.lr)

    sampler = bgl.as_edge_prediction_sampler(
        bgl.NeighborSampler(fanouts), exclude="reverse_id", reverse_eids=torch.from_numpy(reverse),
        negative_sampler=negative_sampler.Uniform(args.negatives))
    loader = bgl.DataLoader(path, train_eids, sampler, batch_size=args.batch_size, shuffle=True,
                            use_ddp=distributed, ddp_seed=args.seed, cache=args.cache,
                            cache_ratio=args.cache_ratio, order=args.order, pipeline=args.pipeline,
                            blocks="dgl" if dglnn is not None else "bgl",
                            # a restarted trainer reads its epoch's proximity order instead of redoing the BFS
                            order_dir=Path(args.checkpoint_dir) / "orders" if args.checkpoint_dir else None)
    if rank == 0:
        print(f"link prediction: {train_eids.shape[0]} train / {test_eids.shape[0]} test edges, "
              f"cache {loader.cache_policy or 'off'}, order {args.order}, {world} trainer(s)", flush=True)
    checkpoints = Checkpoints(Path(args.checkpoint_dir), rank, world, distributed,
                              background=args.checkpoint_async) if args.checkpoint_dir else None
    resumed = checkpoints.resume_training(predictor, optimizer, loader) if checkpoints else None
    first_epoch, step_count = (resumed["epoch"], resumed["step"]) if resumed is not None else (0, 0)
    epochs = []
    for epoch in range(first_epoch, args.epochs):
        loader.set_epoch(epoch)
        wrapped.train()
        if distributed:
            dist.barrier()
        lo_before, client_before = loopback_rx_bytes(), client_bytes()
        start = time.perf_counter()
        loss_sum = torch.zeros(3)  # loss sum, batches, seed edges
        for batch in loader:
            lifecycle.event("first_batch")  # once per process: training (again) from here
            if args.loader_only:
                loss = blocks_feat_sum(batch)
            else:
                pos, neg = wrapped(batch)
                loss = F.binary_cross_entropy_with_logits(torch.cat([pos, neg]),
                                                          torch.cat([torch.ones_like(pos), torch.zeros_like(neg)]))
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                step_count += 1
                if checkpoints and args.checkpoint_every and step_count % args.checkpoint_every == 0:
                    checkpoints.save_training(step_count, epoch, predictor, optimizer, loader)
            loss_sum += torch.tensor([loss.item(), 1.0, float(batch[1].num_edges())])
            if args.max_batches and loss_sum[1] >= args.max_batches:
                break
        seconds = torch.tensor([time.perf_counter() - start])
        waited = loader.stats()  # this rank's time blocked in next() (bench/distdgl/link.py's wait column)
        lifecycle.loader_wait(loader)  # under bgl launch: the launch line's trainer-wait share
        if checkpoints:  # the loader is between epochs: a resume starts the next one afresh
            checkpoints.save_training(step_count, epoch + 1, predictor, optimizer, loader)
        moved = torch.tensor([client_bytes() - client_before], dtype=torch.float64)
        if distributed:
            dist.barrier()
        lo = loopback_rx_bytes() - lo_before
        if distributed:
            dist.all_reduce(seconds, op=dist.ReduceOp.MAX)
            dist.all_reduce(loss_sum)
            dist.all_reduce(moved)
        epochs.append({"epoch": epoch, "time": float(seconds), "loss": float(loss_sum[0] / loss_sum[1]),
                       "seeds": int(loss_sum[2]), "loopback_bytes": lo, "client_bytes": float(moved),
                       "wait_s": waited["wait_s"], "batches": waited["batches"]})
        if rank == 0:
            print(f"epoch {epoch}: time {float(seconds):.2f} s  loss {epochs[-1]['loss']:.4f}", flush=True)
    if checkpoints:
        checkpoints.wait()  # the last (asynchronous) save is whole before the script goes on
    lifecycle.event("train_end")
    loader.close()
    if args.skip_eval:
        if rank == 0 and args.stats_json:
            Path(args.stats_json).write_text(json.dumps({"system": "bgl", "trainers": world, "epochs": epochs,
                                                         "mrr": None}, indent=1))
        if distributed:
            del wrapped  # the DDP wrapper, before the group ends (bgl.examples.data_parallel)
            end_data_parallel()
        return

    model.eval()
    h = inference(model, path, num_nodes, 4 * args.batch_size)
    src, dst = endpoints(path, test_eids)
    mine = torch.arange(test_eids.shape[0]).tensor_split(world)[rank]
    rr = torch.tensor(mrr(h, scorer, mine, src, dst, num_nodes, args.eval_negatives, args.seed + 1),
                      dtype=torch.float64)
    if distributed:
        dist.all_reduce(rr)
    if rank == 0:
        value = float(rr[0] / max(rr[1], 1))
        print(f"test MRR {value:.4f} ({int(rr[1])} test edges, {args.eval_negatives} negatives each)", flush=True)
        if args.stats_json:
            Path(args.stats_json).write_text(json.dumps({"system": "bgl", "trainers": world, "epochs": epochs,
                                                         "mrr": value}, indent=1))
    if distributed:
        del wrapped  # the DDP wrapper, before the group ends (bgl.examples.data_parallel)
        end_data_parallel()


if __name__ == "__main__":
    main()
