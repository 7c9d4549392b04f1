"""numba kernels for building a CSC adjacency from a stream of COO edge chunks.

Plain array arguments only; the validating Python layer is ``bgl.sources.csc_build``.
An edge ``(src, dst)`` is stored in row ``dst`` (CSC = in-neighbours), and,
when ``symmetrize`` is set, also as ``(dst, src)`` in row ``src``.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True, nogil=True)
def count_in_edges(src, dst, counts, symmetrize, drop_self_loops):
    """Add each edge's contribution to ``counts[row]`` (int64 [num_nodes]).

    Returns the number of entries counted in this chunk.
    """
    added = 0
    for i in range(src.shape[0]):
        s = src[i]
        d = dst[i]
        if drop_self_loops and s == d:
            continue
        counts[d] += 1
        added += 1
        if symmetrize and s != d:
            counts[s] += 1
            added += 1
    return added


@njit(cache=True, nogil=True)
def scatter_row_range(src, dst, row_ptr, cursor, out, lo, hi, symmetrize, drop_self_loops, out_pos, base):
    """Write each edge's source id at ``out[cursor[dst - lo]]`` for rows ``[lo, hi)``: one bucket of the fill pass.

    ``cursor[v - lo]`` is row ``v``'s next slot in ``out``, which holds only the
    bucket's rows (an anonymous buffer, so the random scatter never touches a
    file page); ``row_ptr`` is the bucket's row offsets from the counting pass.
    Edges of other rows are skipped; each bucket re-reads the stream.  Returns
    False (having written nothing past the row) when a row would overflow: the
    stream changed since it was counted.  A non-empty ``out_pos`` (edge data) also
    receives ``base + i``, the input edge's stream position, beside each entry; a
    reversed entry keeps its edge's position.
    """
    track = out_pos.shape[0] > 0
    for i in range(src.shape[0]):
        s = src[i]
        d = dst[i]
        if drop_self_loops and s == d:
            continue
        if lo <= d < hi:
            r = d - lo
            if cursor[r] >= row_ptr[r + 1]:
                return False
            out[cursor[r]] = s
            if track:
                out_pos[cursor[r]] = base + i
            cursor[r] += 1
        if symmetrize and s != d and lo <= s < hi:
            r = s - lo
            if cursor[r] >= row_ptr[r + 1]:
                return False
            out[cursor[r]] = d
            if track:
                out_pos[cursor[r]] = base + i
            cursor[r] += 1
    return True


@njit(cache=True, nogil=True, parallel=True)
def sort_dedupe_rows(indptr, indices, new_counts, dedupe, pos):
    """Sort every row in place; with ``dedupe`` move each row's distinct ids to its front.

    ``new_counts[v]`` receives the row's length afterwards.  Sorted rows make the
    store independent of chunk order and give samplers cache-friendly rows.  A
    non-empty ``pos`` (edge data: each entry's input-stream position) is carried
    along: rows are then sorted stably, so equal ids stay in stream order, and a
    duplicated edge keeps its first occurrence's position.
    """
    track = pos.shape[0] > 0
    n = indptr.shape[0] - 1
    for v in prange(n):
        a = indptr[v]
        b = indptr[v + 1]
        if b - a > 1:
            if track:
                order = np.argsort(indices[a:b], kind="mergesort")
                ids = indices[a:b][order]
                ps = pos[a:b][order]
                indices[a:b] = ids
                pos[a:b] = ps
            else:
                indices[a:b].sort()
        if not dedupe or b - a < 2:
            new_counts[v] = b - a
            continue
        w = a + 1
        for k in range(a + 1, b):
            if indices[k] != indices[w - 1]:
                indices[w] = indices[k]
                if track:
                    pos[w] = pos[k]
                w += 1
        new_counts[v] = w - a


@njit(cache=True, nogil=True)
def compact_rows(old_indptr, new_indptr, indices):
    """Move row ``v``'s first ``new_indptr[v+1]-new_indptr[v]`` ids to ``new_indptr[v]``.

    Rows only ever move left (``new_indptr[v] <= old_indptr[v]``), so a forward
    sequential copy is safe in place and needs no second buffer.
    """
    n = old_indptr.shape[0] - 1
    for v in range(n):
        a = old_indptr[v]
        t = new_indptr[v]
        c = new_indptr[v + 1] - t
        if a == t:
            continue
        for k in range(c):
            indices[t + k] = indices[a + k]


@njit(cache=True, nogil=True)
def first_out_of_range(ids, lo, hi):
    """Index of the first id outside ``[lo, hi)``, or -1."""
    for i in range(ids.shape[0]):
        if ids[i] < lo or ids[i] >= hi:
            return i
    return -1



@njit(cache=True, nogil=True)
def group_by_row(rows, cols, indptr, cursor, out_cols, out_eids):
    """Edges grouped by ``rows`` (a stable counting sort): ``indptr`` int64 [n + 1] the row offsets,
    ``out_cols[p]`` / ``out_eids[p]`` the other end and the id of the edge at position ``p`` (edge-id order
    within a row).  ``cursor`` int64 [n] is scratch.  O(n + e): two passes over the edges, one over the rows;
    what ``bgl.dgl``'s CSC / CSR build runs on the CPU instead of a sort."""
    n = indptr.shape[0] - 1
    for i in range(n + 1):
        indptr[i] = 0
    for e in range(rows.shape[0]):
        indptr[rows[e] + 1] += 1
    for i in range(n):
        indptr[i + 1] += indptr[i]
        cursor[i] = indptr[i]
    for e in range(rows.shape[0]):
        r = rows[e]
        p = cursor[r]
        out_cols[p] = cols[e]
        out_eids[p] = e
        cursor[r] = p + 1
