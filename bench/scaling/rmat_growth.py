#!/usr/bin/env python
"""How bgl's costs grow with the graph: measure R-MAT graphs of growing size, fit, project.

For each R-MAT scale (edge factor 16, symmetrised, 128-dim features):

- ingest: ``bgl ingest rmat:SCALE`` in a child process (the chunked
  ``generate_rmat_store`` path): seconds and peak RSS;
- partition: ``bgl partition --method bgl --parts 2``: seconds and peak RSS;
- serve: one real ``bgl serve`` process per part; RSS of each after start,
  after a sampling workload, and after every feature row and adjacency
  entry it owns was read once ("hot", the memory a server needs to keep its
  part resident);
- sampling throughput through ``SamplingClient`` against those servers and
  through an in-process ``LocalSampler`` on the whole store, side by side
  with DGL's ``sample_neighbors`` on the same graph when DGL is installed;
- cache hit rate of a FIFO ``FeatureCache`` (10% of nodes) on the sampled stream.

Then a least-squares line ``y = a + b * edges`` per cost, and projections for
1B- and 10B-edge graphs (machines, memory per server, partition time),
marked *projected* next to the *measured* rows.  Child processes' peak RSS
comes from ``os.wait4`` (that child only); server RSS from psutil.

Usage::

    python bench/scaling/rmat_growth.py --quick                  # 4 sizes, 2^16 .. 2^19, a few minutes
    python bench/scaling/rmat_growth.py --write-results             # 2^16 .. 2^21 within a 9-minute budget
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from bgl.threads import THREAD_ENV_VARS, thread_env, thread_limits

REPO = Path(__file__).resolve().parents[2]
MACHINE = "2-core x86_64 VM, 24 GiB, shared with other jobs"


@dataclass
class SizeResult:
    """Everything measured for one graph size (None = not measured / failed)."""

    scale: int
    nodes: int = 0
    edges: int = 0
    ingest_s: Optional[float] = None
    ingest_rss: Optional[int] = None
    part_s: Optional[float] = None
    part_rss: Optional[int] = None
    edge_cut: Optional[float] = None
    server_rss_idle: list[int] = field(default_factory=list)
    server_rss_workload: list[int] = field(default_factory=list)
    server_rss_hot: list[int] = field(default_factory=list)
    part_store_bytes: list[int] = field(default_factory=list)
    remote_seeds_s: Optional[float] = None
    remote_edges_s: Optional[float] = None
    local_seeds_s: Optional[float] = None
    dgl_seeds_s: Optional[float] = None
    cache_hit_rate: Optional[float] = None
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)


# ----------------------------------------------------------------- child processes
def run_child(args: Sequence[str], timeout: float, threads: int = 0) -> tuple[int, float, int, str]:
    """Run ``python -m bgl ARGS``; return (exit code, seconds, peak RSS bytes, output tail).

    ``os.wait4`` reports the resource usage of exactly this child, so the
    peak memory of ingest/partition is not mixed with this process's.  ``threads`` caps the
    child's thread pools through its environment (0 = library defaults).
    """
    env = {**thread_env(threads), "DGLBACKEND": "pytorch"}
    with tempfile.TemporaryFile("w+") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "bgl", *args], stdout=out, stderr=subprocess.STDOUT,
                                env=env, cwd=REPO)
        deadline = t0 + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.05)
        secs = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)  # keep Popen from waiting again
        out.seek(0)
        text = out.read()
    return proc.returncode, secs, int(usage.ru_maxrss) * 1024, text[-2000:]


class Servers:
    """One ``bgl serve`` process per part of a partition dir; always shut down on exit."""

    def __init__(self, partition_dir: Path, num_parts: int, workdir: Path, threads: int = 1):
        self.procs: list[subprocess.Popen] = []
        self.addresses: list[str] = []
        self.token = os.urandom(8).hex()
        self._args = (partition_dir, num_parts, workdir, threads)

    def __enter__(self) -> "Servers":
        partition_dir, num_parts, workdir, threads = self._args
        env = {**thread_env(threads), "DGLBACKEND": "pytorch"}
        ready = [workdir / f"ready-{k}.json" for k in range(num_parts)]
        try:
            for k in range(num_parts):
                ready[k].unlink(missing_ok=True)
                self.procs.append(subprocess.Popen(
                    [sys.executable, "-m", "bgl", "serve", "--partition", str(partition_dir), "--part", str(k),
                     "--bind", "tcp://127.0.0.1:*", "--token", self.token, "--threads", str(threads),
                     "--ready-file", str(ready[k])],
                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=REPO))
            deadline = time.monotonic() + 120
            for k, path in enumerate(ready):
                while not path.exists():
                    if self.procs[k].poll() is not None:
                        err = self.procs[k].stderr.read().decode(errors="replace").strip().splitlines()
                        raise RuntimeError(f"server for part {k} exited with {self.procs[k].returncode}: "
                                           f"{err[-1] if err else 'no output'}")
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"server for part {k} not ready after 120 s")
                    time.sleep(0.05)
                self.addresses.append(json.loads(path.read_text())["address"])
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def rss(self) -> list[int]:
        import psutil

        return [psutil.Process(p.pid).memory_info().rss for p in self.procs]

    def __exit__(self, *exc) -> None:
        from bgl.sampler.client import shutdown

        for addr in self.addresses:
            try:
                shutdown(addr, self.token, timeout=2.0)
            except Exception:
                pass  # terminated below
        for p in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.terminate()
                try:
                    p.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
            if p.stderr:
                p.stderr.close()


# ----------------------------------------------------------------------- workload
def sampling_workload(sampler, seeds_pool: np.ndarray, args, rng, cache=None) -> tuple[float, float, int]:
    """Sample ``args.batches`` batches; return (seeds/s, sampled edges/s, batches done).

    With ``cache``, each batch's input nodes are also fetched through it (untimed),
    which is the cache hit-rate stream.
    """
    import torch

    seconds, seeds_done, edges_done, done = 0.0, 0, 0, 0
    for i in range(args.batches):
        seeds = torch.from_numpy(np.sort(rng.choice(seeds_pool, min(args.batch_size, seeds_pool.size),
                                                    replace=False)))
        t0 = time.perf_counter()
        blocks = sampler.sample_blocks(seeds, args.fanouts, seed=i)
        seconds += time.perf_counter() - t0
        seeds_done += int(seeds.numel())
        edges_done += sum(b.num_edges for b in blocks)
        done += 1
        if cache is not None:
            cache.fetch(blocks[0].src_ids, sampler.fetch_features)
    return seeds_done / seconds, edges_done / seconds, done


def dgl_sampling_rate(store, seeds_pool: np.ndarray, args, rng) -> Optional[float]:
    """DGL's ``sample_neighbors`` + ``to_block`` on the same CSC and seeds (None without DGL)."""
    try:
        import dgl
        import torch
    except ImportError:
        return None
    indptr = torch.from_numpy(np.array(store.indptr))  # copies: DGL wants writable tensors
    indices = torch.from_numpy(np.asarray(store.indices).astype(np.int64))
    g = dgl.graph(("csc", (indptr, indices, torch.arange(indices.shape[0]))), num_nodes=store.num_nodes)
    seconds, done = 0.0, 0
    for i in range(args.batches + 1):  # batch 0 is untimed: DGL builds its sparse formats on first use
        seeds = torch.from_numpy(np.sort(rng.choice(seeds_pool, min(args.batch_size, seeds_pool.size),
                                                    replace=False)))
        t0 = time.perf_counter()
        frontier = seeds
        for fanout in reversed(args.fanouts):  # DGL's own loop: seeds first
            block = dgl.to_block(dgl.sampling.sample_neighbors(g, frontier, fanout), frontier)
            frontier = block.srcdata[dgl.NID]
        if i:
            seconds += time.perf_counter() - t0
            done += int(seeds.numel())
    return done / seconds


