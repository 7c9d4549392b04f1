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

Passes over a layer's sampled edges are few on purpose: each that reads a graph-sized array waits
on a cache miss per edge, so the neighbours and a DGLGraph's own edge ids come in one gather
(:func:`gather_nbrs_ids`), and excluded positions are found through a bucket index
(:func:`exclusion_buckets`) rather than by a binary search per row whose steps mispredict.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .._kernels import FLOYD_MAX_K, _count_one, _row_positions
from .._labor_kernels import _keep, _threshold
from .._weighted_kernels import _count_of, _positive, weighted_span


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
    the row's type or its fanout is 0); ``row_counts`` int64 [m] their sum per row.

    A row whose type is the end of ONE relation (both types of a user-item graph with its
    reverse) is that relation's span whole, found without reading ``etype``: the two binary
    searches cost a cache miss a probe, ~17 probes each in a hub's row, and were half of a
    recommendation batch's sampling time (2.1 of 4.3 ms a layer on a 10.6M-edge graph).

    The rows' ``indptr`` bounds are read first in a loop of their own (into ``starts[:, 0]`` and
    ``row_counts``, scratch until the second loop overwrites them): independent cache-missing loads
    the core keeps many of in flight, where inside the per-relation loop's branches it kept few
    (~2.0 -> ~0.6 ms a recommendation batch, 27k rows of a 1.2M-node CSC).  ``starts`` / ``degs`` of a
    span not drawn from (count 0) are left unspecified, as before."""
    num_types = 0
    for r in range(dst_type_of_rel.shape[0]):
        num_types = max(num_types, dst_type_of_rel[r] + 1)
    rels_into = np.zeros(num_types, np.int64)  # relations ending at each node type
    for r in range(dst_type_of_rel.shape[0]):
        rels_into[dst_type_of_rel[r]] += 1
    if fanouts.shape[0] == 0:  # no relations: no column of starts to hold the rows' bounds
        row_counts[:] = 0
        return
    for i in range(dst.shape[0]):
        row = dst[i] - node_offset
        starts[i, 0] = indptr[row]
        row_counts[i] = indptr[row + 1]
    for i in range(dst.shape[0]):
        lo = starts[i, 0]
        hi = row_counts[i]
        total = 0
        for r in range(fanouts.shape[0]):
            counts[i, r] = 0
            if fanouts[r] == 0 or dst_type_of_rel[r] != dst_type[i]:
                continue
            if rels_into[dst_type[i]] == 1:  # every in-edge of the row is r's
                s, e = lo, hi
            else:
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
def exclusion_buckets(excl, shift):
    """``first[b]`` = how many of the sorted positions ``excl`` lie below ``b << shift``, for every
    bucket ``b`` up to the one past the last position (int64 [(excl[-1] >> shift) + 2]): the index
    :func:`_rank` looks positions up in.  O(len(excl) + buckets), once per layer."""
    nb = (excl[excl.shape[0] - 1] >> shift) + 1 if excl.shape[0] else 0
    first = np.empty(nb + 1, np.int64)
    j = 0
    for b in range(nb + 1):
        lo = b << shift
        while j < excl.shape[0] and excl[j] < lo:
            j += 1
        first[b] = j
    return first


@njit(nogil=True, cache=True, inline="always")
def _rank(excl, first, shift, v):
    """How many of the sorted positions ``excl`` are below ``v`` (``np.searchsorted(excl, v)``): the
    bucket of ``v`` bounds the answer, a binary search inside it (usually 0 or 1 positions) ends it."""
    b = v >> shift
    if b >= first.shape[0] - 1:
        return np.int64(excl.shape[0])
    return _first_at_least(excl, first[b], first[b + 1], v)


@njit(nogil=True, cache=True)
def exclude_from_spans(starts, degs, counts, row_counts, fanouts, replace, excl, first, shift, nexcl):
    """Take the excluded CSC positions ``excl`` (sorted, unique) out of :func:`typed_spans`' spans:
    ``nexcl[i, r]`` = excluded positions inside span ``(i, r)`` (two lookups of ``excl``: a span's
    excluded positions are one contiguous run of it), and ``counts`` / ``row_counts`` redone over
    the ``degs - nexcl`` remaining edges.  Costs O(1) per row, nothing per edge: one lookup finds
    whether anything is excluded between the row's first and last drawn-from span (most rows of a
    layer hold no seed edge), two more per span only where something is.

    Lookups go through ``first`` (:func:`exclusion_buckets` of ``excl`` and ``shift``), not a binary
    search of ``excl``: rows come in no position order, so each of a search's ~11 steps (2048 seed
    edges and their reverses) mispredicted about half the time, 1.8 ms of a recommendation batch."""
    for i in range(starts.shape[0]):
        lo = np.int64(-1)
        hi = np.int64(-1)
        for r in range(starts.shape[1]):
            nexcl[i, r] = 0
            if counts[i, r] != 0:
                if lo < 0:
                    lo = starts[i, r]
                hi = starts[i, r] + degs[i, r]  # spans ascend within a row (relations ascend)
        if lo < 0:
            continue  # nothing drawn from this row: row_counts[i] is already 0
        j = _rank(excl, first, shift, lo)
        if j == excl.shape[0] or excl[j] >= hi:
            continue  # no excluded position in the row's spans: counts stand
        total = 0
        for r in range(starts.shape[1]):
            if counts[i, r] == 0:  # a span not drawn from (no edges, fanout 0, or another type's)
                continue
            s = starts[i, r]
            x = _rank(excl, first, shift, s + degs[i, r]) - _rank(excl, first, shift, s)
            nexcl[i, r] = x
            c = _count_one(degs[i, r] - x, fanouts[r], replace)
            counts[i, r] = c
            total += c
        row_counts[i] = total


@njit(nogil=True, cache=True)
def typed_positions(starts, degs, counts, nexcl, keys, fanouts, replace, rel_seeds, excl, first, shift,
                    out_indptr, out_eids, out_etypes):
    """Row ``i``'s sampled CSC positions and relation ids at ``out_indptr[i]``, relation by relation
    ascending; relation ``r`` draws from stream (``rel_seeds[r]``, ``keys[i]``).

    Around excluded positions (link prediction): a span with ``nexcl[i, r] = x > 0`` draws ranks
    among its ``d - x`` remaining edges (the same stream and draw as a span of that length), then
    maps rank ``q`` to the ``q``-th remaining position by stepping over the span's sorted excluded
    positions ``excl``: O(k * x) for ``k`` draws, whatever the degree, so a hub row with a seed edge
    costs its fanout, not its degree.  Uniform among the remaining edges, as an untyped row draws
    (:mod:`bgl.sampler.exclusion`); with ``nexcl`` all 0 it is the plain draw.  ``first``, ``shift``:
    :func:`exclude_from_spans`' index of ``excl``."""
    tmp = np.empty(FLOYD_MAX_K, np.int64)
    for i in range(counts.shape[0]):
        o = out_indptr[i]
        for r in range(counts.shape[1]):
            k = counts[i, r]
            if k == 0:
                continue
            s, x = starts[i, r], nexcl[i, r]
            if x == 0:
                _row_positions(s, degs[i, r], keys[i], fanouts[r], replace, rel_seeds[r], out_eids, o, k, tmp)
            else:
                _row_positions(0, degs[i, r] - x, keys[i], fanouts[r], replace, rel_seeds[r], out_eids, o, k, tmp)
                lo = _rank(excl, first, shift, s)
                for j in range(k):
                    p = s + out_eids[o + j]
                    for t in range(lo, lo + x):  # ascending: each excluded position at or before p shifts it
                        if excl[t] <= p:
                            p += 1
                        else:
                            break
                    out_eids[o + j] = p
            for j in range(k):
                out_etypes[o + j] = r
            o += k


