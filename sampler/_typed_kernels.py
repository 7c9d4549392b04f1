"""Numba kernels of typed (per-relation) sampling over the fused CSC (see :mod:`bgl.schema`).

Each row's in-edges are grouped by relation id, ascending, so one relation's
neighbours of a node are the span between two binary searches of ``etype``
inside the row.  After the spans, sampling a relation is the homogeneous
sampler's per-row position draw (:func:`~bgl.sampler._kernels._row_positions`)
over those spans: the same streams, the same Floyd/reservoir choices.

One layer is two passes over its destination rows whatever the number of
relations (:func:`typed_spans`, then :func:`typed_positions`), written straight
into the layer's output in row order: a Python loop over relations cost ~1 ms a
layer in NumPy glue (fancy-index scatters, per-relation buffers) on a
three-relation graph, more than the sampling itself.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ._kernels import FLOYD_MAX_K, _count_one, _row_positions


@njit(nogil=True, cache=True, inline="always")
def _first_at_least(etype, lo, hi, rel):
    """First position in ``[lo, hi)`` whose relation id is >= ``rel`` (``hi`` if none)."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if etype[mid] < rel:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(nogil=True, cache=True)
def typed_spans(indptr, etype, dst, node_offset, dst_type, dst_type_of_rel, fanouts, replace,
                starts, degs, counts, row_counts):
    """Per destination row ``i`` and relation ``r`` (int64 [m, R] each): the CSC start and
    length of ``r``'s in-edges and how many the sample takes (0 where ``r`` does not end at
    the row's type or its fanout is 0); ``row_counts`` int64 [m] their sum per row."""
    for i in range(dst.shape[0]):
        row = dst[i] - node_offset
        lo = indptr[row]
        hi = indptr[row + 1]
        total = 0
        for r in range(fanouts.shape[0]):
            counts[i, r] = 0
            if fanouts[r] == 0 or dst_type_of_rel[r] != dst_type[i]:
                continue
            s = _first_at_least(etype, lo, hi, r)
            e = _first_at_least(etype, s, hi, r + 1)
            starts[i, r] = s
            degs[i, r] = e - s
            c = _count_one(e - s, fanouts[r], replace)
            counts[i, r] = c
            total += c
            lo = e  # relations ascend within a row
        row_counts[i] = total


@njit(nogil=True, cache=True)
def typed_positions(starts, degs, counts, keys, fanouts, replace, rel_seeds, out_indptr, out_eids, out_etypes):
    """Row ``i``'s sampled CSC positions and relation ids at ``out_indptr[i]``, relation by relation
    ascending; relation ``r`` draws from stream (``rel_seeds[r]``, ``keys[i]``)."""
    tmp = np.empty(FLOYD_MAX_K, np.int64)
    for i in range(counts.shape[0]):
        o = out_indptr[i]
        for r in range(counts.shape[1]):
            k = counts[i, r]
            if k == 0:
                continue
            _row_positions(starts[i, r], degs[i, r], keys[i], fanouts[r], replace, rel_seeds[r], out_eids, o, k, tmp)
            for j in range(k):
                out_etypes[o + j] = r
            o += k
