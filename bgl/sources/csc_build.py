"""Chunked COO -> CSC builder shared by every ingest format and the R-MAT generator.

The edge stream is read several times, never held whole:

1. counting pass: in-degree of every row (int64 [num_nodes]);
2. fill passes, one per *bucket* (a range of rows whose raw entries fit the
   fill budget): scatter each source id of the bucket's rows into an
   anonymous buffer at ``cursor[dst]``, sort (and de-duplicate) each row
   there, and append the finished rows to the output file sequentially.

Why buckets: scattering straight into a file-backed memmap (the first
design) dirties random file pages that the kernel writes back many times
over; at R-MAT 24 it wrote 85 GB to disk for a 2 GB store, and at R-MAT 25
(a scatter target of 8 GB, past the dirty-page limits) writers were
throttled on every page: 14.5 min for 2x the edges of a 2.3 min run.  Now
every output byte is written once, in order, and the random scatter hits
only anonymous memory.

Memory while filling: the bucket buffer (``min(raw entries, fill budget) *
itemsize``; the budget defaults to :data:`FILL_MEMORY_FRACTION` of available
RAM), the raw row offsets and the row counts (16 B/node), and three int64
arrays over the bucket's rows (cursor, local and final offsets: 24 B/row), so
40 B/node for a graph filled in one bucket; the final offsets (8 B/node) are
allocated after the buffer is freed.  A graph whose raw entries
fit the budget is filled in one pass; a bigger one costs one more read of the
edge stream per extra bucket.

Edge data (``track_positions``): the fill pass also carries each entry's
input-stream position (8 B more per buffered entry, so a bucket holds fewer
entries) and writes the final positions to a scratch file, 8 B per stored
edge; the writer then gathers each edge array into CSC order from it.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator

import numpy as np

from ..errors import IngestError
from . import _csc_kernels as K

log = logging.getLogger(__name__)

#: A callable that returns a fresh iterator of ``(src, dst)`` int64 chunks each call.
EdgeChunks = Callable[[], Iterable[tuple[np.ndarray, np.ndarray]]]

COPY_CHUNK = 1 << 22  # ids per read when copying the scratch file into the store (16 MiB of int32)
#: Share of MemAvailable the fill pass may use for its bucket buffer by default.
FILL_MEMORY_FRACTION = 0.4
MIN_FILL_BYTES = 64 << 20


@dataclass(frozen=True)
class CscResult:
    """Output of :func:`build_csc`.

    ``indptr`` : int64 [num_nodes + 1] (in memory); the first ``num_edges``
    ids of ``indices_file`` (raw ``id_dtype`` binary, no header) are the
    matching sorted in-neighbour lists.  ``input_edges`` is the stream's edge
    count, ``self_loops_dropped`` the ``v -> v`` edges left out of it, and
    ``raw_edges - num_edges`` the repeated entries de-duplication removed.
    """

    indptr: np.ndarray
    indices_file: Path
    num_edges: int
    raw_edges: int
    id_dtype: np.dtype
    positions_file: Path | None = None
    input_edges: int = 0
    self_loops_dropped: int = 0

    @property
    def duplicates_dropped(self) -> int:
        """Stored (directed, after symmetrizing) entries removed as repeats of an earlier one."""
        return self.raw_edges - self.num_edges

    def iter_positions(self, chunk: int = COPY_CHUNK) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(start, pos)``: int64 input-stream position of each stored edge, in CSC order
        (only with ``track_positions``; a reversed or de-duplicated edge has its first input edge's)."""
        if self.positions_file is None:
            raise ValueError("build_csc ran without track_positions")
        with open(self.positions_file, "rb") as f:
            for start in range(0, self.num_edges, chunk):
                yield start, np.fromfile(f, dtype=np.int64, count=min(chunk, self.num_edges - start))

    def iter_indices(self, chunk: int = COPY_CHUNK) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(start, ids)`` blocks of the final indices by plain file reads.

        Plain reads (not a memmap) keep the scratch pages out of this process's RSS.
        """
        item = self.id_dtype.itemsize
        with open(self.indices_file, "rb") as f:
            for start in range(0, self.num_edges, chunk):
                count = min(chunk, self.num_edges - start)
                f.seek(start * item)
                yield start, np.fromfile(f, dtype=self.id_dtype, count=count)


def _check_range(ids: np.ndarray, num_nodes: int, what: str, edge_base: int) -> None:
    bad = int(K.first_out_of_range(ids, 0, num_nodes)) if ids.size else -1
    if bad >= 0:
        raise IngestError(
            f"{what} node id {int(ids[bad])} at edge {edge_base + bad} is outside [0, {num_nodes})"
        )


def _as_ids(a) -> np.ndarray:
    a = np.asarray(a)
    if a.dtype.kind not in "iu":
        raise IngestError(f"edge ids must be integers, got dtype {a.dtype}")
    return np.ascontiguousarray(a, dtype=np.int64)


def build_csc(edge_chunks: EdgeChunks, num_nodes: int, id_dtype: np.dtype, scratch_dir: Path, *,
              symmetrize: bool, remove_self_loops: bool, dedupe: bool,
              progress: bool = False, total_edges: int | None = None,
              fill_bytes: int | None = None, track_positions: bool = False) -> CscResult:
    """Build a CSC adjacency from a re-iterable stream of COO chunks.

    Parameters
    ----------
    edge_chunks : callable returning an iterable of ``(src, dst)`` integer arrays
        (same length each pair); called once per pass, must yield the same edges each time.
    num_nodes : every id must lie in ``[0, num_nodes)``.
    id_dtype : dtype of the stored indices (``id_dtype_for(num_nodes)``).
    scratch_dir : existing directory for the scratch index file (caller removes it).
    symmetrize : also store every edge reversed.
    remove_self_loops, dedupe : drop ``v -> v`` edges / repeated ``(src, dst)`` pairs.
    fill_bytes : bucket buffer size of the fill pass (default: a share of available RAM,
        :func:`default_fill_bytes`); smaller means more passes over the stream.
    track_positions : also write each stored edge's input-stream position
        (:meth:`CscResult.iter_positions`), to carry edge data into CSC order.

    Raises
    ------
    IngestError
        naming the first id outside ``[0, num_nodes)`` and its edge position, or when
        the stream changes between passes.
    """
    id_dtype = np.dtype(id_dtype)
    counts, seen = _count_pass(edge_chunks, num_nodes, symmetrize, remove_self_loops, progress, total_edges)
    raw_indptr = np.zeros(num_nodes + 1, np.int64)
    np.cumsum(counts, out=raw_indptr[1:])
    raw_edges = int(raw_indptr[-1])
    log.debug("counting pass: %d input edges -> %d raw CSC entries", seen, raw_edges)
    # The count pass already knows the self-loops: each other edge became 1 entry (2 symmetrized).
    loops = seen - (raw_edges // 2 if symmetrize else raw_edges) if remove_self_loops else 0

    indices_file = Path(scratch_dir) / "indices.raw"
    positions_file = Path(scratch_dir) / "positions.raw" if track_positions else None
    if raw_edges == 0:
        for file in (indices_file, positions_file):
            if file is not None:
                file.write_bytes(b"")
        return CscResult(np.zeros(num_nodes + 1, np.int64), indices_file, 0, 0, id_dtype, positions_file,
                         seen, loops)
    budget = default_fill_bytes() if fill_bytes is None else int(fill_bytes)
    entry_bytes = id_dtype.itemsize + (8 if track_positions else 0)
    buckets = row_buckets(raw_indptr, max(1, budget // entry_bytes))
    log.info("fill: %d raw entries in %d bucket(s) of <= %d MiB%s", raw_edges, len(buckets) - 1,
             budget >> 20, ", sorting and de-duplicating rows" if dedupe else ", sorting rows")
    widest = int(np.max(raw_indptr[buckets[1:]] - raw_indptr[buckets[:-1]]))
    buf = np.empty(widest, id_dtype)
    pos = np.empty(widest if track_positions else 0, np.int64)
    new_counts = counts  # reuse the buffer: every bucket overwrites its rows' counts
    del counts
    written = 0
    with open(indices_file, "wb") as f, open(positions_file or os.devnull, "wb") as fp:
        for lo, hi in zip(buckets[:-1].tolist(), buckets[1:].tolist()):
            local_ptr = raw_indptr[lo : hi + 1] - raw_indptr[lo]
            _fill_bucket(edge_chunks, seen, local_ptr, buf, pos, lo, hi,
                         symmetrize, remove_self_loops, progress, len(buckets) > 2)
            counts_view = new_counts[lo:hi]
            K.sort_dedupe_rows(local_ptr, buf, counts_view, dedupe, pos)
            new_ptr = np.zeros(hi - lo + 1, np.int64)
            np.cumsum(counts_view, out=new_ptr[1:])
            if dedupe:
                K.compact_rows(local_ptr, new_ptr, buf)
                if track_positions:
                    K.compact_rows(local_ptr, new_ptr, pos)
            buf[: new_ptr[-1]].tofile(f)  # sequential: each output byte written once
            if track_positions:
                pos[: new_ptr[-1]].tofile(fp)
            written += int(new_ptr[-1])
    del buf, pos
    indptr = np.zeros(num_nodes + 1, np.int64)
    np.cumsum(new_counts, out=indptr[1:])
    num_edges = int(indptr[-1])
    assert num_edges == written
    log.info("CSC built: %d edges from %d input edges; dropped %d self-loops and %d duplicate entries",
             num_edges, seen, loops, raw_edges - num_edges)
    return CscResult(indptr, indices_file, num_edges, raw_edges, id_dtype, positions_file, seen, loops)


def default_fill_bytes() -> int:
    """:data:`FILL_MEMORY_FRACTION` of MemAvailable, at least :data:`MIN_FILL_BYTES`."""
    import psutil

    return max(MIN_FILL_BYTES, int(FILL_MEMORY_FRACTION * psutil.virtual_memory().available))


def row_buckets(indptr: np.ndarray, max_entries: int) -> np.ndarray:
    """Row boundaries ``[0, b1, ..., n]`` so each bucket holds at most ``max_entries`` entries.

    A single row longer than ``max_entries`` gets a bucket of its own (the buffer
    then grows to that row).  O(buckets * log n), no per-row Python loop.
    """
    n = indptr.shape[0] - 1
    bounds = [0]
    while bounds[-1] < n:
        lo = bounds[-1]
        # last row end that keeps the bucket within max_entries, at least one row
        hi = int(np.searchsorted(indptr, indptr[lo] + max_entries, side="right")) - 1
        bounds.append(min(n, max(hi, lo + 1)))
    return np.asarray(bounds, np.int64)


def _count_pass(edge_chunks: EdgeChunks, num_nodes: int, symmetrize: bool, remove_self_loops: bool,
                progress: bool, total_edges: int | None) -> tuple[np.ndarray, int]:
    """In-degree of every row (after symmetrizing / dropping loops), and the input edge count."""
    from tqdm import tqdm

    counts = np.zeros(num_nodes, np.int64)
    seen = 0
    with tqdm(total=total_edges, unit="edge", unit_scale=True, desc="count pass", disable=not progress, leave=False) as bar:
        for src, dst in edge_chunks():
            src, dst = _as_ids(src), _as_ids(dst)
            if src.shape != dst.shape:
                raise IngestError(f"edge chunk has {src.size} sources but {dst.size} destinations")
            _check_range(src, num_nodes, "source", seen)
            _check_range(dst, num_nodes, "destination", seen)
            K.count_in_edges(src, dst, counts, symmetrize, remove_self_loops)
            seen += src.size
            bar.update(src.size)
    return counts, seen


def _fill_bucket(edge_chunks: EdgeChunks, seen: int, local_ptr: np.ndarray, buf: np.ndarray,
                 pos: np.ndarray, lo: int, hi: int, symmetrize: bool, remove_self_loops: bool,
                 progress: bool, show_range: bool) -> None:
    """One fill pass: scatter the stream's entries of rows ``[lo, hi)`` into ``buf`` (and their
    stream positions into ``pos`` unless it is empty); check the stream repeated."""
    from tqdm import tqdm

    cursor = local_ptr[:-1].copy()
    filled = 0
    desc = f"fill rows {lo}-{hi}" if show_range else "fill pass"
    with tqdm(total=seen, unit="edge", unit_scale=True, desc=desc, disable=not progress, leave=False) as bar:
        for src, dst in edge_chunks():
            src, dst = _as_ids(src), _as_ids(dst)
            # The stream must repeat itself; a changed stream would overrun rows.
            base = filled
            filled += src.size
            if filled > seen:
                raise IngestError("edge stream yielded more edges on a later pass than on its first")
            if not K.scatter_row_range(src, dst, local_ptr, cursor, buf, lo, hi, symmetrize, remove_self_loops,
                                       pos, np.int64(base)):
                raise IngestError("edge stream yielded more edges for a row on a later pass than on its first")
            bar.update(src.size)
    if filled != seen or not np.array_equal(cursor, local_ptr[1:]):
        raise IngestError("edge stream yielded different edges on a later pass than on its first")


def array_chunks(src: np.ndarray, dst: np.ndarray, chunk: int = 1 << 22) -> EdgeChunks:
    """An :data:`EdgeChunks` over two in-memory arrays."""
    src = np.asarray(src)
    dst = np.asarray(dst)
    if src.shape != dst.shape or src.ndim != 1:
        raise IngestError(f"src and dst must be 1-D arrays of one length, got {src.shape} and {dst.shape}")

    def chunks():
        for s in range(0, src.shape[0], chunk):
            yield src[s : s + chunk], dst[s : s + chunk]

    return chunks
