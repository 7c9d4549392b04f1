#!/usr/bin/env python
"""Sampling throughput: DGL 2.1's NeighborSampler vs bgl's LocalSampler vs SamplingClient + servers.

Same graph, same seed batches, 3 layers with fanouts 15,10,5 (DGL convention:
the seeds get fanouts[-1]), batch 1024 seeds, on

- an R-MAT graph (``bgl.sources.rmat.generate_rmat_store``, scale 20 by default), and
- Cora (the embedded default dataset),

measuring seeds per second of

(a) ``dgl.dataloading.NeighborSampler(fanouts).sample_blocks(g, seeds)``,
(b) ``bgl.sampler.LocalSampler(store).sample_blocks(seeds, fanouts)``,
(c) ``bgl.sampler.SamplingClient`` against 1, 2 and 4 loopback ``bgl serve``
    processes (the graph cut into contiguous node ranges),

and printing each as a ratio to DGL.  The mean sampled edges per batch are
printed too, so equal work is visible.

Usage::

    python bench/sampling/throughput.py                 # R-MAT scale 20 + Cora
    python bench/sampling/throughput.py --quick         # R-MAT scale 16, fewer batches
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("DGLBACKEND", "pytorch")
# The bench machine is shared: spinning idle OpenMP threads (DGL's and numba's, both
# libgomp) steal cores from whoever runs next.  Passive waiting applies to both sides.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402
import torch  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def slice_store(store, lo: int, hi: int, path: Path):
    """Part store owning global ids [lo, hi) of ``store`` (same global ids)."""
    from bgl.store import write_store

    ip = np.asarray(store.indptr)
    return write_store(path, ip[lo:hi + 1] - ip[lo], np.asarray(store.indices[ip[lo]:ip[hi]]),
                       feat=None if store.feat is None else np.asarray(store.feat[lo:hi]),
                       node_offset=lo, global_num_nodes=store.num_nodes, overwrite=True)


def start_servers(stores: list[Path], workdir: Path, threads: int,
                  extra_args: list[str] = ()) -> tuple[list[subprocess.Popen], list[str]]:
    """``bgl serve`` one store each on 127.0.0.1 (``extra_args`` added, e.g. CURVE keys); (procs, addresses)."""
    procs, ready = [], []
    for k, path in enumerate(stores):
        # pid in the name: another run sharing the workdir must not hand us its servers
        rf = workdir / f"ready-{os.getpid()}-{len(stores)}-{k}.json"
        rf.unlink(missing_ok=True)
        procs.append(subprocess.Popen([sys.executable, "-m", "bgl.cli", "serve", "--store", str(path),
                                       "--threads", str(threads), "--ready-file", str(rf), "--token", "bench",
                                       *extra_args],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        ready.append(rf)
    deadline = time.monotonic() + 300
    while not all(r.exists() for r in ready):
        if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
            stop_servers(procs)
            raise RuntimeError("graph servers did not start")
        time.sleep(0.05)
    addresses = [json.loads(r.read_text())["address"] for r in ready]
    for r in ready:
        r.unlink(missing_ok=True)
    return procs, addresses


def stop_servers(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def bench_graph(name: str, store, args, workdir: Path):
    """([(method, seeds/s per round, ratio vs DGL per round, CPU ms/batch per round,
    mean edges per batch)], phase breakdown or None); methods take turns batch by batch.

    The machine is shared, so load drifts; interleaving the methods per batch
    (in an order that rotates every batch) spreads that drift evenly instead of
    penalising whichever method ran last.
    CPU time (``time.process_time``, all threads of this process) is load-proof
    for the in-process methods; for the clients it misses the servers' share.
    """
    import dgl

    from bgl.sampler import LocalSampler, SamplingClient

    fanouts = args.fanouts
    ids = np.asarray(store.train_idx) if "train" in store.splits else np.arange(store.num_nodes)
    rng = np.random.default_rng(0)
    nb = args.batches + args.warmup
    batches = [torch.from_numpy(rng.choice(ids, min(args.batch_size, ids.size), replace=False)) for _ in range(nb)]
    indptr = torch.from_numpy(np.array(store.indptr))
    indices = torch.from_numpy(np.asarray(store.indices).astype(np.int64))
    g = dgl.graph(("csc", (indptr, indices, torch.empty(0, dtype=torch.int64))), num_nodes=store.num_nodes)
    g = g.formats(["csc"])
    dgl_sampler = dgl.dataloading.NeighborSampler(fanouts)

    def dgl_sample(seeds):
        _, _, blocks = dgl_sampler.sample_blocks(g, seeds)
        return sum(b.num_edges() for b in blocks)

    counter = iter(range(10**9))

    def ours(sampler):
        def sample(seeds):
            return sum(b.num_edges for b in sampler.sample_blocks(seeds, fanouts, seed=next(counter)))
        return sample

    methods = [("DGL NeighborSampler", dgl_sample), ("bgl LocalSampler", ours(LocalSampler(store)))]
    if args.parallel_min_seeds:
        from bgl.sampler import ops

        serial_min = ops.PARALLEL_MIN_SEEDS
        local_par = ours(LocalSampler(store))

        def parallel_local(seeds):
            # numba-parallel kernels for layers with >= parallel_min_seeds seeds, this call only
            ops.PARALLEL_MIN_SEEDS = args.parallel_min_seeds
            try:
                return local_par(seeds)
            finally:
                ops.PARALLEL_MIN_SEEDS = serial_min

        methods.append((f"bgl LocalSampler, parallel layers >= {args.parallel_min_seeds} seeds", parallel_local))
    procs: list[subprocess.Popen] = []
    clients = []
    try:
        for k in args.servers:
            if k == 1:
                paths = [Path(store.path)]
            else:
                bounds = np.linspace(0, store.num_nodes, k + 1).astype(np.int64)
                paths = []
                for p in range(k):
                    path = workdir / f"{name}-parts{k}" / f"part-{p}"
                    if not (path / "meta.json").exists():
                        slice_store(store, int(bounds[p]), int(bounds[p + 1]), path)
                    paths.append(path)
            new_procs, addrs = start_servers(paths, workdir, args.server_threads)
            procs += new_procs
            clients.append(SamplingClient(addrs, timeout=60.0))
            methods.append((f"bgl SamplingClient, {k} server{'s' if k > 1 else ''}", ours(clients[-1])))
        for _, fn in methods:
            for b in batches[:args.warmup]:
                fn(b)
        rounds = []
        for _ in range(args.rounds):
            wall = {label: 0.0 for label, _ in methods}
            cpu = {label: 0.0 for label, _ in methods}
            edges = {label: 0 for label, _ in methods}
            for i, b in enumerate(batches[args.warmup:]):
                # rotate the order each batch so no method always runs right after the same other one
                for label, fn in methods[i % len(methods):] + methods[:i % len(methods)]:
                    t0, c0 = time.perf_counter(), time.process_time()
                    edges[label] += fn(b)
                    wall[label] += time.perf_counter() - t0
                    cpu[label] += time.process_time() - c0
            rounds.append((wall, cpu, edges))
        phases = phase_breakdown(g, store, batches, fanouts, args) if args.phases else None
    finally:
        for c in clients:
            c.close()
        stop_servers(procs)
    n = sum(b.numel() for b in batches[args.warmup:])
    rows = []
    for label, _ in methods:
        rates = [n / w[label] for w, _, _ in rounds]
        ratios = [n / w[label] / (n / w[methods[0][0]]) for w, _, _ in rounds]
        cpu_ms = [c[label] / args.batches * 1e3 for _, c, _ in rounds]
        rows.append((label, rates, ratios, cpu_ms, rounds[0][2][label] / args.batches))
    return rows, phases


def phase_breakdown(g, store, batches, fanouts, args) -> dict[str, tuple[float, float]]:
    """{phase: (wall ms, CPU ms) per batch} for bgl's LocalSampler pipeline and DGL's
    NeighborSampler (``dgl.sampling.sample_neighbors`` + ``dgl.to_block``), interleaved.

    Replays :func:`bgl.sampler.ops.sample_neighbors` step by step with the same
    kernels so each step can be timed; the parallel/serial choice is the same.
    """
    import dgl

    from bgl.sampler import _kernels as K
    from bgl.sampler import ops

    ip, ix = np.asarray(store.indptr), store.indices
    relabel = ops.Relabeler(store.num_nodes)
    acc: dict[str, list[float]] = {}

    class timed:
        def __init__(self, name):
            self.name = name

        def __enter__(self):
            self.t, self.c = time.perf_counter(), time.process_time()

        def __exit__(self, *exc):
            a = acc.setdefault(self.name, [0.0, 0.0])
            a[0] += time.perf_counter() - self.t
            a[1] += time.process_time() - self.c

    def bgl_phased(seeds, seed):
        dst = seeds.numpy()
        for layer in range(len(fanouts) - 1, -1, -1):
            m, fo = dst.shape[0], np.int64(fanouts[layer])
            par = ops._use_parallel(True, m, ops.PARALLEL_MIN_SEEDS)
            with timed("bgl 1 row spans (indptr loads) + cumsum"):
                starts, degs, counts = np.empty(m, np.int64), np.empty(m, np.int64), np.empty(m, np.int64)
                (K.row_spans_par if par else K.row_spans_serial)(ip, dst, np.int64(0), fo, False, starts, degs, counts)
                out_indptr = np.zeros(m + 1, np.int64)
                np.cumsum(counts, out=out_indptr[1:])
            with timed("bgl 2 positions (RNG, Floyd)"):
                eids = np.empty(int(out_indptr[-1]), np.int64)
                (K.sample_positions_par if par else K.sample_positions_serial)(
                    starts, degs, dst, fo, False, np.uint64(ops.layer_seed(seed, layer)), out_indptr, eids)
            with timed("bgl 3 gather indices[eids]"):
                nbrs = np.empty(eids.shape[0], ix.dtype)
                (K.gather_nbrs_par if par else K.gather_nbrs_serial)(ix, eids, nbrs)
            with timed("bgl 4 relabel (dense markers)"):
                src, local = relabel(dst, nbrs)
            dst = src

    def dgl_phased(seeds):
        for fanout in reversed(fanouts):
            with timed("DGL 1 sample_neighbors"):
                frontier = dgl.sampling.sample_neighbors(g, seeds, fanout)
            with timed("DGL 2 to_block"):
                block = dgl.to_block(frontier, seeds)
            seeds = block.srcdata[dgl.NID]

    for i, b in enumerate(batches[args.warmup:]):
        bgl_phased(b, i)
        dgl_phased(b)
    return {k: (v[0] / args.batches * 1e3, v[1] / args.batches * 1e3) for k, v in sorted(acc.items())}


def rmat_parser(doc: str, batches: int, out: str) -> argparse.ArgumentParser:
    """The options of both server-side sampling benchmarks (this one, bench/sampling/curve.py): the R-MAT
    graph, the batches sampled from it (``batches`` timed per round by default), the rounds, the servers'
    threads and the work dir (``bench/out/<out>``).  Read them with :func:`parse_rmat_args`."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--scale", type=int, default=20, help="R-MAT scale (log2 nodes)")
    ap.add_argument("--edge-factor", type=int, default=16)
    ap.add_argument("--fanouts", type=int, nargs="+", default=[15, 10, 5])
    ap.add_argument("--batch-size", type=int, default=1024)
    ap.add_argument("--batches", type=int, default=batches, help="timed batches per round")
    ap.add_argument("--warmup", type=int, default=2, help="untimed batches first")
    ap.add_argument("--rounds", type=int, default=3, help="timed rounds over the same batches (ratios per round)")
    ap.add_argument("--server-threads", type=int, default=2)
    ap.add_argument("--workdir", type=Path, default=REPO / "bench" / "out" / out)
    return ap


