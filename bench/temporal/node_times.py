"""Node times in partitions and on graph servers: what carrying each in-edge's source time costs.

For one graph with int64 edge and node times (``timestamp`` both), measured in process on exactly what a
graph server runs (:class:`~bgl.sampler.temporal.sampling.TemporalLayer` over a part store, serial kernels):

* ``bgl partition`` (random, 2 parts) of the store with and without its node time array: wall time and
  the bytes the node arrays add to the parts (own rows 8 B a node, source copy 8 B per part edge);
* per part, the time-index build a server does before it is ready (its ``timestamp`` edge key's order
  against the node-time key ``max(edge time, source time)``'s, built in memory);
* per part, one temporal layer (fanout 10, uniform) on batches of 1,024 of its nodes at their in-edges'
  times: edge times only, node times only, both.

Graphs: CollegeMsg (``/work/shared/datasets``: its real message times; node times synthetic: each node's
first message time) and an R-MAT with uniform random edge and node times.

    NUMBA_NUM_THREADS=1 python bench/temporal/node_times.py --workdir /tmp/ntbench [--rmat-scale 18] [--batches 30]
"""
from __future__ import annotations

import argparse
import gzip
import os
import shutil
import time
from pathlib import Path

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import bgl  # noqa: E402
from bgl.sampler.temporal.sampling import TemporalLayer  # noqa: E402
from bgl.store import GraphStore, write_store  # noqa: E402

COLLEGE = Path("/work/shared/datasets/CollegeMsg.txt.gz")


def with_times(work: Path, name: str, base, edge_time, node_time):
    ip, idx = np.asarray(base.indptr), np.asarray(base.indices)
    return (write_store(work / f"{name}-plain", ip, idx, edata={"timestamp": edge_time}, overwrite=True),
            write_store(work / f"{name}-nt", ip, idx, edata={"timestamp": edge_time},
                        ndata={"timestamp": node_time}, overwrite=True))


def college(work: Path):
    text = work / "CollegeMsg.txt"
    with gzip.open(COLLEGE, "rt") as f:
        lines = f.read().splitlines()
    text.write_text("# " + lines[0] + "\n" + "\n".join(lines[1:]) + "\n")
    base = bgl.ingest(str(text), work / "college", "edgelist", edge_time_column=2, dedupe=False,
                      remove_self_loops=False, symmetrize=False, overwrite=True, progress=False)
    et = np.asarray(base.edge_array("timestamp"))
    first = np.full(base.num_nodes, et.max(), np.int64)  # each node's first message, sent or received
    dst = np.repeat(np.arange(base.num_nodes), np.diff(np.asarray(base.indptr)))
    np.minimum.at(first, np.asarray(base.indices), et)
    np.minimum.at(first, dst, et)
    return with_times(work, "college", base, et, first)


def rmat(work: Path, scale: int):
    base = bgl.ingest(f"rmat:{scale}", work / f"rmat{scale}-base", overwrite=True, progress=False)
    rng = np.random.default_rng(0)
    return with_times(work, f"rmat{scale}", base, rng.integers(0, 1_000_000, base.num_edges),
                      rng.integers(0, 1_000_000, base.num_nodes))


def partition(store, out: Path) -> tuple[float, object]:
    from bgl.partition import partition_graph

    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    book = partition_graph(store, "random", 2, out, measure_samples=False)
    return time.perf_counter() - t0, book


def ndata_bytes(book) -> int:
    return sum(f.stat().st_size for k in range(book.num_parts) for f in (book.path / f"part-{k}" / "ndata").glob("*.npy"))


def layer_ms(part, batches, **names) -> tuple[float, float, int]:
    """(index build s, ms per layer, sampled edges per layer) of a server's layer over ``part``."""
    layer = TemporalLayer(part, parallel=False)
    t0 = time.perf_counter()
    layer.index(names.get("time_name"), names.get("node_time_name"))
    build = time.perf_counter() - t0
    layer(*batches[0], 10, "uniform", 1, **names)
    t0 = time.perf_counter()
    edges = sum(int(layer(d, t, 10, "uniform", 1, **names)[2].shape[0]) for d, t in batches)
    return build, (time.perf_counter() - t0) / len(batches) * 1e3, edges // len(batches)


def run(name, plain, timed, work: Path, args, lines):
    s_plain, _ = partition(plain, work / f"{name}-p-plain")
    s_nt, book = partition(timed, work / f"{name}-p-nt")
    lines.append(f"| {name} | partition, edge times only | {s_plain:.2f} s | | |")
    lines.append(f"| {name} | partition, + node times (own rows + source copy) | {s_nt:.2f} s | "
                 f"+{ndata_bytes(book) / 2**20:.1f} MiB ({timed.num_nodes:,} nodes, {timed.num_edges:,} edges) | |")
    rng = np.random.default_rng(1)
    for k in range(book.num_parts):
        part = GraphStore(book.part_path(k))
        ip, et = np.asarray(part.indptr), np.asarray(part.edge_array("timestamp"))
        dst = part.node_offset + np.repeat(np.arange(part.num_nodes), np.diff(ip))
        picks = [rng.integers(0, part.num_edges, args.batch_size) for _ in range(args.batches + 1)]
        batches = [(dst[e].astype(np.int64), et[e].astype(np.int64)) for e in picks]
        for what, names in (("edge times", {"time_name": "timestamp"}),
                            ("node times", {"time_name": None, "node_time_name": "timestamp"}),
                            ("edge + node times", {"time_name": "timestamp", "node_time_name": "timestamp"})):
            build, ms, edges = layer_ms(part, batches, **names)
            lines.append(f"| {name} part {k} | server layer, {what} | {ms:.2f} ms / batch | index {build:.2f} s | "
                         f"{edges:,} edges |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workdir", type=Path, required=True)
    ap.add_argument("--rmat-scale", type=int, default=18)
    ap.add_argument("--batches", type=int, default=30)
    ap.add_argument("--batch-size", type=int, default=1024)
    args = ap.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    lines = ["| graph | what | time | cost | per batch |", "|---|---|---|---|---|"]
    run("CollegeMsg", *college(args.workdir), args.workdir, args, lines)
    run(f"R-MAT {args.rmat_scale}", *rmat(args.workdir, args.rmat_scale), args.workdir, args, lines)
    print("\n".join(lines))
    print(f"load average: {open('/proc/loadavg').read().strip()}")


if __name__ == "__main__":
    main()
