"""Numba kernels for partitioning: plain array arguments, no Python objects.

Every kernel is O(nodes + edges) (or O(edges x parts)) per call; whole-graph kernels take
one row chunk of the CSC at a time (``ptr`` = the chunk's slice of ``indptr`` with global
edge offsets, ``indices`` = its in-neighbours, ``row_start`` = its first row), so callers
stream a memory-mapped store through them.  The thin Python layers in ``parhip.py``,
``bgl_part.py``, ``metis_part.py``, ``metrics.py`` and ``format.py`` validate inputs.

Graphs arrive as CSC (``indptr`` int64 [n+1], ``indices`` int32/int64 [e]: row ``v``
lists the in-neighbours of ``v``).  Engines want the undirected graph:
``symmetric_adjacency`` builds it in memory (METIS), ``symmetric_rows`` streams it in
chunks (the KaMinPar input file).
"""
from __future__ import annotations

import numpy as np
from numba import njit


# ------------------------------------------------------------- structure


@njit(cache=True, nogil=True)
def transpose(indptr, indices, num_nodes):
    """CSC -> CSR (out-neighbours) by counting sort; O(n + e), keeps the index dtype."""
    e = indices.shape[0]
    out_ptr = np.zeros(num_nodes + 1, np.int64)
    for i in range(e):
        out_ptr[indices[i] + 1] += 1
    for v in range(num_nodes):
        out_ptr[v + 1] += out_ptr[v]
    fill = out_ptr[:-1].copy()
    out_idx = np.empty(e, indices.dtype)
    for v in range(num_nodes):
        for j in range(indptr[v], indptr[v + 1]):
            u = indices[j]
            out_idx[fill[u]] = v
            fill[u] += 1
    return out_ptr, out_idx


@njit(cache=True, nogil=True)
def symmetric_adjacency(indptr, indices, out_ptr, out_idx, num_nodes):
    """Undirected, deduplicated adjacency without self-loops (what METIS requires).

    Returns ``xadj`` int64 [n+1], ``adjncy`` [2m] (the dtype of ``indices``).  Duplicates are removed
    with a per-row marker array (sparse accumulator), so the pass is linear.
    """
    mark = np.full(num_nodes, -1, np.int64)
    xadj = np.zeros(num_nodes + 1, np.int64)
    for v in range(num_nodes):
        c = 0
        for j in range(indptr[v], indptr[v + 1]):
            u = indices[j]
            if u != v and mark[u] != v:
                mark[u] = v
                c += 1
        for j in range(out_ptr[v], out_ptr[v + 1]):
            u = out_idx[j]
            if u != v and mark[u] != v:
                mark[u] = v
                c += 1
        xadj[v + 1] = xadj[v] + c
    adjncy = np.empty(xadj[num_nodes], indices.dtype)
    mark[:] = -1
    for v in range(num_nodes):
        p = xadj[v]
        for j in range(indptr[v], indptr[v + 1]):
            u = indices[j]
            if u != v and mark[u] != v:
                mark[u] = v
                adjncy[p] = u
                p += 1
        for j in range(out_ptr[v], out_ptr[v + 1]):
            u = out_idx[j]
            if u != v and mark[u] != v:
                mark[u] = v
                adjncy[p] = u
                p += 1
    return xadj, adjncy


@njit(cache=True, nogil=True)
def count_cut_edges(indptr, indices, part_of, node_start):
    """Edges of a CSC slice (rows = nodes ``node_start + i``) whose endpoints lie in
    different parts."""
    cut = 0
    n = indptr.shape[0] - 1
    for i in range(n):
        pv = part_of[node_start + i]
        for j in range(indptr[i] - indptr[0], indptr[i + 1] - indptr[0]):
            if part_of[indices[j]] != pv:
                cut += 1
    return cut


# --------------------------------------------------------------- writing


@njit(cache=True, nogil=True)
def gather_rows(indptr, indices, rows, new_of, out):
    """Copy the in-neighbour lists of ``rows`` (original ids) into ``out`` back to back,
    relabelled through ``new_of`` (original id -> new id).  Returns the edges written."""
    p = 0
    for i in range(rows.shape[0]):
        v = rows[i]
        for j in range(indptr[v], indptr[v + 1]):
            out[p] = new_of[indices[j]]
            p += 1
    return p


@njit(cache=True, nogil=True)
def row_positions(indptr, rows, out):
    """The CSC positions of the in-edges of ``rows``, back to back in ``out`` (the order
    :func:`gather_rows` writes them), for carrying edge arrays into a part.  Returns the count."""
    p = 0
    for i in range(rows.shape[0]):
        v = rows[i]
        for j in range(indptr[v], indptr[v + 1]):
            out[p] = j
            p += 1
    return p


