"""Data path: GraphBolt's pipeline vs ``bgl.DataLoader``, side by side in one process.

GraphBolt (``dgl.graphbolt``, in the same DGL 2.1 wheel) is DGL's newer loader:
``ItemSampler -> sample_neighbor -> fetch_feature`` over a ``FusedCSCSamplingGraph`` built from
the DGLGraph (``gb.from_dglgraph``) and a ``BasicFeatureStore`` of ``TorchBasedFeature`` s holding
the same feature and label tensors, iterated by ``gb.DataLoader`` (``num_workers=0``).  bgl reads
the same DGLGraph in place: ``bgl.DataLoader(g, seeds, bgl.NeighborSampler(fanouts,
prefetch_node_feats=["feat"], prefetch_labels=["label"]))`` with its defaults.  Same seeds
(every node), fanouts, batch size, shuffled.  Each batch is consumed as a training loop would:
DGL blocks built (GraphBolt's ``mb.blocks``), input features and output labels read.

``--task link``: link prediction instead, every edge a seed edge.  GraphBolt: an ``ItemSet`` of
the edges' node pairs -> ``sample_uniform_negative(graph, 1)`` -> ``sample_neighbor`` ->
``exclude_seed_edges(include_reverse_edges=True)`` -> ``fetch_feature``; bgl: DGL's
``as_edge_prediction_sampler(NeighborSampler(fanouts), exclude="reverse_id", Uniform(1))`` in
``bgl.DataLoader``.  Each batch: blocks, input features, positive and negative pairs read.
GraphBolt (as DGL) drops excluded edges after the draw, bgl draws around them (see ARCHITECTURE,
"Excluded edges"), so bgl's blocks carry a little more.

Passes alternate GraphBolt, bgl, GraphBolt, bgl, ... (``--repeats`` timed each after one warm-up
pass each, ``--batches`` batches a pass), so load drifts hit both alike; reported: median and
best pass per system, its trainer wait (time blocked in ``next()``, the same timer for both systems:
per batch of the median pass and share of all passes' time; with no model step it is most of a pass;
GraphBolt builds ``mb.blocks`` when the loop reads them, after ``next()``, so that part is not its wait)
and bgl/GraphBolt of the medians.

``--task typed``: node classification of the papers of the paper-word typed graphs of Cora and
CiteSeer (bench/typed/rgcn.py's graphs: paper-cites-paper, paper-has-word, word-in-paper; paper
features), both fanouts per relation: GraphBolt over ``gb.from_dglgraph(g, is_homogeneous=False)``
with an ``ItemSetDict`` of papers, bgl with DGL's ``NeighborSampler(prefetch_node_feats={"paper":
["feat"]}, prefetch_labels={"paper": ["label"]})``.

Usage::

    nice -n 10 python bench/graphbolt/data_path.py [--datasets cora,pubmed,slashdot] [--fanouts 10,10 15,10,5] [--task link]
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

from bench.typed.rgcn import build, to_dglgraph  # noqa: E402
from bench.link_pred.training import store_for  # noqa: E402
from bench.common.side_by_side import (alternate, batches_of, dgl_graph, load_average_at_end, setup,  # noqa: E402
                                       wait_column)


def graphbolt_loader(g, seeds, fanouts, batch_size):
    """GraphBolt's node-classification pipeline over ``g`` (its graph and features built once here)."""
    import torch
    from dgl import graphbolt as gb

    graph = gb.from_dglgraph(g, is_homogeneous=True)
    features = gb.BasicFeatureStore({("node", None, "feat"): gb.TorchBasedFeature(g.ndata["feat"])})
    items = gb.ItemSet((seeds, g.ndata["label"][seeds]), names=("seed_nodes", "labels"))
    pipe = gb.ItemSampler(items, batch_size=batch_size, shuffle=True)
    pipe = pipe.sample_neighbor(graph, [torch.LongTensor([f]) for f in fanouts])
    pipe = pipe.fetch_feature(features, node_feature_keys=["feat"])
    return gb.DataLoader(pipe, num_workers=0)


