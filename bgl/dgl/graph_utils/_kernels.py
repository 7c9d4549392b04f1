"""numba kernel of :mod:`bgl.dgl.graph_utils.traversal`: one depth-first search from one source.

Plain array arguments: ``indptr`` / ``indices`` a compressed adjacency (CSR: rows are source nodes, ``indices``
their successors; CSC for a reverse search), ``eids`` the edge id at each position.  A depth-first order is
sequential by nature (which node comes next depends on every visit before it), hence a kernel, not torch.
"""
from __future__ import annotations

import numpy as np
from numba import njit

FORWARD, REVERSE, NONTREE = 0, 1, 2  # DGL's edge labels (dgl.traversal's DFS labels)


@njit(cache=True, nogil=True)
def dfs_labeled(indptr, indices, eids, source, has_reverse_edge, has_nontree_edge, out_edges, out_labels):
    """The labelled edges of a depth-first search from ``source``, written into ``out_edges`` / ``out_labels``
    (each of at least ``2 * num_nodes + num_edges`` slots); returns how many were written.

    A node's edges are taken in position order.  An edge to an unvisited node is ``FORWARD`` (and the search
    descends); one to a visited node is ``NONTREE`` (written with ``has_nontree_edge``); when a node's edges are
    done the search climbs back over the edge it came by, ``REVERSE`` (written with ``has_reverse_edge``).
    O(num_nodes + num_edges) time; 17 B per node of scratch (visited flag, stack of node, next position, edge)."""
    n = indptr.shape[0] - 1
    visited = np.zeros(n, dtype=np.bool_)
    stack_node = np.empty(n, dtype=np.int64)
    stack_pos = np.empty(n, dtype=np.int64)
    stack_edge = np.empty(n, dtype=np.int64)
    count = 0
    depth = 0
    visited[source] = True
    stack_node[0], stack_pos[0], stack_edge[0] = source, indptr[source], -1
    while depth >= 0:
        u = stack_node[depth]
        p = stack_pos[depth]
        if p < indptr[u + 1]:
            stack_pos[depth] = p + 1
            v = indices[p]
            if not visited[v]:
                visited[v] = True
                out_edges[count], out_labels[count] = eids[p], FORWARD
                count += 1
                depth += 1
                stack_node[depth], stack_pos[depth], stack_edge[depth] = v, indptr[v], eids[p]
            elif has_nontree_edge:
                out_edges[count], out_labels[count] = eids[p], NONTREE
                count += 1
        else:
            if has_reverse_edge and depth > 0:
                out_edges[count], out_labels[count] = stack_edge[depth], REVERSE
                count += 1
            depth -= 1
    return count
