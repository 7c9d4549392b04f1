"""Chunked builder of the fused typed CSC (see :mod:`bgl.schema`) for inputs larger than memory.

Edges arrive per relation as re-iterable streams of TYPE-LOCAL ``(src, dst)`` chunks.  Two
passes, as the untyped builder (:mod:`bgl.sources.csc_build`) does:

1. :func:`count_typed` reads every relation once: each id is checked against its type's count
   (the error names the relation, the end, the id and the edge), and each global row's
   in-degree is counted.  The row offsets are then final: typed stores keep every edge as
   given (DGL's heterograph semantics: self-loops and repeated edges stay), so no
   de-duplication changes them.
2. :meth:`TypedCounts.fill` scatters, per *bucket* (a row range whose entries fit the fill
   budget), each relation's chunks into an anonymous buffer in stream order, relations in
   ascending id.  That is already the order ``bgl.sources.hetero.fused_csc`` gets from its
   stable sort by (destination, relation): each row grouped by relation, input order within
   a relation, so no per-row sort is needed and the bytes are the same.  Finished buckets are
   appended to the output files sequentially (every output byte written once).  A relation
   whose destination type does not meet the bucket's rows is not read for it.

Memory while building: 8 B per node of row offsets (they become ``indptr``), 8 B per node of
counts during the count pass (freed before the fill), 8 B per row of the bucket (cursors) and
the bucket buffer, ``id itemsize + etype itemsize`` (4 + 1 B while ids fit int32) per entry,
at most the fill budget (40 % of MemAvailable by default); with edge times (``times=``, the
``timestamp`` edge array) 8 B more per entry, scattered through the same cursors, so a bucket
holds fewer rows.  Nothing grows with the edge count beyond the buffer; a graph bigger than the
budget costs one more read of the relations whose destination type a bucket holds.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from itertools import zip_longest
from typing import BinaryIO, Callable, Iterator, Sequence

import numpy as np

from ...errors import IngestError
from ...schema import GraphSchema
from . import _csc_kernels as K
from ..csc_build import EdgeChunks, _as_ids, default_fill_bytes, row_buckets

log = logging.getLogger(__name__)

#: A re-iterable stream of one relation's int64 edge times, chunk ``k`` as long as chunk ``k`` of
#: the relation's ``(src, dst)`` stream (the edges' times in their input order).
TimeChunks = Callable[[], Iterator[np.ndarray]]


@dataclass
class TypedCounts:
    """What the count pass learned: the final ``indptr`` and the edge count of every relation.

    ``indptr`` int64 [N + 1] over global ids; ``edge_counts`` int64 [R]; ``build_bytes`` is the
    builder's peak working memory for the fill it last ran (0 before), for the store's record.
    ``times``: each relation's :data:`TimeChunks`, or None (no edge times).
    """

    schema: GraphSchema
    relations: Sequence[EdgeChunks]
    indptr: np.ndarray
    edge_counts: np.ndarray
    times: Sequence[TimeChunks] | None = None
    buckets: int = 0
    build_bytes: int = 0
    self_loops: int = 0  # kept v -> v edges, counted by the fill (typed stores keep every edge)
    repeats: int = 0  # kept repeats of an edge (same ends and relation), counted by the fill
    _bounds: np.ndarray | None = None
    _widest: int = 0

    @property
    def num_edges(self) -> int:
        return int(self.indptr[-1])

    def plan(self, id_dtype, fill_bytes: int | None = None) -> dict:
        """Choose the fill buckets for ``id_dtype`` indices; returns what the store records of the
        build (buckets, fill budget, working bytes per edge and per node, stored bytes per edge)."""
        id_dtype, rel_dtype = np.dtype(id_dtype), self.schema.etype_dtype()
        n, total = self.indptr.shape[0] - 1, self.num_edges
        budget = default_fill_bytes() if fill_bytes is None else int(fill_bytes)
        entry = id_dtype.itemsize + rel_dtype.itemsize + self._time_bytes
        self._bounds = row_buckets(self.indptr, max(1, budget // entry)) if total else np.array([0, n], np.int64)
        b = self._bounds
        widest = int(np.max(self.indptr[b[1:]] - self.indptr[b[:-1]]))
        self.buckets = len(b) - 1
        self.build_bytes = 8 * (n + 1) + 8 * int(np.max(np.diff(b))) + widest * entry
        self._widest = widest
        return {"builder": "typed-chunked", "buckets": self.buckets, "fill_budget_bytes": budget,
                "build_bytes": self.build_bytes,
                "build_bytes_per_edge": round(self.build_bytes / max(total, 1), 2),
                "build_bytes_per_node": round(self.build_bytes / max(n, 1), 2),
                "store_bytes_per_edge": entry, "store_bytes_per_node": 8}

    @property
    def _time_bytes(self) -> int:
        return 0 if self.times is None else np.dtype(np.int64).itemsize

    def fill(self, ids_out: BinaryIO, rel_out: BinaryIO, id_dtype, *, fill_bytes: int | None = None,
             progress: bool = False, times_out: BinaryIO | None = None) -> None:
        """Write the CSC's ``indices`` (``id_dtype``) to ``ids_out`` and its relation ids
        (``schema.etype_dtype()``) to ``rel_out``, both sequentially from their current position
        (buckets from :meth:`plan`, run here when it was not); count the self-loops and repeated
        edges kept (:attr:`self_loops`, :attr:`repeats`) on each bucket while it is in memory.
        With :attr:`times`, the edges' int64 times go to ``times_out`` in the same CSC order.

        Raises
        ------
        IngestError naming the relation when its time stream's chunks do not match its edge
        chunks one for one (or any stream changed since the count pass)."""
        from tqdm import tqdm

        total = self.num_edges
        if total == 0:
            return
        if self._bounds is None:
            self.plan(id_dtype, fill_bytes)
        bounds = self._bounds
        if (self.times is None) != (times_out is None):
            raise ValueError("fill: times_out goes with edge times (TypedCounts.times), and only with them")
        ids = np.empty(self._widest, np.dtype(id_dtype))
        rels = np.empty(self._widest, self.schema.etype_dtype())
        stamps = np.empty(self._widest if self.times is not None else 0, np.int64)
        log.info("typed CSC fill: %d edges of %d relations in %d bucket(s), %.1f B per edge while building "
                 "(%d MiB buffer), %d B per edge stored", total, len(self.relations), self.buckets,
                 self.build_bytes / total, (self._widest * (ids.itemsize + rels.itemsize + stamps.itemsize)) >> 20,
                 ids.itemsize + rels.itemsize + self._time_bytes)
        offsets = self.schema.offsets
        src_t, dst_t = self.schema.relation_ends()
        with tqdm(total=total, unit="edge", unit_scale=True, desc="typed fill", disable=not progress, leave=False) as bar:
            for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
                ptr = self.indptr[lo : hi + 1] - self.indptr[lo]
                cursor = ptr[:-1].copy()
                for r, chunks in enumerate(self.relations):
                    d_lo, d_hi = int(offsets[dst_t[r]]), int(offsets[dst_t[r] + 1])
                    if d_hi <= lo or d_lo >= hi or self.edge_counts[r] == 0:
                        continue  # none of this relation's rows is in the bucket
                    seen = 0
                    for src, dst, when in self._chunks(r):
                        seen += src.size
                        if seen > self.edge_counts[r] or not K.scatter_typed_rows(
                                src, dst, offsets[src_t[r]], d_lo, r, ptr, cursor, ids, rels, lo, hi,
                                when, stamps):
                            raise IngestError(f"edge type {self.schema.edge_types[r].canonical}: the edge stream "
                                              "yielded more edges on a later pass than on its first")
                    if seen != self.edge_counts[r]:
                        raise IngestError(f"edge type {self.schema.edge_types[r].canonical}: the edge stream "
                                          f"yielded {seen} edges on a later pass, {self.edge_counts[r]} on its first")
                if not np.array_equal(cursor, ptr[1:]):
                    raise IngestError("the edge streams yielded different edges on a later pass than on their first")
                loops, repeats = K.count_loops_and_repeats(ptr, ids, rels, lo)  # in memory: no extra read
                self.self_loops += int(loops)
                self.repeats += int(repeats)
                ids[: ptr[-1]].tofile(ids_out)
                rels[: ptr[-1]].tofile(rel_out)
                if times_out is not None:
                    stamps[: ptr[-1]].tofile(times_out)
                bar.update(int(ptr[-1]))

    def _chunks(self, r: int):
        """Relation ``r``'s ``(src, dst, times)`` int64 chunks; ``times`` empty without edge times."""
        none = np.zeros(0, np.int64)
        if self.times is None:
            for src, dst in self.relations[r]():
                yield _as_ids(src), _as_ids(dst), none
            return
        canon = self.schema.edge_types[r].canonical
        for pair, when in zip_longest(self.relations[r](), self.times[r]()):
            if pair is None or when is None:
                raise IngestError(f"edge type {canon}: its edge times end {'after' if pair is None else 'before'} "
                                  "its edges (one time per edge)")
            src, dst = _as_ids(pair[0]), _as_ids(pair[1])
            when = np.asarray(when)
            if when.dtype.kind not in "iu" or when.dtype == np.uint64 or when.shape != src.shape:
                raise IngestError(f"edge type {canon}: a chunk of {src.size} edges came with edge times of "
                                  f"dtype {when.dtype} and shape {when.shape} (one integer time per edge)")
            yield src, dst, np.ascontiguousarray(when, dtype=np.int64)