def graphbolt_pass(loader, batches: int) -> float:
    t0 = time.perf_counter()
    for mb in batches_of(loader, batches):
        blocks = mb.blocks
        mb.node_features["feat"].sum()
        mb.labels.sum()
        assert blocks[-1].num_dst_nodes() == mb.labels.shape[0]
    return time.perf_counter() - t0


def bgl_pass(loader, batches: int) -> float:
    t0 = time.perf_counter()
    for _, _, blocks in batches_of(loader, batches):
        blocks[0].srcdata["feat"].sum()
        blocks[-1].dstdata["label"].sum()
    return time.perf_counter() - t0


def graphbolt_link_loader(g, fanouts, batch_size):
    """GraphBolt's link-prediction pipeline over every edge of ``g``, seed edges and reverses excluded."""
    import functools

    import torch
    from dgl import graphbolt as gb

    graph = gb.from_dglgraph(g, is_homogeneous=True)
    features = gb.BasicFeatureStore({("node", None, "feat"): gb.TorchBasedFeature(g.ndata["feat"])})
    src, dst = g.edges()
    pipe = gb.ItemSampler(gb.ItemSet(torch.stack([src, dst], 1), names="node_pairs"), batch_size=batch_size,
                          shuffle=True)
    pipe = pipe.sample_uniform_negative(graph, 1)
    pipe = pipe.sample_neighbor(graph, [torch.LongTensor([f]) for f in fanouts])
    pipe = pipe.transform(functools.partial(gb.exclude_seed_edges, include_reverse_edges=True))
    pipe = pipe.fetch_feature(features, node_feature_keys=["feat"])
    return gb.DataLoader(pipe, num_workers=0)


def graphbolt_link_pass(loader, batches: int) -> float:
    t0 = time.perf_counter()
    for mb in batches_of(loader, batches):
        mb.blocks
        mb.node_features["feat"].sum()
        mb.positive_node_pairs[0].sum() + mb.negative_node_pairs[0].sum()
    return time.perf_counter() - t0


def bgl_link_pass(loader, batches: int) -> float:
    t0 = time.perf_counter()
    for _, pair, neg, blocks in batches_of(loader, batches):
        blocks[0].srcdata["feat"].sum()
        pair.edges()[0].sum() + neg.edges()[0].sum()
    return time.perf_counter() - t0


def graphbolt_typed_loader(g, fanouts, batch_size):
    """GraphBolt's node-classification pipeline over the papers of a typed ``g``."""
    import torch
    from dgl import graphbolt as gb

    graph = gb.from_dglgraph(g, is_homogeneous=False)
    papers = g.nodes["paper"].data
    features = gb.BasicFeatureStore({("node", "paper", "feat"): gb.TorchBasedFeature(papers["feat"])})
    seeds = torch.arange(g.num_nodes("paper"))
    items = gb.ItemSetDict({"paper": gb.ItemSet((seeds, papers["label"]), names=("seed_nodes", "labels"))})
    pipe = gb.ItemSampler(items, batch_size=batch_size, shuffle=True)
    pipe = pipe.sample_neighbor(graph, [torch.LongTensor([f]) for f in fanouts])
    pipe = pipe.fetch_feature(features, node_feature_keys={"paper": ["feat"]})
    return gb.DataLoader(pipe, num_workers=0)


def graphbolt_typed_pass(loader, batches: int) -> float:
    t0 = time.perf_counter()
    for mb in batches_of(loader, batches):
        mb.blocks
        mb.node_features[("paper", "feat")].sum()
        mb.labels["paper"].sum()
    return time.perf_counter() - t0


def bgl_typed_pass(loader, batches: int) -> float:
    t0 = time.perf_counter()
    for _, _, blocks in batches_of(loader, batches):
        blocks[0].srcnodes["paper"].data["feat"].sum()
        blocks[-1].dstnodes["paper"].data["label"].sum()
    return time.perf_counter() - t0


