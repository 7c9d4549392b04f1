"""Recommendation: DGL's heterogeneous link-prediction loop with DGL's DataLoader vs the same loop with bgl's.

Side by side in one run, per graph (issue #38):

* ``sasrec``: the real user–item graph ``/work/shared/datasets/sasrec-video.txt.gz`` (31,013 users,
  23,715 items, 287,107 time-ordered interactions);
* ``powerlaw``: a generated bipartite user–item graph with power-law degrees on both sides (hub
  items and heavy users; ``--users``/``--items``/``--edges`` draws, duplicates dropped; generated
  once into ``--workdir``).

Both are ``dgl.heterograph`` user-``rates``-item plus item-``rated-by``-user with the same edge ids
(as ``dgl.AddReverse`` makes them).  Leave-one-out split: each user's last interaction (the file's
time order; on ``powerlaw`` an arbitrary one) is held out and removed from the training graph;
users with a single interaction keep it for training.  No node features: learned ``nn.Embedding``
per node type (sparse rows, ``SparseAdam``) + 2 ``HeteroGraphConv`` layers of mean ``SAGEConv``,
dot-product scores, BPR loss over ``Uniform(1)`` negatives, seeds ``{"rates": train_eids}``,
``as_edge_prediction_sampler(NeighborSampler([10, 10]), exclude="reverse_types")``, batch 1024.
The only change between the two systems is the DataLoader class.  Evaluation is the same code for
both: full-graph embeddings by a full-neighbour forward over the training graph, recall@20 and
NDCG@20 of the held-out item ranked over all items with the user's training items masked (all
users on ``sasrec``; ``--eval-users`` sampled users on ``powerlaw``).

Each (system, graph, repeat) runs in its own child process so its peak RSS is its own (``VmHWM``,
:mod:`own_rss`); runs alternate, the first system reversed each seed (DGL, bgl, bgl, DGL...: this VM's
speed drifts within a run of the script, and a fixed order would put the anchor in every seed's first,
freshest slot).  ``--datapath`` also times
``bgl.pyg.LinkNeighborLoader``'s typed data path against ``bgl.DataLoader``'s on the same graph
(iterate and touch every batch's ids; no model), alternating too.

Usage::

    python bench/recsys/training.py --graphs sasrec --repeats 2 --epochs 2 --datapath
    python bench/recsys/training.py --graphs powerlaw --repeats 2 --epochs 1 --max-batches 200 --datapath
    python bench/recsys/training.py --graphs sasrec --systems dgl,bgl,bgl-inline   # bgl: the default pipeline; + inline
    python bench/recsys/training.py --graphs powerlaw --systems dgl,bgl-thread-q4,bgl-thread-q1   # and queue_size=N
    python bench/recsys/training.py --graphs powerlaw --systems dgl,model-only --max-batches 200   # the floor

``model-only``: the loop over DGL's batches sampled before the clock starts (no loader cost at all):
the lowest epoch time any loader could give this loop on this machine.  ``model-only-bgl``: the same over
bgl's batches (its sampling rule's batch sizes: docs/ARCHITECTURE.md, "Excluded edges"), the floor of a
loader that makes bgl's batches.

``--max-batches``: each epoch stops after that many batches (both systems alike).
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("DGLBACKEND", "pytorch")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.<area>.<script> imports

SASREC = Path("/work/shared/datasets/sasrec-video.txt.gz")
REVERSE = {"rates": "rated-by", "rated-by": "rates"}


def sasrec_pairs():
    """0-based (users, items) in file order, which is time order within each user."""
    import numpy as np

    with gzip.open(SASREC, "rt") as f:
        a = np.loadtxt(f, dtype=np.int64).reshape(-1, 2) - 1
    return a[:, 0].copy(), a[:, 1].copy()


def powerlaw_pairs(workdir: Path, users: int, items: int, edges: int, seed: int = 0):
    """A bipartite graph with Zipf-like degrees on both sides, ids shuffled; cached as .npy."""
    import numpy as np

    path = workdir / f"powerlaw-{users}-{items}-{edges}-{seed}.npz"
    if path.is_file():
        z = np.load(path)
        return z["u"], z["i"]
    rng = np.random.default_rng(seed)

    def draw(n, alpha):
        w = 1.0 / np.arange(1, n + 1) ** alpha
        ids = np.searchsorted(np.cumsum(w / w.sum()), rng.random(edges), side="right").clip(0, n - 1)
        return rng.permutation(n)[ids]  # hubs scattered over the id range

    key = np.unique(draw(users, 0.6) * items + draw(items, 0.9))
    key = key[rng.permutation(key.shape[0])]  # no order within a user: leave-one-out takes an arbitrary edge
    u, i = key // items, key % items
    tmp = path.with_suffix(".tmp.npz")
    np.savez(tmp, u=u, i=i)
    os.replace(tmp, path)
    return u, i


def split(u, i, num_users):
    """Leave-one-out: the last interaction of each user with at least two is the test edge."""
    import numpy as np

    order = np.argsort(u, kind="stable")
    us = u[order]
    last = np.r_[us[1:] != us[:-1], True]
    first = np.r_[True, us[1:] != us[:-1]]
    test = np.zeros(u.shape[0], bool)
    test[order[last & ~first]] = True
    return ~test, test


def build_graph(graph: str, workdir: Path, sizes):
    import dgl
    import torch

    u, i = sasrec_pairs() if graph == "sasrec" else powerlaw_pairs(workdir, *sizes)
    nu, ni = int(u.max()) + 1, int(i.max()) + 1
    train, test = split(u, i, nu)
    tu, ti = torch.from_numpy(u[train]), torch.from_numpy(i[train])
    g = dgl.heterograph({("user", "rates", "item"): (tu, ti), ("item", "rated-by", "user"): (ti, tu)},
                        num_nodes_dict={"user": nu, "item": ni})
    return g, (u[test], i[test])


def make_model(g, dim):
    import dgl
    import torch.nn.functional as F
    from torch import nn

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.ModuleDict({nt: nn.Embedding(g.num_nodes(nt), dim, sparse=True) for nt in g.ntypes})
            for e in self.emb.values():
                nn.init.normal_(e.weight, std=0.1)
            self.layers = nn.ModuleList([
                dgl.nn.HeteroGraphConv({r: dgl.nn.SAGEConv(dim, dim, "mean") for r in g.etypes}, aggregate="sum")
                for _ in range(2)])

        def encode(self, blocks, h):
            for k, (layer, block) in enumerate(zip(self.layers, blocks)):
                h = layer(block, h)
                if k != len(self.layers) - 1:
                    h = {nt: F.relu(x) for nt, x in h.items()}
            return h

        def forward(self, input_nodes, pair, neg, blocks):
            h = self.encode(blocks, {nt: self.emb[nt](ids) for nt, ids in input_nodes.items()})

            def score(pg):
                s, d = pg.edges(etype="rates")
                return (h["user"][s] * h["item"][d]).sum(1)
            return score(pair), score(neg)

        def full_graph(self, graph):
            """Every node's embedding: both layers over every in-neighbour of the training graph."""
            return self.encode([graph, graph], {nt: self.emb[nt].weight for nt in graph.ntypes})

    return Model()


