"""Link prediction, the loaders alone: DGL's DataLoader vs bgl's, side by side in one process.

The data path of bench/link_pred/training.py without the model: the same DGLGraph (a store's edges, edge
id = CSC position), every edge a seed edge, ``as_edge_prediction_sampler(NeighborSampler([10,
10], prefetch_node_feats=["feat"]), exclude=..., negative_sampler=Uniform(1))``, batch 512,
shuffled; each pass iterates ``--batches`` batches and touches the input features.  Passes
alternate DGL, bgl, DGL, bgl, ... (``--repeats`` each, after one warm-up pass each), once with
``exclude="reverse_id"`` and once without, so load drifts hit both loaders alike.  Reported: the
median and best pass per loader, its trainer wait (time blocked in ``next()``, the same timer for
both: per batch of the median pass and share of the passes' time) and bgl/DGL of the medians.

Graphs: ``slashdot`` (SNAP soc-Slashdot0902 symmetrized, 128-dim synthetic features, as in
bench/link_pred/training.py) and ``rmat`` (Graph500 R-MAT, ``--rmat-scale``, edge factor 16, 128-dim
synthetic features): both hub-heavy, where a row holding excluded edges is often a hub.

Usage::

    nice -n 10 python bench/link_pred/loader_only.py [--datasets slashdot,rmat] [--batches 150] [--repeats 3]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("DGLBACKEND", "pytorch")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.<area>.<script> imports

from bench.common.side_by_side import alternate, dgl_graph, load_average_at_end, setup, wait_column  # noqa: E402


def graph_store(name: str, workdir: Path, rmat_scale: int):
    """The store for ``name`` (ingested once into ``workdir``)."""
    from bgl.sources.datasets import ingest
    from bgl.store import GraphStore

    if name != "rmat":
        from bench.link_pred.training import store_for

        return store_for(name, workdir)
    out = workdir / f"rmat{rmat_scale}"
    if (out / "meta.json").is_file():
        return GraphStore(out)
    return ingest(f"rmat:{rmat_scale}", out, overwrite=True, feat_dim=128)


def one_pass(loader, batches: int) -> float:
    """Seconds to draw ``batches`` batches from ``loader``, reading each batch's input features."""
    t0 = time.perf_counter()
    for step, (_, _, _, blocks) in enumerate(loader):
        if step >= batches:
            break
        blocks[0].srcdata["feat"].sum()
    return time.perf_counter() - t0


def compare(g, reverse, exclude, batches: int, repeats: int, waits=None) -> dict:
    """{system: [pass seconds]} for DGL's and bgl's loader over the same graph and sampler settings."""
    import dgl
    import torch

    import bgl

    sampler = dgl.dataloading.as_edge_prediction_sampler(
        dgl.dataloading.NeighborSampler([10, 10], prefetch_node_feats=["feat"]), exclude=exclude,
        reverse_eids=reverse if exclude == "reverse_id" else None,
        negative_sampler=dgl.dataloading.negative_sampler.Uniform(1))
    seeds = torch.arange(g.num_edges())
    return alternate({"dgl": (dgl.dataloading.DataLoader(g, seeds, sampler, batch_size=512, shuffle=True), one_pass),
                      "bgl": (bgl.DataLoader(g, seeds, sampler, batch_size=512, shuffle=True), one_pass)},
                     batches, repeats, waits)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--datasets", default="slashdot,rmat")
    parser.add_argument("--batches", type=int, default=150, help="batches of 512 seed edges per pass")
    parser.add_argument("--repeats", type=int, default=3, help="timed passes per loader after a warm-up pass")
    parser.add_argument("--rmat-scale", type=int, default=17)
    parser.add_argument("--workdir", default="/tmp/bgl-bench-linkpred")
    args = parser.parse_args()
    workdir = setup(args.workdir)

    import torch

    import bgl

    for name in args.datasets.split(","):
        store = graph_store(name, workdir, args.rmat_scale)
        g, reverse = dgl_graph(store), torch.from_numpy(bgl.reverse_edge_ids(store))
        degs = g.in_degrees()
        print(f"{name}: {g.num_nodes():,} nodes, {g.num_edges():,} edges, max in-degree {int(degs.max()):,}, "
              f"mean {float(degs.float().mean()):.1f}", flush=True)
        for exclude in ("reverse_id", None):
            waits = {}  # each pass's trainer wait (side_by_side.TrainerWait), the same timer for both
            times = compare(g, reverse, exclude, args.batches, args.repeats, waits)
            med = {k: statistics.median(v) for k, v in times.items()}
            print(f"{name} exclude={exclude}: " + "  ".join(
                f"{k} median {med[k]:.3f} s best {min(v):.3f} s ({1000 * med[k] / args.batches:.1f} ms/batch) "
                f"trainer wait {wait_column(waits[k], v, args.batches)}" for k, v in times.items()) + f"  bgl/dgl {med['bgl'] / med['dgl']:.2f}x", flush=True)
    load_average_at_end()


if __name__ == "__main__":
    main()
