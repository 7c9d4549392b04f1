"""Numba kernels for link prediction: sampling that never draws excluded edges, and negatives.

Plain array arguments only; :mod:`bgl.sampler.exclusion`, :mod:`bgl.negative_sampler` and
:mod:`bgl.sampler.edge_check` validate inputs and call these.

Exclusion happens *inside* the draw: a row that holds excluded edges samples from its
remaining edges (the fanout still applies to those), so an excluded edge can never reach
a block and a row keeps its fanout when it has enough other edges (DGL 2.1's CPU
``sample_neighbors(exclude_edges=)`` drops excluded edges after the draw instead, so its
rows can come back short; see ARCHITECTURE, "Excluded edges").  A row without excluded edges
draws exactly what :func:`bgl.sampler._kernels._row_positions` draws without any
exclusion, from the same per-row stream keyed by ``(seed, global id)``; the
result stays a pure function of ``(seed, ids, excluded ids)``, whatever store,
part or server samples it.

Excluded edges arrive as CSC positions (``xpos``, sorted and unique): a store's edge ids are
its positions; a DGLGraph's own ids are mapped to positions by the Python layer
(:mod:`bgl.sampler.exclusion`) once per layer, through the inverse of its ``edge_ids``.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ._kernels import _GOLDEN, FLOYD_MAX_K, _below, _count_one, _mix64, _row_positions, _row_state


@njit(nogil=True, cache=True)
def excluded_spans(indptr, seeds, node_offset, fanout, replace, xpos, starts, degs, xlo, nexcl, counts):
    """Per seed ``i``: row start and degree, where its excluded positions begin in ``xpos``
    (``xlo``: they are ``xpos[xlo[i]:xlo[i] + nexcl[i]]``) and the sample size over the remaining
    edges (``counts``).  ``xpos``: the batch's excluded CSC positions, sorted and unique.

    Two binary searches of the batch's few excluded positions per row, never a look at the
    row's edges: on a hub the exclusion costs what the fanout costs, not the degree."""
    for i in range(seeds.shape[0]):
        row = seeds[i] - node_offset
        s = indptr[row]
        d = indptr[row + 1] - s
        a = np.searchsorted(xpos, s)
        x = np.searchsorted(xpos, s + d) - a
        starts[i] = s
        degs[i] = d
        xlo[i] = a
        nexcl[i] = x
        counts[i] = _count_one(d - x, fanout, replace)


@njit(nogil=True, cache=True, inline="always")
def _rank_to_offset(r, xpos, a, x, s):
    """Row offset of the row's ``r``-th remaining edge (0-based), its excluded offsets being
    ``xpos[a:a+x] - s`` (sorted).  Excluded offset ``e_j`` (the ``j``-th) has ``e_j - j`` remaining
    edges before it, a count that never decreases with ``j``; it lies before the wanted edge iff
    that count is <= ``r``.  So the offset is ``r`` plus how many ``j`` satisfy it: a binary search
    over the ``x`` excluded offsets, O(log x) per drawn edge."""
    lo = 0
    hi = x
    while lo < hi:
        mid = (lo + hi) >> 1
        if xpos[a + mid] - s - mid <= r:
            lo = mid + 1
        else:
            hi = mid
    return r + lo


@njit(nogil=True, cache=True)
def sample_positions_excluding(starts, degs, xlo, nexcl, xpos, seeds, fanout, replace, seed, out_indptr, out_eids):
    """``out_eids[out_indptr[i]:out_indptr[i+1]]`` = CSC positions sampled for seed ``i``, never
    an excluded one (``xpos``, ``xlo``, ``nexcl``: see :func:`excluded_spans`).

    A row with ``x`` excluded edges out of ``d`` draws ranks among its ``d - x`` remaining edges
    with :func:`~bgl.sampler._kernels._row_positions` (uniform, without replacement unless
    ``replace``; every one when the fanout is -1 or at least ``d - x``), then maps each rank to
    its position past the excluded ones (:func:`_rank_to_offset`): the sample a scan of the row's
    remaining edges would give, at O(k log x) instead of O(d).  Rows with ``nexcl[i] == 0`` draw
    as without exclusion."""
    tmp = np.empty(FLOYD_MAX_K, np.int64)
    for i in range(seeds.shape[0]):
        o = out_indptr[i]
        k = out_indptr[i + 1] - o
        s, d, x = starts[i], degs[i], nexcl[i]
        if x == 0:
            _row_positions(s, d, seeds[i], fanout, replace, seed, out_eids, o, k, tmp)
            continue
        _row_positions(0, d - x, seeds[i], fanout, replace, seed, out_eids, o, k, tmp)
        a = xlo[i]
        for j in range(o, o + k):
            out_eids[j] = s + _rank_to_offset(out_eids[j], xpos, a, x, s)


@njit(nogil=True, cache=True)
def invert_edge_ids(edge_ids, out):
    """``out[edge_ids[p]] = p`` (``out`` int64 [e] filled with -1 first); returns the first position
    whose id is out of ``[0, e)`` or repeats an earlier one, or -1 when ``edge_ids`` is a permutation."""
    e = out.shape[0]
    for p in range(edge_ids.shape[0]):
        v = edge_ids[p]
        if v < 0 or v >= e or out[v] != -1:
            return p
        out[v] = p
    return -1


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
