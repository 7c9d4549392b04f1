"""Numba kernels for link prediction: sampling that never draws excluded edges, and negatives.

Plain array arguments only; :mod:`bgl.sampler.ops` and :mod:`bgl.sampler.negative`
validate inputs and call these.

Exclusion happens *inside* the draw: a row that holds excluded edges samples from its
remaining edges (the fanout still applies to those), so an excluded edge can never reach
a block and a row keeps its fanout when it has enough other edges (DGL 2.1's CPU
``sample_neighbors(exclude_edges=)`` drops excluded edges after the draw instead, so its
rows can come back short; see ARCHITECTURE, "Excluded edges").  A row without excluded edges
draws exactly what :func:`bgl.sampler._kernels._row_positions` draws without any
exclusion, from the same per-row stream keyed by ``(seed, global id)``; the
result stays a pure function of ``(seed, ids, excluded ids)``, whatever store,
part or server samples it.

Edge ids: a row's edge at CSC position ``p`` has id ``p`` (a store's numbering)
unless ``edge_ids`` is given (``has_edge_ids``), then ``edge_ids[p]`` (a
DGLGraph's own ids).  ``excl`` is sorted and unique; ``table`` is its :func:`id_set`.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ._kernels import _GOLDEN, FLOYD_MAX_K, _below, _count_one, _mix64, _row_positions, _row_state


@njit(nogil=True, cache=True)
def id_set(excl):
    """Open-addressing hash set of the ids ``excl`` (all >= 0): int64 [cap], -1 = empty slot,
    ``cap`` a power of two >= 2 * len(excl) (at most half full, so a miss ends within a probe
    or two).  The exclusion kernels test every edge of a row that holds an excluded edge
    against it: on Cora link-prediction batches a binary search of the sorted ``excl`` per
    edge made the exclusion draw ~8x the plain one; a probe costs a tenth of a search."""
    cap = 16
    while cap < 2 * excl.shape[0]:
        cap *= 2
    table = np.full(cap, -1, np.int64)
    mask = cap - 1
    for j in range(excl.shape[0]):
        e = excl[j]
        h = _slot(e, mask)
        while table[h] != -1 and table[h] != e:
            h = (h + 1) & mask
        table[h] = e
    return table


@njit(nogil=True, cache=True, inline="always")
def _slot(e, mask):
    return np.int64(_mix64(np.uint64(e)) & np.uint64(mask))


@njit(nogil=True, cache=True, inline="always")
def _is_excluded(e, table):
    mask = table.shape[0] - 1
    h = _slot(e, mask)
    while True:
        v = table[h]
        if v == e:
            return True
        if v == -1:
            return False
        h = (h + 1) & mask


@njit(nogil=True, cache=True, inline="always")
def _excluded_in_row(start, deg, edge_ids, has_edge_ids, excl, table):
    if not has_edge_ids:  # ids are positions: the row's excluded ids are one contiguous run of excl
        return np.searchsorted(excl, start + deg) - np.searchsorted(excl, start)
    n = 0
    for p in range(start, start + deg):
        n += _is_excluded(edge_ids[p], table)
    return n


@njit(nogil=True, cache=True)
def excluded_counts(indptr, edge_ids, has_edge_ids, seeds, node_offset, fanout, replace, excl, table,
                    starts, degs, nexcl, counts):
    """Per seed ``i``: row start and degree, excluded edges in the row (``nexcl``) and the sample
    size over the remaining edges (``counts``); returns the largest degree of a row with exclusions.
    ``table`` is :func:`id_set` of ``excl``."""
    widest = 0
    for i in range(seeds.shape[0]):
        row = seeds[i] - node_offset
        s = indptr[row]
        d = indptr[row + 1] - s
        x = _excluded_in_row(s, d, edge_ids, has_edge_ids, excl, table)
        starts[i] = s
        degs[i] = d
        nexcl[i] = x
        counts[i] = _count_one(d - x, fanout, replace)
        if x > 0 and d > widest:
            widest = d
    return widest


@njit(nogil=True, cache=True)
def sample_positions_excluding(starts, degs, nexcl, seeds, fanout, replace, seed, edge_ids, has_edge_ids,
                               table, widest, out_indptr, out_eids):
    """``out_eids[out_indptr[i]:out_indptr[i+1]]`` = CSC positions sampled for seed ``i``, never
    an excluded edge (``table``: :func:`id_set` of the excluded ids; rows with ``nexcl[i] == 0``
    draw as without exclusion)."""
    tmp = np.empty(FLOYD_MAX_K, np.int64)
    allowed = np.empty(widest, np.int64)
    for i in range(seeds.shape[0]):
        o = out_indptr[i]
        k = out_indptr[i + 1] - o
        s, d = starts[i], degs[i]
        if nexcl[i] == 0:
            _row_positions(s, d, seeds[i], fanout, replace, seed, out_eids, o, k, tmp)
            continue
        n = 0
        for p in range(s, s + d):
            e = edge_ids[p] if has_edge_ids else p
            if not _is_excluded(e, table):
                allowed[n] = p
                n += 1
        # draw ranks among the remaining edges, then map each rank to its position
        _row_positions(0, n, seeds[i], fanout, replace, seed, out_eids, o, k, tmp)
        for j in range(k):
            out_eids[o + j] = allowed[out_eids[o + j]]


@njit(nogil=True, cache=True)
def uniform_below(seed, first, n, out):
    """``out[j]`` uniform in ``[0, n)``, drawn from the counter ``first + j`` of stream ``seed``:
    any slice of the stream is reproducible on its own."""
    for j in range(out.shape[0]):
        out[j] = _below(_mix64(_row_state(seed, first + j) + _GOLDEN), n)


@njit(nogil=True, cache=True)
def has_edges(indptr, indices, src, dst, out):
    """``out[j]`` = 1 if the CSC holds an edge ``src[j] -> dst[j]`` (a scan of row ``dst[j]``)."""
    for j in range(src.shape[0]):
        found = 0
        for p in range(indptr[dst[j]], indptr[dst[j] + 1]):
            if indices[p] == src[j]:
                found = 1
                break
        out[j] = found
