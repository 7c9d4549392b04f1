"""``dgl.nn.KNNGraph``, ``SegmentedKNNGraph`` and ``RadiusGraph``: modules that hold k (or the radius) and build
the graph of the points they are given, with :func:`bgl.dgl.knn_graph`, :func:`bgl.dgl.segmented_knn_graph`
and :func:`bgl.dgl.radius_graph` (their cost and edge order are there).  No parameters.
"""
from __future__ import annotations

from torch import nn

from bgl.dgl.point_cloud import knn_graph, radius_graph, segmented_knn_graph


class KNNGraph(nn.Module):
    """``dgl.nn.KNNGraph(k)``: ``forward(x [M, D] or [N, M, D], algorithm, dist, exclude_self)`` is
    ``knn_graph(x, k, ...)``; point j of set i is node ``i * M + j``."""

    def __init__(self, k: int):
        super().__init__()
        self.k = k

    def forward(self, x, algorithm="bruteforce-blas", dist="euclidean", exclude_self=False):
        return knn_graph(x, self.k, algorithm=algorithm, dist=dist, exclude_self=exclude_self)


class SegmentedKNNGraph(nn.Module):
    """``dgl.nn.SegmentedKNNGraph(k)``: ``forward(x [M, D], segs, algorithm, dist, exclude_self)`` is
    ``segmented_knn_graph(x, k, segs, ...)``, a batch of ``len(segs)`` graphs."""

    def __init__(self, k: int):
        super().__init__()
        self.k = k

    def forward(self, x, segs, algorithm="bruteforce-blas", dist="euclidean", exclude_self=False):
        return segmented_knn_graph(x, self.k, segs, algorithm=algorithm, dist=dist, exclude_self=exclude_self)


class RadiusGraph(nn.Module):
    """``dgl.nn.RadiusGraph(r, p=2, self_loop=False, compute_mode=...)``: ``forward(x [N, D], get_distances)``
    is ``radius_graph(x, r, p, self_loop, compute_mode, get_distances)``."""

    def __init__(self, r: float, p: float = 2, self_loop: bool = False,
                 compute_mode: str = "donot_use_mm_for_euclid_dist"):
        super().__init__()
        self.r = r
        self.p = p
        self.self_loop = self_loop
        self.compute_mode = compute_mode

    def forward(self, x, get_distances=False):
        return radius_graph(x, self.r, self.p, self.self_loop, self.compute_mode, get_distances)
