"""numba kernel of typed seed edges: a DGLGraph's seed edge found in its fused CSC (:mod:`.typed_located`)."""
from __future__ import annotations

import numpy as np
from numba import njit

from ...sampler.typed._kernels import _first_at_least


@njit(nogil=True, cache=True)
def ids_to_positions(indptr, etype, edge_ids, rows, rel, ids, out):
    """``out[j]`` = CSC position of relation ``rel[j]``'s edge ``ids[j]`` (its own id, as a DGLGraph numbers
    it) whose destination is row ``rows[j]``; -1 where the row has no such edge.  A row holds each
    relation's edges as one span in ascending edge id (:func:`bgl.sources.hetero.fused_csc` scatters each
    relation in edge-id order), so: the span by two binary searches of ``etype``, the id by a third of
    ``edge_ids`` in it (a row of one relation, as in a bipartite graph, skips the first two).  ``rel``,
    ``ids``, ``rows``: int64 [n]."""
    for j in range(rows.shape[0]):
        r = rel[j]
        lo = indptr[rows[j]]
        hi = indptr[rows[j] + 1]
        if lo < hi and etype[lo] == r and etype[hi - 1] == r:  # the row is this relation's alone (common)
            s, end = lo, hi
        else:
            s = _first_at_least(etype, lo, hi, r)
            end = _first_at_least(etype, s, hi, r + 1)
        s = _first_at_least(edge_ids, s, end, ids[j])
        out[j] = s if s < end and np.int64(edge_ids[s]) == ids[j] else -1