def touch_everything(client, bounds: np.ndarray, chunk: int = 1 << 16) -> None:
    """Read every feature row and every adjacency entry of every server once."""
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        for start in range(int(lo), int(hi), chunk):
            ids = np.arange(start, min(start + chunk, int(hi)), dtype=np.int64)
            client.fetch_features(ids)
            client.sample_layer(ids, -1, False, 0)


def dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


# ------------------------------------------------------------------- one size
def measure_size(scale: int, args, workdir: Path) -> SizeResult:
    import torch

    from bgl.cache import make_cache
    from bgl.partition.format import open_partition
    from bgl.sampler import LocalSampler, SamplingClient
    from bgl.store import GraphStore

    r = SizeResult(scale)
    t_start = time.perf_counter()
    store_dir, part_dir = workdir / f"rmat-{scale}", workdir / f"part-{scale}"
    rc, r.ingest_s, r.ingest_rss, out = run_child(
        ["ingest", f"rmat:{scale}", str(store_dir), "--edge-factor", str(args.edge_factor), "--feat-dim",
         str(args.feat_dim), "--num-classes", "8", "--no-progress", "--overwrite"], timeout=args.step_timeout,
        threads=args.threads)
    if rc != 0:
        r.errors.append(f"ingest exited {rc}: {out.strip().splitlines()[-1] if out.strip() else ''}")
        r.ingest_s = r.ingest_rss = None
        return r
    store = GraphStore(store_dir, validate="none")
    r.nodes, r.edges = store.num_nodes, store.num_edges
    rng = np.random.default_rng(scale)
    train = np.asarray(store.train_idx)

    local = LocalSampler(store)
    sampling_workload(local, train, args, np.random.default_rng(0))  # compile / warm the page cache
    r.local_seeds_s, _, _ = sampling_workload(local, train, args, np.random.default_rng(1))
    try:
        r.dgl_seeds_s = dgl_sampling_rate(store, train, args, np.random.default_rng(1))
    except Exception as e:
        r.errors.append(f"dgl sampling: {type(e).__name__}: {e}")

    rc, r.part_s, r.part_rss, out = run_child(
        ["partition", "--method", "bgl", "--parts", str(args.parts), "--num-batches", "0", "--overwrite",
         str(store_dir), str(part_dir)], timeout=args.step_timeout, threads=args.threads)
    if rc != 0:
        r.errors.append(f"partition exited {rc}: {out.strip().splitlines()[-1] if out.strip() else ''}")
        r.part_s = r.part_rss = None
        r.seconds = time.perf_counter() - t_start
        return r
    book = open_partition(part_dir)
    r.edge_cut = (book.meta.get("metrics") or {}).get("edge_cut")
    r.part_store_bytes = [dir_bytes(Path(book.part_path(k))) for k in range(book.num_parts)]
    seeds_pool = np.asarray(book.split("train"))
    try:
        with Servers(part_dir, book.num_parts, workdir, threads=args.threads or 1) as servers:
            r.server_rss_idle = servers.rss()
            with SamplingClient(servers.addresses, timeout=60.0) as client:
                cache = make_cache("fifo", max(1, int(args.cache_frac * book.meta["num_nodes"])),
                                   book.meta["num_nodes"], store.feat_dim, torch.float32, "cpu")
                sampling_workload(client, seeds_pool, args, np.random.default_rng(2))  # warm-up
                r.remote_seeds_s, r.remote_edges_s, _ = sampling_workload(client, seeds_pool, args, rng, cache)
                r.cache_hit_rate = cache.stats()["hit_rate"]
                r.server_rss_workload = servers.rss()
                touch_everything(client, np.asarray(book.bounds))
                r.server_rss_hot = servers.rss()
    except Exception as e:
        r.errors.append(f"servers: {type(e).__name__}: {e}")
    if not args.keep:
        shutil.rmtree(part_dir, ignore_errors=True)
        shutil.rmtree(store_dir, ignore_errors=True)
    r.seconds = time.perf_counter() - t_start
    return r


