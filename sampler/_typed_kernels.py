"""Numba kernels of typed (per-relation) sampling over the fused CSC (see :mod:`bgl.schema`).

Each row's in-edges are grouped by relation id, ascending, so one relation's
neighbours of a node are the span between two binary searches of ``etype``
inside the row.  After the spans, sampling a relation is the homogeneous
sampler's position and gather passes (:mod:`bgl.sampler._kernels`) over those
spans: the same streams, the same Floyd/reservoir choices.
"""
from __future__ import annotations

from numba import njit

from ._kernels import _count_one


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
def relation_spans(indptr, etype, seeds, node_offset, rel, fanout, replace, starts, degs, counts):
    """Per seed ``i``: CSC start and length of its relation-``rel`` in-edges, and how many the
    sample takes (int64 [m] each).  Two binary searches per row; no scan of other relations."""
    for i in range(seeds.shape[0]):
        row = seeds[i] - node_offset
        lo = indptr[row]
        hi = indptr[row + 1]
        s = _first_at_least(etype, lo, hi, rel)
        e = _first_at_least(etype, s, hi, rel + 1)
        starts[i] = s
        degs[i] = e - s
        counts[i] = _count_one(e - s, fanout, replace)