@njit(cache=True, nogil=True)
def slice_keys(indptr, src, lo, n, out, reverse):
    """One int64 key per in-edge ``u -> v`` (``v = lo + row``) of a rank's slice, self-loops left
    out, in CSC order into ``out``; returns the count.  ``reverse`` False: ``(v - lo) * n + u``
    (the pair in ``v``'s row here); True: ``u * n + v`` (the pair in ``u``'s row, global, sorted
    by owner when sorted).  ``indptr`` int64 from 0, ``src`` int32/int64 global ids; the caller
    checks that ``n * n`` fits int64."""
    p = 0
    for row in range(indptr.shape[0] - 1):
        v = lo + row
        for j in range(indptr[row], indptr[row + 1]):
            u = np.int64(src[j])
            if u == v:
                continue
            out[p] = u * n + v if reverse else row * n + u
            p += 1
    return p


@njit(cache=True, nogil=True)
def row_ranges(starts, counts, out):
    """``starts[i], starts[i] + 1, ..., starts[i] + counts[i] - 1`` for each row back to back in
    ``out`` (the edge ids of rows whose edges are consecutive, from each row's first); returns the count."""
    p = 0
    for i in range(starts.shape[0]):
        for j in range(counts[i]):
            out[p] = starts[i] + j
            p += 1
    return p


@njit(cache=True, nogil=True)
def unique_sorted(a):
    """Drop repeats from sorted ``a`` in place: its first k entries become the distinct values
    (ascending); returns k."""
    if a.shape[0] == 0:
        return 0
    k = 1
    for i in range(1, a.shape[0]):
        if a[i] != a[k - 1]:
            a[k] = a[i]
            k += 1
    return k


# ------------------------------------------------- engine input (streamed)


@njit(cache=True, nogil=True)
def out_degree_add(indices, out_deg):
    """``out_deg[u] += 1`` for every in-neighbour entry ``u`` of a CSC chunk."""
    for j in range(indices.shape[0]):
        out_deg[indices[j]] += 1


@njit(cache=True, nogil=True)
def transpose_fill(ptr, indices, row_start, fill, out_idx):
    """Scatter a CSC chunk (rows ``row_start + i``) into the out-neighbour CSR ``out_idx``
    at the cursors ``fill`` (advanced in place)."""
    base = ptr[0]
    for i in range(ptr.shape[0] - 1):
        v = row_start + i
        for j in range(ptr[i] - base, ptr[i + 1] - base):
            u = indices[j]
            out_idx[fill[u]] = v
            fill[u] += 1


@njit(cache=True, nogil=True)
def symmetric_rows(ptr, indices, row_start, out_ptr, out_idx, has_out, mark, pos_base, crossings,
                   has_w, nbr, wt, count_only, deg):
    """Undirected rows ``row_start + i`` of a CSC chunk: in- plus out-neighbours, deduplicated,
    without self-loops.

    ``mark`` int64 [n] (-1 initially) holds, per neighbour, its global output position
    (``pos_base`` + chunk position; positions only grow over one pass), so a neighbour already in
    the current row is found in O(1) and deduplication is linear.  With ``count_only`` only
    ``deg[i]`` is written; otherwise neighbours go to ``nbr`` back to back and, when ``has_w``,
    the float crossing weight of edge {u, v} to ``wt``: ``crossings[v]`` for a stored u -> v
    plus ``crossings[u]`` for a stored v -> u (without out lists the store is symmetric, so
    both).  Returns the entries of the chunk.
    """
    base = ptr[0]
    p = 0
    for i in range(ptr.shape[0] - 1):
        v = row_start + i
        start = pos_base + p
        for j in range(ptr[i] - base, ptr[i + 1] - base):
            u = indices[j]
            if u == v:
                continue
            q = mark[u]
            if q >= start:
                if has_w and has_out and not count_only:
                    wt[q - pos_base] += crossings[v]
                continue
            mark[u] = pos_base + p
            if not count_only:
                nbr[p] = u
                if has_w:
                    # a symmetric store (no out lists) holds v -> u as well
                    wt[p] = crossings[v] if has_out else crossings[v] + crossings[u]
            p += 1
        if has_out:
            for j in range(out_ptr[v], out_ptr[v + 1]):
                u = out_idx[j]
                if u == v:
                    continue
                q = mark[u]
                if q >= start:
                    if has_w and not count_only:
                        wt[q - pos_base] += crossings[u]
                    continue
                mark[u] = pos_base + p
                if not count_only:
                    nbr[p] = u
                    if has_w:
                        wt[p] = crossings[u]
                p += 1
        deg[i] = pos_base + p - start
    return p


