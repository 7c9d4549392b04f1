"""bgl.dgl's message passing against real DGL on one large random block: time and peak memory.

Each (library, case) runs in its own process, so the peak RSS it reports (``ru_maxrss`` minus
the RSS after the inputs exist) is that case's alone.  Cases are the kernels DGL layers spend
their time in: GraphSAGE / GCN (``copy_u`` + ``sum`` / ``mean``), pooling (``copy_u`` + ``max``),
GAT (``u_add_v`` logits, ``edge_softmax``, ``u_mul_e`` + ``sum`` with per-head weights), each
forward + backward.

    .venv/bin/python bench/dgl/message_passing.py --edges 10000000 --feats 64

Needs the pinned lane (DGL 2.1) for the DGL side; prints one JSON line per case.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

CASES = ("copy_u_sum", "copy_u_mean", "copy_u_max", "gat_u_add_v", "gat_edge_softmax", "gat_u_mul_e_sum")


def _rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _warm_up(dgl, fn, edge_softmax) -> None:
    import torch

    g = dgl.graph((torch.tensor([0, 1, 2]), torch.tensor([1, 2, 0])))
    g.ndata["x"] = torch.ones(3, 4, 2, requires_grad=True)
    g.edata["a"] = torch.ones(3, 4, 1, requires_grad=True)
    for reducer in (fn.sum, fn.mean, fn.max):
        g.update_all(fn.u_mul_e("x", "a", "m"), reducer("m", "h"))
        g.update_all(fn.copy_u("x", "m"), reducer("m", "h2"))
    g.apply_edges(fn.u_add_v("x", "x", "e"))
    out = g.ndata["h"].sum() + g.ndata["h2"].sum() + edge_softmax(g, g.edata["a"]).sum() + g.edata["e"].sum()
    out.backward()


def run_case(lib: str, case: str, edges: int, feats: int, repeat: int) -> dict:
    import torch

    if lib == "dgl":
        import dgl
        import dgl.function as fn
        from dgl.nn.functional import edge_softmax
    else:
        import bgl.dgl as dgl
        import bgl.dgl.function as fn
        from bgl.dgl.ops import edge_softmax
    torch.manual_seed(0)
    num_dst, num_src, heads = edges // 100, edges // 10, 4
    src = torch.randint(0, num_src, (edges,))
    dst = torch.sort(torch.randint(0, num_dst, (edges,))).values  # a sampled block's CSC order
    block = dgl.create_block((src, dst), num_src_nodes=num_src, num_dst_nodes=num_dst)
    block.in_degrees()  # both libraries: CSC built before timing
    gat = case.startswith("gat")
    x = torch.randn(num_src, heads, feats // heads) if gat else torch.randn(num_src, feats)
    x.requires_grad_(True)
    el = torch.randn(num_src, heads, 1, requires_grad=True)
    er = torch.randn(num_dst, heads, 1, requires_grad=True)
    logits = torch.randn(edges, heads, 1, requires_grad=True)
    _warm_up(dgl, fn, edge_softmax)  # libraries and kernels loaded before the baseline RSS
    base = _rss_mib()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        with block.local_scope():
            if case.startswith("copy_u"):
                block.srcdata["x"] = x
                block.update_all(fn.copy_u("x", "m"), getattr(fn, case.split("_")[-1])("m", "h"))
                out = block.dstdata["h"]
            elif case == "gat_u_add_v":
                block.srcdata["el"], block.dstdata["er"] = el, er
                block.apply_edges(fn.u_add_v("el", "er", "e"))
                out = block.edata["e"]
            elif case == "gat_edge_softmax":
                out = edge_softmax(block, logits)
            else:
                block.srcdata["x"], block.edata["a"] = x, torch.sigmoid(logits)
                block.update_all(fn.u_mul_e("x", "a", "m"), fn.sum("m", "h"))
                out = block.dstdata["h"]
            out.sum().backward()
        times.append(time.perf_counter() - start)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"lib": lib, "case": case, "edges": edges, "feats": feats, "best_s": round(min(times), 4),
            "peak_over_inputs_mib": round(peak - base, 1), "threads": torch.get_num_threads()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--edges", type=int, default=10_000_000)
    parser.add_argument("--feats", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cases", nargs="*", default=list(CASES), choices=CASES)
    parser.add_argument("--one", nargs=2, metavar=("LIB", "CASE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_case(args.one[0], args.one[1], args.edges, args.feats, args.repeat)))
        return
    env = {**os.environ, "DGLBACKEND": "pytorch"}
    for case in args.cases:
        for lib in ("bgl", "dgl"):
            done = subprocess.run([sys.executable, __file__, "--one", lib, case, "--edges", str(args.edges),
                                   "--feats", str(args.feats), "--repeat", str(args.repeat)],
                                  capture_output=True, text=True, env=env)
            print(done.stdout.strip().splitlines()[-1] if done.returncode == 0 else
                  json.dumps({"lib": lib, "case": case, "error": done.stderr.strip().splitlines()[-1:]}), flush=True)


if __name__ == "__main__":
    main()
