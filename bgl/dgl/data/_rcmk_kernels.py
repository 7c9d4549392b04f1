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