def edge_sampler():
    """The loop's sampler: ``NeighborSampler([10, 10])`` for link prediction, seed edges and their
    ``rated-by`` reverses excluded, one ``Uniform`` negative a positive (also ``model_step.py``'s)."""
    import dgl

    return dgl.dataloading.as_edge_prediction_sampler(
        dgl.dataloading.NeighborSampler([10, 10]), exclude="reverse_types", reverse_etypes=REVERSE,
        negative_sampler=dgl.dataloading.negative_sampler.Uniform(1))


class Trainer:
    """The loop's model (:func:`make_model`, dim 64) and its optimisers (Adam on the layers, SparseAdam on the
    embeddings); :meth:`step` is one BPR step (also ``model_step.py``'s)."""

    def __init__(self, g):
        import torch

        self.model = make_model(g, 64)
        self.dense = torch.optim.Adam(self.model.layers.parameters(), lr=0.005)
        self.sparse = torch.optim.SparseAdam(list(self.model.emb.parameters()), lr=0.01)

    def step(self, batch):
        """One step on ``(input_nodes, pair, neg, blocks)``; returns the loss."""
        import torch.nn.functional as F

        input_nodes, pair, neg, blocks = batch
        pos, negs = self.model(input_nodes, pair, neg, blocks)
        loss = -F.logsigmoid(pos - negs).mean()  # BPR: Uniform(1) keeps each positive's source
        self.dense.zero_grad()
        self.sparse.zero_grad()
        loss.backward()
        self.dense.step()
        self.sparse.step()
        return loss


