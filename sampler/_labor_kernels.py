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


# ----------------------------------------------------------------- LABOR-i (importance sampling)
# Tolerance of both fixed points (a row's c_s and the layer's expected distinct sources), and the
# rounds that ``importance_sampling < 0`` ("until convergence") may take at most.
IMPORTANCE_EPS = 1e-4
MAX_IMPORTANCE_ROUNDS = 100
_MAX_SOLVE_STEPS = 200


@njit(nogil=True, cache=True, inline="always")
def _edge_weight(weights, weighted, j):
    return weights[j] if weighted else 1.0


@njit(nogil=True, cache=True, inline="always")
def _edge_pi(pi, has_pi, loc, weights, weighted, j):
    """The importance of edge ``j`` before its row's scale ``c_s``: its source's ``pi_t``, or (a
    weighted layer's first round, no ``pi`` yet) the edge's own weight."""
    return pi[loc[j]] if has_pi else _edge_weight(weights, weighted, j)


@njit(nogil=True, cache=True)
def _solve_row(indptr, loc, weights, weighted, pi, has_pi, i, c0, target):
    """``c_s`` of row ``i``: the scale at which sum_j a_j^2 / min(1, c_s pi_j) -- the variance of
    the row's Horvitz-Thompson estimate, up to terms free of ``c_s`` -- meets ``target``
    (LABOR's equation 22: no worse than neighbour sampling's), by the update
    ``c *= var / target`` from ``c0`` (exact in one step while no probability is clipped at 1)."""
    c = c0
    for _ in range(_MAX_SOLVE_STEPS):
        var = 0.0
        for j in range(indptr[i], indptr[i + 1]):
            a = _edge_weight(weights, weighted, j)
            if a > 0.0:
                var += a * a / min(1.0, c * _edge_pi(pi, has_pi, loc, weights, weighted, j))
        c *= var / target
        if min(var, target) / max(var, target) >= 1.0 - IMPORTANCE_EPS:
            break
    return c


@njit(nogil=True, cache=True)
def _full_row_scale(indptr, loc, weights, weighted, pi, has_pi, i):
    """Smallest ``c_s`` at which every drawable edge of row ``i`` has probability 1 (a row that
    keeps all its edges still tells its sources how surely they are drawn)."""
    lo = np.inf
    for j in range(indptr[i], indptr[i + 1]):
        if _edge_weight(weights, weighted, j) > 0.0:
            lo = min(lo, _edge_pi(pi, has_pi, loc, weights, weighted, j))
    return 1.0 / lo if lo < np.inf and lo > 0.0 else 0.0


