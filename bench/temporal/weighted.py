"""Weighted temporal sampling, one hop: bgl's ``TemporalLayer(prob_name=)`` against its uniform temporal draw
and GraphBolt's ``temporal_sample_neighbors(probs_name=)`` on the same graph, seeds, times and weights.

Graph: CollegeMsg with its unix times (as ``bench/temporal/sampling.py`` builds it) or an R-MAT with uniform random
times; weights uniform in [0, 1) with a fifth of them 0.  Seeds are the destinations of random messages at
their times (``bench/temporal/sampling.seed_batches``); GraphBolt keeps edges strictly older than the seed time, so it
is given ``t + 1``.  Every sampled edge of both is checked: not newer than its seed time, weight > 0.
One thread (``NUMBA_NUM_THREADS=1``, ``torch.set_num_threads(1)``): the box is shared.

    python bench/temporal/weighted.py --workdir /tmp/twbench [--graph college|rmat] [--batches 30]
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.<area>.<script> imports

import numpy as np  # noqa: E402
import torch  # noqa: E402

from bench.temporal.sampling import college_store, graphbolt_graph, rmat_store, seed_batches, timed  # noqa: E402

from bgl.sampler.temporal.sampling import TemporalLayer  # noqa: E402
from bgl.store import write_store  # noqa: E402


def with_weights(store, work: Path):
    """``store`` again with a float32 edge array ``w`` (a fifth of the weights 0)."""
    rng = np.random.default_rng(5)
    w = rng.random(store.num_edges).astype(np.float32)
    w[rng.random(store.num_edges) < 0.2] = 0
    return write_store(work / f"{Path(store.path).name}-w", np.asarray(store.indptr), np.asarray(store.indices),
                       edata={"timestamp": np.asarray(store.edge_array("timestamp")), "w": w}, overwrite=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workdir", required=True)
    p.add_argument("--graph", default="college", choices=["college", "rmat"])
    p.add_argument("--rmat-scale", type=int, default=16)
    p.add_argument("--batches", type=int, default=30)
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--fanout", type=int, default=10)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    base = college_store(work) if args.graph == "college" else rmat_store(work, args.rmat_scale)
    store = with_weights(base, work)
    batches = seed_batches(store, args.batches + 1, args.batch_size, np.random.default_rng(1))
    ts, w = np.asarray(store.edge_array("timestamp")), np.asarray(store.edge_array("w"))
    layer = TemporalLayer(store)
    import dgl.graphbolt as gb

    attrs = dict(graphbolt_graph(store).edge_attributes)
    graph = gb.fused_csc_sampling_graph(torch.from_numpy(np.asarray(store.indptr)),
                                        torch.from_numpy(np.asarray(store.indices).astype(np.int64)),
                                        edge_attributes={**attrs, "w": torch.from_numpy(w)})

    def bgl_fn(prob):
        def run(seeds, times):
            counts, _, eids, _ = layer(seeds, times, args.fanout, "uniform", 7, prob_name=prob)
            t = np.repeat(times, counts)
            return eids.shape[0], int((ts[eids] > t).sum()), int((w[eids] <= 0).sum()) if prob else 0
        return run

    def gb_fn(seeds, times):
        sub = graph.temporal_sample_neighbors(torch.from_numpy(seeds), torch.from_numpy(times) + 1,
                                              torch.tensor([args.fanout]), probs_name="w",
                                              edge_timestamp_attr_name="timestamp")
        csc, eids = sub.sampled_csc, sub.original_edge_ids.numpy()
        t = np.repeat(times, np.diff(csc.indptr.numpy()))
        return eids.shape[0], int((ts[eids] > t).sum()), int((w[eids] <= 0).sum())

    print(f"{args.graph}: {store.num_nodes:,} nodes, {store.num_edges:,} edges, batch {args.batch_size}, "
          f"fanout {args.fanout}, {args.batches} batches")
    print("| sampler | ms / batch | sampled edges / batch | future edges | zero-weight edges |")
    print("|---|---|---|---|---|")
    for label, fn in [("bgl temporal uniform", bgl_fn(None)), ("bgl temporal weighted (prob_name)", bgl_fn("w")),
                      ("GraphBolt temporal weighted (probs_name)", gb_fn)]:
        ms, outs = timed(fn, batches)
        print(f"| {label} | {ms:.2f} | {np.mean([o[0] for o in outs]):,.0f} | {sum(o[1] for o in outs)} | "
              f"{sum(o[2] for o in outs)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
