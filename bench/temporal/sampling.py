"""Temporal neighbour sampling: bgl vs GraphBolt's ``temporal_sample_neighbors``, and bgl's non-temporal sampler.

Same graph, seeds, seed times and fanouts for every sampler:

* ``one hop``: bgl's :class:`~bgl.sampler.temporal.sampling.TemporalLayer` and GraphBolt's
  ``FusedCSCSamplingGraph.temporal_sample_neighbors`` (``edge_timestamp_attr_name``) on the same
  seeds and times, fanout ``--fanouts[0]``: time per batch;
* ``two hops``: bgl's disjoint ``sample_temporal`` (relabelled, PyG's layout), GraphBolt's
  hop loop as its ``TemporalNeighborSampler`` runs it (``compact_csc_format``: a hop's seeds and then
  each sampled source, carrying its edge's seed time, are the next hop's seeds; no de-duplication),
  bgl's tree layout (the same layout: ``bgl.TemporalNeighborSampler``'s default), and bgl's
  non-temporal ``sample_blocks`` on the same seeds and fanouts for reference;
* the whole ``bgl.DataLoader`` with ``bgl.TemporalNeighborSampler`` over the same seeds and times, with
  its trainer wait (``loader.stats()``; the sampler rows are plain calls, no loader: "-");
* every sampled edge of both temporal samplers is checked against its seed time (no future edge).

GraphBolt keeps edges strictly older than the seed time (``<``; bgl and PyG keep ``<=``), so it is
given ``t + 1`` (integer times): the same eligible edges; the future check uses ``t``.

Graphs: CollegeMsg (``/work/shared/datasets/CollegeMsg.txt.gz``, its unix times; seeds are the
destinations of random messages at their message times) and an R-MAT with uniform random times.
One thread each (``NUMBA_NUM_THREADS=1``, ``torch.set_num_threads(1)``): the box is shared.

    python bench/temporal/sampling.py --workdir /tmp/tbench [--rmat-scale 18] [--batches 30]
"""
from __future__ import annotations

import argparse
import gzip
import os
import time
from pathlib import Path

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

import bgl  # noqa: E402
from bgl.sampler import LocalSampler  # noqa: E402
from bgl.sampler.temporal.sampling import TemporalLayer, sample_temporal  # noqa: E402
from bgl.store import write_store  # noqa: E402

COLLEGE = Path("/work/shared/datasets/CollegeMsg.txt.gz")


def college_store(work: Path):
    """CollegeMsg as a store: its header line commented out, times kept, every message kept."""
    text = work / "CollegeMsg.txt"
    with gzip.open(COLLEGE, "rt") as f:
        lines = f.read().splitlines()
    text.write_text("# " + lines[0] + "\n" + "\n".join(lines[1:]) + "\n")
    return bgl.ingest(str(text), work / "college", "edgelist", edge_time_column=2, dedupe=False,
                      remove_self_loops=False, symmetrize=False, overwrite=True, progress=False)


def rmat_store(work: Path, scale: int):
    """An R-MAT (edge factor 16) with uniform random int64 times in [0, 10^6)."""
    base = bgl.ingest(f"rmat:{scale}", work / f"rmat{scale}-base", overwrite=True, progress=False)
    ip, idx = np.asarray(base.indptr), np.asarray(base.indices)
    times = np.random.default_rng(0).integers(0, 1_000_000, idx.shape[0])
    return write_store(work / f"rmat{scale}", ip, idx, edata={"timestamp": times}, overwrite=True)


def seed_batches(store, batches: int, size: int, rng):
    """(seeds, times) per batch: the destinations of random edges at their edge times (a time at which
    the seed has history, as in temporal link prediction)."""
    ip, ts = np.asarray(store.indptr), np.asarray(store.edge_array("timestamp"))
    dst_of = np.repeat(np.arange(store.num_nodes), np.diff(ip))
    out = []
    for _ in range(batches):
        e = rng.integers(0, ts.shape[0], size)
        out.append((dst_of[e].astype(np.int64), ts[e].astype(np.int64)))
    return out


