"""DGL 2.1's ``reorder_graph(g, node_permute_algo="rcmk", edge_permute_algo="dst", store_ids=False)`` on edge
arrays, without SciPy: the node and edge order DGL gives Reddit (``RedditDataset`` reorders every load).

DGL computes the node order with SciPy's ``reverse_cuthill_mckee`` of its CSR adjacency (rows the sources,
each row in edge-id order); SciPy first adds the matrix's transpose, and the sum's rows list their
columns sorted when both matrices have sorted, duplicate-free rows (SciPy's "canonical" merge) and
otherwise in reverse order of first appearance (its general path).  :func:`rcmk_permutation` rebuilds that
sum with NumPy and runs SciPy's search (:mod:`bgl.dgl.data._rcmk_kernels`).  Then DGL takes the induced
subgraph in that node order (edges grouped by new source, edge-id order within) and sorts the edges by
destination with ``np.argsort``'s default sort, called here the same way on the same array so that ties
fall as in DGL with the same NumPy.  Cost: a few sorts of the ``2 * num_edges`` entries.
"""
from __future__ import annotations

import numpy as np


def _index_dtype(num_entries: int, num_nodes: int):
    """SciPy's index dtype for a matrix of this size: int32 while everything fits."""
    return np.int32 if max(num_entries, num_nodes) <= np.iinfo(np.int32).max else np.int64


def _canonical(rows: np.ndarray, cols: np.ndarray) -> bool:
    """Whether row-sorted entries have strictly increasing columns within each row."""
    if rows.shape[0] < 2:
        return True
    same_row = rows[1:] == rows[:-1]
    return not bool((same_row & (cols[1:] <= cols[:-1])).any())


def symmetric_csr(src: np.ndarray, dst: np.ndarray, num_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """``(indptr, indices)`` of SciPy's ``A + A.T`` for DGL's CSR ``A`` of the edges (module doc)."""
    by_src = np.argsort(src, kind="stable")
    a_rows, a_cols = src[by_src], dst[by_src]  # DGL's CSR: rows the sources, each in edge-id order
    by_dst = np.lexsort((a_rows, a_cols))  # A.T as SciPy's csc -> csr: each row's columns ascending (stable)
    b_rows, b_cols = a_cols[by_dst], a_rows[by_dst]
    rows = np.concatenate([a_rows, b_rows])
    cols = np.concatenate([a_cols, b_cols])
    meet = np.argsort(rows, kind="stable")  # per row, A's entries then B's: the order SciPy's general path meets them
    rows, cols = rows[meet], cols[meet]
    keys = rows * num_nodes + cols
    unique_keys, first = np.unique(keys, return_index=True)
    u_rows, u_cols = unique_keys // num_nodes, unique_keys % num_nodes
    if not (_canonical(a_rows, a_cols) and _canonical(b_rows, b_cols)):
        order = np.lexsort((-first, u_rows))  # each row: the reverse of first appearance
        u_rows, u_cols = u_rows[order], u_cols[order]
    indptr = np.zeros(num_nodes + 1, np.int64)
    np.cumsum(np.bincount(u_rows, minlength=num_nodes), out=indptr[1:])
    return indptr, u_cols


def rcmk_permutation(src: np.ndarray, dst: np.ndarray, num_nodes: int) -> np.ndarray:
    """DGL's ``rcmk_perm``: new node ``i`` is old node ``perm[i]`` (int64 [num_nodes])."""
    from ._rcmk_kernels import cuthill_mckee_order

    if num_nodes == 0:
        return np.zeros(0, np.int64)
    indptr, indices = symmetric_csr(src.astype(np.int64), dst.astype(np.int64), num_nodes)
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