def compare_typed(g, fanouts, batch_size: int, batches: int, repeats: int, waits=None) -> dict:
    """{system: [pass seconds]} for the papers of a typed ``g``: GraphBolt's pipeline and bgl's loader."""
    import dgl
    import torch

    import bgl

    sampler = dgl.dataloading.NeighborSampler(fanouts, prefetch_node_feats={"paper": ["feat"]},
                                              prefetch_labels={"paper": ["label"]})
    seeds = {"paper": torch.arange(g.num_nodes("paper"))}
    return alternate({"graphbolt": (graphbolt_typed_loader(g, fanouts, batch_size), graphbolt_typed_pass),
                      "bgl": (bgl.DataLoader(g, seeds, sampler, batch_size=batch_size, shuffle=True),
                              bgl_typed_pass)}, batches, repeats, waits)


def compare(g, fanouts, batch_size: int, batches: int, repeats: int, reverse=None, waits=None) -> dict:
    """{system: [pass seconds]} for GraphBolt's pipeline and bgl's loader on the same inputs: link
    prediction when ``reverse`` (each edge's reverse id) is given, else node classification."""
    import dgl
    import torch

    import bgl

    if reverse is not None:
        sampler = dgl.dataloading.as_edge_prediction_sampler(
            dgl.dataloading.NeighborSampler(fanouts, prefetch_node_feats=["feat"]), exclude="reverse_id",
            reverse_eids=reverse,
            negative_sampler=dgl.dataloading.negative_sampler.Uniform(1))
        seeds = torch.arange(g.num_edges())
        return alternate({"graphbolt": (graphbolt_link_loader(g, fanouts, batch_size), graphbolt_link_pass),
                          "bgl": (bgl.DataLoader(g, seeds, sampler, batch_size=batch_size, shuffle=True),
                                  bgl_link_pass)}, batches, repeats, waits)
    seeds = torch.arange(g.num_nodes())
    sampler = bgl.NeighborSampler(fanouts, prefetch_node_feats=["feat"], prefetch_labels=["label"])
    return alternate({"graphbolt": (graphbolt_loader(g, seeds, fanouts, batch_size), graphbolt_pass),
                      "bgl": (bgl.DataLoader(g, seeds, sampler, batch_size=batch_size, shuffle=True), bgl_pass)},
                     batches, repeats, waits)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--datasets", default="cora,pubmed,slashdot")
    parser.add_argument("--fanouts", nargs="+", default=["10,10", "15,10,5"])
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--batches", type=int, default=40, help="batches per pass (epochs repeat as needed)")
    parser.add_argument("--repeats", type=int, default=3, help="timed passes per system after a warm-up pass")
    parser.add_argument("--workdir", default="/tmp/bgl-bench-graphbolt")
    parser.add_argument("--task", choices=("node", "link", "typed"), default="node")
    args = parser.parse_args()
    workdir = setup(args.workdir)

    import torch

    import bgl

    for name in args.datasets.split(","):
        store = store_for(name, workdir)
        if args.task == "typed":  # the paper-word graph built from the store (bench/typed/rgcn.py)
            g = to_dglgraph(bgl.GraphStore(build(workdir, name)))
        else:
            g = dgl_graph(store, labels=8)
        reverse = torch.from_numpy(bgl.reverse_edge_ids(store)) if args.task == "link" else None
        print(f"{name}: {g.num_nodes():,} nodes, {g.num_edges():,} edges, {len(g.canonical_etypes)} relation(s)",
              flush=True)
        for fo in args.fanouts:
            fanouts = [int(x) for x in fo.split(",")]
            waits = {}  # each pass's trainer wait (side_by_side.TrainerWait), the same timer for both
            times = (compare_typed(g, fanouts, args.batch_size, args.batches, args.repeats, waits)
                     if args.task == "typed"
                     else compare(g, fanouts, args.batch_size, args.batches, args.repeats, reverse, waits))
            med = {k: statistics.median(v) for k, v in times.items()}
            print(f"{name} {args.task} fanouts {fo} batch {args.batch_size}: " + "  ".join(
                f"{k} median {med[k]:.3f} s best {min(v):.3f} s trainer wait "
                f"{wait_column(waits[k], v, args.batches)}" for k, v in times.items())
                + f"  bgl/graphbolt {med['bgl'] / med['graphbolt']:.2f}x", flush=True)
    load_average_at_end()


if __name__ == "__main__":
    main()
