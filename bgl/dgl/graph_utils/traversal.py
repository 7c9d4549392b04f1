"""DGL 2.1's traversals (``dgl.bfs_nodes_generator``, ``dgl.bfs_edges_generator``,
``dgl.topological_nodes_generator``, ``dgl.dfs_edges_generator``, ``dgl.dfs_labeled_edges_generator``): a tuple
of frontier tensors (the graph's idtype), in DGL's order.

Breadth-first and topological searches advance one whole frontier per torch step (its out-edges gathered in
frontier order, each node's edges in edge-id order; newly reached nodes kept in the order they are first / last
reached): O(E) a level, ~24 B per edge of the frontier.  A depth-first search is sequential: one numba kernel run
per source (:func:`bgl.dgl.graph_utils._kernels.dfs_labeled`, O(N + E) each; a Python loop over the sources
only, never over nodes or edges), each source with its own visited set as DGL's; frontier ``i`` holds the
``i``-th edge of every source's search that has one.
"""
from __future__ import annotations

import numpy as np
import torch

from bgl.dgl.base import DGLError
from bgl.dgl.heterograph import DGLGraph


def _check(graph: DGLGraph, what: str) -> None:
    if len(graph.canonical_etypes) != 1:
        raise DGLError(f"{what} only support homogeneous graph")


def _sources(graph: DGLGraph, source) -> torch.Tensor:
    ids = torch.as_tensor([source] if isinstance(source, int) else source).long().view(-1).cpu()
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= graph.num_nodes()):
        raise DGLError(f"Expect all source IDs to be in [0, {graph.num_nodes()}), got {ids.tolist()}.")
    return ids


def _step(graph: DGLGraph, frontier: torch.Tensor, reverse: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """(neighbour, edge id) of every edge out of (into, ``reverse``) ``frontier``, node after node, edge-id order."""
    if reverse:
        src, _, eid = graph.in_edges(frontier, form="all")
        return src.long(), eid.long()
    _, dst, eid = graph.out_edges(frontier, form="all")
    return dst.long(), eid.long()


def _first_reached(nodes: torch.Tensor, num_nodes: int) -> torch.Tensor:
    """Positions in ``nodes`` of each distinct node's first occurrence, in order."""
    first = torch.full((num_nodes,), nodes.shape[0], dtype=torch.int64)
    first.scatter_reduce_(0, nodes, torch.arange(nodes.shape[0]), "amin")
    return torch.sort(first[nodes]).values.unique_consecutive()


def _bfs(graph: DGLGraph, source, reverse: bool, what: str):
    _check(graph, what)
    graph = graph.cpu()
    frontier = _sources(graph, source)
    visited = torch.zeros(graph.num_nodes(), dtype=torch.bool)
    visited[frontier] = True
    nodes, edges = [frontier], []
    while True:
        near, eid = _step(graph, frontier, reverse)
        new = (~visited[near]).nonzero().view(-1)
        if new.numel() == 0:
            break
        pick = new[_first_reached(near[new], graph.num_nodes())]
        frontier = near[pick]
        visited[frontier] = True
        nodes.append(frontier)
        edges.append(eid[pick])
    return nodes, edges


def bfs_nodes_generator(graph: DGLGraph, source, reverse=False) -> tuple:
    """Breadth-first frontiers of nodes from ``source`` (int, ids or tensor; several sources start together):
    frontier 0 the sources, then the nodes first reached from the previous frontier, in the order reached.
    ``reverse``: follow edges backwards."""
    nodes, _ = _bfs(graph, source, reverse, "bfs_nodes_generator")
    return tuple(t.to(graph.idtype) for t in nodes)


def bfs_edges_generator(graph: DGLGraph, source, reverse=False) -> tuple:
    """The edges by which :func:`bfs_nodes_generator` first reaches each frontier (one frontier fewer)."""
    _, edges = _bfs(graph, source, reverse, "bfs_edges_generator")
    return tuple(t.to(graph.idtype) for t in edges)


def topological_nodes_generator(graph: DGLGraph, reverse=False) -> tuple:
    """Topological frontiers: first the nodes without in-edges (without out-edges, ``reverse``), ascending; then
    each node as soon as its last in-edge from an earlier frontier is taken, in that order.

    Raises
    ------
    DGLError : a cycle (some node is never reached)
    """
    _check(graph, "topological_nodes_generator")
    graph = graph.cpu()
    n = graph.num_nodes()
    src, dst = (t.long() for t in graph.edges(order="eid"))
    waiting = torch.bincount(src if reverse else dst, minlength=n)
    frontier = (waiting == 0).nonzero().view(-1)
    out, done = [], 0
    while frontier.numel():
        out.append(frontier.to(graph.idtype))
        done += frontier.numel()
        near, _ = _step(graph, frontier, reverse)
        waiting -= torch.bincount(near, minlength=n)
        ready = waiting[near] == 0
        last = torch.full((n,), -1, dtype=torch.int64)
        last.scatter_reduce_(0, near[ready], ready.nonzero().view(-1), "amax")
        frontier = near[torch.sort(last[last >= 0]).values]  # in the order each was last waited for
        waiting[frontier] = -1  # taken: never ready again
    if done < n:
        raise DGLError("Error in topological traversal: loop detected in the given graph.")
    return tuple(out)


def _dfs(graph: DGLGraph, source, reverse: bool, has_reverse_edge: bool, has_nontree_edge: bool, what: str):
    """(edge frontiers, label frontiers) as int64 tensors."""
    from bgl.dgl.graph_utils._kernels import dfs_labeled

    _check(graph, what)
    graph = graph.cpu()
    sources = _sources(graph, source)
    rel = graph._relation(None)
    adj = rel.csc() if reverse else rel.csr()
    indptr, indices = adj.indptr.long().numpy(), adj.indices.long().numpy()
    eids = np.arange(indices.shape[0]) if adj.eids is None else adj.eids.long().numpy()
    size = 2 * graph.num_nodes() + graph.num_edges()
    runs = []
    for s in sources.tolist():  # one kernel run per source: sequential by nature
        edges, labels = np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64)
        count = dfs_labeled(indptr, indices, eids, s, has_reverse_edge, has_nontree_edge, edges, labels)
        runs.append((torch.from_numpy(edges[:count]), torch.from_numpy(labels[:count])))
    return _position_major(runs, 0), _position_major(runs, 1)