@njit(cache=True, nogil=True)
def quantize_levels(wt, scale, levels, out):
    """Integer edge weights ``1 + min(levels - 1, floor(w / scale))`` (few distinct levels)."""
    for i in range(wt.shape[0]):
        q = int(wt[i] / scale)
        out[i] = 1 + (q if q < levels - 1 else levels - 1)


# ------------------------------------------------------ sampler weights


@njit(cache=True, nogil=True)
def propagate_visits(ptr, indices, row_start, visits, fanout, nxt, crossings):
    """One sampling hop over a CSC chunk: a node ``v`` visited ``visits[v]`` times draws each
    in-edge with probability ``min(1, fanout / indeg(v))``; adds the expected draws of each
    in-edge of v to ``crossings[v]`` and the expected visits to in-neighbours to ``nxt``."""
    base = ptr[0]
    for i in range(ptr.shape[0] - 1):
        v = row_start + i
        r = visits[v]
        d = ptr[i + 1] - ptr[i]
        if r == 0.0 or d == 0:
            continue
        p = r * (1.0 if fanout < 0 or d <= fanout else fanout / d)
        crossings[v] += p
        for j in range(ptr[i] - base, ptr[i + 1] - base):
            nxt[indices[j]] += p


# ---------------------------------------------------------- rebalancing


@njit(cache=True, nogil=True)
def best_moves(ptr, indices, row_start, part_of, crossings, movable_part, target_ok, num_parts,
               best_to, gain, conn):
    """For rows of a CSC chunk in a ``movable_part``: the best other part among ``target_ok``
    parts by crossing-weighted connectivity (``crossings[v] + crossings[u]`` per in-edge u -> v,
    +1 so unsampled edges still count), and the gain (weight to it minus weight kept).
    ``best_to`` is -1 where no target is allowed."""
    base = ptr[0]
    for i in range(ptr.shape[0] - 1):
        v = row_start + i
        pv = part_of[v]
        if not movable_part[pv]:
            continue
        for k in range(num_parts):
            conn[k] = 0.0
        for j in range(ptr[i] - base, ptr[i + 1] - base):
            u = indices[j]
            if u != v:
                conn[part_of[u]] += 1.0 + crossings[v] + crossings[u]
        b = -1
        bw = -1.0
        for k in range(num_parts):
            if k != pv and target_ok[k] and conn[k] > bw:
                b = k
                bw = conn[k]
        best_to[v] = b
        gain[v] = (bw - conn[pv]) if b >= 0 else -np.inf


@njit(cache=True, nogil=True)
def _fits(loads, caps, dst, c):
    for k in range(3):
        if loads[k, dst] + c[k] > caps[k]:
            return False
    return True


@njit(cache=True, nogil=True)
def _move(loads, part_of, v, src, dst, c):
    """Move v from ``src`` to ``dst``, carrying its loads ``c`` (nodes, training nodes, edges)."""
    for k in range(3):
        loads[k, src] -= c[k]
        loads[k, dst] += c[k]
    part_of[v] = dst


@njit(cache=True, nogil=True)
def apply_moves(order, best_to, part_of, is_train, deg, loads, caps):
    """Move candidates in ``order`` out of their part while it exceeds a cap on a load they
    carry (loads: 0 nodes, 1 training nodes (``is_train``), 2 edges (``deg``)): to ``best_to``
    when that part stays within every cap, else to the part with the most room left that does.
    ``loads`` float64 [3, P] is updated in place; returns the moves."""
    moved = 0
    num_parts = loads.shape[1]
    c = np.empty(3, np.float64)
    for t in range(order.shape[0]):
        v = order[t]
        dst = best_to[v]
        if dst < 0:
            continue
        src = part_of[v]
        c[0] = 1.0
        c[1] = is_train[v]
        c[2] = deg[v]
        helps = False
        for k in range(3):
            if c[k] > 0 and loads[k, src] > caps[k]:
                helps = True
        if not helps:
            continue
        if not _fits(loads, caps, dst, c):
            dst = -1
            room = -1.0
            for q in range(num_parts):
                if q != src and _fits(loads, caps, q, c):
                    r = 0.0
                    for k in range(3):
                        r += (caps[k] - loads[k, q]) / caps[k]
                    if r > room:
                        room = r
                        dst = q
            if dst < 0:
                continue
        _move(loads, part_of, v, src, dst, c)
        moved += 1
    return moved


