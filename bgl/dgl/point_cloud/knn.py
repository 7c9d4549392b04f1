"""k-nearest-neighbour graphs of point sets: DGL 2.1's ``dgl.knn_graph`` and ``dgl.segmented_knn_graph``.

The predecessors of each point are its k nearest points of the same set (itself included unless
``exclude_self``).  Edges come in DGL's order: set after set, in each the destination nodes in id order, and a
node's k in-edges from its nearest neighbour to its k-th.  The distances are DGL's ``bruteforce-blas`` ones,
``|a|^2 + |b|^2 - 2 a.b`` (so near-ties break as in DGL) and ``torch.topk`` picks the k smallest.

Cost: O(n^2 D) time for a set of n points of D dimensions, every pair compared (brute force); memory O(N k) for
the N points' edges plus one block of at most ``BLOCK_ELEMENTS`` distances at a time (rows of a block times
the set size), where DGL's ``bruteforce-blas`` holds the whole n x n matrix.  Sets of one size are batched into
one call (DGL's segmented graph runs one per set).
"""
from __future__ import annotations

import warnings

import torch
from torch import Tensor

from bgl.dgl.base import DGLError, DGLWarning, not_built

BLOCK_ELEMENTS = 1 << 24  # distances held at once (64 MiB of float32): rows per block = this // points compared

# DGL's algorithms whose result is, by definition, the exact k nearest neighbours sorted by distance
EXACT = ("bruteforce-blas", "kd-tree")
# DGL's 'bruteforce' kernels leave each node's neighbours in the order of their heap (same neighbours, another
# edge order) and 'nn-descent' is approximate: neither can be reproduced edge for edge
REFUSED = ("bruteforce", "bruteforce-sharemem", "nn-descent")


def knn_graph(x: Tensor, k: int, algorithm: str = "bruteforce-blas", dist: str = "euclidean",
              exclude_self: bool = False):
    """The k-nearest-neighbour graph of one point set, or of a batch of equal-size sets (DGL's ``dgl.knn_graph``).

    Parameters
    ----------
    x : float [N, D] (one set), or [B, M, D] (B sets of M points: node ``i * M + j`` is point j of set i)
    k : int, neighbours per node (more than a set's points: a DGLWarning, then all its points)
    algorithm : 'bruteforce-blas' (default) or 'kd-tree' (the same exact neighbours in DGL's order); DGL's
        'bruteforce', 'bruteforce-sharemem' and 'nn-descent' are refused (NotImplementedError)
    dist : 'euclidean' or 'cosine' (points scaled to unit length first, as DGL does)
    exclude_self : drop each node's self-loop and take k other points

    Returns
    -------
    DGLGraph with N (or B * M) nodes and k in-edges per node; a batch of B graphs for 3-D ``x``

    Raises
    ------
    DGLError : k <= 0, an empty point set, an unknown algorithm or (kd-tree) distance
    """
    k = _checked_k(x, k, exclude_self)
    sizes = [x.shape[1]] * x.shape[0] if x.dim() == 3 else [x.shape[0]]
    cosine = _cosine(algorithm, dist)
    return _graph(x.reshape(-1, x.shape[-1]), sizes, k, cosine, exclude_self, batched=x.dim() == 3)


def segmented_knn_graph(x: Tensor, k: int, segs, algorithm: str = "bruteforce-blas", dist: str = "euclidean",
                        exclude_self: bool = False):
    """The k-nearest-neighbour graphs of point sets of different sizes stored one after another
    (DGL's ``dgl.segmented_knn_graph``), as one batch of ``len(segs)`` graphs.

    Parameters
    ----------
    x : float [N, D]; segs : list of int, the sizes of the sets (summing to N); k, algorithm, dist,
    exclude_self : as :func:`knn_graph` (k larger than the smallest set: a DGLWarning, then that size for all)

    Returns
    -------
    DGLGraph, a batch: ``batch_num_nodes() == segs``
    """
    k = _checked_k(x, k, exclude_self)
    sizes = [int(s) for s in segs]
    cosine = _cosine(algorithm, dist)
    torch.split(x, sizes, 0)  # sizes that do not add up to N: torch's RuntimeError, as DGL's
    return _graph(x, sizes, k, cosine, exclude_self, batched=True)


