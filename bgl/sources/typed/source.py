"""What a typed reader hands to the typed store writer, and the writer itself.

Every heterogeneous input (a ``DGLGraph``, per-relation arrays, a typed edge-list directory,
OGB's heterogeneous raw layout, the typed R-MAT generator) becomes a :class:`TypedSource`: a
schema with node counts, one re-iterable stream of TYPE-LOCAL ``(src, dst)`` chunks per
relation (and, optionally, one stream of each relation's int64 edge times), and each node
type's features, labels and splits.  :func:`write_typed_source`
writes the typed store (format version 2, :mod:`bgl.schema`) with the chunked builder of
:mod:`bgl.sources.typed.csc`, so no input has to fit in memory, and atomically (a store is
complete or absent).  :func:`with_reverse` adds reverse relations as ``dgl.AddReverse()`` does.
"""
from __future__ import annotations

import logging
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ...errors import IngestError
from ...output_dir import STORE, check_output
from ...schema import EdgeType, GraphSchema, NodeType
from ...store import GraphStore, StoreWriter, id_dtype_for
from ..csc_build import EdgeChunks, array_chunks
from ..readers.edgelist import TIME_NAME
from ..graph_source import FeatureFill
from .csc import TimeChunks, count_typed

log = logging.getLogger(__name__)

#: Prefix of a reverse relation's name, DGL's (``dgl.AddReverse``: ``(B, "rev_r", A)`` for ``(A, "r", B)``).
REVERSE_PREFIX = "rev_"


@dataclass
class TypedSource:
    """A heterogeneous dataset as read, before it becomes a typed store.

    Attributes
    ----------
    schema : node types with their counts (global ids by type, in this order) and edge types
        (their counts are ignored: the count pass recounts them).
    relations : ``relations[r]`` streams edge type ``r``'s TYPE-LOCAL ``(src, dst)`` int chunks,
        the same edges each call.
    feats : node type -> float/int [count, dim] array or :class:`FeatureFill`; types without are featureless.
    labels : node type -> int [count] (-1 = unlabelled).
    splits : node type -> split name -> TYPE-LOCAL ids (kept in the given order).
    origins : where each relation's edges come from (a file), named in errors; or None.
    times : ``times[r]`` streams edge type ``r``'s int64 edge times, chunk for chunk with
        ``relations[r]`` (:data:`~bgl.sources.typed.csc.TimeChunks`), for every relation or
        None; they become the store's ``timestamp`` edge array in CSC order.
    cleanup : callables run after the store is written (scratch files).
    """

    name: str
    schema: GraphSchema
    relations: list[EdgeChunks]
    feats: dict[str, Any] = field(default_factory=dict)
    labels: dict[str, np.ndarray] = field(default_factory=dict)
    splits: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    num_edges_hint: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    origins: list[str] | None = None
    times: list[TimeChunks] | None = None
    ndata: dict[str, np.ndarray] = field(default_factory=dict)
    cleanup: list[Callable[[], None]] = field(default_factory=list)

    def close(self) -> None:
        """Run the ``cleanup`` callables once; safe to call again."""
        for fn in self.cleanup:
            fn()
        self.cleanup.clear()


def arrays_source(schema: GraphSchema, rel_edges: Sequence[tuple[np.ndarray, np.ndarray]], *,
                  feats=None, labels=None, splits=None, name: str = "", extra=None,
                  times: Sequence[np.ndarray] | None = None) -> TypedSource:
    """A :class:`TypedSource` over in-memory per-relation ``(src, dst)`` arrays (type-local ids);
    ``times[r]``: relation ``r``'s integer edge times, one per edge (every relation or None)."""
    if len(rel_edges) != len(schema.edge_types):
        raise ValueError(f"{len(rel_edges)} edge lists for {len(schema.edge_types)} edge types")
    streams = None
    if times is not None:
        if len(times) != len(rel_edges):
            raise ValueError(f"{len(times)} edge time arrays for {len(rel_edges)} edge types (all or none)")
        streams = [array_times(np.asarray(t)) for t in times]
    return TypedSource(name, schema, [array_chunks(np.asarray(s), np.asarray(d)) for s, d in rel_edges],
                       dict(feats or {}), dict(labels or {}), {k: dict(v) for k, v in (splits or {}).items()},
                       num_edges_hint=sum(int(np.asarray(s).shape[0]) for s, _ in rel_edges), extra=dict(extra or {}),
                       times=streams)