# ------------------------------------------- sampler-aware refinement


@njit(cache=True, nogil=True)
def hop_by_part(ptr, indices, row_start, visits, fanout, nxt, draws):
    """One sampling hop with visits split by the seeds' part: ``visits`` float32 [n, P] (how
    often v is in the frontier of batches of part k's trainer) -> each in-edge u -> v is drawn
    ``visits[v] x min(1, fanout / indeg(v))`` times; adds that to ``draws[u]`` (sampled
    neighbour entries, what the remote-sample share counts) and to ``nxt[u]`` (the next
    frontier; the caller starts ``nxt`` as a copy of ``visits``)."""
    base = ptr[0]
    num_parts = visits.shape[1]
    for i in range(ptr.shape[0] - 1):
        v = row_start + i
        d = ptr[i + 1] - ptr[i]
        if d == 0:
            continue
        pr = 1.0 if fanout < 0 or d <= fanout else fanout / d
        any_visit = False
        for k in range(num_parts):
            if visits[v, k] != 0.0:
                any_visit = True
        if not any_visit:
            continue
        for j in range(ptr[i] - base, ptr[i + 1] - base):
            u = indices[j]
            for k in range(num_parts):
                x = visits[v, k] * pr
                nxt[u, k] += x
                draws[u, k] += x


@njit(cache=True, nogil=True)
def tree_by_part(ptr, indices, row_start, part_of, prev, fanout, out):
    """Expected sampled neighbours per part in the sampling tree of each node with one more
    layer: ``out[v] = prev[v] + min(1, fanout/indeg(v)) x sum over in-neighbours u of
    (e_part(u) + prev[u])`` (``prev``/``out`` float32 [n, P]; v stays in its own frontier)."""
    base = ptr[0]
    num_parts = prev.shape[1]
    for i in range(ptr.shape[0] - 1):
        v = row_start + i
        for k in range(num_parts):
            out[v, k] = prev[v, k]
        d = ptr[i + 1] - ptr[i]
        if d == 0:
            continue
        pr = 1.0 if fanout < 0 or d <= fanout else fanout / d
        for j in range(ptr[i] - base, ptr[i + 1] - base):
            u = indices[j]
            out[v, part_of[u]] += pr
            for k in range(num_parts):
                out[v, k] += pr * prev[u, k]


@njit(cache=True, nogil=True)
def locality_moves(draws, tree, is_train, part_of, best_to, gain):
    """Best part of each node for the remote-sample share: sampled as a neighbour by part k's
    batches ``draws[v, k]`` times, and (training nodes) drawing ``tree[v, k]`` neighbours in part
    k as a seed.  ``best_to`` = the best other part where the gain is positive, else -1."""
    n, num_parts = draws.shape
    for v in range(n):
        pv = part_of[v]
        t = is_train[v]
        own = draws[v, pv] + t * tree[v, pv]
        b = -1
        bg = 0.0
        for k in range(num_parts):
            if k != pv:
                g = draws[v, k] + t * tree[v, k] - own
                if g > bg:
                    bg = g
                    b = k
        best_to[v] = b
        gain[v] = bg


@njit(cache=True, nogil=True)
def apply_gain_moves(order, best_to, part_of, is_train, deg, loads, caps):
    """Move candidates in ``order`` to ``best_to`` when the target stays within every cap
    (loads: nodes, training nodes, edges).  ``loads`` [3, P] updated; returns the moves."""
    moved = 0
    c = np.empty(3, np.float64)
    for t in range(order.shape[0]):
        v = order[t]
        dst = best_to[v]
        if dst < 0:
            continue
        src = part_of[v]
        c[0] = 1.0
        c[1] = is_train[v]
        c[2] = deg[v]
        if not _fits(loads, caps, dst, c):
            continue
        _move(loads, part_of, v, src, dst, c)
        moved += 1
    return moved


# ------------------------------------------- coarsening (--distributed)


