"""numba kernels of the chunked typed CSC builder (``bgl.sources.typed.csc``).

Plain array arguments only.  Every chunk belongs to one relation, so ids arrive
TYPE-LOCAL and the kernels add the type offsets themselves (no offset copy of a chunk).
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True, nogil=True)
def count_typed_rows(src, dst, src_count, dst_count, dst_offset, counts):
    """Add each edge ``src[i] -> dst[i]`` of one relation to ``counts[dst_offset + dst[i]]``.

    Returns -1, or ``2 * i + column`` (0 = source, 1 = destination) of the first id outside its
    type's ``[0, count)``; nothing after that edge is counted.
    """
    for i in range(src.shape[0]):
        s = src[i]
        d = dst[i]
        if s < 0 or s >= src_count:
            return 2 * i
        if d < 0 or d >= dst_count:
            return 2 * i + 1
        counts[dst_offset + d] += 1
    return -1


@njit(cache=True, nogil=True)
def scatter_typed_rows(src, dst, src_offset, dst_offset, rel, row_ptr, cursor, ids_out, rel_out, lo, hi,
                       times, times_out):
    """One relation chunk's share of a fill bucket: rows ``[lo, hi)`` of the global id space.

    Edge ``i`` (global row ``v = dst_offset + dst[i]`` in the bucket) goes to
    ``ids_out[cursor[v - lo]] = src_offset + src[i]`` with ``rel_out[...] = rel``, and, when
    ``times`` is not empty (one entry per edge of the chunk), ``times_out[...] = times[i]``
    through the same cursor: an edge's time lands at its own CSC position.  Chunks are
    scattered in stream order and relations in ascending id, so every row ends up grouped by
    relation, ascending, and keeps the input order inside a relation: the order of a stable
    sort by (destination, relation), with no sort at all.  Returns False (nothing written past
    the row) when a row would overflow: the stream changed since it was counted.
    """
    timed = times.shape[0] > 0
    for i in range(src.shape[0]):
        v = dst[i] + dst_offset
        if v < lo or v >= hi:
            continue
        r = v - lo
        c = cursor[r]
        if c >= row_ptr[r + 1]:
            return False
        ids_out[c] = src[i] + src_offset
        rel_out[c] = rel
        if timed:
            times_out[c] = times[i]
        cursor[r] = c + 1
    return True


#: Runs up to this long are compared pairwise (k^2 / 2 compares beat allocating a sorted copy).
SMALL_RUN = 16


@njit(cache=True, nogil=True)
def _row_loops_and_repeats(ids, rels, a, b, row):
    """(self-loops, repeats) of one row's entries ``ids[a:b]`` (see :func:`count_loops_and_repeats`)."""
    row_loops = 0
    row_repeats = 0
    start = a
    while start < b:
        end = start + 1
        while end < b and rels[end] == rels[start]:
            end += 1
        if end - start <= SMALL_RUN:  # most runs: pairwise, no sorted copy to allocate
            for k in range(start, end):
                if ids[k] == row:
                    row_loops += 1
                for j in range(start, k):
                    if ids[j] == ids[k]:
                        row_repeats += 1
                        break
        else:
            run = np.sort(ids[start:end])
            for k in range(run.shape[0]):
                if run[k] == row:
                    row_loops += 1
                if k > 0 and run[k] == run[k - 1]:
                    row_repeats += 1
        start = end
    return row_loops, row_repeats


@njit(cache=True, nogil=True, parallel=True)
def count_loops_and_repeats(ptr, ids, rels, lo):
    """Self-loops and repeated edges among one filled bucket's rows ``[lo, lo + len(ptr) - 1)``.

    ``ids[ptr[r]:ptr[r + 1]]`` are row ``lo + r``'s in-neighbours (global ids), grouped by relation
    ``rels`` as the fill leaves them.  A self-loop is an entry equal to its row; a repeat is an
    entry whose (id, relation) appeared earlier in the row (so ``k`` copies count ``k - 1``).
    Counted pairwise in a short run, on a sorted copy of a long one: the bucket keeps its input order.
    Per-row counts go to arrays (16 B per row of the bucket) and are summed after the parallel loop:
    numba 0.68's parfor reduction analysis recursed without end on the nested loops under Python 3.13.
    Returns ``(loops, repeats)``.
    """
    n = ptr.shape[0] - 1
    loops = np.zeros(n, np.int64)
    repeats = np.zeros(n, np.int64)
    for r in prange(n):
        loops[r], repeats[r] = _row_loops_and_repeats(ids, rels, ptr[r], ptr[r + 1], lo + r)
    return loops.sum(), repeats.sum()


@njit(cache=True, nogil=True)
def positions_by_relation(etype, edge_ids, starts, out):
    """The fused CSC's inverse: ``out[starts[r] + k]`` = the CSC position of relation ``r``'s edge ``k``.

    ``etype[p]`` / ``edge_ids[p]``: relation and per-relation edge id at CSC position ``p`` (each
    relation's ids a permutation of ``[0, count_r)``); ``starts`` int64 [R + 1] the running counts.
    One pass, no sort: the output, 4 B per edge while positions fit in int32 (8 B beyond)."""
    for p in range(etype.shape[0]):
        out[starts[etype[p]] + edge_ids[p]] = p