def evaluate(model, g, test, eval_users: int, seed: int, k: int = 20) -> dict:
    """recall@k and NDCG@k of each held-out item over all items, the user's training items masked."""
    import numpy as np
    import torch

    tu, ti = test
    if eval_users and tu.shape[0] > eval_users:
        pick = np.random.default_rng(seed + 12345).choice(tu.shape[0], eval_users, replace=False)
        tu, ti = tu[pick], ti[pick]
    with torch.no_grad():
        h = model.full_graph(g)
        csr_ptr, csr_idx, _ = g.adj_tensors("csr", etype="rates")
        hits, ndcg = 0.0, 0.0
        for lo in range(0, tu.shape[0], 512):
            users = torch.from_numpy(tu[lo:lo + 512])
            scores = h["user"][users] @ h["item"].T
            starts, ends = csr_ptr[users], csr_ptr[users + 1]
            rows = torch.repeat_interleave(torch.arange(users.shape[0]), ends - starts)
            cols = csr_idx[torch.cat([torch.arange(s, e) for s, e in zip(starts.tolist(), ends.tolist())])]
            scores[rows, cols] = -float("inf")
            target = scores[torch.arange(users.shape[0]), torch.from_numpy(ti[lo:lo + 512])]
            rank = (scores > target.unsqueeze(1)).sum(1)  # 0-based rank of the held-out item
            inside = rank < k
            hits += float(inside.sum())
            ndcg += float((1.0 / torch.log2(rank[inside].double() + 2)).sum())
    return {"recall20": hits / tu.shape[0], "ndcg20": ndcg / tu.shape[0], "eval_users": int(tu.shape[0])}


class PresampledBatches:
    """An epoch's batches of ``loader`` drawn once, before any timing, and handed out again each epoch.

    The ``model-only`` system: the same loop with a loader that costs nothing, so its epoch time is the
    floor no loader can go below (the model step on batches of the same sizes).  Holds up to
    ``max_batches`` (0: all) batches in memory; its recall is not a loader's (the batches repeat).
    """

    def __init__(self, loader, max_batches: int):
        self.batches = []
        for step, batch in enumerate(loader):
            if max_batches and step >= max_batches:
                break
            self.batches.append(batch)

    def __iter__(self):
        return iter(self.batches)


