"""Link prediction: DGL's link_pred.py loop with DGL's DataLoader vs the same loop with bgl's.

Side by side in one run, per graph (Cora and CiteSeer from their ``.npz`` files, Slashdot from
SNAP's ``soc-Slashdot0902.txt.gz`` symmetrized with 128-dim synthetic features; ingested once):
the same DGLGraph (the store's edges, edge id = CSC position), the same seed edges (all but a
held-out 5 % and their reverses), ``as_edge_prediction_sampler(NeighborSampler([10, 10]),
exclude="reverse_id", negative_sampler=Uniform(1))``, a 2-layer GraphSAGE with DGL example's MLP
scorer, batch 512.  The only change between the two systems is the DataLoader class (and
which one runs the layer-wise full-neighbour inference for the test MRR).  Each
(system, graph, seed) runs in its own child process so its peak RSS is its own (``os.wait4``);
reported: median epoch time after a warm-up epoch, peak RSS, MRR against 100 sampled negatives,
means over ``--seeds`` seeds, and bgl/DGL ratios.

Usage::

    python bench/link_pred/training.py [--datasets cora,citeseer] [--seeds 3] [--epochs 3]
    python bench/link_pred/training.py --datasets slashdot --seeds 3 --epochs 2 --max-batches 200

``--max-batches``: each epoch stops after that many batches (both systems alike), for graphs
whose full epoch would take too long on the bench box; MRR then reflects that much training.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("DGLBACKEND", "pytorch")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.<area>.<script> imports

# name -> (file under SHARED, ingest options)
DATASETS = {"cora": ("cora.npz", {}), "citeseer": ("citeseer.npz", {}),
            "pubmed": ("pubmed_adj_labels.npz", {"feat_dim": 128}),
            "slashdot": ("soc-Slashdot0902.txt.gz", {"feat_dim": 128, "symmetrize": True})}
SHARED = Path("/work/shared/datasets")


def store_for(name: str, workdir: Path):
    from bgl.sources.datasets import ingest
    from bgl.store import GraphStore

    out = workdir / name
    if (out / "meta.json").is_file():
        return GraphStore(out)
    filename, options = DATASETS[name]
    src = SHARED / filename if (SHARED / filename).is_file() else None
    if src is None and name == "cora":
        from bgl.data import default_dataset_path

        src = default_dataset_path()
    if src is None:
        raise SystemExit(f"{name}: {SHARED / filename} not found")
    return ingest(str(src), out, overwrite=True, **options)


def worker(system: str, store_dir: str, seed: int, epochs: int, max_batches: int = 0) -> dict:
    """One training run of DGL's link-prediction loop with ``system``'s DataLoader."""
    import dgl
    import numpy as np
    import torch
    import torch.nn.functional as F
    from torch import nn

    import bgl
    from bgl.loader.pipeline.chain import quiet_numba_threads

    quiet_numba_threads()
    torch.set_num_threads(1)
    torch.manual_seed(seed)
    store = bgl.GraphStore(store_dir)
    n = store.num_nodes
    dst = torch.from_numpy(np.repeat(np.arange(n), np.diff(np.asarray(store.indptr))))
    g = dgl.graph((torch.from_numpy(np.asarray(store.indices, dtype=np.int64)), dst), num_nodes=n)
    g.ndata["feat"] = torch.from_numpy(np.array(store.feat))
    reverse = bgl.reverse_edge_ids(store)
    rng = np.random.default_rng(seed)
    test = np.zeros(g.num_edges(), bool)
    test[rng.choice(g.num_edges(), g.num_edges() // 20, replace=False)] = True
    test |= test[reverse]
    train_eids, test_eids = torch.from_numpy(np.flatnonzero(~test)), torch.from_numpy(np.flatnonzero(test))
    from bench.common.side_by_side import bgl_loader_options

    # "bgl" / "bgl-<pipeline>" (bench/loader/pipeline_modes.py): only the loader differs between systems
    Loader = (functools.partial(bgl.DataLoader, **bgl_loader_options(system)) if system.startswith("bgl")
              else dgl.dataloading.DataLoader)

    class SAGE(nn.Module):  # DGL's examples/pytorch/graphsage/link_pred.py model, 2 layers
        def __init__(self, in_size, hid):
            super().__init__()
            self.layers = nn.ModuleList([dgl.nn.SAGEConv(in_size, hid, "mean"), dgl.nn.SAGEConv(hid, hid, "mean")])
            self.predictor = nn.Sequential(nn.Linear(hid, hid), nn.ReLU(), nn.Linear(hid, 1))

        def forward(self, pair, neg, blocks, x):
            h = x
            for i, (layer, block) in enumerate(zip(self.layers, blocks)):
                h = layer(block, h)
                if i != len(self.layers) - 1:
                    h = F.relu(h)
            ps, pd = pair.edges()
            ns, nd = neg.edges()
            return self.predictor(h[ps] * h[pd]), self.predictor(h[ns] * h[nd])

        def inference(self, graph):
            h = graph.ndata["feat"]
            for i, layer in enumerate(self.layers):
                out = torch.empty(graph.num_nodes(), layer._out_feats)
                loader = Loader(graph, torch.arange(graph.num_nodes()),
                                dgl.dataloading.MultiLayerFullNeighborSampler(1), batch_size=2048)
                for input_nodes, output_nodes, blocks in loader:
                    y = layer(blocks[0], h[input_nodes])
                    out[output_nodes] = F.relu(y) if i != len(self.layers) - 1 else y
                h = out
            return h

    model = SAGE(store.feat_dim, 128)
    opt = torch.optim.Adam(model.parameters(), lr=0.0005)
    sampler = dgl.dataloading.as_edge_prediction_sampler(
        dgl.dataloading.NeighborSampler([10, 10], prefetch_node_feats=["feat"]), exclude="reverse_id",
        reverse_eids=torch.from_numpy(reverse), negative_sampler=dgl.dataloading.negative_sampler.Uniform(1))
    loader = Loader(g, train_eids, sampler, batch_size=512, shuffle=True)
    times = []
    from bench.common.side_by_side import TrainerWait

    wait = TrainerWait()  # the trainer's time blocked in next(), the same timer for both systems
    for _ in range(epochs + 1):  # the first epoch warms up (kernels, caches)
        model.train()
        t0 = time.perf_counter()
        for input_nodes, pair, neg, blocks in wait.batches_of(loader, max_batches):
            pos_score, neg_score = model(pair, neg, blocks, blocks[0].srcdata["feat"])
            score = torch.cat([pos_score, neg_score])
            labels = torch.cat([torch.ones_like(pos_score), torch.zeros_like(neg_score)])
            loss = F.binary_cross_entropy_with_logits(score, labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
        times.append(time.perf_counter() - t0)
    model.eval()
    with torch.no_grad():
        h = model.inference(g)
        u, v = g.find_edges(test_eids)
        neg_v = torch.randint(0, n, (u.shape[0], 100), generator=torch.Generator().manual_seed(seed))
        pos = model.predictor(h[u] * h[v]).squeeze(-1)
        negs = model.predictor(h[u].unsqueeze(1) * h[neg_v]).squeeze(-1)
        mrr = float((1.0 / (1 + (negs >= pos.unsqueeze(1)).sum(1))).mean())
    from bench.common.own_rss import own_peak_rss_mb

    return {"epoch_s": statistics.median(times[1:]), "mrr": mrr, "own_peak_rss_mb": own_peak_rss_mb(),
            **wait.figures(times)}


def run_child(system: str, store_dir: Path, seed: int, epochs: int, max_batches: int = 0) -> dict:
    """A worker in its own process: its result and its own peak RSS (``peak_rss_mib``)."""
    from bench.common.own_rss import run_child as run

    return run([sys.executable, __file__, "--worker", system, str(store_dir), str(seed), str(epochs),
                str(max_batches)], f"{system} worker", unit="mib")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--datasets", default="cora,citeseer")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=3, help="timed epochs after one warm-up epoch")
    parser.add_argument("--workdir", default="/tmp/bgl-bench-linkpred")
    parser.add_argument("--max-batches", type=int, default=0, help="batches per epoch (0: all)")
    parser.add_argument("--worker", nargs=5, metavar=("SYSTEM", "STORE", "SEED", "EPOCHS", "MAX_BATCHES"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        system, store_dir, seed, epochs, max_batches = args.worker
        print(json.dumps(worker(system, store_dir, int(seed), int(epochs), int(max_batches))))
        return
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    for name in args.datasets.split(","):
        store = store_for(name, workdir)
        runs = {"dgl": [], "bgl": []}
        for seed in range(args.seeds):
            # interleaved, the first system alternating per seed: load that comes and goes on a shared box
            # falls on both systems alike rather than on whichever ran second
            for system in (("dgl", "bgl") if seed % 2 == 0 else ("bgl", "dgl")):
                runs[system].append(run_child(system, store.path, seed, args.epochs, args.max_batches))
            pair = runs["bgl"][-1]["epoch_s"] / runs["dgl"][-1]["epoch_s"]
            print(f"{name} seed {seed}: epoch dgl {runs['dgl'][-1]['epoch_s']:.3f} s, bgl "
                  f"{runs['bgl'][-1]['epoch_s']:.3f} s ({pair:.2f}x)  load {os.getloadavg()[0]:.1f}", flush=True)
        rows = {}
        for system in ("dgl", "bgl"):
            rows[system] = {k: statistics.mean(r[k] for r in runs[system])
                            for k in ("epoch_s", "peak_rss_mib", "mrr", "wait_share", "wait_ms")}
            print(f"{name} {system}: epoch {rows[system]['epoch_s']:.3f} s  peak RSS "
                  f"{rows[system]['peak_rss_mib']:.0f} MiB  MRR {rows[system]['mrr']:.4f}  trainer wait "
                  f"{rows[system]['wait_ms']:.2f} ms/batch ({100 * rows[system]['wait_share']:.0f} %)  "
                  f"(mean of {args.seeds} seeds)", flush=True)
        d, b = rows["dgl"], rows["bgl"]
        print(f"{name} ratio bgl/dgl: epoch time {b['epoch_s'] / d['epoch_s']:.2f}x  peak RSS "
              f"{b['peak_rss_mib'] / d['peak_rss_mib']:.2f}x  MRR difference {b['mrr'] - d['mrr']:+.4f}", flush=True)
    print(f"load average at end: {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
