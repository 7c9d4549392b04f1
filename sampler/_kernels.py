"""Numba kernels for neighbour sampling, relabelling and row gathers (plain arrays only).

Every kernel works on a CSC adjacency (``indptr`` int64 [n + 1], ``indices``
int32/int64 [e], row ``r`` = in-neighbours of local node ``r``) and on
*global* node ids; ``node_offset`` turns a global seed id into a local row
(``row = gid - node_offset``), so the same kernel serves whole stores and
partition parts.

Randomness: each seed row draws from its own counter-based stream keyed by
``(seed, global id)`` through splitmix64, never from numba's global RNG.
That makes a sample a pure function of ``(seed, global id, fanout,
replace)``: independent of the thread count, of the order of the seeds and
of how seeds are split across graph servers, so a partitioned sample equals
an unpartitioned one edge for edge.

Kernels come in pairs: ``*_par`` (``parallel=True``, for in-process use)
and ``*_serial`` (plain ``nogil``), for server worker threads that already
run one request per thread; nesting numba parallel regions inside many
Python threads would oversubscribe the cores and is unsafe with numba's
``workqueue`` threading layer.  Both run the same per-row function.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)

# Floyd's subset sampling costs k draws plus ~k^2/2 integer compares; the reservoir
# pass costs deg - k draws.  A draw (splitmix64 + multiply-shift) is ~10x a compare,
# so Floyd wins unless k is large compared with the degree.
FLOYD_MAX_K = 64
FLOYD_FACTOR = 4


@njit(nogil=True, cache=True, inline="always")
def _mix64(z):
    """splitmix64 finaliser: a bijective avalanche mix of a uint64."""
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


@njit(nogil=True, cache=True, inline="always")
def _below(r, n):
    """Map a uniform uint64 ``r`` to [0, n): multiply-shift on the top 32 bits (bias <= n / 2^32)."""
    if n < 4294967296:
        return np.int64(((r >> np.uint64(32)) * np.uint64(n)) >> np.uint64(32))
    return np.int64(r % np.uint64(n))


@njit(nogil=True, cache=True, inline="always")
def _sort_small(a, o, k):
    """In-place ascending sort of a[o:o+k]; insertion sort for the usual small fanouts."""
    if k > 32:
        a[o:o + k].sort()
        return
    for i in range(o + 1, o + k):
        v = a[i]
        j = i - 1
        while j >= o and a[j] > v:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = v


@njit(nogil=True, cache=True, inline="always")
def _row_state(seed, gid):
    """Initial stream state of one seed row: depends on (seed, global id) only."""
    return _mix64(np.uint64(seed) ^ _mix64(np.uint64(gid) + _GOLDEN))


@njit(nogil=True, cache=True)
def _sample_row(indptr, indices, gid, node_offset, fanout, replace, seed, out_nbrs, out_eids, o, k):
    """Fill ``out_nbrs[o:o+k]`` / ``out_eids[o:o+k]`` with the sample of one row.

    ``out_eids`` receives CSC positions (edge ids of the store).  Without
    replacement the chosen positions are sorted, so the result is in CSC order.
    """
    row = gid - node_offset
    start = indptr[row]
    deg = indptr[row + 1] - start
    if k == 0:
        return
    if fanout < 0 or (not replace and k >= deg):
        for j in range(k):
            out_eids[o + j] = start + j
    elif replace:
        state = _row_state(seed, gid)
        for j in range(k):
            state += _GOLDEN
            out_eids[o + j] = start + _below(_mix64(state), deg)
    elif k <= FLOYD_MAX_K or k * k <= FLOYD_FACTOR * deg:
        # Floyd: for t in [deg-k, deg): pick r in [0, t]; take r unless taken, else t.
        state = _row_state(seed, gid)
        filled = 0
        for t in range(deg - k, deg):
            state += _GOLDEN
            r = _below(_mix64(state), t + 1)
            taken = False
            for q in range(filled):
                if out_eids[o + q] == r:
                    taken = True
                    break
            out_eids[o + filled] = t if taken else r
            filled += 1
        _sort_small(out_eids, o, k)
        for j in range(k):
            out_eids[o + j] += start
    else:
        # Reservoir (algorithm R) over positions 0..deg-1.
        state = _row_state(seed, gid)
        for j in range(k):
            out_eids[o + j] = j
        for t in range(k, deg):
            state += _GOLDEN
            r = _below(_mix64(state), t + 1)
            if r < k:
                out_eids[o + r] = t
        _sort_small(out_eids, o, k)
        for j in range(k):
            out_eids[o + j] += start
    for j in range(k):
        out_nbrs[o + j] = indices[out_eids[o + j]]


@njit(nogil=True, cache=True, inline="always")
def _count_one(indptr, gid, node_offset, fanout, replace):
    row = gid - node_offset
    deg = indptr[row + 1] - indptr[row]
    if fanout < 0:
        return deg
    if replace:
        return fanout if deg > 0 else 0
    return min(deg, fanout)


@njit(nogil=True, cache=True, parallel=True)
def sample_counts_par(indptr, seeds, node_offset, fanout, replace, counts):
    """counts[i] = number of neighbours sampled for seeds[i] (int64 [n])."""
    for i in prange(seeds.shape[0]):
        counts[i] = _count_one(indptr, seeds[i], node_offset, fanout, replace)


@njit(nogil=True, cache=True)
def sample_counts_serial(indptr, seeds, node_offset, fanout, replace, counts):
    """Serial twin of :func:`sample_counts_par`."""
    for i in range(seeds.shape[0]):
        counts[i] = _count_one(indptr, seeds[i], node_offset, fanout, replace)


@njit(nogil=True, cache=True, parallel=True)
def sample_fill_par(indptr, indices, seeds, node_offset, fanout, replace, seed, out_indptr, out_nbrs, out_eids):
    """Sample every seed row into the segments given by ``out_indptr`` (int64 [n + 1])."""
    for i in prange(seeds.shape[0]):
        o = out_indptr[i]
        _sample_row(indptr, indices, seeds[i], node_offset, fanout, replace, seed,
                    out_nbrs, out_eids, o, out_indptr[i + 1] - o)


@njit(nogil=True, cache=True)
def sample_fill_serial(indptr, indices, seeds, node_offset, fanout, replace, seed, out_indptr, out_nbrs, out_eids):
    """Serial twin of :func:`sample_fill_par`."""
    for i in range(seeds.shape[0]):
        o = out_indptr[i]
        _sample_row(indptr, indices, seeds[i], node_offset, fanout, replace, seed,
                    out_nbrs, out_eids, o, out_indptr[i + 1] - o)


@njit(nogil=True, cache=True, parallel=True)
def sample_weighted_par(indptr, indices, prob, seeds, node_offset, fanout, replace, seed, out_indptr, out_nbrs, out_eids):
    """Weighted sampling: edge ``p`` is drawn with probability proportional to ``prob[p]``.

    ``out_indptr`` must come from counts where zero-probability edges are
    excluded (see :func:`weighted_counts_par`).  With replacement: inverse-CDF
    draws.  Without: Efraimidis-Spirakis keys ``u ** (1 / w)``, top k.
    Slower than the uniform kernels (O(degree log degree) per row).
    """
    for i in prange(seeds.shape[0]):
        gid = seeds[i]
        row = gid - node_offset
        start = indptr[row]
        deg = indptr[row + 1] - start
        o = out_indptr[i]
        k = out_indptr[i + 1] - o
        if k == 0:
            continue
        state = _row_state(seed, gid)
        w = prob[start:start + deg].astype(np.float64)
        if replace:
            cdf = np.cumsum(w)
            total = cdf[deg - 1]
            for j in range(k):
                state += _GOLDEN
                u = (np.float64(_mix64(state) >> np.uint64(11)) + 0.5) * (1.0 / 9007199254740992.0) * total
                p = np.searchsorted(cdf, u, side="right")
                if p >= deg:
                    p = deg - 1
                out_eids[o + j] = start + p
        else:
            keys = np.empty(deg, np.float64)
            for p in range(deg):
                state += _GOLDEN
                u = (np.float64(_mix64(state) >> np.uint64(11)) + 0.5) * (1.0 / 9007199254740992.0)
                # log-key; zero weight -> -inf, never chosen while positive weights remain
                keys[p] = np.log(u) / w[p] if w[p] > 0 else -np.inf
            order = np.argsort(-keys)[:k]
            order.sort()
            for j in range(k):
                out_eids[o + j] = start + order[j]
        for j in range(k):
            out_nbrs[o + j] = indices[out_eids[o + j]]


@njit(nogil=True, cache=True, parallel=True)
def weighted_counts_par(indptr, prob, seeds, node_offset, fanout, replace, counts):
    """Counts for weighted sampling: only edges with ``prob > 0`` can be drawn."""
    for i in prange(seeds.shape[0]):
        row = seeds[i] - node_offset
        nz = 0
        for p in range(indptr[row], indptr[row + 1]):
            if prob[p] > 0:
                nz += 1
        if fanout < 0:
            counts[i] = nz
        elif replace:
            counts[i] = fanout if nz > 0 else 0
        else:
            counts[i] = min(nz, fanout)


@njit(nogil=True, cache=True)
def relabel(dst_ids, nbrs):
    """Global -> local ids with dst nodes first (as ``dgl.to_block``).

    Parameters
    ----------
    dst_ids : int64 [m] unique global ids (they become local ids 0..m-1)
    nbrs : int64 [e] global ids

    Returns
    -------
    src_ids : int64 [s] global ids, ``src_ids[:m] == dst_ids``, then new ids in
        order of first appearance in ``nbrs``
    local : int64 [e] local ids of ``nbrs`` (positions in ``src_ids``)
    dup : int64, index of the first repeated dst id, or -1
    """
    m = dst_ids.shape[0]
    e = nbrs.shape[0]
    cap = 16
    bits = 4
    while cap < 2 * (m + e):
        cap *= 2
        bits += 1
    shift = np.uint64(64 - bits)
    mask = cap - 1
    # Open addressing, linear probing; key and value side by side so a probe
    # touches one cache line.  Slot h: table[2h] = global id (-1 = empty), table[2h+1] = local id.
    table = np.full(2 * cap, -1, np.int64)
    src = np.empty(m + e, np.int64)
    local = np.empty(e, np.int64)
    for i in range(m):
        key = dst_ids[i]
        h = np.int64((np.uint64(key) * _GOLDEN) >> shift)
        while table[2 * h] != -1 and table[2 * h] != key:
            h = (h + 1) & mask
        if table[2 * h] == key:
            return src[:0], local[:0], np.int64(i)
        table[2 * h] = key
        table[2 * h + 1] = i
        src[i] = key
    n = m
    for j in range(e):
        key = nbrs[j]
        h = np.int64((np.uint64(key) * _GOLDEN) >> shift)
        while table[2 * h] != -1 and table[2 * h] != key:
            h = (h + 1) & mask
        if table[2 * h] == key:
            local[j] = table[2 * h + 1]
        else:
            table[2 * h] = key
            table[2 * h + 1] = n
            src[n] = key
            local[j] = n
            n += 1
    return src[:n].copy(), local, np.int64(-1)


@njit(nogil=True, cache=True)
def permute_segments(indptr, vals, order, out_indptr, out_vals):
    """Segment ``i`` of the output is segment ``order[i]`` of the input.

    ``out_indptr`` (int64 [len(order) + 1]) must already hold the permuted
    prefix sums; used by the client to put per-server replies back in seed order.
    """
    for i in range(order.shape[0]):
        s = indptr[order[i]]
        o = out_indptr[i]
        for j in range(out_indptr[i + 1] - o):
            out_vals[o + j] = vals[s + j]


@njit(nogil=True, cache=True, parallel=True)
def gather_rows_par(src, ids, offset, out):
    """out[i] = src[ids[i] - offset] for a 2-D ``src`` (e.g. a feature memmap)."""
    for i in prange(ids.shape[0]):
        out[i, :] = src[ids[i] - offset, :]


@njit(nogil=True, cache=True)
def gather_rows_serial(src, ids, offset, out):
    """Serial twin of :func:`gather_rows_par`."""
    for i in range(ids.shape[0]):
        out[i, :] = src[ids[i] - offset, :]


@njit(nogil=True, cache=True)
def gather_1d(src, ids, offset, out):
    """out[i] = src[ids[i] - offset] for a 1-D ``src`` (labels)."""
    for i in range(ids.shape[0]):
        out[i] = src[ids[i] - offset]


@njit(nogil=True, cache=True)
def count_outside(ids, lo, hi):
    """Index of the first id outside [lo, hi), or -1 (one pass, no temporaries)."""
    for i in range(ids.shape[0]):
        if ids[i] < lo or ids[i] >= hi:
            return i
    return -1