def count_typed(schema: GraphSchema, relations: Sequence[EdgeChunks], *, progress: bool = False,
                total_edges: int | None = None, origins: Sequence[str] | None = None,
                times: Sequence[TimeChunks] | None = None) -> TypedCounts:
    """The count pass over every relation's stream (``relations[r]`` is edge type ``r``;
    ``origins[r]``, when given, names where its edges come from, e.g. the file, in errors).
    ``times[r]``, when given, streams relation ``r``'s edge times: not read here, kept for the fill.

    Raises
    ------
    IngestError naming the relation, the end (source / destination), the id, its type's node
    count and the edge's position in the relation, for the first id outside its type.
    """
    from tqdm import tqdm

    if len(relations) != len(schema.edge_types):
        raise IngestError(f"{len(relations)} edge streams for {len(schema.edge_types)} edge types")
    if times is not None and len(times) != len(relations):
        raise IngestError(f"{len(times)} edge time streams for {len(relations)} edge types (all or none)")
    offsets = schema.offsets
    src_t, dst_t = schema.relation_ends()
    counts = np.zeros(schema.num_nodes, np.int64)
    edge_counts = np.zeros(len(relations), np.int64)
    with tqdm(total=total_edges, unit="edge", unit_scale=True, desc="typed count", disable=not progress, leave=False) as bar:
        for r, chunks in enumerate(relations):
            s_n = int(offsets[src_t[r] + 1] - offsets[src_t[r]])
            d_n = int(offsets[dst_t[r] + 1] - offsets[dst_t[r]])
            for src, dst in chunks():
                src, dst = _as_ids(src), _as_ids(dst)
                if src.shape != dst.shape:
                    raise IngestError(f"edge type {schema.edge_types[r].canonical}: a chunk has {src.size} "
                                      f"sources but {dst.size} destinations")
                bad = int(K.count_typed_rows(src, dst, s_n, d_n, offsets[dst_t[r]], counts))
                if bad >= 0:
                    i, col = divmod(bad, 2)
                    t = schema.node_types[(src_t if col == 0 else dst_t)[r]]
                    value = int((src if col == 0 else dst)[i])
                    where = f"{origins[r]}: " if origins else ""
                    raise IngestError(f"{where}edge type {schema.edge_types[r].canonical}: {('source', 'destination')[col]} "
                                      f"id {value} at edge {int(edge_counts[r]) + i} is outside node type "
                                      f"{t.name!r}'s [0, {t.count})")
                edge_counts[r] += src.size
                bar.update(src.size)
    indptr = np.zeros(schema.num_nodes + 1, np.int64)
    np.cumsum(counts, out=indptr[1:])
    return TypedCounts(schema, relations, indptr, edge_counts, times)
