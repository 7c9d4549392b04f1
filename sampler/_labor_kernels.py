"""Numba kernels for LABOR sampling (layer-neighbour sampling, DGL's ``LaborSampler``).

LABOR-0 (Balin & Catalyurek, "Layer-Neighbor Sampling", NeurIPS 2023): every
*source* node ``t`` of a layer gets one random variate ``r_t`` in (0, 1),
shared by all the seeds whose rows hold ``t``; seed ``s`` with in-degree
``d_s`` and fanout ``k`` keeps edge ``t -> s`` iff ``r_t <= k / d_s`` (all of
its edges when ``d_s <= k``).  Each edge is still kept with probability
``min(1, k / d_s)`` -- the same as uniform neighbour sampling -- so each seed
keeps ``k`` edges in expectation, but seeds sharing a neighbour keep it
together, and a batch reaches far fewer distinct source nodes: fewer feature
rows to move.

``r_t`` is a function of ``(seed, global id of t)`` only (the uniform
kernels' counter-based stream), so a LABOR sample is identical from a store,
from graph servers and from co-located reads.  ``batch_dependency``: ``r_t``
is ``Phi(sqrt(1 - c) z1 + sqrt(c) z2)`` with ``z1``, ``z2`` standard normals
from two seeds and ``c`` in [0, 1) (``c < 0``: no batch dependency, ``r_t``
uniform under one seed): still uniform, but consecutive batches
(which move ``c`` from 0 towards 1, then shift the seeds) draw correlated
variates, as DGL's ``batch_dependency`` does.

Two passes like the uniform kernels: counts (one variate per edge), then
positions.  Output positions are in CSC order.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from ._kernels import _GOLDEN, _mix64, _row_state

_INV_2_53 = 1.0 / 9007199254740992.0


@njit(nogil=True, cache=True, inline="always")
def _unit_of(seed, gid):
    """Uniform (0, 1) variate of node ``gid`` under ``seed`` (the stream's initial state is
    already two splitmix rounds of ``(seed, gid)``: its top 53 bits are the variate)."""
    return (np.float64(_row_state(seed, gid) >> np.uint64(11)) + 0.5) * _INV_2_53


@njit(nogil=True, cache=True, inline="always")
def _normal_of(seed, gid):
    """Standard normal variate of node ``gid`` under ``seed`` (Box-Muller on two stream steps)."""
    state = _row_state(seed, gid)
    u1 = (np.float64(_mix64(state) >> np.uint64(11)) + 0.5) * _INV_2_53
    u2 = (np.float64(_mix64(state + _GOLDEN) >> np.uint64(11)) + 0.5) * _INV_2_53
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


@njit(nogil=True, cache=True, inline="always")
def variate(seed1, seed2, c, gid):
    """``r_t`` of source node ``gid``: uniform under ``seed1`` alone when ``c < 0`` (no batch
    dependency), else the normal mix of ``seed1`` and ``seed2`` (weight ``c``) mapped back to a uniform."""
    if c < 0.0:
        return _unit_of(seed1, gid)
    z = math.sqrt(1.0 - c) * _normal_of(seed1, gid) + math.sqrt(c) * _normal_of(seed2, gid)
    return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))


@njit(nogil=True, cache=True, inline="always")
def _keep(indices, p, thresh, seed1, seed2, c):
    return thresh >= 1.0 or variate(seed1, seed2, c, np.int64(indices[p])) <= thresh


@njit(nogil=True, cache=True, inline="always")
def _threshold(deg, fanout):
    return 1.0 if fanout < 0 or deg <= fanout else fanout / deg


@njit(nogil=True, cache=True, inline="always")
def _count_row(indptr, indices, gid, node_offset, fanout, seed1, seed2, c):
    row = gid - node_offset
    a, b = indptr[row], indptr[row + 1]
    thresh = _threshold(b - a, fanout)
    n = 0
    for p in range(a, b):
        n += _keep(indices, p, thresh, seed1, seed2, c)
    return n


@njit(nogil=True, cache=True)
def labor_counts_serial(indptr, indices, seeds, node_offset, fanout, seed1, seed2, c, counts):
    """``counts[i]``: edges seed ``i`` keeps (one variate per edge of rows longer than ``fanout``)."""
    for i in range(seeds.shape[0]):
        counts[i] = _count_row(indptr, indices, seeds[i], node_offset, fanout, seed1, seed2, c)


@njit(nogil=True, cache=True, parallel=True)
def labor_counts_par(indptr, indices, seeds, node_offset, fanout, seed1, seed2, c, counts):
    """Parallel twin of :func:`labor_counts_serial`."""
    for i in prange(seeds.shape[0]):
        counts[i] = _count_row(indptr, indices, seeds[i], node_offset, fanout, seed1, seed2, c)


@njit(nogil=True, cache=True, inline="always")
def _fill_row(indptr, indices, gid, node_offset, fanout, seed1, seed2, c, out, o):
    row = gid - node_offset
    a, b = indptr[row], indptr[row + 1]
    thresh = _threshold(b - a, fanout)
    for p in range(a, b):
        if _keep(indices, p, thresh, seed1, seed2, c):
            out[o] = p
            o += 1


@njit(nogil=True, cache=True)
def labor_positions_serial(indptr, indices, seeds, node_offset, fanout, seed1, seed2, c, out_indptr, out_eids):
    """``out_eids[out_indptr[i]:out_indptr[i+1]]`` = CSC positions seed ``i`` keeps."""
    for i in range(seeds.shape[0]):
        _fill_row(indptr, indices, seeds[i], node_offset, fanout, seed1, seed2, c, out_eids, out_indptr[i])


@njit(nogil=True, cache=True, parallel=True)
def labor_positions_par(indptr, indices, seeds, node_offset, fanout, seed1, seed2, c, out_indptr, out_eids):
    """Parallel twin of :func:`labor_positions_serial`."""
    for i in prange(seeds.shape[0]):
        _fill_row(indptr, indices, seeds[i], node_offset, fanout, seed1, seed2, c, out_eids, out_indptr[i])
