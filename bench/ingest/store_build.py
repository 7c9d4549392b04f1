#!/usr/bin/env python
"""Ingest benchmark: seconds and peak RSS of building a graph store, vs. DGL in memory.

Every measurement runs in its own subprocess, which reports its own
``ru_maxrss`` (peak resident set, file-backed memmap pages included) and
the RSS right after its imports, so the interpreter + numba baseline can
be told apart from what the ingest itself needed.

* ``bgl``: ``bgl.sources.rmat.generate_rmat_store`` -> a store on disk (chunked
  generate, count, fill, sort/dedupe, write).
* ``dgl``: the same R-MAT edges generated in memory, then
  ``dgl.graph`` -> ``remove_self_loop`` -> ``to_bidirected`` ->
  ``adj_tensors('csc')`` -> ``np.save``: the in-memory way to the same CSC.
* ``edgelist``: the SNAP Slashdot text file (if present), parse + build.

Usage::

    python bench/ingest/store_build.py                         # scales 20 and 23, DGL at 20
    python bench/ingest/store_build.py --scales 20 23 24 --dgl-scales 20 22
    python bench/ingest/store_build.py --quick                 # scale 18, for bench/run_all.py
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SLASHDOT = Path("/work/shared/datasets/soc-Slashdot0902.txt.gz")


# ------------------------------------------------------------------ child side
def _rss_kib() -> int:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux


def _dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.iterdir() if f.is_file())


def child_bgl(scale: int, edge_factor: int, out: Path) -> dict:
    from bgl.sources import _csc_kernels, _rmat_kernels  # noqa: F401  (imports counted in the base RSS)
    from bgl.sources.rmat import generate_rmat_store

    base = _rss_kib()
    t = time.perf_counter()
    store = generate_rmat_store(out, scale, edge_factor)
    secs = time.perf_counter() - t
    return dict(seconds=secs, peak_kib=_rss_kib(), base_kib=base, store_bytes=_dir_bytes(out),
                nodes=store.num_nodes, edges=store.num_edges)


def child_dgl(scale: int, edge_factor: int, out: Path) -> dict:
    import numpy as np
    import torch
    import dgl

    from bgl.sources import _rmat_kernels as K
    from bgl.sources.rmat import GRAPH500_ABCD

    base = _rss_kib()
    t = time.perf_counter()
    n, m = 1 << scale, edge_factor << scale
    a, b, c, _ = GRAPH500_ABCD
    perm = np.random.default_rng([0, 0x5EED]).permutation(n).astype(np.int64)
    src, dst = np.empty(m, np.int64), np.empty(m, np.int64)
    K.rmat_edges(0, m, scale, a, a + b, a + b + c, 0, perm, src, dst)  # same edges as the bgl run
    g = dgl.graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=n)
    del src, dst
    g = dgl.to_bidirected(dgl.remove_self_loop(g))
    indptr, indices, _ = g.adj_tensors("csc")
    out.mkdir(parents=True)
    np.save(out / "indptr.npy", indptr.numpy())
    np.save(out / "indices.npy", indices.numpy().astype(np.int32))
    secs = time.perf_counter() - t
    return dict(seconds=secs, peak_kib=_rss_kib(), base_kib=base, store_bytes=_dir_bytes(out),
                nodes=n, edges=int(indices.numel()))


def child_edgelist(path: Path, out: Path) -> dict:
    from bgl.sources import _csc_kernels, _parse_kernels  # noqa: F401
    from bgl.sources.datasets import ingest

    base = _rss_kib()
    t = time.perf_counter()
    store = ingest(path, out)
    secs = time.perf_counter() - t
    return dict(seconds=secs, peak_kib=_rss_kib(), base_kib=base, store_bytes=_dir_bytes(out),
                nodes=store.num_nodes, edges=store.num_edges)


# ------------------------------------------------------------------ parent side
def run_child(kind: str, arg: str, edge_factor: int, work: Path, timeout: float) -> dict | None:
    out = work / f"{kind}-{Path(arg).name}"
    cmd = [sys.executable, __file__, "--child", kind, "--arg", arg, "--edge-factor", str(edge_factor),
           "--out", str(out)]
    env = {**os.environ, "DGLBACKEND": "pytorch"}
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        print(f"# {kind} {arg}: timed out after {timeout:.0f} s", flush=True)
        return None
    finally:
        shutil.rmtree(out, ignore_errors=True)
    if r.returncode != 0:
        print(f"# {kind} {arg}: failed (exit {r.returncode}): {r.stderr.strip().splitlines()[-1:]}", flush=True)
        return None
    return json.loads(r.stdout.strip().splitlines()[-1])


def fmt_row(kind: str, label: str, res: dict) -> str:
    gib = 2**30
    peak, base, size = res["peak_kib"] * 1024, res["base_kib"] * 1024, res["store_bytes"]
    return (f"| {kind} | {label} | {res['nodes']:,} | {res['edges']:,} | {res['seconds']:.1f} | "
            f"{peak / gib:.2f} | {(peak - base) / gib:.2f} | {size / gib:.2f} | {peak / size:.2f} | "
            f"{(peak - base) / size:.2f} |")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scales", type=int, nargs="*", default=[20, 23], help="R-MAT scales for bgl")
    p.add_argument("--dgl-scales", type=int, nargs="*", default=[20], help="R-MAT scales for the DGL baseline")
    p.add_argument("--edge-factor", type=int, default=16)
    p.add_argument("--timeout", type=float, default=900, help="seconds per measurement")
    p.add_argument("--workdir", default=None, help="where stores are written (default: a temp dir)")
    p.add_argument("--quick", action="store_true", help="scale 18 only (bench/run_all.py)")
    p.add_argument("--no-edgelist", action="store_true", help="skip the Slashdot edge-list row")
    p.add_argument("--child", choices=("bgl", "dgl", "edgelist"), help=argparse.SUPPRESS)
    p.add_argument("--arg", help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.child:
        out = Path(args.out)
        if args.child == "edgelist":
            res = child_edgelist(Path(args.arg), out)
        else:
            fn = child_bgl if args.child == "bgl" else child_dgl
            res = fn(int(args.arg), args.edge_factor, out)
        print(json.dumps(res))
        return 0

    if args.quick:
        args.scales, args.dgl_scales, args.timeout = [18], [18], 100
    work = Path(args.workdir or tempfile.mkdtemp(prefix="bgl-ingest-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"# machine: {platform.machine()}, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f} at start; python {platform.python_version()}")
    print(f"# command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    print("| run | input | nodes | CSC edges | seconds | peak RSS GiB | peak - import RSS GiB | "
          "store GiB | peak/store | (peak - import)/store |")
    print("|---|---|---|---|---|---|---|---|---|---|", flush=True)
    results = {}
    for scale in sorted(set(args.scales) | set(args.dgl_scales)):
        label = f"rmat s{scale} ef{args.edge_factor}"
        for kind in ("bgl", "dgl"):
            if scale not in (args.scales if kind == "bgl" else args.dgl_scales):
                continue
            res = run_child(kind, str(scale), args.edge_factor, work, args.timeout)
            if res:
                results[(kind, scale)] = res
                print(fmt_row(kind, label, res), flush=True)
    if not args.no_edgelist and SLASHDOT.exists():
        res = run_child("edgelist", str(SLASHDOT), args.edge_factor, work, args.timeout)
        if res:
            print(fmt_row("bgl", "Slashdot edge list", res), flush=True)
    for scale in args.dgl_scales:
        ours, theirs = results.get(("bgl", scale)), results.get(("dgl", scale))
        if ours and theirs:
            same = "same edge count" if ours["edges"] == theirs["edges"] else (
                f"EDGE COUNTS DIFFER: {ours['edges']} vs {theirs['edges']}")
            print(f"scale {scale}: bgl vs DGL in-memory: time ratio {ours['seconds'] / theirs['seconds']:.2f}, "
                  f"peak RSS ratio {ours['peak_kib'] / theirs['peak_kib']:.2f} ({same})")
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
