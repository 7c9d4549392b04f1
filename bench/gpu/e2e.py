#!/usr/bin/env python
"""GPU check: feature cache on CUDA, miss paths, and GraphSAGE training with bgl vs PyG.

Run through ``bench/gpu_check.sh`` on a machine with an NVIDIA GPU (no DGL
needed).  Sections, each independent (a failure is recorded and the next
section still runs):

1. environment, 2. R-MAT graph (``bgl.sources.rmat.generate_rmat_store``, 128-dim
features), 3. pinned host-to-device bandwidth, 4. miss paths: UVA zero-copy
gather vs CPU gather + pinned copy (``bgl.cache.gpu_gather``), 5. cache on CUDA:
lookup+insert ids/s and hit rate per policy, 6. end-to-end GraphSAGE epochs:
bgl blocks + GPU cache vs an ablation without cache vs PyG ``NeighborLoader``
on the same graph, model widths, fanouts, batch size and seeds; epoch time,
GPU busy share and the ratio.

``--cpu`` is a dry run on a tiny graph and the CPU device (< 60 s), so the
script is exercised by the test suite and cannot rot.  Results go to
``<out>/gpu_e2e.md`` (``--out``, else ``$OUT``, else ``bench/out``).
"""
from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import logging
import os
import platform
import queue
import shlex
import shutil
import subprocess
import sys
import threading
import time
import traceback
import warnings
from pathlib import Path
from typing import Callable, Optional

import numpy as np
import torch
import torch.nn.functional as F

log = logging.getLogger("gpu_e2e")