def array_times(times: np.ndarray, chunk: int = 1 << 22) -> TimeChunks:
    """:data:`~bgl.sources.typed.csc.TimeChunks` over an in-memory array, chunked as
    :func:`~bgl.sources.csc_build.array_chunks` chunks the edges (same default ``chunk``)."""
    def gen():
        for s in range(0, times.shape[0], chunk):
            yield times[s : s + chunk]
    return gen


def schema_of(node_counts: Mapping[str, int], canonical_etypes: Sequence[tuple[str, str, str]],
              edge_counts: Sequence[int] = ()) -> GraphSchema:
    """A schema with node types in the given order (offsets by count) and the given edge types."""
    nts, off = [], 0
    for name, c in node_counts.items():
        nts.append(NodeType(str(name), off, int(c)))
        off += int(c)
    ets = tuple(EdgeType(str(a), str(b), str(c), int(edge_counts[i]) if len(edge_counts) else 0)
                for i, (a, b, c) in enumerate(canonical_etypes))
    return GraphSchema(tuple(nts), ets)


# ------------------------------------------------------------------ reverse relations
def _swapped(chunks: EdgeChunks) -> EdgeChunks:
    def gen():
        for s, d in chunks():
            yield d, s
    return gen


def _chained(*streams):
    def gen():
        for chunks in streams:
            yield from chunks()
    return gen


def with_reverse(src: TypedSource) -> TypedSource:
    """``src`` with reverse edges added as ``dgl.AddReverse()(g)`` adds them (DGL's R-GCN examples).

    Edge type ``(A, r, B)`` with ``A != B`` gets the new type ``(B, "rev_r", A)`` holding every edge
    reversed, unless the graph already has that type (then it is left as it is) or ``r`` is
    ``rev_q`` of an existing ``(B, q, A)`` (it is a reverse itself); a type with
    ``A == B`` gets its reversed edges appended to its own edges (DGL's default
    ``sym_new_etype=False``: ``paper cites paper`` becomes both directions).  The edge types are
    then in DGL's order (sorted canonical types), so the store equals the one of
    ``bgl.ingest(dgl.AddReverse()(g))`` for the same graph.  Nothing is read here: the new
    relations stream the old ones swapped.  A reversed edge carries its edge's time
    (``src.times``), as ``AddReverse(copy_edata=True)`` copies edge data.
    """
    have = set(src.schema.canonical_etypes)
    streams: dict[tuple[str, str, str], EdgeChunks] = {}
    origins: dict[tuple[str, str, str], str] = {}
    times: dict[tuple[str, str, str], TimeChunks] = {}
    for r, (e, chunks) in enumerate(zip(src.schema.edge_types, src.relations)):
        origin = src.origins[r] if src.origins else f"edge type {e.canonical}"
        when = src.times[r] if src.times is not None else None
        if e.src == e.dst:
            streams[e.canonical] = _chained(chunks, _swapped(chunks))
            origins[e.canonical] = f"{origin} (and its reverse, add_reverse)"
            times[e.canonical] = _chained(when, when)
            continue
        streams[e.canonical], origins[e.canonical], times[e.canonical] = chunks, origin, when
        rev = (e.dst, REVERSE_PREFIX + e.rel, e.src)
        if e.rel.startswith(REVERSE_PREFIX) and (e.dst, e.rel[len(REVERSE_PREFIX):], e.src) in have:
            continue  # it is the reverse of another relation
        if rev in have:
            log.info("add_reverse: %s already has its reverse %s; left as it is", e.canonical, rev)
        else:
            streams[rev], origins[rev] = _swapped(chunks), f"{origin} (reversed, add_reverse)"
            times[rev] = when
    order = sorted(streams)
    schema = GraphSchema(src.schema.node_types, tuple(EdgeType(*c) for c in order))
    hint = None if src.num_edges_hint is None else 2 * src.num_edges_hint
    return replace(src, schema=schema, relations=[streams[c] for c in order], num_edges_hint=hint,
                   origins=[origins[c] for c in order], extra={**src.extra, "add_reverse": "dgl.AddReverse"},
                   times=None if src.times is None else [times[c] for c in order])


