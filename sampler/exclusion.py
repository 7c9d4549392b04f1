"""Uniform sampling around excluded edges (link prediction's seed edges and their reverses).

The thin layer over :mod:`._edge_kernels`: it turns the batch's excluded edge ids into sorted
CSC positions once per layer (a store's ids are its positions; a DGLGraph's own ids go
through the inverse of its ``edge_ids``), so that the kernels find each row's excluded edges
by a binary search of those few positions and never read a row's edges to find them.
"""
from __future__ import annotations

import numpy as np

from . import _edge_kernels as EK
from . import _kernels as K
from .sample_arrays import read_only, sample_offsets


def edge_positions(edge_ids) -> np.ndarray:
    """int64 [e]: the CSC position of each edge id, the inverse of ``edge_ids`` (int [e], the
    graph's id of the edge at each CSC position, a permutation of ``0..e-1``).  O(e): a sampler
    computes it once and passes it to every call (``sample_neighbors(edge_pos=)``).

    Raises ValueError naming the first position whose id is out of range or repeated."""
    ids = np.ascontiguousarray(edge_ids, dtype=np.int64)
    out = np.full(ids.shape[0], -1, np.int64)
    bad = int(EK.invert_edge_ids(read_only(ids), out))
    if bad >= 0:
        raise ValueError(f"edge_ids must be a permutation of 0..{ids.shape[0] - 1}; position {bad} "
                         f"holds {int(ids[bad])}, out of range or repeated")
    return out


def excluded_positions(exclude, num_edges: int, edge_ids=None, edge_pos=None) -> np.ndarray:
    """The sorted, unique CSC positions of the excluded edge ids ``exclude`` (sorted and unique, as
    :func:`.ops.check_exclude` returns them): the ids themselves, or with ``edge_ids`` (each
    position's id) their positions through ``edge_pos`` (its :func:`edge_positions`, computed here
    when not given).  Ids past the last edge name no edge of this slice and are dropped."""
    if edge_ids is None:
        return exclude
    if edge_pos is None:
        if len(edge_ids) != num_edges:
            raise ValueError(f"edge_ids has {len(edge_ids)} entries for {num_edges} edges")
        edge_pos = edge_positions(edge_ids)
    elif edge_pos.shape[0] != num_edges:
        raise ValueError(f"edge_pos has {edge_pos.shape[0]} entries for {num_edges} edges")
    ids = exclude[:np.searchsorted(exclude, num_edges)]
    pos = edge_pos[ids]
    pos.sort()
    return pos


def sample_excluding(indptr, indices, seeds, off, fo, rep, sd, exclude, edge_ids, edge_pos, max_edges):
    """The uniform sample of :func:`.ops.sample_neighbors` drawn around the ``exclude`` edge ids
    (sorted and unique; serial): ``(counts, nbrs, eids)`` as that function returns them."""
    xpos = excluded_positions(exclude, indices.shape[0], edge_ids, edge_pos)
    indptr, seeds, xpos = (read_only(a) for a in (indptr, seeds, xpos))
    m = seeds.shape[0]
    starts, degs, xlo, nexcl, counts = (np.empty(m, np.int64) for _ in range(5))
    EK.excluded_spans(indptr, seeds, off, fo, rep, xpos, starts, degs, xlo, nexcl, counts)
    out_indptr, total = sample_offsets(counts, max_edges)
    eids = np.empty(total, np.int64)
    EK.sample_positions_excluding(starts, degs, xlo, nexcl, xpos, seeds, fo, rep, sd, out_indptr, eids)
    nbrs = np.empty(total, indices.dtype)
    K.gather_nbrs_serial(indices, eids, nbrs)
    return counts, nbrs, eids