# ----------------------------------------------------------------------------- report
class Report:
    """Markdown sections collected while the benchmark runs; written after every section."""

    def __init__(self, path: Path, header: list[str]):
        self.path = path
        self.lines = list(header)

    def section(self, title: str, lines: list[str]) -> None:
        self.lines += ["", f"## {title}", ""] + lines
        print(f"\n## {title}\n" + "\n".join(lines), flush=True)
        self.write()

    def write(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text("\n".join(self.lines) + "\n")
        os.replace(tmp, self.path)


def run_section(report: Report, title: str, fn: Callable[[], list[str]], deadline: float) -> bool:
    """Run one section; record its lines, or the error / budget skip, and go on."""
    if time.monotonic() > deadline:
        report.section(title, ["_skipped: the time budget was used up by earlier sections_"])
        return False
    t0 = time.perf_counter()
    try:
        lines = fn()
        ok = True
    except Exception as e:  # a broken section must not cost the remaining ones
        lines = [f"**FAILED**: `{type(e).__name__}: {e}`", "", "```",
                 *traceback.format_exc().splitlines()[-15:], "```"]
        ok = False
    report.section(title, lines + ["", f"_section time: {time.perf_counter() - t0:.1f} s_"])
    return ok


def feat_tensor(store) -> torch.Tensor:
    """The store's feature memmap as a CPU tensor, without a copy (read-only use)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch warns about read-only memmaps
        return torch.from_numpy(np.asarray(store.feat))


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def fmt_rate(x: float) -> str:
    for unit, div in (("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(x) >= div:
            return f"{x / div:.2f} {unit}"
    return f"{x:.1f} "


# ------------------------------------------------------------------------- sections
def probe_uva_isolated(device: torch.device) -> tuple[bool, str]:
    """Probe the UVA gather in a child process first.

    A kernel that dereferenced a bad host pointer would leave this process's
    CUDA context unusable for every later section; in a child it costs only
    the child.
    """
    code = ("import sys, torch; from bgl.cache.gpu_gather import uva_supported; "
            f"sys.exit(0 if uva_supported(torch.device('cuda', {device.index or 0})) else 3)")
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return False, "probe timed out"
    if proc.returncode == 0:
        return True, "probed in a child process"
    return False, f"probe exit {proc.returncode}: {proc.stderr.strip()[-200:]}"


def miss_mode(args, device: torch.device) -> str:
    """Miss path for the 'auto' runs: decided once by the isolated probe."""
    if device.type != "cuda":
        return "auto"
    return "uva" if getattr(args, "uva", False) else "cpu"


def environment(args, device: torch.device) -> list[str]:
    lines = [f"- python {platform.python_version()}, torch {torch.__version__}, numpy {np.__version__}",
             f"- CPU: {os.cpu_count()} cores, {platform.machine()}"]
    if device.type == "cuda":
        p = torch.cuda.get_device_properties(device)
        lines.append(f"- GPU: {p.name}, {p.total_memory / 2**30:.0f} GiB, CUDA {torch.version.cuda}")
        args.uva, why = probe_uva_isolated(device)
        lines.append(f"- UVA zero-copy gather available: {args.uva} ({why})")
    else:
        lines.append("- device: CPU (dry run: UVA and pinned paths are not exercised)")
    for mod in ("cupy", "numba", "torch_geometric", "pyg_lib", "torch_sparse"):
        try:
            m = __import__(mod)
            lines.append(f"- {mod} {getattr(m, '__version__', '?')}")
        except Exception as e:
            lines.append(f"- {mod}: not available ({type(e).__name__})")
    return lines


class Graph:
    """What later sections share: the store, labels, train seeds."""

    store = None
    train: Optional[np.ndarray] = None


def make_graph(args, g: Graph) -> list[str]:
    from bgl.sources.rmat import generate_rmat_store

    path = Path(args.data_dir) / f"rmat-s{args.scale}-ef{args.edge_factor}-d{args.feat_dim}"
    t0 = time.perf_counter()
    g.store = generate_rmat_store(path, args.scale, edge_factor=args.edge_factor, seed=0,
                                  feat_dim=args.feat_dim, num_classes=args.num_classes, overwrite=True)
    secs = time.perf_counter() - t0
    s = g.store
    train = np.asarray(s.splits["train"]) if "train" in s.splits else np.arange(s.num_nodes)
    rng = np.random.default_rng(0)
    if args.train_seeds and train.size > args.train_seeds:
        train = np.sort(rng.choice(train, args.train_seeds, replace=False))
    g.train = train.astype(np.int64)
    lines = [f"- R-MAT scale {args.scale}, edge factor {args.edge_factor}: {s.num_nodes:,} nodes, "
             f"{s.num_edges:,} edges, {s.feat_dim}-dim {s.meta.feat_dtype} features, "
             f"{s.num_classes} classes; generated in {secs:.1f} s",
             f"- seeds per epoch: {g.train.size:,} training nodes"]
    if not args.cpu and s.num_edges < 10_000_000:
        lines.append(f"- **note**: fewer than 10M edges ({s.num_edges:,}); raise --scale")
    return lines


def h2d_bandwidth(args, device, shared: dict) -> list[str]:
    from bgl.cache.gpu_gather import pinned_h2d_bandwidth

    bw = pinned_h2d_bandwidth(device, nbytes=256 << 20)
    shared["h2d"] = bw
    return [f"- pinned host-to-device copy (256 MiB, best of 5): **{bw / 1e9:.2f} GB/s**"]


def miss_paths(args, device, g: Graph, shared: dict) -> list[str]:
    """Gather random rows (a typical batch's misses) through each available miss path."""
    from bgl.cache.gpu_gather import HostFeatureSource

    n = g.store.num_nodes
    k = min(args.miss_batch, n)
    rng = np.random.default_rng(1)
    batches = [torch.from_numpy(rng.integers(0, n, k)) for _ in range(args.miss_repeats)]
    modes = ["auto"]
    if device.type == "cuda":
        modes = ["cpu", "uva"] if getattr(args, "uva", False) else ["cpu"]
    lines = ["| path | rows/call | rows/s | GB/s | share of pinned H2D bandwidth |", "|---|---|---|---|---|"]
    rates = {}
    host = feat_tensor(g.store)  # memmap view; on CUDA each source pins its own copy
    for mode in modes:
        src = HostFeatureSource(host, device=device, mode=mode)
        ids = [b.to(device) for b in batches]
        src(ids[0])  # warm-up (first touch, allocator)
        sync(device)
        t0 = time.perf_counter()
        for b in ids:
            out = src(b)
        sync(device)
        secs = time.perf_counter() - t0
        assert out.shape == (k, g.store.feat_dim)
        rows_s = k * len(ids) / secs
        gbs = rows_s * out.shape[1] * out.element_size() / 1e9
        rates[src.mode] = gbs
        share = f"{gbs * 1e9 / shared['h2d']:.2f}" if "h2d" in shared else "n/a"
        lines.append(f"| {src.mode} | {k:,} | {fmt_rate(rows_s)}rows/s | {gbs:.2f} | {share} |")
        del src
    if "uva" in rates and "cpu" in rates:
        lines += ["", f"- ratio UVA / CPU-gather: **{rates['uva'] / rates['cpu']:.2f}x**"]
    shared["miss_rates"] = rates
    return lines


def sample_id_stream(sampler, train: np.ndarray, args, num_batches: int, device) -> list[torch.Tensor]:
    """Input-node ids of the first ``num_batches`` mini-batches of a shuffled epoch."""
    rng = np.random.default_rng(2)
    order = rng.permutation(train)
    stream = []
    for i in range(num_batches):
        seeds = order[i * args.batch_size:(i + 1) * args.batch_size]
        if seeds.size == 0:
            break
        blocks = sampler.sample_blocks(torch.from_numpy(seeds), args.fanouts, seed=i)
        stream.append(blocks[0].src_ids.to(device))
    return stream


def cache_bench(args, device, g: Graph, shared: dict) -> list[str]:
    from bgl.cache import make_cache, presample_counts
    from bgl.cache.gpu_gather import HostFeatureSource
    from bgl.sampler import LocalSampler

    s = g.store
    sampler = LocalSampler(s)
    stream = sample_id_stream(sampler, g.train, args, args.cache_batches, device)
    total_ids = sum(int(x.numel()) for x in stream)
    capacity = max(1, int(args.cache_frac * s.num_nodes))
    source = HostFeatureSource(feat_tensor(s), device=device, mode=miss_mode(args, device))
    zeros = torch.zeros(s.num_nodes if args.cpu else min(s.num_nodes, 1 << 21), s.feat_dim,
                        dtype=source.dtype, device=device)

    def cache_only(ids: torch.Tensor) -> torch.Tensor:  # isolates the cache's own work
        return zeros[: ids.shape[0]]

    counts = presample_counts(
        lambda seeds, seed: sampler.sample_blocks(torch.from_numpy(np.asarray(seeds)), args.fanouts,
                                                  seed=10_000 + seed)[0].src_ids.numpy(),
        lambda epoch: (g.train[i:i + args.batch_size] for i in range(0, min(g.train.size, 20 * args.batch_size),
                                                                    args.batch_size)),
        epochs=1, num_nodes=s.num_nodes)
    lines = [f"- stream: input nodes of {len(stream)} batches (batch {args.batch_size}, fanouts "
             f"{args.fanouts}), {total_ids:,} ids; capacity {capacity:,} rows "
             f"({args.cache_frac:.0%} of nodes) on {device}",
             f"- miss source: `HostFeatureSource` mode `{source.mode}`", "",
             "| policy | hit rate | lookup+insert ids/s (cache only) | ids/s with real misses |",
             "|---|---|---|---|"]
    def build(policy):
        return make_cache(policy, capacity, s.num_nodes, s.feat_dim, source.dtype, device,
                          degrees=s.in_degrees(), presample_counts=counts)

    for policy in args.policies:
        build(policy).fetch(stream[0], cache_only)  # warm-up: one-time compilation stays untimed
        rates = []
        for miss in (cache_only, source):
            cache = build(policy)
            if hasattr(cache, "preload"):
                cache.preload(miss)
            cache.reset_stats()
            sync(device)
            t0 = time.perf_counter()
            for ids in stream:
                cache.fetch(ids, miss)
            sync(device)
            rates.append(total_ids / (time.perf_counter() - t0))
            hit = cache.stats()["hit_rate"]
            del cache
        lines.append(f"| {policy} | {hit:.3f} | {fmt_rate(rates[0])}ids/s | {fmt_rate(rates[1])}ids/s |")
    return lines


class GpuUtilSampler:
    """Samples ``nvidia-smi`` GPU utilisation every 100 ms while active (None if unavailable)."""

    def __init__(self, device: torch.device):
        self.proc = None
        self.values: list[float] = []
        exe = shutil.which("nvidia-smi")
        if device.type != "cuda" or exe is None:
            return
        idx = device.index or 0
        self.proc = subprocess.Popen([exe, "-i", str(idx), "--query-gpu=utilization.gpu",
                                      "--format=csv,noheader,nounits", "-lms", "100"],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self._t = threading.Thread(target=self._read, daemon=True)
        self._t.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                self.values.append(float(line.strip()))
            except ValueError:
                pass

    def stop(self) -> Optional[float]:
        if self.proc is None:
            return None
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        return float(np.mean(self.values)) / 100 if self.values else None


class EpochClock:
    """One epoch's wall time and device-busy time, appended to a result dict by :meth:`stop`.

    On a GPU the busy time comes from CUDA events around each training step
    (the host clock would count queued, not executed, work); on the CPU it is
    the host time of the steps. ``nvidia-smi`` utilisation is sampled alongside.
    """

    def __init__(self, device: torch.device):
        self.device = device
        self._events: list = []
        self._cpu = 0.0
        self._util = GpuUtilSampler(device)
        sync(device)
        self._t0 = time.perf_counter()

    @contextlib.contextmanager
    def step(self):
        """Time one training step (forward, backward, optimiser)."""
        if self.device.type == "cuda":
            ev = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
            ev[0].record()
            yield
            ev[1].record()
            self._events.append(ev)
        else:
            c0 = time.perf_counter()
            yield
            self._cpu += time.perf_counter() - c0

    def stop(self, result: dict) -> None:
        """Append wall seconds, busy share and nvidia-smi utilisation to ``result``."""
        sync(self.device)
        wall = time.perf_counter() - self._t0
        smi = self._util.stop()
        busy = sum(a.elapsed_time(b) for a, b in self._events) / 1e3 if self._events else self._cpu
        result["epochs"].append(wall)
        result["busy"].append(busy / wall)
        result["smi"].append(smi)


class Prefetcher:
    """One background thread samples blocks ahead of the training loop (bounded queue).

    One thread, not a pool: the sampling kernels are already parallel numba
    code, and concurrent calls into them from several threads are not safe
    with every numba threading layer.
    """

    def __init__(self, make: Callable[[int], object], count: int, depth: int = 4):
        self.q: queue.Queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, args=(make, count), daemon=True)
        self._t.start()

    def _run(self, make, count) -> None:
        try:
            for i in range(count):
                if self._stop.is_set():
                    return
                self.q.put(make(i))
        except BaseException as e:  # hand the error to the consumer
            self.q.put(e)

    def __iter__(self):
        while self._t.is_alive() or not self.q.empty():
            try:
                item = self.q.get(timeout=0.5)
            except queue.Empty:
                continue
            if isinstance(item, BaseException):
                raise item
            yield item

    def close(self) -> None:
        self._stop.set()
        while not self.q.empty():
            self.q.get_nowait()


def bgl_epochs(args, device, g: Graph, variant: str) -> dict:
    """Train ``args.epochs`` epochs with bgl blocks; returns per-epoch times and GPU shares.

    variant ``"cache"``: FIFO GPU cache + auto miss path (UVA when available);
    ``"nocache"``: every input row gathered by the CPU path, no cache.
    """
    from bgl.cache import make_cache
    from bgl.cache.gpu_gather import HostFeatureSource
    from bgl.nn import SAGE
    from bgl.sampler import LocalSampler

    s = g.store
    torch.manual_seed(0)
    sampler = LocalSampler(s)
    labels = torch.from_numpy(np.array(s.label)).to(device)
    host = feat_tensor(s)
    mode = miss_mode(args, device) if variant == "cache" else "cpu"
    source = HostFeatureSource(host, device=device, mode=mode if device.type == "cuda" else "auto")
    policy = "fifo" if variant == "cache" else "none"
    cache = make_cache(policy, max(1, int(args.cache_frac * s.num_nodes)), s.num_nodes, s.feat_dim,
                       source.dtype, device)
    model = SAGE(s.feat_dim, args.hidden, s.num_classes, len(args.fanouts), dropout=0.5).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    result = {"epochs": [], "busy": [], "smi": [], "hit_rate": None, "miss_mode": source.mode}
    for epoch in range(args.epochs):
        order = np.random.default_rng(100 + epoch).permutation(g.train)
        nb = (order.size + args.batch_size - 1) // args.batch_size

        def make(i, order=order, epoch=epoch):
            seeds = torch.from_numpy(order[i * args.batch_size:(i + 1) * args.batch_size])
            return seeds, sampler.sample_blocks(seeds, args.fanouts, seed=epoch * 1_000_003 + i)

        cache.reset_stats()
        clock = EpochClock(device)
        pre = Prefetcher(make, nb, depth=args.prefetch)
        try:
            for seeds, blocks in pre:
                blocks = [b.to(device, non_blocking=True) for b in blocks]
                x = cache.fetch(blocks[0].src_ids, source)
                y = labels[seeds.to(device, non_blocking=True)]
                with clock.step():
                    loss = F.cross_entropy(model(blocks, x), y)
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    opt.step()
        finally:
            pre.close()
        clock.stop(result)
        result["hit_rate"] = cache.stats()["hit_rate"]
        result["loss"] = loss.item()
    return result


def bgl_dataloader_epochs(args, device, g: Graph) -> dict:
    """The same training through ``bgl.DataLoader`` (the drop-in DGL loader) with bgl blocks.

    Proximity order, FIFO cache, and the stage pipeline named by ``--loader-pipeline``;
    features arrive in ``blocks[0].srcdata['feat']``, labels in ``blocks[-1].dstdata['label']``.
    """
    import bgl
    from bgl.nn import SAGE

    s = g.store
    torch.manual_seed(0)
    model = SAGE(s.feat_dim, args.hidden, s.num_classes, len(args.fanouts), dropout=0.5).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    result = {"epochs": [], "busy": [], "smi": [], "hit_rate": None, "miss_mode": "DataLoader's"}
    loader = bgl.DataLoader(s, torch.from_numpy(g.train), bgl.NeighborSampler(args.fanouts), device=device,
                            batch_size=args.batch_size, shuffle=True, cache="fifo", cache_ratio=args.cache_frac,
                            order="proximity", pipeline=args.loader_pipeline, blocks="bgl")
    with loader:
        for epoch in range(args.epochs):
            loader.set_epoch(epoch)
            clock = EpochClock(device)
            for _input_nodes, _output_nodes, blocks in loader:
                x, y = blocks[0].srcdata["feat"], blocks[-1].dstdata["label"]
                with clock.step():
                    loss = F.cross_entropy(model(blocks, x), y)
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    opt.step()
            clock.stop(result)
            stats = loader.cache_stats()
            result["hit_rate"] = stats.get("hit_rate") if stats else None
    return result


def pyg_epochs(args, device, g: Graph) -> dict:
    """The same training with PyG's NeighborLoader and PyG SAGEConv layers."""
    from torch_geometric.data import Data
    from torch_geometric.loader import NeighborLoader
    from torch_geometric.nn import SAGEConv as PygSAGEConv

    s = g.store
    indptr = np.asarray(s.indptr)
    dst = np.repeat(np.arange(s.num_nodes, dtype=np.int64), np.diff(indptr))
    edge_index = torch.stack([torch.from_numpy(np.asarray(s.indices).astype(np.int64)), torch.from_numpy(dst)])
    data = Data(x=feat_tensor(s), edge_index=edge_index,
                y=torch.from_numpy(np.asarray(s.label)), num_nodes=s.num_nodes)
    t0 = time.perf_counter()
    # PyG's num_neighbors[0] applies to the seeds; DGL/bgl's fanouts[-1] does.
    loader = NeighborLoader(data, num_neighbors=list(reversed(args.fanouts)), batch_size=args.batch_size,
                            input_nodes=torch.from_numpy(g.train), shuffle=True,
                            num_workers=args.pyg_workers, persistent_workers=args.pyg_workers > 0)
    setup = time.perf_counter() - t0

    class PygSAGE(torch.nn.Module):
        def __init__(self, widths):
            super().__init__()
            self.layers = torch.nn.ModuleList(PygSAGEConv(a, b) for a, b in zip(widths, widths[1:]))

        def forward(self, x, edge_index):
            for i, conv in enumerate(self.layers):
                x = conv(x, edge_index)
                if i != len(self.layers) - 1:
                    x = F.dropout(F.relu(x), 0.5, self.training)
            return x

    torch.manual_seed(0)
    widths = [s.feat_dim] + [args.hidden] * (len(args.fanouts) - 1) + [s.num_classes]
    model = PygSAGE(widths).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    result = {"epochs": [], "busy": [], "smi": [], "setup": setup}
    for _ in range(args.epochs):
        clock = EpochClock(device)
        for batch in loader:
            batch = batch.to(device, non_blocking=True)
            with clock.step():
                out = model(batch.x, batch.edge_index)[: batch.batch_size]
                loss = F.cross_entropy(out, batch.y[: batch.batch_size])
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
        clock.stop(result)
    return result


MAIN_RUN = "bgl (FIFO GPU cache, auto miss path)"
ABLATION_RUN = "bgl ablation (no cache, CPU gather)"
PYG_RUN = "PyG NeighborLoader"


def training(args, device, g: Graph) -> list[str]:
    """bgl's loop first, then the PyG baseline, then the extra bgl rows while time is left."""
    runs: dict[str, dict] = {MAIN_RUN: bgl_epochs(args, device, g, "cache")}
    problems: list[str] = []
    extra = [(PYG_RUN, lambda: pyg_epochs(args, device, g)),
             (ABLATION_RUN, lambda: bgl_epochs(args, device, g, "nocache")),
             (f"bgl.DataLoader ({args.loader_pipeline} pipeline, proximity order, FIFO cache)",
              lambda: bgl_dataloader_epochs(args, device, g))]
    for name, run in extra:
        if name == PYG_RUN and args.skip_pyg:
            problems.append("PyG skipped (--skip-pyg)")
            continue
        if time.monotonic() > args.deadline:
            problems.append(f"{name}: skipped, the time budget is used up")
            continue
        try:
            runs[name] = run()
        except ImportError as e:  # e.g. PyG's NeighborLoader without pyg-lib / torch-sparse
            problems.append(f"**{name} unavailable**: `{e}`")
        except Exception as e:  # keep the rows that did run
            problems.append(f"**{name} failed**: `{type(e).__name__}: {e}`")
    share = ("GPU busy share: model fwd+bwd+step / epoch (CUDA events)" if device.type == "cuda"
             else "compute share: model fwd+bwd+step / epoch (CPU dry run)")
    lines = [f"- model: {len(args.fanouts)}-layer GraphSAGE (mean), hidden {args.hidden}, fanouts "
             f"{args.fanouts} (DGL order), batch {args.batch_size}, {g.train.size:,} seeds/epoch, "
             f"{args.epochs} epochs; times are of the last epoch", "",
             f"| loader | epoch time (s) | {share} | nvidia-smi util | notes |",
             "|---|---|---|---|---|"]
    for name, r in runs.items():
        smi = f"{r['smi'][-1]:.2f}" if r["smi"] and r["smi"][-1] is not None else "n/a"
        notes = []
        if r.get("hit_rate") is not None:
            notes.append(f"hit rate {r['hit_rate']:.3f}, miss path {r['miss_mode']}")
        if "setup" in r:
            notes.append(f"loader setup {r['setup']:.1f} s")
        epochs = ", ".join(f"{t:.2f}" for t in r["epochs"])
        lines.append(f"| {name} | {r['epochs'][-1]:.2f} (all: {epochs}) | {r['busy'][-1]:.2f} | {smi} | "
                     f"{'; '.join(notes)} |")
    ours = runs[MAIN_RUN]["epochs"][-1]
    lines.append("")
    if ABLATION_RUN in runs:
        lines.append(f"- ratio ablation/bgl epoch time: **{runs[ABLATION_RUN]['epochs'][-1] / ours:.2f}x**")
    if PYG_RUN in runs:
        lines.append(f"- ratio PyG/bgl epoch time: **{runs[PYG_RUN]['epochs'][-1] / ours:.2f}x** "
                     f"(>1 means bgl is faster)")
    lines += [f"- {p}" for p in problems]
    return lines


# ----------------------------------------------------------------------------- main
def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--cpu", action="store_true", help="dry run: tiny graph on the CPU device (about 20 s; < 60 s unless the machine is loaded)")
    p.add_argument("--scale", type=int, default=20, help="R-MAT scale (2^scale nodes)")
    p.add_argument("--edge-factor", type=int, default=16)
    p.add_argument("--feat-dim", type=int, default=128)
    p.add_argument("--num-classes", type=int, default=16)
    p.add_argument("--fanouts", type=lambda t: [int(v) for v in t.split(",")], default=[5, 10, 15],
                   help="DGL order: the last fanout is applied to the seeds")
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--train-seeds", type=int, default=1 << 17, help="seeds per epoch (0 = whole train split)")
    p.add_argument("--cache-frac", type=float, default=0.1, help="cache capacity as a share of nodes")
    p.add_argument("--cache-batches", type=int, default=60, help="batches in the cache benchmark stream")
    p.add_argument("--policies", nargs="+", default=["none", "fifo", "lru", "static-degree", "presample"])
    p.add_argument("--miss-batch", type=int, default=200_000, help="rows per miss-path call")
    p.add_argument("--miss-repeats", type=int, default=20)
    p.add_argument("--prefetch", type=int, default=4, help="sampled batches queued ahead")
    p.add_argument("--pyg-workers", type=int, default=4)
    p.add_argument("--loader-pipeline", choices=["inline", "processes"], default="processes",
                   help="bgl.DataLoader's pipeline for its training row")
    p.add_argument("--skip-pyg", action="store_true")
    p.add_argument("--budget", type=float, default=330, help="seconds; later sections are skipped past it")
    p.add_argument("--data-dir", default=None, help="where the R-MAT store is written")
    p.add_argument("--out", default=None, help="results dir (default $OUT, else bench/out)")
    args = p.parse_args(argv)
    if args.cpu:  # the dry run: tiny everything, unless given explicitly
        defaults = dict(scale=11, feat_dim=16, fanouts=[4, 4], batch_size=128, hidden=32, epochs=1,
                        train_seeds=512, cache_batches=4, miss_batch=2000, miss_repeats=3, pyg_workers=0,
                        budget=90, loader_pipeline="inline")
        given = {a.split("=")[0].lstrip("-").replace("-", "_") for a in (argv if argv is not None else sys.argv[1:])
                 if a.startswith("--")}
        for k, v in defaults.items():
            if k not in given:
                setattr(args, k, v)
    return args


def main(argv=None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    args = parse_args(argv)
    if args.cpu:
        device = torch.device("cpu")
    elif not torch.cuda.is_available():
        print("no CUDA device: run with --cpu for the dry run", file=sys.stderr)
        return 2
    else:
        device = torch.device("cuda", torch.cuda.current_device())
    out_dir = Path(args.out or os.environ.get("OUT") or Path(__file__).resolve().parents[1] / "out")
    if args.data_dir is None:
        args.data_dir = str(out_dir / "data") if args.cpu else "/tmp/bgl_gpu_e2e"
    deadline = time.monotonic() + args.budget
    args.deadline = deadline
    cmd = shlex.join(["python", "bench/gpu/e2e.py", *(argv if argv is not None else sys.argv[1:])])
    report = Report(out_dir / "gpu_e2e.md", [
        "# bgl GPU check" + (" — CPU DRY RUN (numbers are not GPU results)" if args.cpu else ""), "",
        f"- date: {_dt.datetime.now(_dt.timezone.utc):%Y-%m-%d %H:%M UTC}",
        f"- command: `{cmd}`"])
    g, shared = Graph(), {}
    ok = run_section(report, "Environment", lambda: environment(args, device), deadline)
    ok &= run_section(report, "Graph", lambda: make_graph(args, g), deadline)
    if g.store is None:
        return 1
    if device.type == "cuda":
        ok &= run_section(report, "Pinned host-to-device bandwidth", lambda: h2d_bandwidth(args, device, shared),
                          deadline)
    ok &= run_section(report, "Miss paths (UVA zero-copy vs CPU gather)",
                      lambda: miss_paths(args, device, g, shared), deadline)
    ok &= run_section(report, f"Feature cache on {device.type.upper()}",
                      lambda: cache_bench(args, device, g, shared), deadline)
    ok &= run_section(report, "End-to-end GraphSAGE training: bgl vs PyG",
                      lambda: training(args, device, g), deadline)
    print(f"\nresults: {report.path}")
    if args.cpu:
        shutil.rmtree(args.data_dir, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
