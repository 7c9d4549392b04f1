"""DGL 2.1's ``reorder_graph(g, node_permute_algo="rcmk", edge_permute_algo="dst", store_ids=False)`` on edge
arrays, without SciPy: the node and edge order DGL gives Reddit (``RedditDataset`` reorders every load).

DGL computes the node order with SciPy's ``reverse_cuthill_mckee`` of its CSR adjacency (rows the sources,
each row in edge-id order); SciPy first adds the matrix's transpose, and the sum's rows list their
columns sorted when both matrices have sorted, duplicate-free rows (SciPy's "canonical" merge) and
otherwise in reverse order of first appearance (its general path).  :func:`rcmk_permutation` rebuilds that
sum and runs SciPy's search, both numba kernels in O(edges) (:mod:`bgl.dgl.data._rcmk_kernels`).  Then DGL
takes the induced subgraph in that node order (edges grouped by new source, edge-id order within) and sorts the edges by
destination with ``np.argsort``'s default sort, called here the same way on the same array so that ties
fall as in DGL with the same NumPy.  Cost: two sorts of the edges, and about 100 bytes per edge at the peak.
"""
from __future__ import annotations

import numpy as np


def _index_dtype(num_entries: int, num_nodes: int):
    """SciPy's index dtype for a matrix of this size: int32 while everything fits."""
    return np.int32 if max(num_entries, num_nodes) <= np.iinfo(np.int32).max else np.int64


def rcmk_permutation(src: np.ndarray, dst: np.ndarray, num_nodes: int) -> np.ndarray:
    """DGL's ``rcmk_perm``: new node ``i`` is old node ``perm[i]`` (int64 [num_nodes])."""
    from ._rcmk_kernels import cuthill_mckee_order, symmetric_adjacency

    if num_nodes == 0:
        return np.zeros(0, np.int64)
    indptr, indices = symmetric_adjacency(src.astype(np.int64), dst.astype(np.int64), num_nodes)
    rows = np.repeat(np.arange(num_nodes), np.diff(indptr))
    itype = _index_dtype(indices.shape[0], num_nodes)
    degree = (np.diff(indptr) + np.bincount(rows[rows == indices], minlength=num_nodes)).astype(itype)
    seeds = np.argsort(degree)  # SciPy's call: its default sort decides ties
    return cuthill_mckee_order(indptr, indices, degree.astype(np.int64), seeds.astype(np.int64))


def reorder_rcmk_dst(src: np.ndarray, dst: np.ndarray, num_nodes: int
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(perm, new_src, new_dst, old_eid)``: DGL's RCMK node order and destination-sorted edges
    (edge ``k`` of the result is old edge ``old_eid[k]``)."""
    perm = rcmk_permutation(src, dst, num_nodes)
    new_id = np.empty(num_nodes, np.int64)
    new_id[perm] = np.arange(num_nodes)
    s, d = new_id[src], new_id[dst]
    induced = np.argsort(s, kind="stable")  # DGL's induced subgraph: by new source, edge-id order within
    by_dst = np.argsort(d[induced])  # DGL's np.argsort(rg.edges()[1]): the default sort, ties as DGL's
    old_eid = induced[by_dst]
    return perm, s[old_eid], d[old_eid], old_eid