def graphbolt_graph(store):
    import dgl.graphbolt as gb

    ts = torch.from_numpy(np.asarray(store.edge_array("timestamp")).astype(np.int64))
    return gb.fused_csc_sampling_graph(
        torch.from_numpy(np.asarray(store.indptr)), torch.from_numpy(np.asarray(store.indices).astype(np.int64)),
        edge_attributes={"timestamp": ts, gb.ORIGINAL_EDGE_ID: torch.arange(ts.shape[0])})


def gb_hop(graph, nodes, times, fanout):
    """GraphBolt's one hop: (src, dst position, eids) of the sampled edges."""
    sub = graph.temporal_sample_neighbors(nodes, times + 1, torch.tensor([fanout]),
                                          edge_timestamp_attr_name="timestamp")
    csc = sub.sampled_csc
    counts = csc.indptr[1:] - csc.indptr[:-1]
    return csc.indices, torch.repeat_interleave(torch.arange(nodes.shape[0]), counts), sub.original_edge_ids


def gb_sample(graph, seeds, times, fanouts, ts):
    """GraphBolt's multi-hop temporal sample (TemporalNeighborSampler's hop loop); returns #edges and
    #edges newer than their seed time."""
    nodes, t = torch.from_numpy(seeds), torch.from_numpy(times)
    edges = future = 0
    for fanout in fanouts:
        src, pos, eids = gb_hop(graph, nodes, t, fanout)
        edges += int(src.shape[0])
        future += int((ts[eids] > t[pos]).sum())
        # compact_csc_format: the next hop's seeds are this hop's seeds, then one node per sampled edge
        nodes, t = torch.cat([nodes, src]), torch.cat([t, t[pos]])
    return edges, future


def timed(fn, batches):
    fn(*batches[0])  # warm-up: kernels loaded, index built
    t0 = time.perf_counter()
    outs = [fn(*b) for b in batches]
    return (time.perf_counter() - t0) / len(batches) * 1e3, outs


def run(name, store, args, lines):
    torch.set_num_threads(1)
    rng = np.random.default_rng(1)
    batches = seed_batches(store, args.batches + 1, args.batch_size, rng)
    ts_np = np.asarray(store.edge_array("timestamp"))
    ts_t = torch.from_numpy(ts_np.astype(np.int64))
    fanouts = args.fanouts
    layer = TemporalLayer(store)
    t0 = time.perf_counter()
    layer.index("timestamp")
    index_s = time.perf_counter() - t0
    order_bytes = layer.index("timestamp").order.nbytes
    graph = graphbolt_graph(store)

    def bgl_one(seeds, times):
        counts, _, eids, _ = layer(seeds, times, fanouts[0], args.strategy, 7)
        return int(eids.shape[0]), int((ts_np[eids] > np.repeat(times, counts)).sum())

    def gb_one(seeds, times):
        src, pos, eids = gb_hop(graph, torch.from_numpy(seeds), torch.from_numpy(times), fanouts[0])
        return int(src.shape[0]), int((ts_t[eids] > torch.from_numpy(times)[pos]).sum())

    def bgl_multi(seeds, times):
        s = sample_temporal(layer, seeds, times, fanouts, args.strategy, seed=7)
        return int(s.src.shape[0]), int((s.edge_time > s.node_time[s.dst]).sum())

    def gb_multi(seeds, times):
        return gb_sample(graph, seeds, times, fanouts, ts_t)

    from bgl.loader.stages.temporal_blocks import tree_blocks
    from bgl.loader.temporal_sampler import TemporalOptions

    tree_opts = TemporalOptions(tuple(fanouts), args.strategy, "tree", "timestamp", None)

    def bgl_tree(seeds, times):
        blocks = tree_blocks(layer, seeds, times, fanouts, tree_opts, 7)
        node_time = blocks[0].srcdata["seed_time"].numpy()
        edges = future = 0
        for b in blocks:
            dst = np.repeat(np.arange(b.num_dst), np.diff(b.indptr.numpy()))
            edges += int(dst.shape[0])
            future += int((ts_np[b.edge_ids.numpy()] > node_time[dst]).sum())
        return edges, future

    local = LocalSampler(store)

    def bgl_plain(seeds, times):
        uniq = np.unique(seeds)
        blocks = local.sample_blocks(uniq, fanouts[::-1], seed=7)
        return sum(int(b.indices.shape[0]) for b in blocks), 0

    rows = []
    for label, fn in [("bgl temporal, one hop", bgl_one), ("GraphBolt temporal, one hop", gb_one),
                      ("bgl temporal, disjoint multi-hop", bgl_multi),
                      ("GraphBolt temporal, multi-hop (no dedup)", gb_multi),
                      ("bgl temporal, tree multi-hop (GraphBolt's layout)", bgl_tree),
                      ("bgl non-temporal sample_blocks (unique seeds)", bgl_plain)]:
        ms, outs = timed(fn, batches)
        edges = np.mean([o[0] for o in outs])
        future = sum(o[1] for o in outs)
        rows.append(f"| {name} | {label} | {ms:.2f} | - | {edges:,.0f} | {future} |")
    rows.append(loader_row(name, store, batches, args))
    lines.append(f"\n{name}: {store.num_nodes:,} nodes, {store.num_edges:,} edges; time index built in "
                 f"{index_s:.2f} s, order array {order_bytes:,} bytes ({order_bytes / max(store.num_edges, 1):.0f} B/edge)\n")
    lines.append("| graph | sampler | ms / batch | trainer wait ms / batch (share) | sampled edges / batch "
                 "| future edges (all batches) |")
    lines.append("|---|---|---|---|---|---|")
    lines.extend(rows)