def _checked_k(x: Tensor, k: int, exclude_self: bool) -> int:
    if exclude_self:
        k = k + 1  # the self-loop found, then dropped
    if k <= 0:
        raise DGLError(f"Invalid k value. expect k > 0, got k = {k}")
    if x.shape[0] == 0:
        raise DGLError("Find empty point set")
    return k


def _cosine(algorithm: str, dist: str) -> bool:
    """Whether to compare directions (cosine); refuses what DGL's result cannot be matched for."""
    if algorithm == "bruteforce-blas":
        return dist == "cosine"  # DGL's blas path reads any other name as euclidean
    if algorithm in REFUSED:
        raise not_built(f"knn_graph(algorithm={algorithm!r})",
                        f"its edge order cannot be matched; {' and '.join(EXACT)} give DGL's exact neighbours")
    if algorithm not in EXACT:
        raise DGLError(f"Algorithm {algorithm} is not supported")
    if dist.lower() not in ("euclidean", "cosine"):
        raise DGLError(f"Only ['euclidean', 'cosine'] are supported for distance computation, got {dist.lower()}")
    return dist.lower() == "cosine"


def _graph(x: Tensor, sizes: list, k: int, cosine: bool, exclude_self: bool, batched: bool):
    """The graph of the sets of ``sizes`` points stored one after another in ``x`` [N, D]."""
    from bgl.dgl.convert import graph

    smallest = min(sizes)
    if k > smallest:
        warnings.warn("'k' should be less than or equal to the number of points in 'x'"
                      f"expect k <= {smallest}, got k = {k}, use k = {smallest}", DGLWarning, stacklevel=3)
        k = smallest
    device = x.device
    counts = torch.tensor(sizes, dtype=torch.int64, device=device)
    starts = torch.cumsum(counts, 0) - counts
    near = torch.empty(x.shape[0], k, dtype=torch.int64, device=device)  # node i's predecessors, nearest first
    with torch.no_grad():
        if cosine:
            x = x / ((x * x).sum(-1, keepdim=True).sqrt() + 1e-5)
        for size in sorted(set(sizes) - {0}):  # the sets of one size together: one batched call per distinct size
            first = starts[counts == size].view(-1, 1)
            ids = first + torch.arange(size, device=device)  # [sets, size]
            near[ids.view(-1)] = (nearest(x[ids], k) + first.unsqueeze(-1)).view(-1, k)
    nodes = torch.arange(near.shape[0], device=device)
    if exclude_self:
        keep = near != nodes.unsqueeze(1)
        # no self among the k + 1 (more than k points coincide): drop the last one.  DGL drops a random in-edge
        # of such a node (sample_neighbors); either way the k kept are at distance 0
        keep[keep.all(1), -1] = False
        near, k = near[keep].view(near.shape[0], k - 1), k - 1
    g = graph((near.reshape(-1), nodes.repeat_interleave(k)), num_nodes=near.shape[0])
    if batched:
        g.set_batch_num_nodes(counts)
        g.set_batch_num_edges(counts * k)
    return g


def nearest(points: Tensor, k: int) -> Tensor:
    """int64 [B, M, k]: each point's k nearest points of its set (local ids), nearest first.

    ``points`` : float [B, M, D].  Row blocks of at most ``BLOCK_ELEMENTS`` distances."""
    count, size = points.shape[0], points.shape[1]
    squares = (points * points).sum(-1, keepdim=True)
    rows = max(1, BLOCK_ELEMENTS // max(1, count * size))
    out = []
    for lo in range(0, size, rows):
        block = points[:, lo:lo + rows]
        dist = squares[:, lo:lo + rows] + squares.transpose(-1, -2) - 2 * block @ points.transpose(-1, -2)
        out.append(torch.topk(dist, k, dim=-1, largest=False).indices)
    return torch.cat(out, 1) if out else torch.empty(count, 0, k, dtype=torch.int64, device=points.device)
