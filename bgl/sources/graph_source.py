"""What a format reader hands to the store writer, and the writer itself.

Every reader (npz, Planetoid, edge list, OGB, DGLGraph, R-MAT) produces a
:class:`GraphSource`: a node count, a re-iterable stream of COO edge chunks,
and whatever node data the dataset has.  :func:`write_source` turns it into a
graph store with the chunked builder of ``bgl.sources.csc_build``, adding synthetic
labels/features and a default split where the dataset has none.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..errors import IngestError
from ..output_dir import STORE, WorkDir, check_output
from ..store import GraphStore, StoreWriter, id_dtype_for
from .csc_build import EdgeChunks, build_csc
from .splits import stratified_split
from .synthetic import fill_synthetic_features, synthetic_labels

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FeatureFill:
    """Features too large for RAM: ``fill(out)`` writes float rows into ``out`` [num_nodes, dim]."""

    dim: int
    fill: Callable[[np.ndarray], None]
    dtype: str = "float32"


@dataclass
class GraphSource:
    """A dataset as read from its files, before it becomes a store.

    Attributes
    ----------
    num_nodes : every edge id lies in ``[0, num_nodes)``.
    edges : re-iterable stream of ``(src, dst)`` int chunks (edge ``src -> dst``).
    feat : float [num_nodes, d], a :class:`FeatureFill`, or None.
    label : int [num_nodes] (-1 = unlabelled) or None.
    num_classes : 0 = infer from ``label``.
    splits : {"train": ids, "val": ids, "test": ids} or None (use the default split).
    edata : {name: [num input edges, ...]} per-edge arrays in stream order (weights,
        masks, edge features), or None; the store keeps them in CSC order
        (a symmetrized edge's reverse and a de-duplicated edge take the data of
        its first input edge).
    ndata : {name: [num_nodes]} per-node arrays (node times, :mod:`.node_times`), kept as they are.
    directed : True when the stored edges are one direction of an undirected
        graph or a directed graph that GNNs usually symmetrize; decides the
        default of ``symmetrize``.
    cleanup : callables run after the store is written (scratch files).
    """

    name: str
    num_nodes: int
    edges: EdgeChunks
    num_edges_hint: int | None = None
    feat: Any = None
    label: np.ndarray | None = None
    num_classes: int = 0
    splits: dict[str, np.ndarray] | None = None
    edata: dict[str, Any] | None = None
    ndata: dict[str, np.ndarray] = field(default_factory=dict)
    symmetrize_default: bool = True
    extra: dict[str, Any] = field(default_factory=dict)
    cleanup: list[Callable[[], None]] = field(default_factory=list)

    def close(self) -> None:
        """Run the ``cleanup`` callables once (remove scratch files); safe to call again."""
        for fn in self.cleanup:
            fn()
        self.cleanup.clear()


#: Memory ingest holds per node while building a store: the split's permutation and class
#: arrays, the CSC builder's counts, raw and final offsets, and labels (8 B each, peaks overlap).
INGEST_BYTES_PER_NODE = 48


def check_node_memory(src: GraphSource, available: int | None = None) -> None:
    """IngestError before any allocation when ``src.num_nodes`` cannot fit in memory.

    ``available`` defaults to MemAvailable.  A node count implied by one stray large id in an
    edge list (``extra["num_nodes_from"] == "max id"``) is the usual cause; the message says so.
    """
    import psutil

    n = int(src.num_nodes)
    need = n * INGEST_BYTES_PER_NODE
    have = psutil.virtual_memory().available if available is None else int(available)
    if need <= have:
        return
    where = src.extra.get("source") or src.name
    cost = (f"needs about {_gib(need)} of memory to ingest ({INGEST_BYTES_PER_NODE} B per node), "
            f"{_gib(have)} available")
    if src.extra.get("num_nodes_from") == "max id":
        raise IngestError(f"{where}: node id {n - 1:,} implies {n:,} nodes (ids are used as given), which {cost}: "
                          "relabel the ids to 0..n-1, or pass --num-nodes N (Python: num_nodes=) to have the first "
                          "id >= N reported with its line")
    raise IngestError(f"{where}: {n:,} nodes {cost}: lower the node count (--num-nodes / --scale)")


def _gib(nbytes: int) -> str:
    return f"{nbytes / 2**30:,.1f} GiB"


def _check_node_data(src: GraphSource, feat_dim: int, num_classes: int) -> None:
    n = src.num_nodes
    if n <= 0:
        raise IngestError(f"{src.name}: graph has {n} nodes")
    feat = src.feat
    if feat is not None and not isinstance(feat, FeatureFill):
        feat = np.asarray(feat)
        if feat.ndim != 2:
            raise IngestError(f"{src.name}: features must be 2-D [num_nodes, dim], got shape {feat.shape}")
        if feat.shape[0] != n:
            raise IngestError(
                f"{src.name}: feature row count mismatch: {feat.shape[0]} feature rows for {n} nodes"
            )
        src.feat = feat
    if src.feat is not None and feat_dim:
        have = src.feat.dim if isinstance(src.feat, FeatureFill) else src.feat.shape[1]
        if have != feat_dim:
            raise IngestError(f"{src.name}: dataset has {have}-dim features; --feat-dim {feat_dim} conflicts")
    if src.label is not None:
        label = np.asarray(src.label)
        if label.shape != (n,):
            raise IngestError(f"{src.name}: label row count mismatch: label shape {label.shape} for {n} nodes")
        if label.dtype.kind not in "iu":
            raise IngestError(f"{src.name}: labels must be integers, got dtype {label.dtype}")
        label = label.astype(np.int64, copy=False)
        if label.size and int(label.min()) < -1:
            raise IngestError(f"{src.name}: label {int(label.min())} < -1 (only -1 marks unlabelled)")
        found = int(label.max()) + 1 if label.size else 0
        declared = src.num_classes or found
        if num_classes and num_classes != declared:
            raise IngestError(f"{src.name}: dataset has {declared} classes; --num-classes {num_classes} conflicts")
        if found > declared:
            raise IngestError(f"{src.name}: label {found - 1} >= num_classes {declared}")
        src.label, src.num_classes = label, declared
    for name, ids in (src.splits or {}).items():
        ids = np.asarray(ids)
        if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= n):
            bad = int(ids.min()) if int(ids.min()) < 0 else int(ids.max())
            raise IngestError(f"{src.name}: split {name!r} holds node id {bad} outside [0, {n})")


def write_source(src: GraphSource, out_dir: str | Path, *, feat_dim: int = 0, num_classes: int = 0,
                 symmetrize: bool | None = None, remove_self_loops: bool = True, dedupe: bool = True,
                 seed: int = 0, overwrite: bool = False, progress: bool = False,
                 scratch_dir: str | Path | None = None) -> GraphStore:
    """Build and atomically write the store for ``src`` (see ``bgl.sources.datasets.ingest``)."""
    out = check_output(out_dir, STORE, overwrite)  # fail before the expensive part
    try:
        if feat_dim < 0 or num_classes < 0:
            raise IngestError(f"feat_dim and num_classes must be >= 0, got {feat_dim} and {num_classes}")
        check_node_memory(src)
        _check_node_data(src, feat_dim, num_classes)
        _check_edge_data(src)
        n = src.num_nodes
        sym = src.symmetrize_default if symmetrize is None else bool(symmetrize)
        label, k = src.label, src.num_classes
        if label is None and num_classes:
            label, k = synthetic_labels(n, num_classes, seed), num_classes
        splits = src.splits
        if splits is None:
            splits = stratified_split(label, n, seed)
        with WorkDir(out, "scratch", parent=scratch_dir) as work:
            scratch = work.path
            csc = build_csc(src.edges, n, id_dtype_for(n), scratch, symmetrize=sym,
                            remove_self_loops=remove_self_loops, dedupe=dedupe,
                            progress=progress, total_edges=src.num_edges_hint,
                            track_positions=bool(src.edata))
            extra = {**src.extra, "symmetrize": sym, "remove_self_loops": remove_self_loops,
                     "dedupe": dedupe, "seed": seed, "raw_edges": csc.raw_edges, "input_edges": csc.input_edges,
                     "dropped": {"self_loops": csc.self_loops_dropped, "duplicates": csc.duplicates_dropped},
                     "synthetic_labels": src.label is None and label is not None,
                     "synthetic_features": src.feat is None and feat_dim > 0,
                     "split_source": "dataset" if src.splits is not None else "stratified-60/20/20"}
            with StoreWriter(out, n, csc.num_edges, name=src.name, extra=extra, overwrite=overwrite) as w:
                w.save_array("indptr", csc.indptr)
                if csc.num_edges:
                    log.info("writing %d edges to %s", csc.num_edges, out)
                    ind = w.create_array("indices", (csc.num_edges,), w.id_dtype)
                    for start, ids in csc.iter_indices():
                        ind[start : start + ids.size] = ids
                    ind.flush()
                    del ind
                else:
                    w.save_array("indices", np.zeros(0, w.id_dtype))
                _write_features(w, src.feat, feat_dim, label, n, seed, progress)
                if label is not None:
                    w.save_array("label", label, num_classes=k)
                for name, ids in splits.items():
                    w.save_array(f"{name}_idx", np.sort(np.asarray(ids, np.int64)))
                _write_edge_data(w, src, csc)
                _write_time_order(w, src)
                w.save_node_arrays(src.ndata)
    finally:
        src.close()
    store = w.store
    log.info("wrote %s: %d nodes, %d edges", out, store.num_nodes, store.num_edges)
    return store


def _check_edge_data(src: GraphSource) -> None:
    """Every edge array names a valid file and has one row per input edge (when the count is known)."""
    from ..schema import check_edge_name

    for name, values in (src.edata or {}).items():
        try:
            check_edge_name(name)
        except ValueError as e:
            raise IngestError(f"{src.name}: {e}") from None
        shape = getattr(values, "shape", None)
        if shape is None or len(shape) < 1:
            raise IngestError(f"{src.name}: edge data {name!r} must be an array [num_edges, ...], got {type(values).__name__}")
        if src.num_edges_hint is not None and shape[0] != src.num_edges_hint:
            raise IngestError(f"{src.name}: edge data {name!r} has {shape[0]} rows for {src.num_edges_hint} edges")


def _write_edge_data(w: StoreWriter, src: GraphSource, csc) -> None:
    """Each of ``src.edata`` gathered into CSC order, chunk by chunk, from the builder's edge positions."""
    for name, values in (src.edata or {}).items():
        values = values if isinstance(values, np.ndarray) else np.asarray(values)
        out = w.create_edge_array(name, (csc.num_edges,) + tuple(values.shape[1:]), values.dtype)
        for start, pos in csc.iter_positions():
            if pos.size and int(pos.max()) >= values.shape[0]:
                raise IngestError(f"{src.name}: edge data {name!r} has {values.shape[0]} rows, fewer than the edges")
            out[start : start + pos.size] = values[pos]
        out.flush()
        del out


