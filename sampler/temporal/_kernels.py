"""Numba kernels for temporal neighbour sampling on a CSC (plain arrays only; :mod:`.sampling` validates).

A row's in-edge at CSC position ``p`` is *eligible* for a destination with time ``t`` when
``key[p] <= t``; ``key`` is int64 [e], the edge's time (or, with node times, the later of the
edge's and its source node's time, :func:`edge_keys`).  ``order`` (int64 [e], or empty when every
row is already sorted by key) holds, for each row, its in-row offsets sorted by ``(key, offset)``:
so the eligible edges of a row are a prefix of its time order, found by one binary search, and a
layer costs O(log d + fanout) per destination row whatever the row's degree (a hub's millions of
in-edges are never scanned).

Draws: ``strategy`` 0 (uniform) draws ``min(fanout, p)`` of the ``p`` eligible edges without
replacement, from the same counter-based stream as the untyped kernels (:mod:`._kernels`, keyed
by ``(seed, global id)``) over the offsets ``0..p-1`` of the time order (over the row's CSC positions
when all ``p = d`` are eligible: the non-temporal draw itself); ``strategy`` 1 (last)
takes the last ``min(fanout, p)`` of that order, the most recent edges, ties going to the later
CSC position.  A sample is then a function of (seed, global id, eligible count), the count a
function of (node, time): independent of threads, seed order and partitioning.  A uniform row
whose every edge is eligible draws exactly what :func:`._kernels._row_positions` draws for the
non-temporal sampler, whatever the row's time order.  Positions come out ascending (CSC order) in every case.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .._kernels import _GOLDEN, FLOYD_MAX_K, _mix64, _row_positions, _sort_small

UNIFORM, LAST = 0, 1
ORDER_CHUNK = 1024  # rows per parallel chunk of the order build


@njit(nogil=True, cache=True)
def rows_sorted(indptr, key):
    """True when every row's keys are non-decreasing in CSC order (then no ``order`` is needed)."""
    for r in range(indptr.shape[0] - 1):
        for p in range(indptr[r] + 1, indptr[r + 1]):
            if key[p] < key[p - 1]:
                return False
    return True


@njit(nogil=True, cache=True)
def order_valid(indptr, key, order):
    """Whether ``order`` is a time order of every row: offsets inside the row, keys non-decreasing along
    it, ties by ascending offset, and the offsets' sum that of a permutation.  One O(e) pass; what makes
    a stored order safe to read (out-of-row offsets would read other rows, unsorted keys the future)."""
    for r in range(indptr.shape[0] - 1):
        s, d = indptr[r], indptr[r + 1] - indptr[r]
        total = 0
        for j in range(d):
            o = np.int64(order[s + j])
            if o < 0 or o >= d:
                return False
            total += o
            if j > 0:
                prev = np.int64(order[s + j - 1])
                if key[s + prev] > key[s + o] or (key[s + prev] == key[s + o] and prev >= o):
                    return False
        if total != d * (d - 1) // 2:
            return False
    return True


@njit(nogil=True, cache=True, inline="always")
def _order_rows(indptr, key, order, lo, hi):
    for r in range(lo, hi):
        s, e = indptr[r], indptr[r + 1]
        if e - s > 1:
            order[s:e] = np.argsort(key[s:e], kind="mergesort")
        elif e > s:
            order[s] = 0


@njit(nogil=True, cache=True, parallel=True)
def row_time_order_par(indptr, key, order):
    """``order[s:e]`` = the in-row offsets of row ``[s, e)`` sorted by ``(key, offset)`` (stable)."""
    n = indptr.shape[0] - 1
    nchunks = (n + ORDER_CHUNK - 1) // ORDER_CHUNK
    for c in prange(nchunks):
        _order_rows(indptr, key, order, c * ORDER_CHUNK, min(n, (c + 1) * ORDER_CHUNK))


@njit(nogil=True, cache=True)
def row_time_order_serial(indptr, key, order):
    """Serial twin of :func:`row_time_order_par` (server worker threads)."""
    _order_rows(indptr, key, order, 0, indptr.shape[0] - 1)


@njit(nogil=True, cache=True)
def edge_keys(indices, etime, ntime, has_etime, out):
    """``out[p]`` = max(``etime[p]``, ``ntime[indices[p]]``): the time from which edge ``p`` and its
    source both exist (``ntime`` indexed by global id; ``has_etime`` False: node times only)."""
    for p in range(indices.shape[0]):
        t = ntime[indices[p]]
        if has_etime and etime[p] > t:
            t = etime[p]
        out[p] = t


