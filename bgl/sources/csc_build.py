"""Chunked COO -> CSC builder shared by every ingest format and the R-MAT generator.

The edge stream is read twice, never held whole:

1. counting pass: in-degree of every row (int64 [num_nodes]);
2. fill pass: scatter each source id into a scratch file mapped in memory,
   at ``cursor[dst]``;

then every row is sorted (and de-duplicated) in place and the rows are
compacted to the left, still in the same scratch file.  Peak memory is the
raw index array (``raw_edges * itemsize``) plus four ``num_nodes``-long int64
arrays, about the size of the final CSC, whatever the input size.
"""
from __future__ import annotations

import logging
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


@dataclass(frozen=True)
class CscResult:
    """Output of :func:`build_csc`.

    ``indptr`` : int64 [num_nodes + 1] (in memory); the first ``num_edges``
    ids of ``indices_file`` (raw ``id_dtype`` binary, no header) are the
    matching sorted in-neighbour lists.
    """

    indptr: np.ndarray
    indices_file: Path
    num_edges: int
    raw_edges: int
    id_dtype: np.dtype

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
              progress: bool = False, total_edges: int | None = None) -> CscResult:
    """Build a CSC adjacency from a re-iterable stream of COO chunks.

    Parameters
    ----------
    edge_chunks : callable returning an iterable of ``(src, dst)`` integer arrays
        (same length each pair); called twice, must yield the same edges both times.
    num_nodes : every id must lie in ``[0, num_nodes)``.
    id_dtype : dtype of the stored indices (``id_dtype_for(num_nodes)``).
    scratch_dir : existing directory for the scratch index file (caller removes it).
    symmetrize : also store every edge reversed.
    remove_self_loops, dedupe : drop ``v -> v`` edges / repeated ``(src, dst)`` pairs.

    Raises
    ------
    IngestError
        naming the first id outside ``[0, num_nodes)`` and its edge position.
    """
    from tqdm import tqdm

    id_dtype = np.dtype(id_dtype)
    counts = np.zeros(num_nodes, np.int64)
    seen = 0
    with tqdm(total=total_edges, unit="edge", unit_scale=True, desc="count pass", disable=not progress) as bar:
        for src, dst in edge_chunks():
            src, dst = _as_ids(src), _as_ids(dst)
            if src.shape != dst.shape:
                raise IngestError(f"edge chunk has {src.size} sources but {dst.size} destinations")
            _check_range(src, num_nodes, "source", seen)
            _check_range(dst, num_nodes, "destination", seen)
            K.count_in_edges(src, dst, counts, symmetrize, remove_self_loops)
            seen += src.size
            bar.update(src.size)
    raw_indptr = np.zeros(num_nodes + 1, np.int64)
    np.cumsum(counts, out=raw_indptr[1:])
    raw_edges = int(raw_indptr[-1])
    log.debug("counting pass: %d input edges -> %d raw CSC entries", seen, raw_edges)

    indices_file = Path(scratch_dir) / "indices.raw"
    if raw_edges == 0:
        indices_file.write_bytes(b"")
        return CscResult(np.zeros(num_nodes + 1, np.int64), indices_file, 0, 0, id_dtype)

    out = np.memmap(indices_file, dtype=id_dtype, mode="w+", shape=(raw_edges,))
    try:
        cursor = raw_indptr[:-1].copy()
        filled = 0
        with tqdm(total=seen, unit="edge", unit_scale=True, desc="fill pass", disable=not progress) as bar:
            for src, dst in edge_chunks():
                src, dst = _as_ids(src), _as_ids(dst)
                # The stream must repeat itself; a changed stream would overrun rows.
                filled += src.size
                if filled > seen:
                    raise IngestError("edge stream yielded more edges on its second pass than its first")
                K.scatter_in_edges(src, dst, cursor, out, symmetrize, remove_self_loops)
                bar.update(src.size)
        if not np.array_equal(cursor, raw_indptr[1:]):
            raise IngestError("edge stream yielded different edges on its second pass")
        del cursor
        log.info("sorting%s %d rows (%d entries)", " and de-duplicating" if dedupe else "", num_nodes, raw_edges)
        new_counts = counts  # reuse the buffer: counts are no longer needed
        K.sort_dedupe_rows(raw_indptr, out, new_counts, dedupe)
        indptr = np.zeros(num_nodes + 1, np.int64)
        np.cumsum(new_counts, out=indptr[1:])
        del counts, new_counts
        if dedupe:
            K.compact_rows(raw_indptr, indptr, out)
        out.flush()
    finally:
        del out  # unmap so the scratch pages leave this process
    num_edges = int(indptr[-1])
    log.debug("CSC built: %d edges (%d before de-duplication)", num_edges, raw_edges)
    return CscResult(indptr, indices_file, num_edges, raw_edges, id_dtype)


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
