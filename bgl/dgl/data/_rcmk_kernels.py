"""numba kernel of the reverse Cuthill-McKee ordering, step for step as SciPy's
``scipy.sparse.csgraph.reverse_cuthill_mckee`` computes it (DGL's ``reorder_graph(node_permute_algo="rcmk")``
calls SciPy; bgl does not depend on SciPy, so :mod:`bgl.dgl.data.reorder` rebuilds its input and calls this).

A breadth-first search from each not yet visited node, seeds taken in the order of ``seeds`` (the nodes by
degree, as SciPy's ``np.argsort(degree)`` lists them); the nodes one node adds are its unvisited neighbours
in CSR order, then insertion-sorted (stable) by degree; the whole order is reversed at the end.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(nogil=True, cache=True)
def cuthill_mckee_order(indptr, indices, degree, seeds):
    """The reversed Cuthill-McKee order (int64 [n]) of the symmetric CSR ``indptr`` / ``indices``
    (``degree``: SciPy's node degrees; ``seeds``: the nodes in the order their BFS may start)."""
    n = indptr.shape[0] - 1
    order = np.zeros(n, np.int64)
    visited = np.zeros(n, np.bool_)
    count = 0
    for zz in range(n):
        seed = seeds[zz]
        if visited[seed]:
            continue
        order[count] = seed
        count += 1
        visited[seed] = True
        level_start, level_end = count - 1, count
        while level_start < level_end:
            for ii in range(level_start, level_end):
                i = order[ii]
                first = count
                for jj in range(indptr[i], indptr[i + 1]):
                    j = indices[jj]
                    if not visited[j]:
                        visited[j] = True
                        order[count] = j
                        count += 1
                for kk in range(first + 1, count):  # insertion sort of the new nodes by degree (stable)
                    node = order[kk]
                    d = degree[node]
                    ll = kk
                    while ll > first and d < degree[order[ll - 1]]:
                        order[ll] = order[ll - 1]
                        ll -= 1
                    order[ll] = node
            level_start, level_end = level_end, count
        if count == n:
            break
    return order[::-1].copy()


@njit(nogil=True, cache=True)
def _counting_csr(rows, cols, n):
    """CSR of (rows, cols) with each row's entries in input order (a stable counting sort)."""
    indptr = np.zeros(n + 1, np.int64)
    for k in range(rows.shape[0]):
        indptr[rows[k] + 1] += 1
    for i in range(n):
        indptr[i + 1] += indptr[i]
    fill = indptr[:-1].copy()
    indices = np.empty(rows.shape[0], np.int64)
    for k in range(rows.shape[0]):
        indices[fill[rows[k]]] = cols[k]
        fill[rows[k]] += 1
    return indptr, indices


@njit(nogil=True, cache=True)
def _is_canonical(indptr, indices):
    for i in range(indptr.shape[0] - 1):
        for jj in range(indptr[i] + 1, indptr[i + 1]):
            if indices[jj] <= indices[jj - 1]:
                return False
    return True


@njit(nogil=True, cache=True, inline="always")
def _link_new_columns(indptr, indices, i, nxt, head, length):
    """Push row ``i``'s columns not yet in the list onto its head (SciPy's general path); the new head and length."""
    for jj in range(indptr[i], indptr[i + 1]):
        j = indices[jj]
        if nxt[j] == -1:
            nxt[j] = head
            head = j
            length += 1
    return head, length


@njit(nogil=True, cache=True)
def symmetric_adjacency(src, dst, n):
    """``(indptr, indices)`` of SciPy's ``A + A.T`` where ``A`` is DGL's CSR of the edges (rows the sources,
    each row in edge-id order) and ``A.T`` SciPy's CSC-to-CSR of it (each row's columns ascending).

    When both have sorted, duplicate-free rows, each row of the sum is the merge of the two (SciPy's
    canonical path); otherwise each row lists its distinct columns in reverse order of first appearance,
    ``A``'s entries met before ``A.T``'s (SciPy's general path, a linked list through ``nxt``)."""
    a_ptr, a_idx = _counting_csr(src, dst, n)
    a_rows = np.empty(a_idx.shape[0], np.int64)
    for i in range(n):
        a_rows[a_ptr[i]:a_ptr[i + 1]] = i
    b_ptr, b_idx = _counting_csr(a_idx, a_rows, n)
    out_ptr = np.zeros(n + 1, np.int64)
    out_idx = np.empty(a_idx.shape[0] + b_idx.shape[0], np.int64)
    nnz = 0
    if _is_canonical(a_ptr, a_idx) and _is_canonical(b_ptr, b_idx):
        for i in range(n):
            p, p_end, q, q_end = a_ptr[i], a_ptr[i + 1], b_ptr[i], b_ptr[i + 1]
            while p < p_end or q < q_end:
                if q == q_end or (p < p_end and a_idx[p] < b_idx[q]):
                    out_idx[nnz] = a_idx[p]
                    p += 1
                elif p == p_end or b_idx[q] < a_idx[p]:
                    out_idx[nnz] = b_idx[q]
                    q += 1
                else:
                    out_idx[nnz] = a_idx[p]
                    p += 1
                    q += 1
                nnz += 1
            out_ptr[i + 1] = nnz
        return out_ptr, out_idx[:nnz]
    nxt = np.full(n, -1, np.int64)
    for i in range(n):
        head, length = _link_new_columns(a_ptr, a_idx, i, nxt, -2, 0)
        head, length = _link_new_columns(b_ptr, b_idx, i, nxt, head, length)
        for _ in range(length):
            out_idx[nnz] = head
            nnz += 1
            following = nxt[head]
            nxt[head] = -1
            head = following
        out_ptr[i + 1] = nnz
    return out_ptr, out_idx[:nnz]
