"""A loader's fixed costs: construction + first batch of ``bgl.DataLoader`` against DGL's on a DGLGraph.

    python bench/loader/start.py [--graphs small,10m,typed] [--variants plain,prob,mask] [--rounds 10] [--batches 10]

What a script that builds a loader per repetition (or a notebook re-running a cell) pays per loader:
on the same DGLGraph, with DGL's own ``NeighborSampler`` (only the loader swapped, as the drop-in
is used), each round builds ``dgl.dataloading.DataLoader`` and ``bgl.DataLoader`` in turn (the
order alternates), timing the constructor, the first ``next()`` and the next ``--batches - 1``
batches.  Variants: uniform (``plain``), ``prob="w"`` (float32 weights) and ``mask="m"`` (bool).
With ``--prefetch`` the sampler asks for ``feat`` and ``label`` as DGL's example scripts' samplers do
(both loaders then gather those rows into the batch); without it neither gathers rows: both hand the
graph's fields over as DGL's lazy columns, read when the loop reads them.  Graphs: ``small`` (R-MAT scale 15,
8 edges a node: 32,768 nodes, 262,144 edges) and ``10m`` (R-MAT scale 20, 10 edges a node: 1,048,576
nodes, 10,485,760 edges), 128-dim float32 features and labels.
The graph's CSC is built before any timing (both loaders read it; DGL keeps it in the graph).
``typed`` is the recommendation loop's loader (``bench/recsys/training.py``): a user-item heterograph of
the 10m R-MAT edges (source -> user, destination mod 2^18 -> item; ``rates`` and its reverse ``rated-by``),
seeds every ``rates`` edge, DGL's ``as_edge_prediction_sampler(NeighborSampler, exclude="reverse_types",
negative_sampler=Uniform(1))``; its only variant is ``link``.

Printed: per graph, variant and system the first round (cold: numba's kernels loading, DGL's
first sampler call) and the median of the others (warm: what every later loader costs), in ms, and
bgl/DGL of construction + first batch.  Run on a quiet box: the figures are wall-clock times.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("DGLBACKEND", "pytorch")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.<area>.<script> imports

import numpy as np  # noqa: E402
import torch  # noqa: E402

from bench.common.side_by_side import DGL_EXAMPLE_PREFETCH, setup  # noqa: E402

GRAPHS = {"small": (15, 8), "10m": (20, 10), "typed": (20, 10)}  # R-MAT (scale, edges per node)
VARIANTS = {"plain": {}, "prob": {"prob": "w"}, "mask": {"mask": "m"}}
ITEM_BITS = 18  # the typed graph's items: an R-MAT destination mod 2^18
REVERSE = {"rates": "rated-by", "rated-by": "rates"}


def user_item_dglgraph(scale: int, edge_factor: int):
    """The ``typed`` graph: R-MAT edges as user -> item ``rates`` and item -> user ``rated-by``, both formats built."""
    import dgl

    from bgl.sources.rmat import rmat_source

    src = rmat_source(scale, edge_factor, seed=0)
    s, d = (np.concatenate(parts) for parts in zip(*((a.copy(), b.copy()) for a, b in src.edges())))
    u, i = torch.from_numpy(s), torch.from_numpy(d % (1 << min(ITEM_BITS, scale)))
    g = dgl.heterograph({("user", "rates", "item"): (u, i), ("item", "rated-by", "user"): (i, u)},
                        num_nodes_dict={"user": src.num_nodes, "item": 1 << min(ITEM_BITS, scale)})
    g.create_formats_()
    return g


def rmat_dglgraph(scale: int, edge_factor: int, feat_dim: int):
    """An R-MAT DGLGraph with ``feat``, ``label``, weights ``w`` (a quarter of them 0) and a mask ``m``."""
    import dgl

    from bgl.sources.rmat import rmat_source

    src = rmat_source(scale, edge_factor, seed=0)
    s, d = (np.concatenate(parts) for parts in zip(*((a.copy(), b.copy()) for a, b in src.edges())))
    g = dgl.graph((torch.from_numpy(s), torch.from_numpy(d)), num_nodes=src.num_nodes)
    gen = torch.Generator().manual_seed(0)
    g.ndata["feat"] = torch.randn(g.num_nodes(), feat_dim, generator=gen)
    g.ndata["label"] = torch.randint(0, 8, (g.num_nodes(),), generator=gen)
    w = torch.rand(g.num_edges(), generator=gen)
    w[w < 0.25] = 0
    g.edata["w"] = w
    g.edata["m"] = torch.rand(g.num_edges(), generator=gen) > 0.5
    g.create_formats_()  # every sparse format now, outside the timings
    return g


def one_loader(make, g, seeds, sampler, batch_size: int, batches: int) -> tuple[float, float, float]:
    """(construction, first batch, the next batches) seconds of one loader."""
    t0 = time.perf_counter()
    loader = make(g, seeds, sampler, batch_size=batch_size, shuffle=True)
    t1 = time.perf_counter()
    it = iter(loader)
    next(it)
    t2 = time.perf_counter()
    for _ in range(batches - 1):
        if next(it, None) is None:
            break
    t3 = time.perf_counter()
    del it, loader
    return t1 - t0, t2 - t1, t3 - t2


def measure(g, variant: str, args) -> dict:
    import dgl

    import bgl

    makers = {"dgl": dgl.dataloading.DataLoader, "bgl": bgl.DataLoader}
    if variant == "link":  # the typed graph: every rates edge a seed (the loop's epoch)
        seeds = {"rates": torch.arange(g.num_edges("rates"))}
    else:
        seeds = torch.randperm(g.num_nodes(), generator=torch.Generator().manual_seed(1))[: args.batch_size * args.batches]
    times = {name: [] for name in makers}
    prefetch = DGL_EXAMPLE_PREFETCH if args.prefetch else {}
    for r in range(args.rounds):
        for name in (("dgl", "bgl") if r % 2 == 0 else ("bgl", "dgl")):
            if variant == "link":
                sampler = dgl.dataloading.as_edge_prediction_sampler(
                    dgl.dataloading.NeighborSampler(args.fanouts), exclude="reverse_types", reverse_etypes=REVERSE,
                    negative_sampler=dgl.dataloading.negative_sampler.Uniform(1))
            else:
                sampler = dgl.dataloading.NeighborSampler(args.fanouts, **VARIANTS[variant], **prefetch)
            torch.manual_seed(r)
            times[name].append(one_loader(makers[name], g, seeds, sampler, args.batch_size, args.batches))
    return times


def report(graph: str, variant: str, times: dict) -> None:
    med = statistics.median
    cells = {}
    for name, runs in times.items():
        cold, warm = runs[0], runs[1:] or runs
        cells[name] = (sum(cold[:2]), med(r[0] + r[1] for r in warm))
        print(f"{graph:6s} {variant:6s} {name}: cold construct {1000 * cold[0]:8.1f} + first batch {1000 * cold[1]:7.1f} ms"
              f" | warm construct {1000 * med(r[0] for r in warm):7.1f} + first batch {1000 * med(r[1] for r in warm):7.1f}"
              f" + later batches {1000 * med(r[2] for r in warm):7.1f} ms", flush=True)
    print(f"{graph:6s} {variant:6s} bgl/DGL construction + first batch: cold {cells['bgl'][0] / cells['dgl'][0]:.2f}x, "
          f"warm {cells['bgl'][1] / cells['dgl'][1]:.2f}x", flush=True)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", default="small,10m,typed", help=f"comma list of {','.join(GRAPHS)}")
    ap.add_argument("--variants", default="plain,prob,mask", help=f"comma list of {','.join(VARIANTS)}")
    ap.add_argument("--rounds", type=int, default=10, help="loaders built per system (the first is the cold one)")
    ap.add_argument("--batches", type=int, default=10, help="batches taken from each loader")
    ap.add_argument("--batch-size", type=int, default=1024)
    ap.add_argument("--fanouts", default="10,10")
    ap.add_argument("--feat-dim", type=int, default=128)
    ap.add_argument("--prefetch", action="store_true",
                    help="the sampler asks for feat and label (prefetch_node_feats / prefetch_labels, as DGL's example "
                         "scripts do): both loaders gather the rows in the batch; without it neither does (both hand "
                         "the fields over as DGL's lazy columns)")
    ap.add_argument("--scale", type=int, default=None, help="override the R-MAT scale of every graph (a quick run)")
    ap.add_argument("--workdir", default=".", help="created if missing (nothing is written there)")
    args = ap.parse_args(argv)
    args.fanouts = [int(f) for f in args.fanouts.split(",")]
    warnings.filterwarnings("ignore", message="Dataloader CPU affinity")  # DGL's advice, once per loader
    setup(args.workdir)
    for graph in args.graphs.split(","):
        scale, edge_factor = GRAPHS[graph]
        typed = graph == "typed"
        g = (user_item_dglgraph if typed else rmat_dglgraph)(args.scale or scale, edge_factor,
                                                             *(() if typed else (args.feat_dim,)))
        print(f"{graph}: {g.num_nodes()} nodes, {g.num_edges()} edges", flush=True)
        for variant in ["link"] if typed else args.variants.split(","):
            report(graph, variant, measure(g, variant, args))
        del g


if __name__ == "__main__":
    main()
