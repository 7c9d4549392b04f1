"""bgl.partition: BGL, KaMinPar, METIS and random partitioners plus the partition directory format.

``partition_graph(store, method, num_parts, out_dir)`` computes an assignment,
measures it (:mod:`.metrics`) and writes a partition directory
(:mod:`.format`) that ``open_partition`` reads back as a :class:`PartitionBook`.
"""
from __future__ import annotations

import contextlib
import importlib
import logging
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from bgl.output_dir import WorkDir, remove_stale
from bgl.store import GraphStore

log = logging.getLogger(__name__)

METHODS = ("bgl", "kaminpar", "metis", "random")
# methods that run the KaMinPar engine: they take memory_budget and work_dir
ENGINE_METHODS = ("bgl", "kaminpar")

__all__ = ["METHODS", "PartitionBook", "compute_assignment", "open_partition", "partition_graph"]

# The directory format and the graph input load numba kernels, so they load on first use (PEP 562):
# `bgl partition --help` reads the distributed engines' table (.engines) without them.
_LAZY = {"PartitionBook": "format", "check_out_dir": "format", "open_partition": "format",
         "write_partition": "format", "GraphInput": "graph_input"}
if TYPE_CHECKING:  # the lazy names, spelled out for type checkers and the API reference (griffe)
    from .format import PartitionBook, check_out_dir, open_partition, write_partition
    from .graph_input import GraphInput


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _as_store(store: GraphStore | str | os.PathLike) -> GraphStore:
    store = store if isinstance(store, GraphStore) else GraphStore(store)
    if store.node_offset != 0 or store.global_num_nodes != store.num_nodes:
        raise ValueError(f"{store.path} is a part store (owns [{store.node_offset}, "
                         f"{store.node_offset + store.num_nodes}) of {store.global_num_nodes}); "
                         "partition a whole-graph store")
    return store


def compute_assignment(graph: GraphInput, method: str, num_parts: int, seed: int = 0, **params: Any) -> np.ndarray:
    """``part_of`` int64 [n] for one method; validates ``method`` and ``num_parts``."""
    if method not in METHODS:
        raise ValueError(f"unknown partition method {method!r}; choose one of {', '.join(METHODS)}")
    if not isinstance(num_parts, (int, np.integer)) or num_parts < 1:
        raise ValueError(f"num_parts must be an int >= 1, got {num_parts!r}")
    if num_parts > graph.num_nodes:
        raise ValueError(f"num_parts={num_parts} exceeds the number of nodes ({graph.num_nodes})")
    if method == "random":
        if params:
            raise ValueError(f"random partitioning takes no parameters, got {sorted(params)}")
        from .random_part import random_partition

        return random_partition(graph.num_nodes, int(num_parts), seed)
    if method == "metis":
        from .metis_part import metis_partition

        return metis_partition(graph, int(num_parts), seed, **params)
    if method == "kaminpar":
        from .kaminpar_part import kaminpar_partition

        return kaminpar_partition(graph, int(num_parts), seed, **params)
    from .bgl_part import bgl_partition

    return bgl_partition(graph, int(num_parts), seed, **params)


def partition_graph(store: GraphStore | str | os.PathLike, method: str, num_parts: int,
                    out_dir: str | os.PathLike, seed: int = 0, overwrite: bool = False, *,
                    measure_samples: bool = True, num_batches: int = 200, **params: Any) -> PartitionBook:
    """Partition a whole-graph store and write the partition directory.

    Parameters
    ----------
    store : GraphStore or its directory
    method : ``"bgl"`` | ``"kaminpar"`` | ``"metis"`` | ``"random"``
    num_parts : 1 <= P <= num_nodes
    out_dir : output directory (refused if it exists unless ``overwrite``)
    seed : seeds the method and the remote-sample measurement
    measure_samples : compute ``remote_sample_share`` (``num_batches`` sampled batches)
    **params : method parameters (``bgl``: fields of ``BglParams``, ``memory_budget``;
        ``kaminpar``: ``preset``, ``memory_budget``, ``eps``; ``metis``: ``balance_train``,
        ``ufactor``).  Engine methods write their
        input file in a locked scratch dir next to ``out_dir`` (``work_dir``), not in /tmp.

    Returns
    -------
    PartitionBook of ``out_dir``; ``book.meta["metrics"]`` holds the metrics.

    Raises
    ------
    ValueError for a bad method / part count; FileExistsError for an existing out_dir.
    """
    from . import metrics as M
    from .format import check_out_dir, open_partition, write_partition
    from .graph_input import GraphInput

    store = _as_store(store)
    check_out_dir(out_dir, overwrite, inputs=[store.path])  # fail before the expensive part
    remove_stale(Path(out_dir).absolute().parent)  # work dirs of killed earlier runs
    graph = GraphInput.from_store(store)
    run_params = dict(params)
    with contextlib.ExitStack() as stack:
        if method in ENGINE_METHODS and "work_dir" not in run_params:
            # The engine's input file goes in a locked scratch dir next to out_dir (same disk, not
            # /tmp RAM), which the next writer removes if this run is killed.
            run_params["work_dir"] = str(stack.enter_context(WorkDir(out_dir, "scratch")).path)
        t0 = time.perf_counter()
        part_of = compute_assignment(graph, method, num_parts, seed, **run_params)
        seconds = time.perf_counter() - t0
    rss = M.peak_rss_bytes()
    bal = M.balance(graph, part_of, num_parts)
    share = (M.remote_sample_share(store, graph, part_of, num_parts, num_batches=num_batches, seed=seed)
             if measure_samples else None)
    if graph.num_train == 0:
        log.warning("%s has no training nodes: remote_sample_share is not defined", store.path)
    cut = M.edge_cut(graph, part_of)
    t1 = time.perf_counter()
    book = write_partition(store, part_of, num_parts, out_dir, method=method,
                           params={"seed": seed, **params}, overwrite=overwrite,
                           metrics={})
    write_seconds = time.perf_counter() - t1
    metrics = M.PartitionMetrics(
        edge_cut=cut, remote_sample_share=share, balance_nodes=bal["nodes"], balance_edges=bal["edges"],
        balance_train=bal["train"], seconds=seconds, write_seconds=write_seconds, peak_rss_bytes=rss,
        sampler=M.SAMPLER_NAME if share is not None else "",
    )
    _store_metrics(book, metrics.to_dict())
    return open_partition(book.path)


def _store_metrics(book: PartitionBook, metrics: dict) -> None:
    """Add metrics to partition.json (write temp + rename, so the file is never half-written)."""
    import json

    from .format import META_FILE

    meta = dict(book.meta)
    meta["metrics"] = metrics
    tmp = book.path / (META_FILE + ".tmp")
    tmp.write_text(json.dumps(meta, indent=2))
    os.replace(tmp, book.path / META_FILE)