@njit(nogil=True, cache=True)
def gather_nbrs_ids(indices, edge_ids, eids, nbrs):
    """``nbrs[j] = indices[eids[j]]`` and ``eids[j] = edge_ids[eids[j]]`` (in place): a DGLGraph's
    neighbours and own edge ids at the sampled CSC positions in one pass.  The two loads of an edge
    are independent cache misses the core overlaps; as two gathers (``gather_nbrs_serial``, then
    ``ids_at``) they cost a second pass over the positions and a second wait on each miss
    (1.2 + 1.8 ms of a recommendation batch's ~240k edges, against ~1.9 ms here)."""
    for j in range(eids.shape[0]):
        p = eids[j]
        nbrs[j] = indices[p]
        eids[j] = edge_ids[p]


@njit(nogil=True, cache=True)
def weighted_span_counts(starts, degs, counts, row_counts, prob, fanouts, replace, positive):
    """Redo :func:`typed_spans`' counts over each span's POSITIVE weights (``prob`` in CSC order, a
    bool mask as uint8): ``positive[i, r]`` = edges of span ``(i, r)`` with ``prob > 0``, ``counts`` /
    ``row_counts`` what the weighted draw takes (DGL's ``prob=``: ``min(fanout, positive)``; with
    replacement ``fanout`` when any is positive).  Returns the longest span drawn from (the
    with-replacement scratch size).  One read of each drawn-from span's weights."""
    widest = 0
    for i in range(starts.shape[0]):
        total = 0
        for r in range(starts.shape[1]):
            positive[i, r] = 0
            if counts[i, r] == 0:  # no edges, fanout 0, or another type's relation
                continue
            positive[i, r] = _positive(prob, starts[i, r], degs[i, r])
            widest = max(widest, degs[i, r])
            c = _count_of(positive[i, r], fanouts[r], replace)
            counts[i, r] = c
            total += c
        row_counts[i] = total
    return widest