def worker(system: str, graph: str, workdir: str, seed: int, epochs: int, max_batches: int, sizes,
           eval_users: int, profile: str = "") -> dict:
    """One training run of the loop with ``system``'s DataLoader (or a data-path-only run)."""
    import dgl
    import torch

    import bgl
    from bgl.loader.pipeline.chain import quiet_numba_threads

    quiet_numba_threads()
    torch.set_num_threads(1)
    torch.manual_seed(seed)
    t0 = time.perf_counter()
    g, test = build_graph(graph, Path(workdir), sizes)
    train_eids = torch.arange(g.num_edges("rates"))
    graph_s = time.perf_counter() - t0
    sampler = edge_sampler()
    t0 = time.perf_counter()
    if system == "dgl":
        loader = dgl.dataloading.DataLoader(g, {"rates": train_eids}, sampler, batch_size=1024, shuffle=True)
    elif system in ("model-only", "model-only-bgl"):  # the floor: batches sampled before the clock starts
        Loader = dgl.dataloading.DataLoader if system == "model-only" else bgl.DataLoader
        loader = PresampledBatches(Loader(g, {"rates": train_eids}, sampler, batch_size=1024, shuffle=True),
                                   max_batches)
    elif system == "bgl" or system.startswith("bgl-"):  # bgl-thread: the stages in a background thread
        from bench.common.side_by_side import bgl_loader_options

        extra = bgl_loader_options(system)  # bgl-<pipeline>[-qN]: that pipeline, queue_size=N
        loader = bgl.DataLoader(g, {"rates": train_eids}, sampler, batch_size=1024, shuffle=True, **extra)
    elif system in ("path-dgl-api", "path-dgl"):  # bgl.DataLoader / DGL's, data path only
        Loader = bgl.DataLoader if system == "path-dgl-api" else dgl.dataloading.DataLoader
        loader = Loader(g, {"rates": train_eids}, sampler, batch_size=1024, shuffle=True)
    else:  # path-pyg-api: bgl.pyg.LinkNeighborLoader on the same graph as a HeteroData
        import bgl.pyg
        from torch_geometric.data import HeteroData

        data = HeteroData()
        for nt in g.ntypes:
            data[nt].num_nodes = g.num_nodes(nt)
        s, d = g.edges(etype="rates")
        data["user", "rates", "item"].edge_index = torch.stack([s, d])
        data["item", "rated-by", "user"].edge_index = torch.stack([d, s])
        loader = bgl.pyg.LinkNeighborLoader(data, num_neighbors=[10, 10],
                                            edge_label_index=(("user", "rates", "item"), torch.stack([s, d])),
                                            neg_sampling=dict(mode="binary", amount=1), batch_size=1024, shuffle=True)
    build_s = time.perf_counter() - t0
    prof = None
    if profile:
        import cProfile

        prof = cProfile.Profile()
    if system.startswith("path-"):
        times, touched = [], 0
        for _ in range(epochs + 1):
            t0 = time.perf_counter()
            for step, batch in enumerate(loader):
                if max_batches and step >= max_batches:
                    break
                if system != "path-pyg-api":
                    input_nodes, pair, neg, blocks = batch
                    touched += sum(int(x.sum()) for x in input_nodes.values()) + pair.num_edges("rates")
                else:
                    touched += sum(int(batch[nt].n_id.sum()) for nt in ("user", "item"))
                    touched += batch["user", "rates", "item"].edge_label_index.shape[1]
            times.append(time.perf_counter() - t0)
        from bench.common.own_rss import own_peak_rss_mb

        return {"epoch_s": statistics.median(times[1:]), "build_s": build_s, "touched": touched,
                "own_peak_rss_mb": own_peak_rss_mb()}
    trainer = Trainer(g)
    model = trainer.model
    times, batches, losses = [], 0, []
    from bench.common.side_by_side import TrainerWait

    wait = TrainerWait()  # the trainer's time blocked in next(), the same timer for every system
    for epoch in range(epochs + 1):  # the first epoch warms up (kernels, caches)
        model.train()
        if prof is not None and epoch == epochs:
            prof.enable()
        t0 = time.perf_counter()
        for batch in wait.batches_of(loader, max_batches):
            loss = trainer.step(batch)
            batches += 1
            losses.append(float(loss))
        times.append(time.perf_counter() - t0)
        if prof is not None and epoch == epochs:
            prof.disable()
            prof.dump_stats(profile)
    model.eval()
    t0 = time.perf_counter()
    result = evaluate(model, g, test, eval_users, seed)
    from bench.common.own_rss import own_peak_rss_mb

    result.update(wait.figures(times))
    result.update(epoch_s=statistics.median(times[1:]), epochs_s=times, graph_s=graph_s, build_s=build_s,
                  eval_s=time.perf_counter() - t0, batches=batches, last_loss=statistics.mean(losses[-50:]),
                  own_peak_rss_mb=own_peak_rss_mb())
    return result


def run_child(args, system: str, graph: str, seed: int, profile: str = "") -> dict:
    """A worker in its own process: its result and its own peak RSS (MiB)."""
    cmd = [sys.executable, __file__, "--worker", system, graph, str(seed), profile,
           "--workdir", args.workdir, "--epochs", str(args.epochs), "--max-batches", str(args.max_batches),
           "--users", str(args.users), "--items", str(args.items), "--edges", str(args.edges),
           "--eval-users", str(args.eval_users)]
    from bench.common.own_rss import run_child as run

    return run(cmd, f"{system} worker on {graph}", unit="mib")


