"""Graphs of the points within a distance of each other: DGL 2.1's ``dgl.radius_graph``.

Edges in DGL's order: by source point, then by destination point (the row-major order of the distance
matrix's entries ``<= r``); both directions of each pair.  Distances by ``torch.cdist`` with DGL's
``p`` and ``compute_mode``, a block of rows at a time (with a ``use_mm`` mode, whose ``|a|^2 + |b|^2 - 2 a.b``
rounds by the matrix's shape, a distance near 0 may differ from DGL's by sqrt of that rounding, ~3e-4, when
there is more than one block).

Cost: O(n^2 D) time for n points of D dimensions (brute force); memory one block of at most
``knn.BLOCK_ELEMENTS`` distances plus the edges, where DGL holds the n x n matrix.
"""
from __future__ import annotations

import torch
from torch import Tensor

from bgl.dgl.base import DGLError
from bgl.dgl.point_cloud import knn


def radius_graph(x: Tensor, r: float, p: float = 2, self_loop: bool = False,
                 compute_mode: str = "donot_use_mm_for_euclid_dist", get_distances: bool = False):
    """Edge u -> v for every pair of points at distance ``<= r`` (DGL's ``dgl.radius_graph``).

    Parameters
    ----------
    x : float [N, D]; r : float > 0, the radius
    p : the Minkowski norm's power (2: Euclidean, 1: Manhattan), as ``torch.cdist``
    self_loop : keep each point's edge to itself
    compute_mode : ``torch.cdist``'s (``use_mm_for_euclid_dist_if_necessary``, ``use_mm_for_euclid_dist``,
        ``donot_use_mm_for_euclid_dist``)
    get_distances : also return each edge's distance

    Returns
    -------
    DGLGraph with N nodes; with ``get_distances``, also float [E, 1], the edges' distances in edge order
    (``torch.cdist``'s values; differentiable in ``x`` through each edge's own distance, where DGL's
    backward fails on its in-place diagonal unless ``self_loop``)

    Raises
    ------
    DGLError : r <= 0, or an empty point set
    """
    from bgl.dgl.convert import graph

    if r <= 0:
        raise DGLError(f"Invalid r value. expect r > 0, got r = {r}")
    if x.shape[0] == 0:
        raise DGLError("Find empty point set")
    n = x.shape[0]
    rows = max(1, knn.BLOCK_ELEMENTS // n)
    src, dst, values = [], [], []
    with torch.no_grad():
        for lo in range(0, n, rows):
            dist = torch.cdist(x[lo:lo + rows], x, p=p, compute_mode=compute_mode)
            near = dist <= r
            if not self_loop:
                i = torch.arange(near.shape[0], device=x.device)
                near[i, lo + i] = False
            s, d = near.nonzero(as_tuple=True)
            src.append(s + lo)
            dst.append(d)
            values.append(dist[s, d] if get_distances else None)
    src, dst = torch.cat(src), torch.cat(dst)
    g = graph((src, dst), num_nodes=n, device=x.device)
    if not get_distances:
        return g
    dist = torch.cat(values)  # cdist's own values (its matmul mode's rounding included)
    if torch.is_grad_enabled() and x.requires_grad:
        # the gradient of each edge's distance, recomputed per edge: no n x n autograd graph kept
        per_edge = torch.linalg.vector_norm(x[src] - x[dst], ord=p, dim=-1)
        dist = per_edge + (dist - per_edge).detach()
    return g, dist.unsqueeze(-1)