# ------------------------------------------------------------------ node data
def node_data_schema(schema: GraphSchema, feats: Mapping[str, Any], labels: Mapping[str, Any],
                     splits: Mapping[str, Mapping[str, Any]], where: str = "") -> GraphSchema:
    """``schema`` with each type's feature width/dtype, labels and split sizes, all checked.

    ``feats`` values are arrays ``[count, dim]`` or :class:`FeatureFill` (whose rows its ``fill``
    checks). Raises ValueError naming the type (prefixed by ``where``) for a wrong row count or
    shape, a non-integer label, or a split id outside the type's ``[0, count)``.
    """
    pre = f"{where}: " if where else ""
    for nt in (*feats, *labels, *splits):
        if nt not in schema.ntypes:
            raise ValueError(f"{pre}unknown node type {nt!r}; the graph has {schema.ntypes}")
    nts = []
    for t in schema.node_types:
        f, y = feats.get(t.name), labels.get(t.name)
        if f is not None and not isinstance(f, FeatureFill):
            if f.ndim != 2:
                raise ValueError(f"{pre}node type {t.name!r}: features must be 2-D [num_nodes, dim], got shape {f.shape}")
            if f.shape[0] != t.count:
                raise ValueError(f"{pre}node type {t.name!r} has {t.count} nodes but its features have {f.shape[0]} rows")
        num_classes = 0
        if y is not None:
            if y.shape != (t.count,):
                raise ValueError(f"{pre}node type {t.name!r} has {t.count} nodes but its labels have shape {y.shape}")
            if y.dtype.kind not in "iu":
                raise ValueError(f"{pre}node type {t.name!r}: labels must be integers, got dtype {y.dtype}")
            if y.size and int(y.min()) < -1:
                raise ValueError(f"{pre}node type {t.name!r}: label {int(y.min())} < -1 (only -1 marks unlabelled)")
            num_classes = int(y.max()) + 1 if y.size else 0
        sizes = {}
        for split_name, ids in splits.get(t.name, {}).items():
            ids = np.asarray(ids)
            if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= t.count):
                bad = int(ids.min()) if int(ids.min()) < 0 else int(ids.max())
                raise ValueError(f"{pre}split {split_name!r} of node type {t.name!r} holds id {bad} outside "
                                 f"[0, {t.count})")
            sizes[split_name] = int(ids.shape[0])
        dim = 0 if f is None else (f.dim if isinstance(f, FeatureFill) else int(f.shape[1]))
        dtype = None if f is None else np.dtype(f.dtype).name
        nts.append(NodeType(t.name, t.offset, t.count, dim, dtype, y is not None, num_classes, sizes))
    return GraphSchema(tuple(nts), schema.edge_types)


