"""KaMinPar (shared-memory multilevel partitioner, METIS-class quality) as the engine.

The store is streamed into a ParHIP file (:mod:`.parhip`) in a work directory,
loaded by KaMinPar (``compress=True``: its compressed graph, TeraPart's memory-lean
representation) and partitioned; the file is deleted afterwards.

Memory (peak RSS, measured on R-MAT 20/24/25 with 2 threads; "entries" = undirected
adjacency entries, both directions, about the store's edge count for a symmetric store and
up to twice that for a directed one):

* ``terapart`` preset: ~11 B/entry + ~60 B/node (the mapped input file, 4 B/entry, is part
  of it while the engine reads it); R-MAT 25 (1.05B entries) 11.5 GB.
* ``default`` preset: ~18 B/entry + ~60 B/node.
* edge weights add ~5 B/entry (4 in the file, ~1 compressed), node weights ~4 B/node.
* fixed: ~0.4 GB (Python, numba, torch imports).

:func:`choose_preset` picks the fastest preset whose estimate fits the budget and raises
:class:`MemoryError` naming the numbers when none does.
"""
from __future__ import annotations

import logging
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .graph_input import GraphInput, release_pages
from .parhip import write_parhip

log = logging.getLogger(__name__)

FIXED_BYTES = 400 << 20
PRESET_BYTES_PER_ENTRY = {"strong": 24.0, "eco": 20.0, "default": 18.0, "terapart": 11.0}
# presets "auto" tries, best quality first; strong/eco only below this many entries (their time)
AUTO_QUALITY_MAX_ENTRIES = 5_000_000
BYTES_PER_NODE = 60.0
EDGE_WEIGHT_BYTES_PER_ENTRY = 5.0
NODE_WEIGHT_BYTES_PER_NODE = 4.0
DEFAULT_BUDGET_SHARE = 0.6


def default_memory_budget() -> int:
    """A safe share (60 %) of the RAM available now (psutil), in bytes."""
    import psutil

    return int(DEFAULT_BUDGET_SHARE * psutil.virtual_memory().available)


def estimate_bytes(preset: str, num_nodes: int, entries: int, *, node_weights: bool,
                   edge_weights: bool) -> int:
    """Peak-RSS estimate of one engine run (see the module docstring)."""
    per_entry = PRESET_BYTES_PER_ENTRY[preset] + (EDGE_WEIGHT_BYTES_PER_ENTRY if edge_weights else 0.0)
    per_node = BYTES_PER_NODE + (NODE_WEIGHT_BYTES_PER_NODE if node_weights else 0.0)
    return int(FIXED_BYTES + per_entry * entries + per_node * num_nodes)


@dataclass(frozen=True)
class EnginePlan:
    """The preset and whether edge weights are used, chosen for a memory budget."""

    preset: str
    edge_weights: bool
    estimate_bytes: int
    budget_bytes: int


def choose_preset(num_nodes: int, entries: int, budget: int, *, node_weights: bool,
                  want_edge_weights: bool, preset: str = "auto", quality_first: bool = True) -> EnginePlan:
    """Best preset that fits ``budget`` (auto: strong for graphs up to 5M entries, then
    default, then terapart); edge weights are dropped before giving up.  Raises MemoryError when nothing fits."""
    presets = [preset]
    if preset == "auto":
        presets = ["default", "terapart"]
        if quality_first and entries <= AUTO_QUALITY_MAX_ENTRIES:
            presets.insert(0, "strong")
    if preset not in ("auto", *PRESET_BYTES_PER_ENTRY):
        raise ValueError(f"unknown KaMinPar preset {preset!r}; choose auto, default or terapart")
    tried = []
    for ew in ([True, False] if want_edge_weights else [False]):
        for p in presets:
            est = estimate_bytes(p, num_nodes, entries, node_weights=node_weights, edge_weights=ew)
            tried.append(f"{p}{' +edge weights' if ew else ''}: {est / 2**30:.1f} GiB")
            if est <= budget:
                return EnginePlan(p, ew, est, budget)
    raise MemoryError(f"partitioning {num_nodes} nodes / {entries} adjacency entries needs more than the "
                      f"memory budget of {budget / 2**30:.1f} GiB ({'; '.join(tried)}); raise "
                      "--memory-budget if the machine has the RAM, or partition on a larger machine")


