"""Numba kernels for weighted temporal sampling (plain arrays only; :mod:`.sampling` validates).

GraphBolt's ``TemporalNeighborSampler(prob_name=)`` and PyG's ``weight_attr`` with ``time_attr``: a
destination at time ``t`` draws, without replacement, among its eligible in-edges (key <= ``t``, a
prefix of the row's time order: :func:`._temporal_kernels._eligible`) with probability proportional
to each edge's weight; a zero weight is never drawn.  The draw is the weighted kernels' own
(:func:`._weighted_kernels.weighted_span`: Efraimidis-Spirakis keys with exponential jumps, stream
``(seed, global id)``) over the eligible edges in time order, so a sample is a function of (seed,
node, eligible count), as the uniform temporal draw is; a row whose every edge is eligible draws
over its CSC span, exactly the non-temporal weighted draw.  Cost: O(p) per destination with ``p``
eligible edges (each weight is read: unlike the uniform draw, a hub's eligible prefix is scanned),
and one float64 per eligible edge of scratch where the row is not already in time order.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .._kernels import _sort_small
from .._weighted_kernels import CHUNK, weighted_span


@njit(nogil=True, cache=True, inline="always")
def _count_one(prob, order, starts, elig, fanout, positive, counts, i):
    s, p = starts[i], elig[i]
    nz = 0
    for j in range(p):
        if prob[s + (j if order.shape[0] == 0 else order[s + j])] > 0:
            nz += 1
    positive[i] = nz
    counts[i] = nz if fanout < 0 else min(nz, fanout)


@njit(nogil=True, cache=True, parallel=True)
def weighted_counts_par(prob, order, starts, elig, fanout, positive, counts):
    """Per destination ``i`` (spans from :func:`._temporal_kernels.temporal_spans_par`): its eligible
    edges of positive weight (``positive``) and its sampled count (``counts``)."""
    for i in prange(starts.shape[0]):
        _count_one(prob, order, starts, elig, fanout, positive, counts, i)


@njit(nogil=True, cache=True)
def weighted_counts_serial(prob, order, starts, elig, fanout, positive, counts):
    """Serial twin of :func:`weighted_counts_par`."""
    for i in range(starts.shape[0]):
        _count_one(prob, order, starts, elig, fanout, positive, counts, i)


@njit(nogil=True, cache=True, inline="always")
def _positions_one(prob, starts, elig, degs, order, dst, positive, seed, out_indptr, out_eids, keys, pos, cdf, wbuf,
                   i):
    o = out_indptr[i]
    k = out_indptr[i + 1] - o
    if k == 0:
        return
    s, p = starts[i], elig[i]
    if p == degs[i] or order.shape[0] == 0:  # a CSC span: the whole row, or a row already in time order
        weighted_span(prob, s, p, dst[i], False, seed, out_eids, o, k, positive[i], keys, pos, cdf)
        return
    for j in range(p):
        wbuf[j] = prob[s + order[s + j]]
    weighted_span(wbuf, 0, p, dst[i], False, seed, out_eids, o, k, positive[i], keys, pos, cdf)
    for j in range(k):
        out_eids[o + j] = s + order[s + out_eids[o + j]]
    _sort_small(out_eids, o, k)


@njit(nogil=True, cache=True, parallel=True)
def weighted_positions_par(prob, starts, elig, degs, order, dst, positive, fanout, widest, seed, out_indptr, out_eids):
    """``out_eids[out_indptr[i]:out_indptr[i+1]]`` = the CSC positions drawn by weight for destination ``i``
    (``widest``: the largest eligible count of a row not in time order, the scratch it needs)."""
    m = dst.shape[0]
    kcap = max(fanout, 1)
    for c in prange((m + CHUNK - 1) // CHUNK):
        keys, pos = np.empty(kcap, np.float64), np.empty(kcap, np.int64)
        cdf, wbuf = np.empty(0, np.float64), np.empty(widest, np.float64)
        for i in range(c * CHUNK, min(m, (c + 1) * CHUNK)):
            _positions_one(prob, starts, elig, degs, order, dst, positive, seed, out_indptr, out_eids, keys, pos,
                           cdf, wbuf, i)


@njit(nogil=True, cache=True)
def weighted_positions_serial(prob, starts, elig, degs, order, dst, positive, fanout, widest, seed, out_indptr,
                              out_eids):
    """Serial twin of :func:`weighted_positions_par`."""
    kcap = max(fanout, 1)
    keys, pos = np.empty(kcap, np.float64), np.empty(kcap, np.int64)
    cdf, wbuf = np.empty(0, np.float64), np.empty(widest, np.float64)
    for i in range(dst.shape[0]):
        _positions_one(prob, starts, elig, degs, order, dst, positive, seed, out_indptr, out_eids, keys, pos, cdf,
                       wbuf, i)
