"""METIS partitioning through pymetis: the quality baseline BGL is compared against."""
from __future__ import annotations

import logging

import numpy as np

from . import _kernels
from .graph_input import GraphInput

log = logging.getLogger(__name__)


def metis_partition(graph: GraphInput, num_parts: int, seed: int = 0, *,
                    balance_train: bool = True, ufactor: int | None = None) -> np.ndarray:
    """Min-edge-cut partition of the symmetrised graph (self-loops and duplicate edges removed).

    Parameters
    ----------
    graph : the store's CSC and training mask
    num_parts : P >= 1
    seed : METIS RNG seed
    balance_train : add a second vertex-weight constraint (1 on training nodes) so each part
        gets about the same number of training nodes, as DistDGL does; skipped when the graph
        has no training nodes
    ufactor : METIS load imbalance in 1/1000 (None = METIS default)

    Returns
    -------
    part_of : int64 [n] in [0, P)
    """
    import pymetis

    n = graph.num_nodes
    if num_parts == 1:
        return np.zeros(n, np.int64)
    out_ptr, out_idx = graph.out_edges()
    xadj, adjncy = _kernels.symmetric_adjacency(graph.indptr, graph.indices, out_ptr, out_idx, n)
    del out_ptr, out_idx
    dtype = pymetis.zero_copy_dtype() if hasattr(pymetis, "zero_copy_dtype") else np.dtype(np.int64)
    xadj, adjncy = xadj.astype(dtype, copy=False), adjncy.astype(dtype, copy=False)
    vweights = None
    if balance_train and graph.num_train > 0:
        # ncon = 2 (interleaved per vertex): every node weighs 1, training nodes 1 more on constraint 2
        vweights = np.empty(2 * n, dtype)
        vweights[0::2] = 1
        vweights[1::2] = graph.is_train.astype(dtype)
    options = pymetis.Options(seed=seed)
    if ufactor is not None:
        options.ufactor = ufactor
    kwargs = dict(vweights=vweights, options=options)
    if hasattr(pymetis, "CSRAdjacency"):
        result = pymetis.part_graph(num_parts, adjacency=pymetis.CSRAdjacency(xadj, adjncy), **kwargs)
    else:  # pymetis < 2025.2
        result = pymetis.part_graph(num_parts, xadj=xadj, adjncy=adjncy, **kwargs)
    part_of = np.asarray(result[1], dtype=np.int64)
    log.info("metis: %d parts, edge cut %d (symmetric edges)", num_parts, result[0])
    return part_of
