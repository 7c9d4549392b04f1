#!/usr/bin/env python
"""Typed (heterograph) sampling: uniform, weighted (``prob=``) and LABOR-0, bgl beside DGL.

One typed R-MAT store (``rmat-hetero:SCALE``, default 16: papers, authors, fields, three
relations), read as a DGL heterograph (``bench/typed/rgcn.py::to_dglgraph``) with weights ``w`` on
every relation (uniform in [0, 1), a quarter of them 0); bgl samples that heterograph in place
(``TypedArrays``, the loader's path for a heterograph).  2 layers of 10, 5 per relation (DGL
order), batches of 1024 paper seeds; the methods take turns batch by batch (order rotating) so
the shared machine's load drifts evenly over them:

* DGL ``NeighborSampler(fanouts[, prob="w"])`` / ``LaborSampler(fanouts)`` ``.sample_blocks``
  (DGL heterograph blocks);
* bgl ``LocalSampler.sample_typed_blocks(..., [prob="w" | labor=Labor()])`` (bgl typed blocks;
  converting them to DGL blocks is the transfer stage's work, not counted here).

Prints seeds/s per method, bgl / DGL, and the mean distinct input nodes per batch.

Usage::

    python bench/typed/sampling.py [--scale 16] [--batches 20]
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("DGLBACKEND", "pytorch")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.<area>.<script> imports


def run(args) -> None:
    import dgl
    from bench.typed.rgcn import to_dglgraph
    from bench.sampling.weighted import timed_turns

    import bgl
    from bgl.sampler import LocalSampler
    from bgl.sampler.multilayer import Labor
    from bgl.sampler.typed.sampling import relation_fanouts
    from bgl.sources.hetero import TypedArrays

    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        store = bgl.ingest(f"rmat-hetero:{args.scale}", Path(tmp) / "h")
        g = to_dglgraph(store)
        rng = np.random.default_rng(0)
        for c in g.canonical_etypes:
            w = rng.random(g.num_edges(c)).astype(np.float32)
            w[rng.random(w.size) < 0.25] = 0
            g.edges[c].data["w"] = torch.from_numpy(w)
        arrays = TypedArrays.from_dglgraph(g)
        etypes = arrays.schema.canonical_etypes
        fanouts = [{c: 10 for c in etypes}, {c: 5 for c in etypes}]
        fan = [relation_fanouts(layer, etypes) for layer in fanouts]
        paper = arrays.schema.node_type("paper").offset
        ours = LocalSampler(arrays)
        dgl_u = dgl.dataloading.NeighborSampler(fanouts)
        dgl_w = dgl.dataloading.NeighborSampler(fanouts, prob="w")
        dgl_labor = dgl.dataloading.LaborSampler(fanouts)
        counter = iter(range(10**9))

        def dgl_rows(blocks):
            return blocks[0].num_src_nodes()

        def ours_of(**kw):
            return lambda s: ours.sample_typed_blocks(s + paper, fan, seed=next(counter), **kw)[0].num_src

        methods = {
            "DGL NeighborSampler": lambda s: dgl_rows(dgl_u.sample_blocks(g, {"paper": s})[2]),
            "bgl uniform": ours_of(),
            "DGL NeighborSampler(prob='w')": lambda s: dgl_rows(dgl_w.sample_blocks(g, {"paper": s})[2]),
            "bgl prob='w'": ours_of(prob="w"),
            "DGL LaborSampler": lambda s: dgl_rows(dgl_labor.sample_blocks(g, {"paper": s})[2]),
            "bgl LABOR-0": ours_of(labor=Labor()),
        }
        anchors = {"bgl uniform": "DGL NeighborSampler", "bgl prob='w'": "DGL NeighborSampler(prob='w')",
                   "bgl LABOR-0": "DGL LaborSampler"}
        papers = g.num_nodes("paper")
        batches = [torch.from_numpy(rng.choice(papers, args.batch_size, replace=False))
                   for _ in range(args.batches + 2)]
        wall, rows = timed_turns(methods, batches)
        names = list(methods)
        n = args.batches * args.batch_size
        print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs (shared; under load), "
              f"torch threads {torch.get_num_threads()}")
        print(f"graph: rmat-hetero:{args.scale}, {arrays.num_nodes} nodes, {arrays.num_edges} edges, "
              f"{len(etypes)} relations; fanouts {fanouts[0][etypes[0]]},{fanouts[1][etypes[0]]} per relation, "
              f"batch {args.batch_size}, {args.batches} batches per method")
        print(f"{'method':32s} {'seeds/s':>10s} {'bgl/DGL':>8s} {'input nodes/batch':>18s}")
        for name in names:
            ratio = f"{wall[anchors[name]] / wall[name]:8.2f}" if name in anchors else f"{'':8s}"
            print(f"{name:32s} {n / wall[name]:10.0f} {ratio} {rows[name] / args.batches:18.0f}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scale", type=int, default=16)
    p.add_argument("--batches", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--workdir", default=None)
    args = p.parse_args()
    torch.manual_seed(0)
    run(args)


if __name__ == "__main__":
    main()