def loader_row(name, store, batches, args) -> str:
    """The whole loader: bgl.DataLoader with bgl.TemporalNeighborSampler (tree layout, default pipeline) over the
    same seeds and times, one epoch after a warm one; ms per batch, edges per batch, future edges."""
    seeds = np.concatenate([b[0] for b in batches[1:]])
    times = np.concatenate([b[1] for b in batches[1:]])
    ts_np = np.asarray(store.edge_array("timestamp"))
    sampler = bgl.TemporalNeighborSampler(args.fanouts[::-1], edge_timestamp_attr_name="timestamp",
                                          strategy=args.strategy)
    loader = bgl.DataLoader(str(store.path), torch.from_numpy(seeds), sampler, seed_time=torch.from_numpy(times),
                            batch_size=args.batch_size, blocks="bgl")
    try:
        for _ in loader:
            pass
        t0 = time.perf_counter()
        edges = future = n = 0
        for k, (_, _, blocks) in enumerate(loader):
            node_time = times[k * args.batch_size:][blocks[0].srcdata["batch"].numpy()]
            for b in blocks:
                dst = np.repeat(np.arange(b.num_dst), np.diff(b.indptr.numpy()))
                edges += int(dst.shape[0])
                future += int((ts_np[b.edge_ids.numpy()] > node_time[dst]).sum())
            n += 1
        ms = (time.perf_counter() - t0) / n * 1e3
        stats = loader.stats()  # the trainer's time blocked in next(); the check above is the "model step"
        mode = loader.pipeline_mode
    finally:
        loader.close()
    wait = f"{1e3 * stats['wait_mean_s']:.2f} ({100 * stats['wait_share']:.0f} %)"
    return (f"| {name} | bgl.DataLoader + TemporalNeighborSampler (tree, {mode}, checked) | {ms:.2f} | {wait} "
            f"| {edges / n:,.0f} | {future} |")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workdir", required=True)
    p.add_argument("--rmat-scale", type=int, default=18)
    p.add_argument("--batches", type=int, default=30)
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--fanouts", type=lambda s: [int(x) for x in s.split(",")], default=[10, 10])
    p.add_argument("--strategy", default="uniform", choices=["uniform", "last"])
    args = p.parse_args(argv)
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    lines = [f"command: python bench/temporal/sampling.py {' '.join(argv or __import__('sys').argv[1:])}",
             f"loadavg before: {Path('/proc/loadavg').read_text().strip()}"]
    run("CollegeMsg", college_store(work), args, lines)
    run(f"R-MAT {args.rmat_scale}", rmat_store(work, args.rmat_scale), args, lines)
    lines.append(f"\nloadavg after: {Path('/proc/loadavg').read_text().strip()}")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