# ---------------------------------------------------------------------- fit + report
@dataclass(frozen=True)
class LinearFit:
    """``y = intercept + slope * x`` by least squares, with R^2."""

    intercept: float
    slope: float
    r2: float
    n: int

    def __call__(self, x: float) -> float:
        return self.intercept + self.slope * x


def fit_linear(x: Sequence[float], y: Sequence[float]) -> Optional[LinearFit]:
    """Least-squares line through the points (needs >= 2 distinct x); None otherwise."""
    pts = [(float(a), float(b)) for a, b in zip(x, y) if a is not None and b is not None]
    if len(pts) < 2 or len({a for a, _ in pts}) < 2:
        return None
    xs, ys = np.array([p[0] for p in pts]), np.array([p[1] for p in pts])
    A = np.stack([np.ones_like(xs), xs], axis=1)
    (a, b), *_ = np.linalg.lstsq(A, ys, rcond=None)
    pred = a + b * xs
    ss_tot = float(((ys - ys.mean()) ** 2).sum())
    r2 = 1.0 - float(((ys - pred) ** 2).sum()) / ss_tot if ss_tot > 0 else 1.0
    return LinearFit(float(a), float(b), r2, len(pts))


def gib(x: Optional[float]) -> str:
    return "n/a" if x is None else f"{x / 2**30:.2f} GiB"


def mib(x: Optional[float]) -> str:
    return "n/a" if x is None else f"{x / 2**20:.0f} MiB"