def _write_time_order(w: StoreWriter, src: GraphSource) -> None:
    """An integer ``timestamp`` edge array gets its rows' time order beside it, ``timestamp.order``
    (:func:`bgl.sampler.temporal.sampling.time_order`: 4 B per edge, nothing when every row is already in
    time order), so temporal samplers read it in place instead of sorting every row at start."""
    from ..sampler.temporal.sampling import DEFAULT_TIME_NAME, ORDER_SUFFIX, time_order

    if DEFAULT_TIME_NAME not in (src.edata or {}):
        return
    times = np.load(w.tmp / "edata" / f"{DEFAULT_TIME_NAME}.npy", mmap_mode="r")
    if times.ndim != 1 or times.dtype.kind not in "iu" or times.dtype == np.uint64 or not times.shape[0]:
        return
    indptr = np.load(w.tmp / "indptr.npy")
    order = time_order(indptr, times.astype(np.int64, copy=False),
                       lambda shape, dtype: w.create_edge_array(DEFAULT_TIME_NAME + ORDER_SUFFIX, shape, dtype))
    if order is not None:
        order.flush()


def _write_features(w: StoreWriter, feat, feat_dim: int, label, n: int, seed: int, progress: bool) -> None:
    if isinstance(feat, FeatureFill):
        out = w.create_array("feat", (n, feat.dim), np.dtype(feat.dtype))
        feat.fill(out)
        out.flush()
    elif feat is not None:
        # float32 is what every GNN layer consumes; keep float16/64 only if given so.
        dtype = feat.dtype if feat.dtype.kind == "f" else np.float32
        w.save_array("feat", np.ascontiguousarray(feat, dtype=dtype))
    elif feat_dim:
        out = w.create_array("feat", (n, feat_dim), np.float32)
        fill_synthetic_features(out, label, seed, progress=progress)
        out.flush()
