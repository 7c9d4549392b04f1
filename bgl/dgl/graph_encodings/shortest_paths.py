"""``dgl.shortest_dist``: unweighted directed shortest distances and paths, by breadth-first search run
from every root at once, or by Floyd-Warshall where DGL's solver (scipy) picks it.

Each BFS level is one pass over the edges for all roots together (a frontier matrix [roots, N] gathered
at the edges' sources; roots in chunks of about 2^26 / E), so the work is O(diameter * roots * E) with
no Python loop over nodes; all pairs (``root=None``) holds O(N^2) distances and O(N^2 * longest path)
path entries, as DGL's scipy result does.  Which of several equally short paths is returned is
scipy's choice, which depends on its method: Dijkstra for one root or fewer than N^2 / 4 edges, else
Floyd-Warshall; the dense case here runs Floyd-Warshall too (N steps of an O(N^2) tensor update, the
O(N^3) DGL pays), so the paths are DGL's in both.
"""
from __future__ import annotations

import torch

from bgl.dgl.derived_graphs import _homogeneous
from bgl.dgl.heterograph import DGLGraph
from bgl.dgl.transforms import _plain

_CHUNK_ENTRIES = 1 << 26  # (root, edge) pairs gathered at once: 64 MiB of booleans a BFS level


def _bfs(src, dst, n: int, roots: torch.Tensor):
    """dist int64 [R, N] (-1 unreachable) and the edge id that reaches each (root, node) pair last on its
    shortest path, int64 [R, N] (-1 for the root and unreachable nodes).

    The last edge's source is the largest node id among the previous level's nodes with an edge to
    the node: the predecessor scipy's Dijkstra (DGL's solver) keeps, as checked against it on random
    multigraphs; between parallel edges, the smallest id (DGL's ``edge_ids``).
    """
    r_count = roots.numel()
    rows = torch.arange(r_count, device=src.device)
    dist = torch.full((r_count, n), -1, dtype=torch.int64, device=src.device)
    last_edge = torch.full((r_count * n,), -1, dtype=torch.int64, device=src.device)
    dist[rows, roots] = 0
    frontier = torch.zeros(r_count, n, dtype=torch.bool, device=src.device)
    frontier[rows, roots] = True
    level = 0
    while True:
        r, e = frontier[:, src].nonzero(as_tuple=True)  # (root, edge) pairs leaving this level
        v = dst[e]
        new = dist[r, v] < 0
        r, e, v = r[new], e[new], v[new]
        if r.numel() == 0:
            return dist, last_edge.view(r_count, n)
        level += 1
        key = r * n + v
        best = torch.full((r_count * n,), -1, dtype=torch.int64, device=src.device)
        best.scatter_reduce_(0, key, src[e], reduce="amax")
        keep = src[e] == best[key]
        first = torch.full((r_count * n,), src.numel(), dtype=torch.int64, device=src.device)
        first.scatter_reduce_(0, key[keep], e[keep], reduce="amin")
        key = key.unique()
        last_edge[key] = first[key]
        dist.view(-1)[key] = level
        frontier = torch.zeros(r_count * n, dtype=torch.bool, device=src.device)
        frontier[key] = True
        frontier = frontier.view(r_count, n)


def _floyd_warshall(src, dst, n: int):
    """``_bfs``'s result for all pairs, by scipy's Floyd-Warshall: a pair's predecessor is replaced only
    on a strictly shorter path through the intermediate node k, k in increasing order; row and column k
    do not change at step k, so each step is one exact tensor update."""
    inf = float("inf")
    dist = torch.full((n, n), inf, dtype=torch.float64, device=src.device)
    dist[src, dst] = 1.0
    pred = torch.where(dist == 1, torch.arange(n, device=src.device).unsqueeze(1), -1)
    dist.fill_diagonal_(0.0)
    pred.fill_diagonal_(-1)
    for k in range(n):  # N steps of O(N^2) each
        through = dist[:, k:k + 1] + dist[k:k + 1, :]
        better = through < dist
        dist = torch.where(better, through, dist)
        pred = torch.where(better, pred[k:k + 1, :], pred)
    # the edge from the predecessor: the smallest id among parallel ones (DGL's edge_ids)
    first = torch.full((n * n,), src.numel(), dtype=torch.int64, device=src.device)
    first.scatter_reduce_(0, src * n + dst, torch.arange(src.numel(), device=src.device), reduce="amin")
    cols = torch.arange(n, device=src.device).expand(n, n)
    last_edge = torch.where(pred >= 0, first[pred.clamp(min=0) * n + cols], -1)
    return torch.where(dist == inf, -1.0, dist).long(), last_edge


def _paths(src, dist: torch.Tensor, last_edge: torch.Tensor) -> torch.Tensor:
    """int64 [R, N, longest]: each pair's path as edge ids from the root on, -1 padded.  Walks all pairs
    back one edge a step (a loop over path positions, not nodes)."""
    r_count, n = dist.shape
    longest = int(dist.max()) if dist.numel() else 0
    paths = torch.full((r_count, n, longest), -1, dtype=torch.int64, device=dist.device)
    rows = torch.arange(r_count, device=dist.device).unsqueeze(1).expand(r_count, n)
    cols = torch.arange(n, device=dist.device).expand(r_count, n)
    cur, pos = cols.clone(), dist - 1  # walking back from each pair's end node, at path position pos
    for _ in range(longest):
        live = pos >= 0
        edge = last_edge[rows[live], cur[live]]
        paths[rows[live], cols[live], pos[live]] = edge
        cur[live] = src[edge]
        pos = pos - 1
    return paths


def shortest_dist(g: DGLGraph, root=None, return_paths: bool = False):
    """Shortest distances (and paths) along directed edges, each edge of length 1 (DGL's ``shortest_dist``).

    Parameters
    ----------
    g : DGLGraph
        Homogeneous.
    root : int, optional
        The one source node; None: every node (all pairs).
    return_paths : bool
        Also return the paths.

    Returns
    -------
    dist : int64 tensor [N] (from ``root``) or [N, N] (``dist[i, j]`` from i to j); -1 where unreachable.
    paths : int64 tensor [N, L] or [N, N, L], with ``return_paths``
        Each path's edge ids from the source on, padded with -1; L is the longest distance.  Between
        equally short paths, the one DGL returns.
    """
    _plain(g, "shortest_dist")
    _homogeneous(g, "shortest_dist")
    n = g.num_nodes()
    src, dst = g.edges(order="eid")
    src, dst = src.long(), dst.long()
    roots = torch.arange(n, device=src.device) if root is None else torch.tensor([int(root)], device=src.device)
    if root is None and src.numel() >= n * n / 4:  # scipy's choice of Floyd-Warshall, DGL's ties
        dist, last_edge = _floyd_warshall(src, dst, n)
    else:  # roots in chunks: a level's [roots, E] frontier gather stays near _CHUNK_ENTRIES
        step = max(1, _CHUNK_ENTRIES // max(1, src.numel()))
        parts = [_bfs(src, dst, n, roots[i:i + step]) for i in range(0, roots.numel(), step)]
        dist, last_edge = torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])
    paths = _paths(src, dist, last_edge) if return_paths else None
    if root is not None:
        dist, paths = dist[0], (paths[0] if return_paths else None)
    return (dist, paths) if return_paths else dist
