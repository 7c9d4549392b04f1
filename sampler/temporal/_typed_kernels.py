"""Numba kernels for temporal sampling of a typed CSC (plain arrays only; :mod:`.typed` validates).

A typed row holds its in-edges grouped by relation, ascending (:mod:`._typed_kernels`).  Each
(row, relation) run is sampled as the untyped kernels sample a row (:mod:`._temporal_kernels`): its
eligible edges (key <= the destination's time) are a prefix of the run's time order, found by one
binary search, then ``min(fanout[r], eligible)`` are drawn uniformly or the latest taken.  So the time
order here is over runs, not rows (:func:`relation_runs` gives the run boundaries, which the untyped
order builder takes in place of ``indptr``), and a layer costs O(R log d + fanout) per destination.
Each relation draws from its own stream (``rel_seeds[r]``), keyed by the destination as everywhere.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .._kernels import FLOYD_MAX_K
from ._kernels import _eligible, _positions_one


@njit(nogil=True, cache=True)
def relation_runs(indptr, etype, out):
    """Write the start of every (row, relation) run of a typed CSC into ``out`` (int64 [e + 1] at
    least), then ``e``; return how many entries were written (the runs' boundary array's length)."""
    k = 0
    for row in range(indptr.shape[0] - 1):
        for p in range(indptr[row], indptr[row + 1]):
            if p == indptr[row] or etype[p] != etype[p - 1]:
                out[k] = p
                k += 1
    out[k] = indptr[indptr.shape[0] - 1]
    return k + 1


@njit(nogil=True, cache=True)
def typed_temporal_counts(starts, degs, active, key, order, times, fanouts, flat_starts, elig, flat_degs,
                          counts, row_counts):
    """Per destination ``i`` and relation ``r`` (flattened to ``i * R + r``): the run's start and
    length, its eligible count (``elig``) and how many the sample takes (``counts``); ``active[i, r]``
    > 0 where the relation ends at the row's type, has a non-zero fanout and a non-empty run;
    ``row_counts`` int64 [m] the taken edges per destination."""
    m, num_rel = starts.shape
    for i in range(m):
        total = 0
        for r in range(num_rel):
            j = i * num_rel + r
            flat_starts[j] = 0
            elig[j] = 0
            flat_degs[j] = 0
            counts[j] = 0
            if active[i, r] <= 0:
                continue
            s, d = starts[i, r], degs[i, r]
            p = _eligible(key, order, s, d, times[i])
            flat_starts[j] = s
            elig[j] = p
            flat_degs[j] = d
            c = p if fanouts[r] < 0 else min(p, fanouts[r])
            counts[j] = c
            total += c
        row_counts[i] = total


@njit(nogil=True, cache=True)
def typed_temporal_positions(flat_starts, elig, flat_degs, order, keys, fanouts, strategy, rel_seeds, out_indptr,
                             out_eids, etypes):
    """``out_eids`` / ``etypes`` of each (destination, relation) run ``j = i * R + r``, grouped by
    destination then relation ascending (``out_indptr`` over the flattened runs)."""
    num_rel = fanouts.shape[0]
    tmp = np.empty(FLOYD_MAX_K, np.int64)
    for j in range(flat_starts.shape[0]):
        r = j % num_rel
        _positions_one(flat_starts, elig, flat_degs, order, keys, fanouts[r], strategy, rel_seeds[r], out_indptr,
                       out_eids, tmp, j)
        for q in range(out_indptr[j], out_indptr[j + 1]):
            etypes[q] = r