def loadavg() -> str:
    with open("/proc/loadavg") as f:
        return f.read().strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--graphs", default="sasrec")
    parser.add_argument("--repeats", type=int, default=2, help="runs per system, alternating (order reversed each seed)")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=2, help="timed epochs after one warm-up epoch")
    parser.add_argument("--max-batches", type=int, default=0, help="batches per epoch (0: all)")
    parser.add_argument("--workdir", default="/tmp/bgl-bench-recsys")
    parser.add_argument("--users", type=int, default=1_000_000)
    parser.add_argument("--items", type=int, default=200_000)
    parser.add_argument("--edges", type=int, default=11_000_000, help="draws before duplicates are dropped")
    parser.add_argument("--eval-users", type=int, default=0, help="sampled test users (0: all; powerlaw: 5000)")
    parser.add_argument("--datapath", action="store_true", help="also bgl.pyg vs bgl.DataLoader data path")
    parser.add_argument("--skip-train", action="store_true")
    parser.add_argument("--systems", default="dgl,bgl",
                        help="training runs, the anchor first (also bgl-thread, model-only, model-only-bgl)")
    parser.add_argument("--profile", default="", help="cProfile the last bgl epoch into this file")
    parser.add_argument("--worker", nargs=4, metavar=("SYSTEM", "GRAPH", "SEED", "PROFILE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = (args.users, args.items, args.edges)
    if args.worker:
        system, graph, seed, profile = args.worker
        eval_users = args.eval_users or (0 if graph == "sasrec" else 5000)
        print(json.dumps(worker(system, graph, args.workdir, int(seed), args.epochs, args.max_batches, sizes,
                                eval_users, profile)))
        return
    Path(args.workdir).mkdir(parents=True, exist_ok=True)
    print(f"loadavg at start: {loadavg()} ({os.cpu_count()} cores)", flush=True)
    for graph in args.graphs.split(","):
        if graph == "powerlaw":
            import numpy as np

            u, i = powerlaw_pairs(Path(args.workdir), *sizes)
            du, di = np.bincount(u), np.bincount(i)
            print(f"powerlaw: {u.shape[0]:,} edges, {du.shape[0]:,} users (max degree {du.max():,}), "
                  f"{di.shape[0]:,} items (max degree {di.max():,})", flush=True)
        pairs = ((tuple(args.systems.split(",")), "train") if not args.skip_train else None,
                 (("path-dgl-api", "path-pyg-api", "path-dgl"), "datapath") if args.datapath else None)
        for systems, what in filter(None, pairs):
            runs = {s: [] for s in systems}
            for seed in range(args.first_seed, args.first_seed + args.repeats):
                for system in (systems if (seed - args.first_seed) % 2 == 0 else systems[::-1]):
                    prof = args.profile if (system.startswith("bgl") and seed == args.first_seed + args.repeats - 1) else ""
                    r = run_child(args, system, graph, seed, prof)
                    runs[system].append(r)
                    print(f"{graph} {system} seed {seed}: {json.dumps(r)}  loadavg {loadavg()}", flush=True)
            keys = ("epoch_s", "peak_rss_mib", "recall20", "ndcg20", "wait_share", "wait_ms") if what == "train" \
                else ("epoch_s", "peak_rss_mib")
            rows = {s: {k: statistics.mean(r[k] for r in runs[s]) for k in keys} for s in systems}
            for s in systems:
                print(f"{graph} {s}: " + "  ".join(f"{k} {v:.4f}" for k, v in rows[s].items())
                      + f"  (mean of {args.repeats})", flush=True)
            for other in systems[1:]:
                a, b = rows[systems[0]], rows[other]
                line = f"{graph} ratio {other}/{systems[0]}: epoch time {b['epoch_s'] / a['epoch_s']:.2f}x  " \
                       f"peak RSS {b['peak_rss_mib'] / a['peak_rss_mib']:.2f}x"
                if what == "train":
                    line += f"  recall@20 {b['recall20'] - a['recall20']:+.4f}  NDCG@20 {b['ndcg20'] - a['ndcg20']:+.4f}"
                print(line, flush=True)
    print(f"loadavg at end: {loadavg()}", flush=True)


if __name__ == "__main__":
    main()