def secs(x: Optional[float]) -> str:
    if x is None:
        return "n/a"
    if x >= 3600:
        return f"{x / 3600:.1f} h"
    return f"{x:.1f} s"


def rate(x: Optional[float]) -> str:
    return "n/a" if x is None else f"{x:,.0f}"


def fits_for(results: Sequence[SizeResult]) -> dict[str, Optional[LinearFit]]:
    ok = [r for r in results if r.edges]
    e = [r.edges for r in ok]

    def col(get):
        return [get(r) for r in ok]

    return {
        "ingest_s": fit_linear(e, col(lambda r: r.ingest_s)),
        "ingest_rss": fit_linear(e, col(lambda r: r.ingest_rss)),
        "part_s": fit_linear(e, col(lambda r: r.part_s)),
        "part_rss": fit_linear(e, col(lambda r: r.part_rss)),
        "server_hot_total": fit_linear(e, col(lambda r: sum(r.server_rss_hot) if r.server_rss_hot else None)),
        "part_store_total": fit_linear(e, col(lambda r: sum(r.part_store_bytes) if r.part_store_bytes else None)),
    }


def projections(fits: dict, targets: Sequence[float], machine_mem: float, usable: float) -> list[dict]:
    """Machines, memory per server and partition time for each target edge count.

    A fit whose per-edge slope is not positive (noise over too few or too small
    sizes) projects nothing: a cost that shrinks with the graph is not a model.
    """
    def at(key, edges):
        f = fits.get(key)
        return f(edges) if f is not None and f.slope > 0 else None

    rows = []
    for edges in targets:
        mem = at("server_hot_total", edges)
        machines = max(1, math.ceil(mem / (usable * machine_mem))) if mem else None
        rows.append({
            "edges": edges,
            "server_mem_total": mem,
            "machines": machines,
            "mem_per_server": mem / machines if mem and machines else None,
            "part_s": at("part_s", edges),
            "part_rss": at("part_rss", edges),
            "ingest_s": at("ingest_s", edges),
        })
    return rows


