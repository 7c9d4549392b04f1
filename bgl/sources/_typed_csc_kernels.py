"""numba kernels of the chunked typed CSC builder (``bgl.sources.typed_csc``).

Plain array arguments only.  Every chunk belongs to one relation, so ids arrive
TYPE-LOCAL and the kernels add the type offsets themselves (no offset copy of a chunk).
"""
from __future__ import annotations

from numba import njit


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
def scatter_typed_rows(src, dst, src_offset, dst_offset, rel, row_ptr, cursor, ids_out, rel_out, lo, hi):
    """One relation chunk's share of a fill bucket: rows ``[lo, hi)`` of the global id space.

    Edge ``i`` (global row ``v = dst_offset + dst[i]`` in the bucket) goes to
    ``ids_out[cursor[v - lo]] = src_offset + src[i]`` with ``rel_out[...] = rel``.  Chunks are
    scattered in stream order and relations in ascending id, so every row ends up grouped by
    relation, ascending, and keeps the input order inside a relation: the order of a stable
    sort by (destination, relation), with no sort at all.  Returns False (nothing written past
    the row) when a row would overflow: the stream changed since it was counted.
    """
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
        cursor[r] = c + 1
    return True
