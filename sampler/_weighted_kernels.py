"""Numba kernels for weighted and masked neighbour sampling (plain arrays only).

DGL's ``sample_neighbors(prob=...)`` semantics: edge ``p`` of a row is drawn
with probability proportional to ``prob[p]``; an edge with weight 0 (or mask
False) is never drawn.  Without replacement DGL draws one edge proportional to
the weights, removes it and repeats; the same distribution comes from
Efraimidis-Spirakis keys: give edge ``p`` the key ``log(u_p) / w_p`` and keep
the ``k`` largest, with exponential jumps (A-ExpJ): after the first ``k`` keys,
the next edge whose key would enter is found by skipping a weight total drawn
from the smallest kept key, so a row costs additions per edge and a draw and a
log per replacement (~``k log(deg / k)``), not a log per edge.  Rows with at
most ``k`` positive edges take all of them.  With
replacement each of the ``k`` draws is an inverse-CDF lookup over the row's
running weight sums.

Randomness is the uniform kernels' counter-based stream (:func:`_row_state`
of ``(seed, global id)``), so a weighted sample is also a pure function of
``(seed, global id, fanout, replace, weights)``: identical from a store, from
graph servers and from co-located reads.  Positions come out sorted (CSC
order) without replacement, in draw order with it, like the uniform kernels.

``prob`` may be any float or unsigned-integer array; a bool mask is passed
as its ``uint8`` view (mask True = weight 1).

Scratch: ``fanout`` keys and positions per thread (without replacement) or the
longest row's running sums (with replacement), allocated once per call/chunk.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from ._kernels import _GOLDEN, _mix64, _row_state, _sort_small

_INV_2_53 = 1.0 / 9007199254740992.0
# Seed rows per parallel chunk (each chunk allocates its own scratch).
CHUNK = 512


@njit(nogil=True, cache=True)
def first_bad_weight(prob):
    """Index of the first weight that is negative, NaN or infinite, or -1 (one pass)."""
    for p in range(prob.shape[0]):
        w = np.float64(prob[p])
        if not (w >= 0.0) or w == np.inf:
            return p
    return -1


@njit(nogil=True, cache=True, inline="always")
def _unit(state):
    """A uniform float64 in (0, 1) from one stream step."""
    return (np.float64(_mix64(state) >> np.uint64(11)) + 0.5) * _INV_2_53


@njit(nogil=True, cache=True, inline="always")
def _positive(prob, start, deg):
    nz = 0
    for p in range(start, start + deg):
        nz += prob[p] > 0
    return nz


@njit(nogil=True, cache=True, inline="always")
def _count_of(nz, fanout, replace):
    if fanout < 0:
        return nz
    if replace:
        return fanout if nz > 0 else 0
    return min(nz, fanout)


@njit(nogil=True, cache=True)
def weighted_counts_serial(indptr, prob, seeds, node_offset, fanout, replace, counts, positive):
    """``counts[i]``: edges the weighted sample of seed ``i`` takes, ``positive[i]``: its edges with
    ``prob > 0`` (the only ones that count); returns the longest row's degree (the
    with-replacement scratch size)."""
    widest = 0
    for i in range(seeds.shape[0]):
        row = seeds[i] - node_offset
        start = indptr[row]
        deg = indptr[row + 1] - start
        widest = max(widest, deg)
        positive[i] = _positive(prob, start, deg)
        counts[i] = _count_of(positive[i], fanout, replace)
    return widest


@njit(nogil=True, cache=True, parallel=True)
def weighted_counts_par(indptr, prob, seeds, node_offset, fanout, replace, counts, positive):
    """Parallel twin of :func:`weighted_counts_serial`."""
    m = seeds.shape[0]
    widest = np.zeros(m, np.int64)
    for i in prange(m):
        row = seeds[i] - node_offset
        start = indptr[row]
        deg = indptr[row + 1] - start
        widest[i] = deg
        positive[i] = _positive(prob, start, deg)
        counts[i] = _count_of(positive[i], fanout, replace)
    return widest.max() if m else 0


@njit(nogil=True, cache=True, inline="always")
def _weighted_row(indptr, prob, gid, node_offset, replace, seed, out, o, k, nz, keys, pos, cdf):
    """Fill ``out[o:o+k]`` with the CSC positions drawn from the row of ``gid``."""
    if k == 0:
        return
    row = gid - node_offset
    start = indptr[row]
    weighted_span(prob, start, indptr[row + 1] - start, gid, replace, seed, out, o, k, nz, keys, pos, cdf)


@njit(nogil=True, cache=True, inline="always")
def weighted_span(prob, start, deg, key, replace, seed, out, o, k, nz, keys, pos, cdf):
    """Fill ``out[o:o+k]`` with ``k`` CSC positions of ``[start, start + deg)`` drawn by weight from
    stream (``seed``, ``key``); ``nz``: the span's positive weights.  A whole row (key = its global
    id) or one relation's span of a typed row (:mod:`._typed_kernels`, key = the row's stream key)."""
    state = _row_state(seed, key)
    if replace:
        total = 0.0
        for j in range(deg):
            total += np.float64(prob[start + j])
            cdf[j] = total
        for j in range(k):
            state += _GOLDEN
            x = _unit(state) * total
            lo, hi = 0, deg - 1  # smallest j with cdf[j] > x: zero-weight edges never qualify
            while lo < hi:
                mid = (lo + hi) >> 1
                if cdf[mid] > x:
                    hi = mid
                else:
                    lo = mid + 1
            out[o + j] = start + lo
        return
    if nz <= k:  # take every positive edge (k == nz by the counts)
        f = 0
        for p in range(start, start + deg):
            if prob[p] > 0:
                out[o + f] = p
                f += 1
        return
    # Efraimidis-Spirakis with exponential jumps (A-ExpJ): keys log(u) / w, keep the k largest.
    # Once k keys are kept with smallest key T, the next edge to enter is found by skipping
    # ahead a weight total X = log(r) / T: one draw and one log per *replacement*
    # (~k log(deg / k) of them), plain additions for the edges skipped.
    filled = 0
    low = 0  # slot of the smallest key kept
    skip = 0.0
    for p in range(start, start + deg):
        w = np.float64(prob[p])
        if w <= 0:
            continue
        if filled < k:
            state += _GOLDEN
            key = np.log(_unit(state)) / w
            keys[filled] = key
            pos[filled] = p
            if key < keys[low]:
                low = filled
            filled += 1
            if filled == k:
                state += _GOLDEN
                skip = np.log(_unit(state)) / keys[low]
            continue
        skip -= w
        if skip > 0:
            continue
        # edge p enters: its key is drawn conditioned on exceeding the smallest kept key
        t = np.exp(keys[low] * w)
        state += _GOLDEN
        key = np.log(t + (1.0 - t) * _unit(state)) / w
        keys[low] = key
        pos[low] = p
        low = 0
        for q in range(1, k):
            if keys[q] < keys[low]:
                low = q
        state += _GOLDEN
        skip = np.log(_unit(state)) / keys[low]
    for j in range(k):
        out[o + j] = pos[j]
    _sort_small(out, o, k)


@njit(nogil=True, cache=True)
def sample_weighted_serial(indptr, prob, seeds, node_offset, fanout, replace, seed, widest, positive, out_indptr,
                           out_eids):
    """``out_eids[out_indptr[i]:out_indptr[i+1]]`` = CSC positions drawn for seed ``i`` by weight;
    ``out_indptr`` and ``positive`` from :func:`weighted_counts_serial`, ``widest`` its return value."""
    kcap = max(fanout, 1)
    keys = np.empty(kcap, np.float64)
    pos = np.empty(kcap, np.int64)
    cdf = np.empty(widest if replace else 0, np.float64)
    for i in range(seeds.shape[0]):
        o = out_indptr[i]
        _weighted_row(indptr, prob, seeds[i], node_offset, replace, seed, out_eids, o, out_indptr[i + 1] - o,
                      positive[i], keys, pos, cdf)


@njit(nogil=True, cache=True, parallel=True)
def sample_weighted_par(indptr, prob, seeds, node_offset, fanout, replace, seed, widest, positive, out_indptr,
                        out_eids):
    """Parallel twin of :func:`sample_weighted_serial` (chunks of ``CHUNK`` seeds, scratch per chunk)."""
    m = seeds.shape[0]
    kcap = max(fanout, 1)
    for c in prange((m + CHUNK - 1) // CHUNK):
        keys = np.empty(kcap, np.float64)
        pos = np.empty(kcap, np.int64)
        cdf = np.empty(widest if replace else 0, np.float64)
        for i in range(c * CHUNK, min(m, (c + 1) * CHUNK)):
            o = out_indptr[i]
            _weighted_row(indptr, prob, seeds[i], node_offset, replace, seed, out_eids, o, out_indptr[i + 1] - o,
                          positive[i], keys, pos, cdf)
