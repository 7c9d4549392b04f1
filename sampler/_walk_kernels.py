"""numba kernel of random walks over out-edges (DGL's ``dgl.sampling.random_walk``): one step of every walk.

A walk's draws are a pure function of (call seed, walk index, step): a counter-based stream
(splitmix64 of the seed mixed with both), so a walk repeats with the seed whatever thread or chunk runs it.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ._kernels import _GOLDEN, _below, _mix64
from .typed._kernels import _first_at_least

_UNIT = 1.0 / 9007199254740992.0  # 2^-53: the top 53 bits of a uint64 as a float in [0, 1)


@njit(nogil=True, cache=True, inline="always")
def _step_state(seed, walk, step):
    return _mix64(np.uint64(seed) ^ _mix64(np.uint64(walk) * _GOLDEN + np.uint64(step)))


@njit(nogil=True, cache=True)
def walk_step(indptr, indices, eids, has_eids, weights, weighted, curr, seed, step, restart, traces, out_eids):
    """Move every live walk one step along a relation's out-edges (CSR ``indptr`` / ``indices``, ``eids[p]``
    the edge id at position ``p`` when ``has_eids``, else ``p`` is).

    ``curr[w]``: walk ``w``'s node, -1 once it ended.  It moves along an out-edge drawn uniformly, or with
    ``weighted`` in proportion to ``weights`` (CSR order; a zero weight never drawn); ``traces[w, step + 1]``
    and ``out_eids[w, step]`` record the node and edge (-1 for an ended walk, or one with no out-edge of
    positive weight, which ends there).  Before moving, the walk ends with probability ``restart``
    (DGL 2.1's restart: "before each transition")."""
    for w in range(curr.shape[0]):
        u = curr[w]
        traces[w, step + 1] = -1
        out_eids[w, step] = -1
        if u < 0:
            continue
        state = _step_state(seed, w, step)
        if restart > 0.0 and np.float64(_mix64(state + _GOLDEN) >> np.uint64(11)) * _UNIT < restart:
            curr[w] = -1  # ends before this transition (DGL 2.1's restart)
            continue
        lo = indptr[u]
        hi = indptr[u + 1]
        p = np.int64(-1)
        if hi > lo and weighted:
            total = 0.0
            for q in range(lo, hi):
                total += weights[q]
            if total > 0.0:
                x = np.float64(_mix64(state) >> np.uint64(11)) * _UNIT * total
                p = lo
                acc = np.float64(weights[p])
                while acc <= x and p < hi - 1:
                    p += 1
                    acc += weights[p]
                while weights[p] <= 0.0:  # rounding at the top: the last positive weight
                    p -= 1
        elif hi > lo:
            p = lo + _below(_mix64(state), hi - lo)
        if p < 0:
            curr[w] = -1
            continue
        v = indices[p]
        traces[w, step + 1] = v
        out_eids[w, step] = eids[p] if has_eids else p
        curr[w] = v


@njit(nogil=True, cache=True, inline="always")
def _has_edge(indptr, sorted_indices, u, v):
    """Whether ``u`` has an out-edge to ``v`` (binary search of ``u``'s row, ids ascending within each row)."""
    at = _first_at_least(sorted_indices, indptr[u], indptr[u + 1], v)
    return at < indptr[u + 1] and sorted_indices[at] == v


@njit(nogil=True, cache=True, inline="always")
def _node2vec_bias(indptr, sorted_indices, x, prev, inv_p, inv_q):
    """node2vec's search bias of moving to ``x`` after arriving from ``prev``: 1/p back to ``prev``, 1 to a
    node with an out-edge to ``prev`` (DGL's test: ``x -> prev``), 1/q further away."""
    if x == prev:
        return inv_p
    if _has_edge(indptr, sorted_indices, x, prev):
        return 1.0
    return inv_q


@njit(nogil=True, cache=True)
def node2vec_walks(indptr, indices, sorted_indices, eids, has_eids, weights, weighted, seeds, p, q, seed,
                   traces, out_eids):
    """Whole node2vec walks (Grover & Leskovec) from each of ``seeds`` along out-edges (CSR ``indptr`` /
    ``indices``; ``sorted_indices`` the same rows with ids ascending, for the adjacency test).

    The first step draws an out-edge uniformly (``weighted``: in proportion to ``weights``, CSR order); each
    later step from ``v``, arrived at from ``t``, draws out-edge ``v -> x`` in proportion to its weight times
    :func:`_node2vec_bias` (exactly: DGL's rejection sampling has the same law).  A node without an out-edge
    of positive weight ends the walk: -1 in ``traces[w, step + 1:]`` and ``out_eids[w, step:]``.  Draws are
    a pure function of (``seed``, walk, step), as :func:`walk_step`'s."""
    inv_p = 1.0 / p
    inv_q = 1.0 / q
    steps = out_eids.shape[1]
    for w in range(seeds.shape[0]):
        curr = seeds[w]
        prev = np.int64(-1)
        traces[w, 0] = curr
        ended = False
        for step in range(steps):
            p_at = np.int64(-1)
            if not ended:
                lo = indptr[curr]
                hi = indptr[curr + 1]
                total = 0.0
                for e in range(lo, hi):
                    wt = weights[e] if weighted else 1.0
                    if step > 0 and wt > 0.0:
                        wt *= _node2vec_bias(indptr, sorted_indices, indices[e], prev, inv_p, inv_q)
                    total += wt
                if total > 0.0:
                    x = np.float64(_mix64(_step_state(seed, w, step)) >> np.uint64(11)) * _UNIT * total
                    acc = 0.0
                    for e in range(lo, hi):
                        wt = weights[e] if weighted else 1.0
                        if wt <= 0.0:
                            continue
                        if step > 0:
                            wt *= _node2vec_bias(indptr, sorted_indices, indices[e], prev, inv_p, inv_q)
                        acc += wt
                        p_at = e  # the last positive edge, should rounding leave x at the top
                        if acc > x:
                            break
            if p_at < 0:
                ended = True
                traces[w, step + 1] = -1
                out_eids[w, step] = -1
                continue
            prev = curr
            curr = indices[p_at]
            traces[w, step + 1] = curr
            out_eids[w, step] = eids[p_at] if has_eids else p_at