@njit(nogil=True, cache=True, inline="always")
def _eligible(key, order, s, d, t):
    """How many of the row ``[s, s + d)``'s edges have key <= t (a prefix of its time order)."""
    lo, hi = 0, d
    sorted_rows = order.shape[0] == 0
    while lo < hi:
        mid = (lo + hi) >> 1
        p = s + (mid if sorted_rows else order[s + mid])
        if key[p] <= t:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(nogil=True, cache=True, inline="always")
def _span_one(indptr, key, order, dst, times, node_offset, fanout, starts, elig, degs, counts, i):
    row = dst[i] - node_offset
    s = indptr[row]
    d = indptr[row + 1] - s
    p = _eligible(key, order, s, d, times[i])
    starts[i] = s
    elig[i] = p
    degs[i] = d
    counts[i] = p if fanout < 0 else min(p, fanout)


@njit(nogil=True, cache=True, parallel=True)
def temporal_spans_par(indptr, key, order, dst, times, node_offset, fanout, starts, elig, degs, counts):
    """Per destination ``i``: its row start, eligible count (``elig``), degree and sampled count (``counts``)."""
    for i in prange(dst.shape[0]):
        _span_one(indptr, key, order, dst, times, node_offset, fanout, starts, elig, degs, counts, i)


@njit(nogil=True, cache=True)
def temporal_spans_serial(indptr, key, order, dst, times, node_offset, fanout, starts, elig, degs, counts):
    """Serial twin of :func:`temporal_spans_par` (server worker threads)."""
    for i in range(dst.shape[0]):
        _span_one(indptr, key, order, dst, times, node_offset, fanout, starts, elig, degs, counts, i)


@njit(nogil=True, cache=True, inline="always")
def _positions_one(starts, elig, degs, order, dst, fanout, strategy, seed, out_indptr, out_eids, tmp, i):
    o = out_indptr[i]
    k = out_indptr[i + 1] - o
    if k == 0:
        return
    s, p = starts[i], elig[i]
    if p == degs[i] and (strategy == UNIFORM or k >= p):  # the whole row: the non-temporal draw, in CSC order
        _row_positions(s, p, dst[i], fanout, False, seed, out_eids, o, k, tmp)
        return
    if strategy == LAST or k >= p:
        for j in range(k):
            out_eids[o + j] = p - k + j
    else:
        _row_positions(0, p, dst[i], fanout, False, seed, out_eids, o, k, tmp)
    if order.shape[0] == 0:
        for j in range(k):
            out_eids[o + j] += s
    else:
        for j in range(k):
            out_eids[o + j] = s + order[s + out_eids[o + j]]
        _sort_small(out_eids, o, k)


@njit(nogil=True, cache=True, parallel=True)
def temporal_positions_par(starts, elig, degs, order, dst, fanout, strategy, seed, out_indptr, out_eids):
    """``out_eids[out_indptr[i]:out_indptr[i+1]]`` = the CSC positions drawn for destination ``i``."""
    m = dst.shape[0]
    nchunks = (m + 511) // 512
    for c in prange(nchunks):
        tmp = np.empty(FLOYD_MAX_K, np.int64)
        for i in range(c * 512, min(m, (c + 1) * 512)):
            _positions_one(starts, elig, degs, order, dst, fanout, strategy, seed, out_indptr, out_eids, tmp, i)


@njit(nogil=True, cache=True)
def temporal_positions_serial(starts, elig, degs, order, dst, fanout, strategy, seed, out_indptr, out_eids):
    """Serial twin of :func:`temporal_positions_par`."""
    tmp = np.empty(FLOYD_MAX_K, np.int64)
    for i in range(dst.shape[0]):
        _positions_one(starts, elig, degs, order, dst, fanout, strategy, seed, out_indptr, out_eids, tmp, i)


@njit(nogil=True, cache=True)
def pair_ids(tb, tn, tv, batch, node, out, new_batch, new_node, next_id):
    """Local ids of ``(batch[j], node[j])`` pairs in an open-addressing table (``tb`` -1 = empty slot;
    power-of-two size, at most half full): a pair seen before gets its id, a new one the next id
    (``next_id`` on), noted in ``new_batch``/``new_node`` at ``id - first new id``, so new ids run in
    first-appearance order.  O(1) expected per pair (disjoint subgraphs' relabel).  Returns the next id."""
    mask = tb.shape[0] - 1
    first = next_id
    for j in range(node.shape[0]):
        b, v = batch[j], node[j]
        h = np.int64(_mix64((np.uint64(v) * _GOLDEN) ^ np.uint64(b)) & np.uint64(mask))
        while True:
            if tb[h] < 0:
                tb[h], tn[h], tv[h] = b, v, next_id
                new_batch[next_id - first], new_node[next_id - first] = b, v
                out[j] = next_id
                next_id += 1
                break
            if tb[h] == b and tn[h] == v:
                out[j] = tv[h]
                break
            h = (h + 1) & mask
    return next_id