def parse_rmat_args(ap: argparse.ArgumentParser, argv, quick_batches: int) -> argparse.Namespace:
    """``ap``'s arguments (``--quick`` among them: R-MAT scale 16, ``quick_batches`` timed batches), the
    work dir created."""
    ap.add_argument("--quick", action="store_true", help=f"scale 16, {quick_batches} timed batches")
    args = ap.parse_args(argv)
    if args.quick:
        args.scale, args.batches = 16, quick_batches
    args.workdir.mkdir(parents=True, exist_ok=True)
    return args


def main(argv=None) -> int:
    ap = rmat_parser(__doc__, batches=20, out="sampling")
    ap.add_argument("--parallel-min-seeds", type=int, default=4096,
                    help="also run LocalSampler with numba-parallel layers from this many seeds (0 = skip)")
    ap.add_argument("--phases", action="store_true", help="also time bgl's and DGL's sampling steps")
    ap.add_argument("--servers", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--skip-cora", action="store_true")
    args = parse_rmat_args(ap, argv, quick_batches=8)

    from bgl.sources.rmat import generate_rmat_store
    from bgl.store import GraphStore

    print(f"# sampling benchmark  {time.strftime('%Y-%m-%d %H:%M:%S')}  {platform.machine()}, "
          f"{os.cpu_count()} cores, torch {torch.__version__}, OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}, "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"fanouts {args.fanouts}, batch {args.batch_size}, {args.batches} timed batches after {args.warmup} warm-up")
    graphs = []
    rmat_dir = args.workdir / f"rmat{args.scale}"
    t0 = time.perf_counter()
    if (rmat_dir / "meta.json").exists():
        rmat = GraphStore(rmat_dir)
    else:
        rmat = generate_rmat_store(rmat_dir, args.scale, args.edge_factor, seed=0, feat_dim=32, num_classes=8)
    print(f"R-MAT scale {args.scale}: {rmat.num_nodes} nodes, {rmat.num_edges} edges "
          f"(ready in {time.perf_counter() - t0:.1f} s)")
    graphs.append((f"rmat{args.scale}", rmat))
    if not args.skip_cora:
        from bgl.data import default_dataset_path
        from bgl.sources.datasets import ingest

        cora_dir = args.workdir / "cora"
        cora = GraphStore(cora_dir) if (cora_dir / "meta.json").exists() else ingest(str(default_dataset_path()), cora_dir)
        print(f"Cora: {cora.num_nodes} nodes, {cora.num_edges} edges")
        graphs.append(("cora", cora))

    for name, store in graphs:
        rows, phases = bench_graph(name, store, args, args.workdir)
        print(f"\n## {name}  (load average {os.getloadavg()[0]:.1f})\n")
        print("| method | seeds/s (median) | ratio vs DGL per round | median ratio | CPU ms/batch (median) "
              "| sampled edges / batch |")
        print("|---|---:|---:|---:|---:|---:|")
        for label, rates, ratios, cpu_ms, edges in rows:
            cpu = f"{np.median(cpu_ms):.1f}" if "Client" not in label else f"{np.median(cpu_ms):.1f} (client only)"
            print(f"| {label} | {np.median(rates):,.0f} | {' / '.join(f'{r:.2f}x' for r in ratios)} | "
                  f"{np.median(ratios):.2f}x | {cpu} | {edges:,.0f} |")
        local = next(r for r in rows if r[0] == "bgl LocalSampler")
        for label, rates, *_ in rows:
            if "Client" in label:
                rel = [a / b for a, b in zip(rates, local[1])]
                print(f"{label} vs LocalSampler: {' / '.join(f'{r:.2f}x' for r in rel)}")
        if phases:
            print("\n| step (all layers, per batch) | wall ms | CPU ms |\n|---|---:|---:|")
            for k, (w, c) in phases.items():
                print(f"| {k} | {w:.2f} | {c:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