def _position_major(runs: list, which: int) -> tuple:
    """Frontier ``i``: item ``i`` of every run that has one, runs in order."""
    if not runs:
        return ()
    lengths = torch.tensor([r[which].shape[0] for r in runs], dtype=torch.int64)
    flat = torch.cat([r[which] for r in runs])
    pos = torch.arange(flat.shape[0]) - torch.repeat_interleave(torch.cumsum(lengths, 0) - lengths, lengths)
    order = torch.sort(pos, stable=True).indices
    sections = torch.bincount(pos, minlength=int(lengths.max())).tolist()
    return tuple(torch.split(flat[order], sections))


def dfs_edges_generator(graph: DGLGraph, source, reverse=False) -> tuple:
    """The tree edges of a depth-first search from each of ``source`` (edges in edge-id order at each node):
    frontier ``i`` the ``i``-th tree edge of each source's search."""
    edges, _ = _dfs(graph, source, reverse, False, False, "dfs_edges_generator")
    return tuple(t.to(graph.idtype) for t in edges)


def dfs_labeled_edges_generator(graph: DGLGraph, source, reverse=False, has_reverse_edge=False,
                                has_nontree_edge=False, return_labels=True):
    """:func:`dfs_edges_generator` with every edge the search meets labelled: 0 forward (tree), 1 reverse (climbing
    back, with ``has_reverse_edge``), 2 non-tree (to a visited node, with ``has_nontree_edge``).

    Returns
    -------
    (edge frontiers, label frontiers (int64)) or, without ``return_labels``, the edge frontiers
    """
    edges, labels = _dfs(graph, source, reverse, has_reverse_edge, has_nontree_edge, "dfs_labeled_edges_generator")
    edges = tuple(t.to(graph.idtype) for t in edges)
    return (edges, labels) if return_labels else edges
