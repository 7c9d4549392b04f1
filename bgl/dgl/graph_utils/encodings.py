"""Node labels DGL 2.1 computes from the structure: ``dgl.double_radius_node_labeling`` (SEAL's distance
labels around a target link); and ``dgl.apply_each``.  (``dgl.svd_pe`` is
:mod:`bgl.dgl.transform_classes.structural`'s.)

The distance labels are two breadth-first searches on the undirected graph, one vectorised torch step a level over all edges
(O(E x diameter), 8 B per edge).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch

from bgl.dgl.heterograph import DGLGraph


def _hops(u: torch.Tensor, v: torch.Tensor, start: int, n: int) -> torch.Tensor:
    """float64 [n] hop counts from ``start`` over the undirected edges ``u - v`` (inf where unreachable)."""
    dist = torch.full((n,), float("inf"), dtype=torch.float64)
    dist[start] = 0
    frontier = torch.zeros(n, dtype=torch.bool)
    frontier[start] = True
    level = 0
    while frontier.any():
        level += 1
        reached = torch.zeros(n, dtype=torch.bool)
        reached[v[frontier[u]]] = True
        reached[u[frontier[v]]] = True
        frontier = reached & torch.isinf(dist)
        dist[frontier] = level
    return dist


def double_radius_node_labeling(g: DGLGraph, src: int, dst: int) -> torch.Tensor:
    """SEAL's double-radius node labels around the link ``src - dst`` (DGL's ``dgl.double_radius_node_labeling``),
    int64 [n]: ``1 + min(ds, dt) + (d // 2) * (d // 2 + d % 2 - 1)`` with ``ds`` the hops from ``src`` with ``dst``
    removed, ``dt`` from ``dst`` with ``src`` removed (edges undirected), ``d = ds + dt``; 1 at ``src`` and ``dst``,
    0 where either is unreachable."""
    src, dst = (dst, src) if src > dst else (src, dst)
    n = g.num_nodes()
    u, v = (t.long().cpu() for t in g.edges(order="eid"))
    no_dst = (u != dst) & (v != dst)
    no_src = (u != src) & (v != src)
    ds = _hops(u[no_dst], v[no_dst], src, n)
    ds[dst] = 0
    dt = _hops(u[no_src], v[no_src], dst, n)
    dt[src] = 0
    d = ds + dt
    half = torch.div(d, 2, rounding_mode="floor")
    z = 1 + torch.minimum(ds, dt) + half * (half + d % 2 - 1)
    z = torch.where(torch.isfinite(z), z, torch.zeros_like(z))
    z[src] = 1
    z[dst] = 1
    return z.to(torch.int64)


def apply_each(data, fn, *args, **kwargs):
    """``fn(x, *args, **kwargs)`` on each value of a dict (a dict back), each item of a sequence (a list back),
    or on ``data`` itself (DGL's ``dgl.apply_each``)."""
    if isinstance(data, Mapping):
        return {k: fn(v, *args, **kwargs) for k, v in data.items()}
    if isinstance(data, Sequence) and not isinstance(data, str):
        return [fn(v, *args, **kwargs) for v in data]
    return fn(data, *args, **kwargs)
