"""A DGL user's own sampler (``BlockSampler`` subclass: ``sample_neighbors`` + ``to_block`` per layer) in
``dgl.dataloading.DataLoader``: real DGL 2.1 against ``bgl.dgl``, side by side on the same graphs.

Each (library, graph) runs in its own process: the graph is built, then the loader's first batch (which
builds the in-edge CSC the sampler reads, in both libraries) and the next ``--batches`` batches are timed
(batch 1024, fanouts 10, 10, shuffled seeds, the first block's features read), and its own peak RSS.
Graphs are generated (no download): ``uniform`` (destinations uniform, sources Zipf: hub senders),
``hubs`` (destinations Zipf too: rows of up to ~10^5 in-edges), ``dense`` (50 in-edges a node).

    .venv/bin/python bench/dgl/own_sampler.py --nodes 1000000 --edges 10000000
    .venv/bin/python bench/dgl/own_sampler.py --model --workers 0,1 --graphs uniform   # the overlap

``--model`` runs a 2-layer GraphSAGE step (forward, backward, Adam; one torch thread) on each batch, so a
batch's time is the trainer's: its wait in ``next()`` is reported beside it (``wait_ms``).  ``--workers``
lists DataLoader ``num_workers`` values to run for both libraries (DGL: worker processes; bgl.dgl: with
``num_workers > 0`` one producer thread samples beside the model step).

Needs the pinned lane (DGL 2.1) for the DGL side; prints one JSON line per run and the ratios.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

GRAPHS = ("uniform", "hubs", "dense")


def _edges(kind: str, nodes: int, edges: int, seed: int = 0):
    import numpy as np

    rng = np.random.default_rng(seed)
    if kind == "dense":
        edges = nodes * 50
    src = (rng.zipf(1.6, edges) - 1) % nodes
    dst = (rng.zipf(1.8, edges) - 1) % nodes if kind == "hubs" else rng.integers(0, nodes, edges)
    perm = rng.permutation(nodes)  # hubs at random ids
    return perm[src], perm[dst]


def worker(lib_name: str, kind: str, nodes: int, edges: int, batches: int, model: bool = False,
           workers: int = 0) -> dict:
    import torch

    torch.set_num_threads(1)
    if lib_name == "dgl":
        import dgl as lib
    else:
        import bgl.dgl as lib

    class LayerSampler(lib.dataloading.BlockSampler):
        def __init__(self, fanouts):
            super().__init__()
            self.fanouts = fanouts

        def sample_blocks(self, g, seed_nodes, exclude_eids=None):
            output_nodes, blocks = seed_nodes, []
            for fanout in reversed(self.fanouts):
                frontier = lib.sampling.sample_neighbors(g, seed_nodes, fanout)
                block = lib.to_block(frontier, seed_nodes)
                block.edata[lib.EID] = frontier.edata[lib.EID]
                seed_nodes = block.srcdata[lib.NID]
                blocks.insert(0, block)
            return seed_nodes, output_nodes, blocks

    src, dst = _edges(kind, nodes, edges)
    t0 = time.perf_counter()
    g = lib.graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=nodes)
    g.ndata["feat"] = torch.randn(nodes, 64)
    graph_s = time.perf_counter() - t0
    torch.manual_seed(0)
    step = _model_step(lib, torch) if model else None
    loader = lib.dataloading.DataLoader(g, torch.arange(nodes), LayerSampler([10, 10]), batch_size=1024,
                                        shuffle=True, num_workers=workers)
    it = iter(loader)
    t0 = time.perf_counter()
    input_nodes, _, blocks = next(it)
    first_s = time.perf_counter() - t0
    block_edges, wait = 0, 0.0
    t0 = time.perf_counter()
    for _ in range(batches):
        t1 = time.perf_counter()
        input_nodes, _, blocks = next(it)
        wait += time.perf_counter() - t1
        block_edges += sum(b.num_edges() for b in blocks)
        feats = g.ndata["feat"][input_nodes]  # what the model reads first
        if step is not None:
            step(blocks, feats)
        del feats
    per_batch = (time.perf_counter() - t0) / batches
    del it, loader
    import resource

    return {"lib": lib_name, "graph": kind, "nodes": nodes, "edges": int(src.shape[0]), "graph_s": graph_s,
            "workers": workers, "model": model, "first_batch_s": first_s, "batch_ms": per_batch * 1000,
            "wait_ms": wait / batches * 1000, "block_edges": block_edges // batches,
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def _model_step(lib, torch):
    """A 2-layer mean GraphSAGE (64 -> 128 -> 16) trained on each batch: forward, backward, Adam."""
    layers = torch.nn.ModuleList([lib.nn.SAGEConv(64, 128, "mean"), lib.nn.SAGEConv(128, 16, "mean")])
    opt = torch.optim.Adam(layers.parameters(), lr=0.01)

    def step(blocks, feats):
        h = torch.relu(layers[0](blocks[0], feats))
        loss = layers[1](blocks[1], h).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()

    return step


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1_000_000)
    ap.add_argument("--edges", type=int, default=10_000_000)
    ap.add_argument("--batches", type=int, default=200)
    ap.add_argument("--graphs", default=",".join(GRAPHS))
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--model", action="store_true", help="a GraphSAGE step on each batch (the trainer's wait)")
    ap.add_argument("--workers", default="0", help="comma list of num_workers values, each run for both libraries")
    ap.add_argument("--worker", nargs=2, metavar=("LIB", "GRAPH"))
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(*args.worker, args.nodes, args.edges, args.batches, args.model,
                                int(args.workers))))
        return
    env = dict(os.environ, DGLBACKEND="pytorch")
    results: dict = {}
    runs = [(kind, w) for kind in args.graphs.split(",") for w in args.workers.split(",")]
    for kind, w in runs:
        for _ in range(args.repeats):
            for lib_name in ("dgl", "bgl"):  # alternating, so a slow minute of the box hits both
                out = subprocess.run([sys.executable, __file__, "--worker", lib_name, kind, "--nodes", str(args.nodes),
                                      "--edges", str(args.edges), "--batches", str(args.batches), "--workers", w]
                                     + (["--model"] if args.model else []),
                                     capture_output=True, text=True, env=env, check=True)
                row = json.loads(out.stdout.strip().splitlines()[-1])
                print(json.dumps(row), flush=True)
                results.setdefault((kind, w, lib_name), []).append(row)
    for kind, w in runs:
        d, b = results[(kind, w, "dgl")], results[(kind, w, "bgl")]

        def mean(rows, key):
            return sum(r[key] for r in rows) / len(rows)

        print(f"{kind}, num_workers={w}: wait {mean(b, 'wait_ms'):.2f} / {mean(d, 'wait_ms'):.2f} ms; "
              f"batch {mean(b, 'batch_ms'):.2f} / {mean(d, 'batch_ms'):.2f} ms = "
              f"{mean(b, 'batch_ms') / mean(d, 'batch_ms'):.2f}x DGL; first batch {mean(b, 'first_batch_s'):.2f} / "
              f"{mean(d, 'first_batch_s'):.2f} s = {mean(b, 'first_batch_s') / mean(d, 'first_batch_s'):.2f}x; "
              f"peak RSS {mean(b, 'peak_rss_mib'):.0f} / {mean(d, 'peak_rss_mib'):.0f} MiB = "
              f"{mean(b, 'peak_rss_mib') / mean(d, 'peak_rss_mib'):.2f}x")


if __name__ == "__main__":
    main()