@njit(nogil=True, cache=True)
def weighted_span_positions(starts, degs, counts, positive, prob, keys, fanouts, replace, rel_seeds, widest,
                            out_indptr, out_eids, out_etypes):
    """Row ``i``'s weighted draw at ``out_indptr[i]``, relation by relation ascending: span ``(i, r)``
    draws ``counts[i, r]`` positions by weight from stream (``rel_seeds[r]``, ``keys[i]``), the untyped
    weighted row's draw (:func:`~bgl.sampler._weighted_kernels.weighted_span`) over the span, so a
    zero weight (False mask) is never drawn."""
    kcap = max(1, fanouts.max()) if fanouts.shape[0] else 1
    wkeys = np.empty(kcap, np.float64)
    pos = np.empty(kcap, np.int64)
    cdf = np.empty(widest if replace else 0, np.float64)
    for i in range(counts.shape[0]):
        o = out_indptr[i]
        for r in range(counts.shape[1]):
            k = counts[i, r]
            if k == 0:
                continue
            weighted_span(prob, starts[i, r], degs[i, r], keys[i], replace, rel_seeds[r], out_eids, o, k,
                          positive[i, r], wkeys, pos, cdf)
            for j in range(k):
                out_etypes[o + j] = r
            o += k


@njit(nogil=True, cache=True)
def labor_span_counts(starts, degs, counts, row_counts, indices, fanouts, seed1, seed2, c):
    """Redo :func:`typed_spans`' counts as LABOR-0 keeps (:mod:`._labor_kernels`): span ``(i, r)``
    keeps edge ``t -> s`` iff ``r_t <= fanout_r / deg`` (every edge when ``deg <= fanout_r``), so each
    edge is kept with probability ``min(1, fanout_r / deg)``, the uniform draw's, and the variates
    ``r_t`` (one per source node, whatever the relation) are shared across the layer's rows."""
    for i in range(starts.shape[0]):
        total = 0
        for r in range(starts.shape[1]):
            if counts[i, r] == 0:  # no edges, fanout 0, or another type's relation
                continue
            s, d = starts[i, r], degs[i, r]
            thresh = _threshold(d, fanouts[r])
            n = 0
            for p in range(s, s + d):
                n += _keep(indices, p, thresh, seed1, seed2, c)
            counts[i, r] = n
            total += n
        row_counts[i] = total


@njit(nogil=True, cache=True)
def labor_span_positions(starts, degs, counts, indices, fanouts, seed1, seed2, c, out_indptr, out_eids,
                         out_etypes):
    """Row ``i``'s kept CSC positions (CSC order) and relation ids at ``out_indptr[i]``, relation by
    relation ascending, as :func:`labor_span_counts` counted them."""
    for i in range(counts.shape[0]):
        o = out_indptr[i]
        for r in range(counts.shape[1]):
            if counts[i, r] == 0:
                continue
            s, d = starts[i, r], degs[i, r]
            thresh = _threshold(d, fanouts[r])
            for p in range(s, s + d):
                if _keep(indices, p, thresh, seed1, seed2, c):
                    out_eids[o] = p
                    out_etypes[o] = r
                    o += 1


@njit(nogil=True, cache=True)
def reverse_positions(indptr, indices, etype, src, dst, rev_rel, out):
    """``out[j]`` = CSC position of an edge ``dst[j] -> src[j]`` of relation ``rev_rel[j]`` (the reverse
    of seed edge ``src[j] -> dst[j]``), -1 where the graph has none: the relation's span of row
    ``src[j]`` by two binary searches of ``etype``, then a scan of that span (its length: the
    reverse relation's in-degree of ``src[j]``).  Run once per seed edge when the loader is built."""
    for j in range(src.shape[0]):
        lo = indptr[src[j]]
        hi = indptr[src[j] + 1]
        s = _first_at_least(etype, lo, hi, rev_rel[j])
        e = _first_at_least(etype, s, hi, rev_rel[j] + 1)
        out[j] = -1
        for p in range(s, e):
            if indices[p] == dst[j]:
                out[j] = p
                break