@njit(nogil=True, cache=True)
def labor_probabilities(indptr, loc, num_src, weights, fanout, rounds, prob):
    """LABOR-i of one layer given all in-edges of its seeds: each edge's inclusion probability.

    Parameters
    ----------
    indptr : int64 [m + 1]
        Row ``i`` (seed ``i``) owns edges ``indptr[i]:indptr[i+1]``.
    loc : int64 [e]
        Source of each edge as a position into ``gids`` (the layer's relabelled sources).
    num_src : int
        ``gids.shape[0]``.
    weights : float64 [e] or [0]
        Edge weights (DGL's ``prob``); empty = unweighted.  Zero-weight edges are never kept.
    fanout : int
        Expected edges per seed (-1 = all).
    rounds : int
        ``importance_sampling``: that many updates of the sources' importances ``pi_t``
        (< 0: until the expected number of distinct sources stops falling, at most
        ``MAX_IMPORTANCE_ROUNDS``).  A weighted layer runs one more round first, which
        solves ``c_s`` with ``pi`` = the edge weights (that alone is weighted LABOR-0).
    prob : float64 [e] (out)
        ``min(1, c_s pi_t)`` (0 for a zero-weight edge): :func:`labor_pick` keeps edge ``j``
        iff its source's variate ``r_t <= prob[j]``, so edges sharing a source are kept jointly.

    One round costs O(e) (a max-scatter of ``c_s`` onto the sources, then each row's
    ``c_s`` solved over its edges); memory: float64 [num_src] twice and [m].
    """
    m = indptr.shape[0] - 1
    weighted = weights.shape[0] > 0
    pi = np.ones(num_src)
    c = np.zeros(m)
    full = np.zeros(m, np.bool_)
    target = np.zeros(m)
    for i in range(m):
        nz = 0
        ds = 0.0
        for j in range(indptr[i], indptr[i + 1]):
            a = _edge_weight(weights, weighted, j)
            if a > 0.0:
                nz += 1
                ds += a
        if fanout < 0 or nz <= fanout:
            full[i] = True
            c[i] = _full_row_scale(indptr, loc, weights, weighted, pi, False, i)
        else:
            c[i] = fanout / ds
            # d^2 / k: uniform neighbour sampling's variance; (sum a)^2 / k keeps k edges in
            # expectation for weighted LABOR-0 (each p = k a / sum a, unclipped)
            target[i] = ds * ds / fanout
    hop = np.zeros(num_src)
    has_pi = False
    total = rounds + (1 if weighted else 0) if rounds >= 0 else MAX_IMPORTANCE_ROUNDS
    prev = np.inf
    for it in range(total):
        updates = not weighted or it > 0
        if updates:  # pi_t *= max over the seeds s that hold t of c_s (times a_j in a weighted first update)
            hop[:] = 0.0
            for i in range(m):
                for j in range(indptr[i], indptr[i + 1]):
                    a = _edge_weight(weights, weighted, j)
                    if a > 0.0:
                        v = c[i] * (a if weighted and it == 1 else 1.0)
                        if v > hop[loc[j]]:
                            hop[loc[j]] = v
            for t in range(num_src):
                pi[t] = hop[t] * pi[t] if has_pi else hop[t]
            has_pi = True
        for i in range(m):
            if full[i]:
                c[i] = _full_row_scale(indptr, loc, weights, weighted, pi, has_pi, i)
            elif indptr[i + 1] > indptr[i]:
                c[i] = _solve_row(indptr, loc, weights, weighted, pi, has_pi, i, c[i], target[i])
        if updates:
            cur = 0.0
            for t in range(num_src):
                if hop[t] > 0.0:
                    cur += min(1.0, pi[t])
            if cur / prev >= 1.0 - IMPORTANCE_EPS:
                break
            prev = cur
    for i in range(m):
        for j in range(indptr[i], indptr[i + 1]):
            if _edge_weight(weights, weighted, j) <= 0.0:
                prob[j] = 0.0
            elif full[i]:
                prob[j] = 1.0
            else:
                prob[j] = min(1.0, c[i] * _edge_pi(pi, has_pi, loc, weights, weighted, j))


@njit(nogil=True, cache=True)
def labor_pick(indptr, loc, gids, weights, prob, seed1, seed2, mix, keep, importance):
    """Keep edge ``j`` iff its source's variate ``r_t`` (``gids[loc[j]]`` under ``seed1, seed2, mix``,
    :func:`variate`) is <= ``prob[j]``; ``importance[j]`` = ``a_j / prob[j]`` scaled so a row's kept
    weights sum to its kept count (DGL's ``edge_weights``), 0 for dropped edges.  O(e)."""
    weighted = weights.shape[0] > 0
    for i in range(indptr.shape[0] - 1):
        kept = 0
        norm = 0.0
        for j in range(indptr[i], indptr[i + 1]):
            p = prob[j]
            keep[j] = p > 0.0 and (p >= 1.0 or variate(seed1, seed2, mix, gids[loc[j]]) <= p)
            importance[j] = 0.0
            if keep[j]:
                importance[j] = _edge_weight(weights, weighted, j) / p
                norm += importance[j]
                kept += 1
        if kept:
            scale = kept / norm
            for j in range(indptr[i], indptr[i + 1]):
                if keep[j]:
                    importance[j] = importance[j] * scale