@njit(cache=True, nogil=True)
def local_label_propagation(xadj, adjncy, lo, hi, vwgt, cap, order, rounds, label):
    """Size-constrained label propagation over a rank's own vertices (:mod:`.distributed.coarsen`).

    ``label`` int64 [m] (in/out): each local vertex's cluster, a local vertex index; start with
    ``label[v] = v``.  Each round visits the vertices in ``order`` and moves each to the
    neighbouring cluster (neighbours in ``[lo, hi)`` only: clusters never span ranks) with the
    most edges to it, if that cluster's weight plus the vertex's stays ``<= cap``; ties keep the
    vertex where it is, else the cluster met first.  ``vwgt`` int64 [m] vertex weights.
    Afterwards the vertices without any neighbour are packed into clusters of up to ``cap``
    (they cut nothing wherever they go, and each one the engine need not see saves its per-vertex
    cost).  Returns the moves of the last round.  Temporaries: 3 int64 [m] (weights, ratings,
    touched list)."""
    m = hi - lo
    weight = vwgt.copy()  # cluster c's weight at index c (its label)
    for v in range(m):
        if label[v] != v:
            weight[v] = 0
    for v in range(m):
        if label[v] != v:
            weight[label[v]] += vwgt[v]
    rating = np.zeros(m, np.int64)
    touched = np.empty(m, np.int64)
    moved = 0
    for _ in range(rounds):
        moved = 0
        for t in range(order.shape[0]):
            v = order[t]
            k = 0
            for j in range(xadj[v], xadj[v + 1]):
                u = adjncy[j]
                if u < lo or u >= hi:
                    continue
                c = label[u - lo]
                if rating[c] == 0:
                    touched[k] = c
                    k += 1
                rating[c] += 1
            if k == 0:
                continue
            own = label[v]
            best, best_rating = own, rating[own]
            for i in range(k):
                c = touched[i]
                if rating[c] > best_rating and weight[c] + vwgt[v] <= cap:
                    best, best_rating = c, rating[c]
            for i in range(k):
                rating[touched[i]] = 0
            if best != own:
                weight[own] -= vwgt[v]
                weight[best] += vwgt[v]
                label[v] = best
                moved += 1
        if moved == 0:
            break
    # isolated vertices (no neighbour anywhere) together, up to the cap
    open_c, open_w = -1, 0
    for v in range(m):
        if xadj[v + 1] != xadj[v] or label[v] != v:
            continue
        if open_c >= 0 and open_w + vwgt[v] <= cap:
            label[v] = open_c
            open_w += vwgt[v]
        else:
            open_c, open_w = v, vwgt[v]
    return moved


@njit(cache=True, nogil=True)
def compact_labels(label, cluster):
    """Number the distinct labels 0, 1, ... in order of their first vertex: ``cluster[v]`` int64
    [m] the dense id of ``label[v]``; returns how many there are."""
    m = label.shape[0]
    dense = np.full(m, -1, np.int64)
    k = 0
    for v in range(m):
        c = label[v]
        if dense[c] < 0:
            dense[c] = k
            k += 1
        cluster[v] = dense[c]
    return k


@njit(cache=True, nogil=True)
def coarse_keys(xadj, adjncy, lo, hi, cluster, base, ghost_ids, ghost_coarse, nc, out):
    """One int64 key ``c * nc + cu`` per fine entry ``v -> u`` whose endpoints lie in different
    clusters (``c`` = ``cluster[v]``, local; ``cu`` = ``u``'s global coarse id: ``base +
    cluster[u - lo]`` for own ``u``, else ``ghost_coarse`` at ``u``'s place in the sorted
    ``ghost_ids``), into ``out``; returns the count.  The caller checks ``mc * nc`` fits int64."""
    p = 0
    for v in range(hi - lo):
        c = cluster[v]
        for j in range(xadj[v], xadj[v + 1]):
            u = adjncy[j]
            if lo <= u < hi:
                cu = base + cluster[u - lo]
            else:
                cu = ghost_coarse[np.searchsorted(ghost_ids, u)]
            if cu == base + c:
                continue
            out[p] = c * nc + cu
            p += 1
    return p


@njit(cache=True, nogil=True)
def count_sorted(a, counts):
    """Run-length of sorted ``a`` in place: its first k entries become the distinct values and
    ``counts[:k]`` how often each occurred; returns k."""
    if a.shape[0] == 0:
        return 0
    k = 0
    counts[0] = 1
    for i in range(1, a.shape[0]):
        if a[i] == a[k]:
            counts[k] += 1
        else:
            k += 1
            a[k] = a[i]
            counts[k] = 1
    return k + 1


@njit(cache=True, nogil=True)
def sum_by_cluster(cluster, vwgt, out):
    """``out[c]`` += ``vwgt[v]`` for each vertex ``v`` of cluster ``c`` (``out`` zeroed by the caller)."""
    for v in range(cluster.shape[0]):
        out[cluster[v]] += vwgt[v]