def render(results: Sequence[SizeResult], args, command: str, date: str) -> str:
    fits = fits_for(results)
    machine_mem = args.machine_mem_gib * 2**30
    lines = ["# Scaling: cost per edge, measured and projected", "",
             f"- machine: {args.machine}", f"- date: {date}", f"- command: `{command}`",
             f"- graphs: R-MAT (Graph500 a,b,c,d), edge factor {args.edge_factor}, symmetrised, "
             f"{args.feat_dim}-dim float32 features; partition: `bgl`, {args.parts} parts; sampling: "
             f"batch {args.batch_size}, fanouts {args.fanouts}, {args.batches} batches; cache: FIFO "
             f"{args.cache_frac:.0%} of nodes; threads per process: {args.threads or 'library default'}", "",
             "## Measured", "",
             "| scale | nodes | edges | ingest | ingest peak RSS | partition | partition peak RSS | "
             "server RSS idle / workload / hot (max part) | part store on disk (max) | edge cut | "
             "sampling seeds/s: servers / local / DGL | local/DGL | cache hit rate |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        mx = lambda v: mib(max(v)) if v else "n/a"  # noqa: E731
        ratio = f"{r.local_seeds_s / r.dgl_seeds_s:.2f}x" if r.local_seeds_s and r.dgl_seeds_s else "n/a"
        cut = "n/a" if r.edge_cut is None else f"{r.edge_cut:.3f}"
        hit = "n/a" if r.cache_hit_rate is None else f"{r.cache_hit_rate:.3f}"
        lines.append(
            f"| {r.scale} | {r.nodes:,} | {r.edges:,} | {secs(r.ingest_s)} | {mib(r.ingest_rss)} | {secs(r.part_s)} | "
            f"{mib(r.part_rss)} | {mx(r.server_rss_idle)} / {mx(r.server_rss_workload)} / {mx(r.server_rss_hot)} | "
            f"{mx(r.part_store_bytes)} | {cut} | {rate(r.remote_seeds_s)} / {rate(r.local_seeds_s)} / "
            f"{rate(r.dgl_seeds_s)} | {ratio} | {hit} |")
    errs = [f"- scale {r.scale}: {' '.join(e.split())[:300]}" for r in results for e in r.errors]
    if errs:
        lines += ["", "Errors:", ""] + errs
    lines += ["", "## Linear fits (y = a + b * edges, least squares over the measured sizes)", "",
              "| cost | per edge (b) | fixed (a) | R^2 | sizes |", "|---|---|---|---|---|"]
    units = {"ingest_s": ("µs/edge", 1e6, "s"), "part_s": ("µs/edge", 1e6, "s"),
             "ingest_rss": ("B/edge", 1, "MiB"), "part_rss": ("B/edge", 1, "MiB"),
             "server_hot_total": ("B/edge", 1, "MiB"), "part_store_total": ("B/edge", 1, "MiB")}
    names = {"ingest_s": "ingest time", "part_s": "partition time", "ingest_rss": "ingest peak RSS",
             "part_rss": "partition peak RSS", "server_hot_total": "server RSS, hot, all parts",
             "part_store_total": "part stores on disk, all parts"}
    for key, f in fits.items():
        if f is None:
            lines.append(f"| {names[key]} | n/a | n/a | n/a | <2 |")
            continue
        unit, mul, fixed_unit = units[key]
        fixed = f"{f.intercept:.1f} s" if fixed_unit == "s" else mib(f.intercept)
        lines.append(f"| {names[key]} | {f.slope * mul:.3f} {unit} | {fixed} | {f.r2:.3f} | {f.n} |")
    lines += ["", f"## Projections (*projected*, not measured: linear extrapolation of the fits; servers with "
              f"{args.machine_mem_gib:.0f} GiB of which {args.usable:.0%} usable; same edge factor and "
              f"feature width)", "",
              "| edges | status | server memory, all parts | machines | memory per server | "
              "partition time (1 process) | partition peak RSS | ingest time |", "|---|---|---|---|---|---|---|---|"]
    for r in results:
        if r.edges and r.server_rss_hot:
            tot = sum(r.server_rss_hot)
            lines.append(f"| {r.edges:,} | measured | {gib(tot)} | {len(r.server_rss_hot)} (processes) | "
                         f"{gib(max(r.server_rss_hot))} | {secs(r.part_s)} | {gib(r.part_rss)} | {secs(r.ingest_s)} |")
    for p in projections(fits, [1e9, 1e10], machine_mem, args.usable):
        warn = " (exceeds one machine)" if p["part_rss"] and p["part_rss"] > machine_mem else ""
        lines.append(f"| {p['edges']:,.0f} | *projected* | {gib(p['server_mem_total'])} | "
                     f"{p['machines'] if p['machines'] else 'n/a'} | {gib(p['mem_per_server'])} | "
                     f"{secs(p['part_s'])} | {gib(p['part_rss'])}{warn} | {secs(p['ingest_s'])} |")
    lines += ["", "## Summary", ""]
    pairs = [f"{r.local_seeds_s / r.dgl_seeds_s:.2f}x (2^{r.scale})" for r in results
             if r.local_seeds_s and r.dgl_seeds_s]
    if pairs:
        lines.append("- sampling ratio bgl LocalSampler / DGL sample_neighbors (same seeds and threads): "
                     + ", ".join(pairs))
    for p in projections(fits, [1e9, 1e10], machine_mem, args.usable):
        if p["server_mem_total"] is not None:
            lines.append(f"- projected for {p['edges']:.0e} edges: {p['machines']} machine(s) x "
                         f"{gib(p['mem_per_server'])} server memory, partition {secs(p['part_s'])} "
                         f"(ratio to the largest measured graph: {p['edges'] / max(r.edges for r in results):,.0f}x "
                         f"the edges)")
    lines += ["", "Caveats: server RSS counts the memory-mapped store pages a server has touched; "
              "\"hot\" means every row was read once, the resident size a server needs to serve without "
              "disk reads. The partitioner runs in one process, so its projected memory must fit one "
              "machine (or be chunked). Fits over small graphs include fixed costs (interpreter, numba "
              "compilation) in the intercept. Sampling rates on a shared machine are noisy: compare the "
              "columns of one row (measured side by side), not rows with each other."]
    return "\n".join(lines) + "\n"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--quick", action="store_true", help="scales 16..19 (the run_all size, a few minutes)")
    p.add_argument("--scales", type=int, nargs="+", default=[16, 17, 18, 19, 20, 21])
    p.add_argument("--edge-factor", type=int, default=16)
    p.add_argument("--feat-dim", type=int, default=128)
    p.add_argument("--parts", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--fanouts", type=lambda t: [int(v) for v in t.split(",")], default=[10, 10])
    p.add_argument("--batches", type=int, default=20, help="sampled batches per measurement")
    p.add_argument("--cache-frac", type=float, default=0.1)
    p.add_argument("--budget", type=float, default=540, help="seconds; stop adding sizes when the next "
                   "one (estimated at 2.2x the last) would pass it")
    p.add_argument("--step-timeout", type=float, default=300)
    p.add_argument("--warmup-scale", type=int, default=10, help="untimed first run (0 = none)")
    p.add_argument("--threads", type=int, default=1, help="threads for numba/OpenMP here and in the child "
                   "processes (0 = library defaults)")
    p.add_argument("--machine-mem-gib", type=float, default=256, help="RAM of one server machine")
    p.add_argument("--usable", type=float, default=0.75, help="share of RAM a graph server may use")
    p.add_argument("--machine", default=MACHINE, help="machine description for the report")
    p.add_argument("--workdir", default=None, help="scratch dir for stores (default: a temp dir)")
    p.add_argument("--keep", action="store_true", help="keep the generated stores")
    p.add_argument("--write-results", action="store_true",
                   help="also write bench/results/scaling.md (atomically)")
    p.add_argument("--json", default=None, help="write raw measurements here")
    args = p.parse_args(argv)
    if args.quick:
        args.scales = [16, 17, 18, 19]
        args.budget = min(args.budget, 300)
    return args


#: bench/results/scaling.md from this line on holds the hand-run billion-edge rows
#: (bench/scaling/billion.py); ``--write-results`` rewrites what is above it and keeps the rest.
KEEP_MARKER = "<!-- kept by bench/scaling/rmat_growth.py --write-results: hand-run rows below -->"


def kept_tail(path: Path) -> str:
    """The part of ``path`` from :data:`KEEP_MARKER` on ("" when absent)."""
    if not path.exists():
        return ""
    text = path.read_text()
    at = text.find(KEEP_MARKER)
    return "" if at < 0 else "\n" + text[at:]


def main(argv=None) -> int:
    """Measure, fit, print (and optionally write) the report; 0 when every size ran cleanly.

    Safe to call in-process (the tests do): thread counts apply to this process only inside
    ``thread_limits`` and reach child processes through their ``env=``; ``os.environ`` is
    never written (numba refuses a changed ``NUMBA_NUM_THREADS`` once its pool runs).
    """
    args = parse_args(argv)
    with thread_limits(args.threads):
        return _run(args, argv)


def _run(args, argv) -> int:
    command = shlex.join(["python", "bench/scaling/rmat_growth.py", *(argv if argv is not None else sys.argv[1:])])
    date = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="bgl_scaling_"))
    workdir.mkdir(parents=True, exist_ok=True)
    results: list[SizeResult] = []
    t0 = time.monotonic()
    try:
        if args.warmup_scale:
            # numba compiles each kernel on first use in every fresh process unless its cache is warm;
            # one untimed tiny run fills the caches so compile time does not pose as per-edge cost.
            print(f"[scaling] warm-up at scale {args.warmup_scale} (not reported) ...", flush=True)
            warm = measure_size(args.warmup_scale, args, workdir)
            if warm.errors:
                print(f"[scaling] warm-up errors: {warm.errors}", flush=True)
        for scale in sorted(args.scales):
            if results and results[-1].seconds and \
                    time.monotonic() - t0 + 2.2 * results[-1].seconds > args.budget and len(results) >= 2:
                print(f"[scaling] stopping before scale {scale}: the time budget of {args.budget:.0f} s "
                      f"would be exceeded", flush=True)
                break
            print(f"[scaling] scale {scale} ...", flush=True)
            r = measure_size(scale, args, workdir)
            results.append(r)
            print(f"[scaling] scale {scale}: {r.edges:,} edges in {r.seconds:.1f} s"
                  + (f"; errors: {r.errors}" if r.errors else ""), flush=True)
    finally:
        if not args.workdir and not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    text = render(results, args, command, date)
    print(text)
    if args.write_results:
        out = REPO / "bench" / "results" / "scaling.md"
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text(text + kept_tail(out))
        os.replace(tmp, out)
        print(f"[scaling] wrote {out}")
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in results], indent=1))
    return 0 if results and not any(r.errors for r in results) else 1


if __name__ == "__main__":
    # A script run owns its process: cap the OpenMP/MKL pools before their first use too (equal
    # thread counts keep the DGL comparison fair; on an oversubscribed machine OpenMP spin-waiting
    # made DGL's sampler ~30x slower with the default thread count than with one thread, measured).
    os.environ.setdefault("DGLBACKEND", "pytorch")
    _threads = parse_args(sys.argv[1:]).threads
    if _threads:
        os.environ.update({var: str(_threads) for var in THREAD_ENV_VARS})
    sys.exit(main())