# ------------------------------------------------------------------ the writer
def write_typed_source(src: TypedSource, out_dir, *, overwrite: bool = False, progress: bool = False,
                       fill_bytes: int | None = None) -> GraphStore:
    """Build and atomically write the typed store of ``src``; returns it opened.

    Every edge is kept as given (no symmetrizing, self-loops and repeated edges stay), each row's
    in-edges grouped by relation id, input order inside a relation: the bytes
    :func:`bgl.sources.hetero.fused_csc` gives for the same edges.  ``fill_bytes`` bounds the
    builder's buffer (default: 40 % of MemAvailable); the store's ``meta.extra["csc_build"]``
    records the buckets and the bytes per edge it used.

    Raises
    ------
    IngestError for an id outside its type, node data that does not fit its type (each naming
    the type and the value) or a stream that changed between passes.
    """
    out = check_output(out_dir, STORE, overwrite)  # before the expensive part
    try:
        feats = {k: (v if isinstance(v, FeatureFill) else np.asarray(v)) for k, v in src.feats.items()}
        labels = {k: np.asarray(v) for k, v in src.labels.items()}
        try:
            node_data_schema(src.schema, feats, labels, src.splits, src.name)  # fail before reading edges
        except ValueError as e:
            raise IngestError(str(e)) from None
        n = src.schema.num_nodes
        if n <= 0:
            raise IngestError(f"{src.name}: graph has {n} nodes")
        check_typed_node_memory(src)
        counts = count_typed(src.schema, src.relations, progress=progress, total_edges=src.num_edges_hint,
                             origins=src.origins, times=src.times)
        full = node_data_schema(src.schema.with_counts(edge_counts=counts.edge_counts), feats, labels, src.splits)
        id_dtype = id_dtype_for(n)
        plan = counts.plan(id_dtype, fill_bytes)
        extra = {**src.extra, "csc_build": plan}
        with StoreWriter(out, n, counts.num_edges, name=src.name, extra=extra, overwrite=overwrite) as w:
            w.save_array("indptr", counts.indptr)
            _write_csc(w, counts, id_dtype, fill_bytes, progress)
            for nt, f in feats.items():
                if isinstance(f, FeatureFill):
                    arr = w.create_typed(f"feat/{nt}", (full.node_type(nt).count, f.dim), np.dtype(f.dtype))
                    f.fill(arr)
                    arr.flush()
                    del arr
                else:
                    w.save_typed(f"feat/{nt}", np.ascontiguousarray(f))
            for nt, y in labels.items():
                w.save_typed(f"label/{nt}", y.astype(np.int64, copy=False))
            for nt, named in src.splits.items():
                for split_name, ids in named.items():
                    w.save_typed(f"split/{nt}/{split_name}_idx", np.asarray(ids, np.int64))
            w.save_node_arrays(src.ndata)
            w.set_schema(full.to_dict(), kept={"self_loops": counts.self_loops, "duplicates": counts.repeats})
    finally:
        src.close()
    log.info("wrote %s: %d nodes of %d types, %d edges of %d relations (%d self-loops and %d repeated edges "
             "kept)", out, n, len(full.node_types), counts.num_edges, len(full.edge_types), counts.self_loops,
             counts.repeats)
    return w.store


#: Per-node memory of the typed builder: row offsets, count-pass counts, fill cursors (8 B each).
TYPED_BYTES_PER_NODE = 24


def check_typed_node_memory(src: TypedSource, available: int | None = None) -> None:
    """IngestError before any allocation when the node counts cannot fit in memory, naming the
    largest type (a stray id in an edge list without declared counts is the usual cause)."""
    import psutil

    need = src.schema.num_nodes * TYPED_BYTES_PER_NODE
    have = psutil.virtual_memory().available if available is None else int(available)
    if need <= have:
        return
    big = max(src.schema.node_types, key=lambda t: t.count)
    raise IngestError(f"{src.name}: {src.schema.num_nodes:,} nodes ({big.count:,} of type {big.name!r}) need about "
                      f"{need / 2**30:,.1f} GiB to ingest ({TYPED_BYTES_PER_NODE} B per node), "
                      f"{have / 2**30:,.1f} GiB available: declare the node counts (nodes.json) or relabel the ids")


def _write_csc(w: StoreWriter, counts, id_dtype, fill_bytes, progress) -> None:
    """``indices`` and ``etype`` (and with edge times the ``timestamp`` edge array, listed in
    ``meta.json`` as every edge array is) straight into the store's ``.npy`` files, appended
    bucket by bucket."""
    e = counts.num_edges
    rel_dtype = counts.schema.etype_dtype()
    timed = counts.times is not None
    if e == 0:
        w.save_array("indices", np.zeros(0, id_dtype))
        w.save_typed("etype", np.zeros(0, rel_dtype))
        if timed:
            w.save_edge_array(TIME_NAME, np.zeros(0, np.int64))
        return
    arrays = [w.create_array("indices", (e,), id_dtype), w.create_typed("etype", (e,), rel_dtype)]
    if timed:
        arrays.append(w.create_edge_array(TIME_NAME, (e,), np.int64))
    # each .npy's header length and file: the data follow the header
    places = [(a.offset, a.filename) for a in arrays]
    del arrays
    with ExitStack() as stack:
        files = [stack.enter_context(open(name, "r+b")) for _, name in places]
        for f, (at, _) in zip(files, places):
            f.seek(at)
        counts.fill(files[0], files[1], id_dtype, fill_bytes=fill_bytes, progress=progress,
                    times_out=files[2] if timed else None)
