"""What one sampler-aware refinement round buys on a big store, and what it costs.

    DGLBACKEND=pytorch .venv/bin/python bench/scaling/refine_gain.py /work/scratch/rmat22 --parts 4

Runs ``--method bgl`` without refinement (engine + rebalance), then the sampler model's
expected remote share, one refinement round, and the share again; prints each step's
seconds.  This is the measurement behind ``REFINE_MAX_EDGES`` in partition/bgl_part.py
(bench/results/scaling.md).
"""
from __future__ import annotations

import argparse
import json
import logging
import tempfile
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("store")
    ap.add_argument("--parts", type=int, default=4)
    ap.add_argument("--fanouts", default="15,10,5")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO)
    from bgl.partition import bgl_part as B
    from bgl.partition.graph_input import GraphInput
    from bgl.store import GraphStore

    fan = tuple(int(f) for f in args.fanouts.split(","))
    graph = GraphInput.from_store(GraphStore(args.store))
    res = {"store": args.store, "parts": args.parts, "edges": graph.num_edges}
    t = time.perf_counter()
    with tempfile.TemporaryDirectory() as work:
        part = B.bgl_partition(graph, args.parts, 0, refine_rounds=0, work_dir=work)
    res["engine_and_rebalance_s"] = time.perf_counter() - t
    t = time.perf_counter()
    res["share_before"] = B.expected_remote_share(graph, part, args.parts, fan)
    res["share_s"] = time.perf_counter() - t
    t = time.perf_counter()
    res["moved"] = B.sampler_refine(graph, part, args.parts, fan, B.BglParams().refine_caps, 1)
    res["refine_round_s"] = time.perf_counter() - t
    res["share_after"] = B.expected_remote_share(graph, part, args.parts, fan)
    res["ratio"] = res["share_after"] / res["share_before"]
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
