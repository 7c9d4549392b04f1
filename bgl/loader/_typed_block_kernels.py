"""Numba kernels that split a typed bgl block into DGL's per-type, per-relation arrays.

A typed block (:class:`bgl.blocks.Block` with ``etypes``) is one CSC over the batch's
nodes of every type; a heterogeneous ``dgl.Block`` wants one CSC per relation over
type-local positions.  Both passes here are linear in the block (O(num_src + num_edges),
a few loops over the T node types and R relations), so building a heterograph block's
indices costs microseconds, not the dozen NumPy calls per relation it took before.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(nogil=True, cache=True)
def type_positions(src_ids, num_dst, offsets):
    """Node type and type-local position of each src node, and each type's type-local ids.

    Parameters
    ----------
    src_ids : int64 [num_src] global ids (the first ``num_dst`` are the dst nodes)
    num_dst : number of dst nodes
    offsets : int64 [T + 1] type ``t`` owns global ids ``[offsets[t], offsets[t + 1])``

    Returns
    -------
    src_type : int64 [num_src] type of each src node
    local : int64 [num_src] position of each src node among the src nodes of its type
    num_src_of_type, num_dst_of_type : int64 [T] each type's src and dst node counts
    type_ids : int64 [num_src] type-local ids, type after type (``num_src_of_type`` each), in
        block order inside a type (what ``srcnodes[ntype].data[dgl.NID]`` holds)
    bad : the position of the first id outside ``[offsets[0], offsets[T])``, -1 if none
    """
    n = src_ids.shape[0]
    num_types = offsets.shape[0] - 1
    src_type = np.empty(n, np.int64)
    local = np.empty(n, np.int64)
    num_src_of_type = np.zeros(num_types, np.int64)
    num_dst_of_type = np.zeros(num_types, np.int64)
    type_ids = np.empty(n, np.int64)
    for i in range(n):
        g = src_ids[i]
        if g < offsets[0] or g >= offsets[num_types]:
            return src_type, local, num_src_of_type, num_dst_of_type, type_ids, i
        lo = 0
        hi = num_types - 1
        while lo < hi:  # the last type whose offset is <= g
            mid = (lo + hi + 1) >> 1
            if offsets[mid] <= g:
                lo = mid
            else:
                hi = mid - 1
        src_type[i] = lo
        local[i] = num_src_of_type[lo]
        num_src_of_type[lo] += 1
    for i in range(min(num_dst, n)):
        num_dst_of_type[src_type[i]] += 1
    start = np.zeros(num_types, np.int64)
    for t in range(1, num_types):
        start[t] = start[t - 1] + num_src_of_type[t - 1]
    for i in range(n):
        t = src_type[i]
        type_ids[start[t] + local[i]] = src_ids[i] - offsets[t]
    return src_type, local, num_src_of_type, num_dst_of_type, type_ids, -1


@njit(nogil=True, cache=True)
def relation_csc(indptr, indices, etypes, src_type, local, num_dst_of_type, rel_src_type, rel_dst_type, edge_ids,
                 rel_eids):
    """One CSC per relation over type-local positions, each relation's edges in the block's CSC order.

    Any order of a row's edges gives the same result; a row whose edges are grouped by relation
    is one run per relation, the fast case.  Scratch: 16 B per edge (the runs).

    Parameters
    ----------
    indptr : int64 [num_dst + 1]; indices : int [num_edges] src positions in the block
    etypes : int [num_edges] relation id of each edge
    src_type, local, num_dst_of_type : from :func:`type_positions`
    rel_src_type, rel_dst_type : int64 [R] the src and dst node type of each relation
    edge_ids : [num_edges] the block's edge ids, or empty (none)
    rel_eids : [num_edges] (``edge_ids``' dtype) filled with each relation-order edge's id, or empty: the
        ids ride in the copy pass, where a NumPy gather ``edge_ids[rel_pos]`` after it was a second
        pass, holding the GIL in the producer thread (0.05 ms of a Cora paper-word block)

    Returns
    -------
    rel_indptr : int64 [sum_r (num_dst_of_type[rel_dst_type[r]] + 1)] relation after relation;
        relation ``r``'s indptr starts at ``indptr_start[r]``
    rel_indices : int64 [num_edges] src positions among the src type's nodes, relation after relation
    rel_pos : int64 [num_edges] the block CSC position of each of those edges
    indptr_start : int64 [R + 1]; edge_start : int64 [R + 1] where relation ``r``'s edges start
    bad_edge : the block CSC position of the first edge whose relation id or src position is out of
        range or whose endpoints' types are not its relation's, -1 if none
    bad_row : the first dst row whose ``indptr`` span is decreasing or past ``num_edges``, -1 if
        none (the caller checks ``indptr[0] == 0``)
    """
    num_dst = indptr.shape[0] - 1
    num_src = src_type.shape[0]
    num_edges = indices.shape[0]
    num_rels = rel_src_type.shape[0]
    indptr_start = np.zeros(num_rels + 1, np.int64)
    edge_start = np.zeros(num_rels + 1, np.int64)
    rel_indices = np.empty(num_edges, np.int64)
    rel_pos = np.empty(num_edges, np.int64)
    for r in range(num_rels):
        indptr_start[r + 1] = indptr_start[r] + num_dst_of_type[rel_dst_type[r]] + 1
    rel_indptr = np.zeros(indptr_start[num_rels], np.int64)
    # Pass 1: the runs of one relation inside each row (one per (row, relation) when the row's
    # edges are grouped by relation, as the sampler makes them); count, check, remember them.
    run_start = np.empty(num_edges + 1, np.int64)
    run_rel = np.empty(num_edges, np.int64)
    num_runs = 0
    for v in range(num_dst):
        lo = indptr[v]
        hi = indptr[v + 1]
        if hi < lo or hi > num_edges:
            return rel_indptr, rel_indices, rel_pos, indptr_start, edge_start, -1, v
        t = src_type[v]
        lv = local[v]
        p = lo
        while p < hi:
            r = etypes[p]
            if r < 0 or r >= num_rels or rel_dst_type[r] != t:
                return rel_indptr, rel_indices, rel_pos, indptr_start, edge_start, p, -1
            q = p + 1
            while q < hi and etypes[q] == r:
                q += 1
            rel_indptr[indptr_start[r] + lv + 1] += q - p
            edge_start[r + 1] += q - p
            run_start[num_runs] = p
            run_rel[num_runs] = r
            num_runs += 1
            p = q
    run_start[num_runs] = num_edges
    for r in range(num_rels):
        edge_start[r + 1] += edge_start[r]
        for j in range(indptr_start[r] + 1, indptr_start[r + 1]):
            rel_indptr[j] += rel_indptr[j - 1]
    # Pass 2: copy each run to its relation's next free positions (a counted loop per run:
    # no per-edge cursor or relation lookup).
    cursor = edge_start[:num_rels].copy()
    for i in range(num_runs):
        p = run_start[i]
        q = run_start[i + 1]
        r = run_rel[i]
        s = rel_src_type[r]
        k = cursor[r] - p
        for e in range(p, q):
            u = indices[e]
            if u < 0 or u >= num_src or src_type[u] != s:
                return rel_indptr, rel_indices, rel_pos, indptr_start, edge_start, e, -1
            rel_indices[k + e] = local[u]
            rel_pos[k + e] = e
        if edge_ids.shape[0] != 0:
            for e in range(p, q):
                rel_eids[k + e] = edge_ids[e]
        cursor[r] = k + q
    return rel_indptr, rel_indices, rel_pos, indptr_start, edge_start, -1, -1
