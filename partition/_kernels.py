"""Numba kernels for partitioning: plain array arguments, no Python objects.

Every kernel is O(nodes + edges) (or O(block edges x parts)) per call and
allocates only arrays of node-, edge- or block-count length.  The thin Python
layers in ``bgl_part.py``, ``metis_part.py``, ``metrics.py`` and
``format.py`` validate inputs and call these.

Graphs arrive as CSC (``indptr`` int64 [n+1], ``indices`` int32/int64 [e]:
row ``v`` lists the in-neighbours of ``v``).  Partitioning treats the graph
as undirected: ``symmetric_adjacency`` builds the deduplicated undirected CSR
once (METIS needs exactly that; BGL uses it as level 0 with unit weights), and
every coarser level is a weighted symmetric CSR (``ptr``, ``adj``, ``wt``) with
vertex weights (``vw`` = nodes, plus training nodes where balanced).
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
def group_by(labels, num_labels):
    """Counting sort: ``ptr`` int64 [L+1] and ``members`` int64 [n] with the ids of label l at
    ``members[ptr[l]:ptr[l+1]]`` in increasing order."""
    n = labels.shape[0]
    ptr = np.zeros(num_labels + 1, np.int64)
    for v in range(n):
        ptr[labels[v] + 1] += 1
    for b in range(num_labels):
        ptr[b + 1] += ptr[b]
    fill = ptr[:-1].copy()
    members = np.empty(n, np.int64)
    for v in range(n):
        b = labels[v]
        members[fill[b]] = v
        fill[b] += 1
    return ptr, members


@njit(cache=True, nogil=True)
def compact_labels(labels, num_labels):
    """Renumber used labels to 0..m-1 (first-use order by label id); returns (new labels, m)."""
    used = np.zeros(num_labels, np.int64)
    for v in range(labels.shape[0]):
        used[labels[v]] = 1
    new_id = np.full(num_labels, -1, np.int64)
    m = 0
    for b in range(num_labels):
        if used[b]:
            new_id[b] = m
            m += 1
    out = np.empty_like(labels)
    for v in range(labels.shape[0]):
        out[v] = new_id[labels[v]]
    return out, m


# ------------------------------- coarsening: BFS blocks and block graphs


@njit(cache=True, nogil=True)
def wbfs_grow(ptr, adj, vw, block, bw, sources, next_block, cap, queue):
    """Capped multi-source BFS on a symmetric weighted-vertex graph (one CSR): like
    :func:`bfs_grow_blocks` but a block stops at total vertex weight ``cap``."""
    head = 0
    tail = 0
    for i in range(sources.shape[0]):
        s = sources[i]
        if block[s] != -1:
            continue
        block[s] = next_block
        bw[next_block] = vw[s]
        next_block += 1
        queue[tail] = s
        tail += 1
    while head < tail:
        u = queue[head]
        head += 1
        b = block[u]
        for j in range(ptr[u], ptr[u + 1]):
            w = adj[j]
            if block[w] == -1 and bw[b] + vw[w] <= cap:
                block[w] = b
                bw[b] += vw[w]
                queue[tail] = w
                tail += 1
    return next_block


@njit(cache=True, nogil=True)
def wleftover(ptr, adj, vw, block, bw, next_block, cap, queue):
    """Blocks for every still-unassigned vertex: BFS over the leftover vertices, one
    connected component (of the leftover subgraph) at a time, cut into runs of weight
    <= ``cap``.  Components never share a block here; lone vertices are packed later
    by :func:`regroup_singletons`, which knows which hub they hang off."""
    n = block.shape[0]
    for s in range(n):
        if block[s] != -1:
            continue
        cur = next_block
        next_block += 1
        block[s] = cur
        bw[cur] = vw[s]
        head = 0
        tail = 1
        queue[0] = s
        while head < tail:
            u = queue[head]
            head += 1
            for j in range(ptr[u], ptr[u + 1]):
                w = adj[j]
                if block[w] == -1:
                    if bw[cur] + vw[w] > cap:
                        cur = next_block
                        bw[cur] = 0.0
                        next_block += 1
                    block[w] = cur
                    bw[cur] += vw[w]
                    queue[tail] = w
                    tail += 1
    return next_block


@njit(cache=True, nogil=True)
def regroup_singletons(ptr, adj, wt, vw, block, num_blocks, cap):
    """Pack vertices left alone in their block by the block of their heaviest neighbour.

    On skewed graphs (R-MAT, social networks) most vertices touch only hubs whose
    blocks fill first, so BFS leaves them as singletons and coarsening stalls.
    Vertices that share a neighbour are 2 hops apart; packing them together (up to
    ``cap`` weight), and isolated vertices with each other, keeps coarsening
    geometric.  Returns ``(block, num_blocks)`` with fresh ids for the new groups."""
    n = block.shape[0]
    count = np.zeros(num_blocks, np.int64)
    for v in range(n):
        count[block[v]] += 1
    key = np.full(n, -1, np.int64)
    for v in range(n):
        if count[block[v]] != 1:
            continue
        best = -1.0
        k = num_blocks  # isolated vertices share one key
        for j in range(ptr[v], ptr[v + 1]):
            if wt[j] > best:
                best = wt[j]
                k = block[adj[j]]
        key[v] = k
    # counting sort of the singletons by key
    start = np.zeros(num_blocks + 2, np.int64)
    for v in range(n):
        if key[v] >= 0:
            start[key[v] + 1] += 1
    for b in range(num_blocks + 1):
        start[b + 1] += start[b]
    members = np.empty(start[num_blocks + 1], np.int64)
    fill = start[:-1].copy()
    for v in range(n):
        if key[v] >= 0:
            members[fill[key[v]]] = v
            fill[key[v]] += 1
    nxt = num_blocks
    for kk in range(num_blocks + 1):
        cur = -1
        w = 0.0
        for m in range(start[kk], start[kk + 1]):
            v = members[m]
            if cur == -1 or w + vw[v] > cap:
                cur = nxt
                nxt += 1
                w = 0.0
            block[v] = cur
            w += vw[v]
    return compact_labels(block, nxt)


@njit(cache=True, nogil=True)
def wsmooth(ptr, adj, wt, vw, block, bw, cap, passes):
    """Weighted, capped label propagation of block labels (see :func:`smooth_blocks`)."""
    n = block.shape[0]
    score = np.zeros(bw.shape[0], np.float64)
    max_deg = 0
    for v in range(n):
        max_deg = max(max_deg, ptr[v + 1] - ptr[v])
    touched = np.empty(max_deg + 1, np.int64)
    for _ in range(passes):
        moved = 0
        for v in range(n):
            cur = block[v]
            t = 0
            for j in range(ptr[v], ptr[v + 1]):
                b = block[adj[j]]
                if score[b] == 0.0:
                    touched[t] = b
                    t += 1
                score[b] += wt[j]
            best = cur
            best_score = score[cur]
            for i in range(t):
                b = touched[i]
                if b != cur and score[b] > best_score and bw[b] + vw[v] <= cap:
                    best = b
                    best_score = score[b]
            for i in range(t):
                score[touched[i]] = 0.0
            if best != cur:
                block[v] = best
                bw[cur] -= vw[v]
                bw[best] += vw[v]
                moved += 1
        if moved == 0:
            break


@njit(cache=True, nogil=True)
def contract(ptr, adj, wt, block, bptr, members, num_blocks):
    """Block graph of a weighted symmetric CSR: ``(cptr, cadj, cw)``, edge weights summed,
    internal edges dropped; linear time with a sparse accumulator."""
    owner = np.full(num_blocks, -1, np.int64)
    slot = np.empty(num_blocks, np.int64)
    cptr = np.zeros(num_blocks + 1, np.int64)
    for b in range(num_blocks):
        c = 0
        for m in range(bptr[b], bptr[b + 1]):
            u = members[m]
            for j in range(ptr[u], ptr[u + 1]):
                nb = block[adj[j]]
                if nb != b and owner[nb] != b:
                    owner[nb] = b
                    c += 1
        cptr[b + 1] = cptr[b] + c
    cadj = np.empty(cptr[num_blocks], np.int64)
    cw = np.zeros(cptr[num_blocks], np.float64)
    owner[:] = -1
    for b in range(num_blocks):
        p = cptr[b]
        for m in range(bptr[b], bptr[b + 1]):
            u = members[m]
            for j in range(ptr[u], ptr[u + 1]):
                nb = block[adj[j]]
                if nb == b:
                    continue
                if owner[nb] != b:
                    owner[nb] = b
                    slot[nb] = p
                    cadj[p] = nb
                    p += 1
                cw[slot[nb]] += wt[j]
    return cptr, cadj, cw


# ------------------------------------------------------------- placement


@njit(cache=True, nogil=True)
def _heap_push(hkey, hval, size, key, val):
    i = size
    hkey[i] = key
    hval[i] = val
    while i > 0:
        parent = (i - 1) >> 1
        if hkey[parent] >= hkey[i]:
            break
        hkey[parent], hkey[i] = hkey[i], hkey[parent]
        hval[parent], hval[i] = hval[i], hval[parent]
        i = parent
    return size + 1


@njit(cache=True, nogil=True)
def _heap_pop(hkey, hval, size):
    """Remove the max; returns (key, val, new_size)."""
    key, val = hkey[0], hval[0]
    size -= 1
    hkey[0], hval[0] = hkey[size], hval[size]
    i = 0
    while True:
        left = 2 * i + 1
        if left >= size:
            break
        big = left
        if left + 1 < size and hkey[left + 1] > hkey[left]:
            big = left + 1
        if hkey[i] >= hkey[big]:
            break
        hkey[i], hkey[big] = hkey[big], hkey[i]
        hval[i], hval[big] = hval[big], hval[i]
        i = big
    return key, val, size


@njit(cache=True, nogil=True)
def grow_assign(seed_order, adj_ptr, adj, weight, bsize, btrain, num_parts, fill_nodes, fill_train):
    """Greedy block placement by region growing: part p (one after another) repeatedly takes
    the unplaced block with the most edges into p (its 1-hop neighbour weight there, kept in
    a lazy max-heap), until p reaches its node or train fill target; a new region starts at
    the next unplaced block of ``seed_order`` when p's frontier runs dry.  The last part
    takes every block left.  Communities are thus completed before the region moves on,
    which a fixed placement order cannot guarantee.
    Returns ``(block_part int64 [B], aff float64 [B, P])``; ``aff[b, p]`` = edge weight
    from block b to the blocks of part p."""
    nb_blocks = bsize.shape[0]
    part = np.full(nb_blocks, -1, np.int64)
    aff = np.zeros((nb_blocks, num_parts), np.float64)
    cap = adj.shape[0] + nb_blocks + 1
    hkey = np.empty(cap, np.float64)
    hval = np.empty(cap, np.int64)
    next_seed = 0
    for p in range(num_parts - 1):
        size = 0
        load_n = 0.0
        load_t = 0.0
        skipped = 0
        while load_n < fill_nodes[p] and load_t < fill_train[p]:
            b = -1
            while size > 0:
                key, cand, size = _heap_pop(hkey, hval, size)
                if part[cand] == -1 and key == aff[cand, p]:
                    b = cand
                    break
            if b == -1:
                while next_seed < nb_blocks and part[seed_order[next_seed]] != -1:
                    next_seed += 1
                if next_seed == nb_blocks:
                    break
                b = seed_order[next_seed]
            if load_n + bsize[b] > fill_nodes[p] or (btrain[b] > 0 and load_t + btrain[b] > fill_train[p]):
                skipped += 1
                if skipped > 64:  # p is as full as the remaining blocks allow
                    break
                continue
            part[b] = p
            load_n += bsize[b]
            load_t += btrain[b]
            for j in range(adj_ptr[b], adj_ptr[b + 1]):
                nb = adj[j]
                aff[nb, p] += weight[j]
                if part[nb] == -1:
                    size = _heap_push(hkey, hval, size, aff[nb, p], nb)
    last = num_parts - 1
    for b in range(nb_blocks):
        if part[b] == -1:
            part[b] = last
            for j in range(adj_ptr[b], adj_ptr[b + 1]):
                aff[adj[j], last] += weight[j]
    return part, aff


@njit(cache=True, nogil=True)
def greedy_assign(order, adj_ptr, adj, weight, bsize, btrain, num_parts,
                  cap_nodes, cap_train, alpha, beta):
    """Place blocks (in ``order``, largest first) one by one into the best part.

    score(p) = (A1[b,p] + beta * A2[b,p] + eps) * (1 - nodes_p/cap_nodes)^alpha
               * (1 - train_p/cap_train)^alpha
    where A1 is the edge weight from b to blocks already in p and A2 the
    2-hop term sum_nb w(b,nb)/wdeg(nb) * A1[nb,p].  ``aff[nb, p]`` (= A1 of
    every block) is kept up to date on each placement, so a placement costs
    O(deg(b) * parts).  Parts that would overflow a capacity are skipped;
    if all would, the least-loaded part takes the block.
    ``cap_nodes``/``cap_train`` are float64 [P] (parts may have different targets).
    Returns ``(block_part int64 [B], aff float64 [B, P])``.
    """
    nb_blocks = bsize.shape[0]
    aff = np.zeros((nb_blocks, num_parts), np.float64)
    wdeg = np.zeros(nb_blocks, np.float64)
    for b in range(nb_blocks):
        for j in range(adj_ptr[b], adj_ptr[b + 1]):
            wdeg[b] += weight[j]
    part = np.full(nb_blocks, -1, np.int64)
    load_n = np.zeros(num_parts, np.float64)
    load_t = np.zeros(num_parts, np.float64)
    two = np.zeros(num_parts, np.float64)
    for i in range(order.shape[0]):
        b = order[i]
        two[:] = 0.0
        if beta > 0.0:
            for j in range(adj_ptr[b], adj_ptr[b + 1]):
                nb = adj[j]
                f = weight[j] / wdeg[nb]
                for p in range(num_parts):
                    two[p] += f * aff[nb, p]
        best = -1
        best_score = -1.0
        fallback = -1
        fallback_load = np.inf
        for p in range(num_parts):
            fn = (load_n[p] + bsize[b]) / cap_nodes[p]
            ft = (load_t[p] + btrain[b]) / cap_train[p]
            worst = max(fn, ft)
            if worst < fallback_load:
                fallback_load = worst
                fallback = p
            if fn > 1.0 or ft > 1.0:
                continue
            room = (1.0 - load_n[p] / cap_nodes[p]) ** alpha * (1.0 - load_t[p] / cap_train[p]) ** alpha
            score = (aff[b, p] + beta * two[p] + 1e-9) * room
            if score > best_score:
                best_score = score
                best = p
        if best == -1:
            best = fallback
        part[b] = best
        load_n[best] += bsize[b]
        load_t[best] += btrain[b]
        for j in range(adj_ptr[b], adj_ptr[b + 1]):
            aff[adj[j], best] += weight[j]
    return part, aff


# ------------------------------------------------------------ refinement


@njit(cache=True, nogil=True)
def part_affinity(ptr, adj, wt, part, num_parts):
    """aff float64 [n, P]: edge weight from each vertex to each part."""
    n = ptr.shape[0] - 1
    aff = np.zeros((n, num_parts), np.float64)
    for v in range(n):
        for j in range(ptr[v], ptr[v + 1]):
            aff[v, part[adj[j]]] += wt[j]
    return aff


@njit(cache=True, nogil=True)
def rebalance_blocks(adj_ptr, adj, weight, aff, part, bsize, btrain, num_parts, cap_nodes, cap_train):
    """Move blocks out of parts above a cap, cheapest first (largest aff[b, q] - aff[b, cur]),
    into parts that stay within both caps.  Returns the number of moves."""
    nb_blocks = bsize.shape[0]
    load_n = np.zeros(num_parts, np.float64)
    load_t = np.zeros(num_parts, np.float64)
    for b in range(nb_blocks):
        load_n[part[b]] += bsize[b]
        load_t[part[b]] += btrain[b]
    moves = 0
    for src in range(num_parts):
        if load_n[src] <= cap_nodes[src] and load_t[src] <= cap_train[src]:
            continue
        mine = np.flatnonzero(part == src)
        loss = np.empty(mine.size, np.float64)
        for i in range(mine.size):
            b = mine[i]
            best = -np.inf
            for q in range(num_parts):
                if q != src and aff[b, q] - aff[b, src] > best:
                    best = aff[b, q] - aff[b, src]
            loss[i] = -best
        for i in np.argsort(loss):
            if load_n[src] <= cap_nodes[src] and load_t[src] <= cap_train[src]:
                break
            b = mine[i]
            if load_n[src] <= cap_nodes[src] and btrain[b] == 0:
                continue  # only the train load is over: move blocks that carry train nodes
            best_q = -1
            best_gain = -np.inf
            for q in range(num_parts):
                if q == src:
                    continue
                if load_n[q] + bsize[b] > cap_nodes[q] or load_t[q] + btrain[b] > cap_train[q]:
                    continue
                g = aff[b, q] - aff[b, src]
                if g > best_gain:
                    best_gain = g
                    best_q = q
            if best_q == -1:
                continue
            part[b] = best_q
            load_n[src] -= bsize[b]
            load_t[src] -= btrain[b]
            load_n[best_q] += bsize[b]
            load_t[best_q] += btrain[b]
            for j in range(adj_ptr[b], adj_ptr[b + 1]):
                aff[adj[j], src] -= weight[j]
                aff[adj[j], best_q] += weight[j]
            moves += 1
    return moves


@njit(cache=True, nogil=True)
def refine_blocks(adj_ptr, adj, weight, aff, part, bsize, btrain, num_parts,
                  cap_nodes, cap_train, low_nodes, low_train, passes):
    """Move whole boundary blocks to the neighbouring part holding most of their edges,
    when the move lowers the cut and keeps every part's node and train load within
    [low, cap].  ``aff`` is the final block-to-part edge weight from ``greedy_assign``
    and is kept current.  Returns the number of moves."""
    nb_blocks = bsize.shape[0]
    load_n = np.zeros(num_parts, np.float64)
    load_t = np.zeros(num_parts, np.float64)
    for b in range(nb_blocks):
        load_n[part[b]] += bsize[b]
        load_t[part[b]] += btrain[b]
    moves = 0
    for _ in range(passes):
        moved = 0
        for b in range(nb_blocks):
            cur = part[b]
            best = cur
            best_gain = 0.0
            for p in range(num_parts):
                if p == cur:
                    continue
                gain = aff[b, p] - aff[b, cur]
                if gain <= best_gain:
                    continue
                if load_n[p] + bsize[b] > cap_nodes[p] or load_t[p] + btrain[b] > cap_train[p]:
                    continue
                if load_n[cur] - bsize[b] < low_nodes[cur] or load_t[cur] - btrain[b] < low_train[cur]:
                    continue
                best = p
                best_gain = gain
            if best != cur:
                part[b] = best
                load_n[cur] -= bsize[b]
                load_t[cur] -= btrain[b]
                load_n[best] += bsize[b]
                load_t[best] += btrain[b]
                for j in range(adj_ptr[b], adj_ptr[b + 1]):
                    aff[adj[j], cur] -= weight[j]
                    aff[adj[j], best] += weight[j]
                moved += 1
        moves += moved
        if moved == 0:
            break
    return moves


# --------------------------------------------------------------- metrics


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
        for k in range(3):
            loads[k, src] -= c[k]
            loads[k, dst] += c[k]
        part_of[v] = dst
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
        fits = True
        for k in range(3):
            if loads[k, dst] + c[k] > caps[k]:
                fits = False
        if not fits:
            continue
        for k in range(3):
            loads[k, src] -= c[k]
            loads[k, dst] += c[k]
        part_of[v] = dst
        moved += 1
    return moved