def _context(preset: str):
    import kaminpar

    return {"terapart": kaminpar.terapart_context, "strong": kaminpar.strong_context,
            "eco": kaminpar.eco_context}.get(preset, kaminpar.default_context)()


DETERMINISTIC_MAX_ENTRIES = 5_000_000


def engine_threads(entries: int = 0) -> int:
    """Threads for the engine: one below ``DETERMINISTIC_MAX_ENTRIES`` adjacency entries (KaMinPar
    is only reproducible for a seed with one thread, and small graphs take < 1 s), else the CPUs
    this process may run on."""
    if entries and entries < DETERMINISTIC_MAX_ENTRIES:
        return 1
    return max(1, len(os.sched_getaffinity(0)))


def run_kaminpar(graph: GraphInput, num_parts: int, seed: int, *, plan: EnginePlan,
                 node_weights: np.ndarray | None = None, crossings: np.ndarray | None = None,
                 weight_scale: float = 1.0, weight_levels: int = 8, eps: float = 0.03,
                 work_dir: str | os.PathLike | None = None) -> np.ndarray:
    """Write the engine input, run KaMinPar with ``plan``, return ``part_of`` int64 [n].

    ``eps``: allowed imbalance of the node weights (max part <= (1 + eps) x average).
    The input file lives in a fresh temporary directory under ``work_dir`` (default: the
    system temp dir) and is removed whatever happens.
    """
    try:
        import kaminpar
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("the KaMinPar engine needs the 'kaminpar' package: pip install kaminpar "
                          "(or pip install 'bgl[partition]')") from e
    n = graph.num_nodes
    if num_parts == 1:
        return np.zeros(n, np.int64)
    tmp = Path(tempfile.mkdtemp(prefix="bgl-kaminpar-", dir=work_dir))
    try:
        f = write_parhip(graph, tmp / "graph.parhip", symmetric=graph.symmetric, node_weights=node_weights,
                         crossings=crossings if plan.edge_weights else None,
                         weight_scale=weight_scale, weight_levels=weight_levels)
        log.info("kaminpar: input %s (%d nodes, %d entries, %.2f GiB), preset %s, edge weights %s",
                 f.path, f.num_nodes, f.num_edges, f.nbytes / 2**30, plan.preset, plan.edge_weights)
        release_pages(graph.indices, graph.indptr)  # the engine's peak must not include store pages
        t0 = time.perf_counter()
        kaminpar.reseed(int(seed))
        g = kaminpar.load_graph(str(f.path), kaminpar.GraphFileFormat.PARHIP, compress=True)
        os.unlink(f.path)  # the engine holds its own (compressed) copy now
        t1 = time.perf_counter()
        threads = engine_threads(f.num_edges)
        engine = kaminpar.KaMinPar(threads, _context(plan.preset))
        result = engine.compute_partition(g, int(num_parts), float(eps))
        log.info("kaminpar: load %.1f s, partition %.1f s (%d threads)", t1 - t0, time.perf_counter() - t1,
                 threads)
        del g, engine
        part_of = np.fromiter(result, np.int64, count=n)
        del result
        return part_of
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def kaminpar_partition(graph: GraphInput, num_parts: int, seed: int = 0, *,
                       preset: str = "auto", memory_budget: int | None = None, eps: float = 0.03,
                       work_dir: str | os.PathLike | None = None) -> np.ndarray:
    """Plain KaMinPar: unit weights, balanced node counts (the anchor ``--method kaminpar``);
    ``preset="auto"`` runs the default preset, or TeraPart when that is over the budget."""
    entries = graph.num_edges if graph.symmetric else 2 * graph.num_edges
    budget = int(memory_budget) if memory_budget else default_memory_budget()
    plan = choose_preset(graph.num_nodes, entries, budget, node_weights=False, want_edge_weights=False,
                         preset=preset, quality_first=False)
    return run_kaminpar(graph, num_parts, seed, plan=plan, eps=eps, work_dir=work_dir)
