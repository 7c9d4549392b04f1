"""Numba kernel that writes one hop's edges of a bgl block into PyG's ``edge_index``.

PyG's layout of a batch (:func:`bgl.pyg.loader.blocks_to_pyg`) takes, per hop,
the in-edges of the nodes that hop reached first: a CSC slice of one block.  Done
with NumPy it was a dozen calls per hop (an ``arange``, a ``diff``, a ``repeat`` and
three slice copies): 64-78 us a batch on Cora and PubMed measured in the loader (batch
256, fanouts 10,10; the batch's feature gather has just evicted the CPU caches), 25 us
timed alone.  One kernel call per hop brought it to 38-40 us in the loader.  One call
for all hops (the blocks' arrays passed as tuples) measured 42-49 us: numba types a
tuple argument on its slow path, so it was not kept.
"""
from __future__ import annotations

from numba import njit


@njit(nogil=True, cache=True)
def write_hop_edges(indptr, indices, edge_ids, lo, hi, edge_index, e_id, pos):
    """Write the in-edges of dst positions ``[lo, hi)`` at columns ``pos...`` of ``edge_index``.

    Parameters
    ----------
    indptr : int [num_dst + 1] the block's CSC offsets
    indices : int [num_edges] local src position of each edge
    edge_ids : int [num_edges] the edges' graph ids, or an empty array for none
    lo, hi : the dst positions whose edges are written
    edge_index : int64 [2, E] out: row 0 the src position, row 1 the dst position
    e_id : int64 [E] out: the edges' graph ids (untouched when ``edge_ids`` is empty)
    pos : first column to write

    Returns
    -------
    the column after the last one written
    """
    with_ids = edge_ids.shape[0] > 0
    col = pos
    for v in range(lo, hi):
        for j in range(indptr[v], indptr[v + 1]):
            edge_index[0, col] = indices[j]
            edge_index[1, col] = v
            if with_ids:
                e_id[col] = edge_ids[j]
            col += 1
    return col
