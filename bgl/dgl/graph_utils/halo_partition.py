"""DGL 2.1's in-memory partition utilities: ``dgl.partition_graph_with_halo``, ``dgl.metis_partition_assignment``
and ``dgl.metis_partition`` (DGL's ``dgl/partition.py``, whose work its C++ ``GetSubgraphWithHalo`` does).

A part's subgraph holds, as DGL's: the part's nodes (ascending, ``inner_node`` 1), then, with
``extra_cached_hops = h >= 1``, the HALO nodes (``inner_node`` 0) in the order DGL's C++ meets them: the
in-neighbours of the part, then of those, ``h`` hops deep, then the out-neighbours of the part, each node where
it first appears.  Its edges: the in-edges of the part's nodes (without halo only those from inside), then per
extra hop the in-edges of the newest halo nodes coming from outside the part, then the part's out-edges leaving
it.  A node's in-edges come in edge-id order, as DGL reads them from a graph built from ``(src, dst)`` (a
graph whose CSR was built first lists them by source in DGL); ``reshuffle=True`` first renumbers the nodes part
by part and the edges by destination (DGL's ``reshuffle_graph``), and puts each part's inner edges first.
Fields: ``ndata[dgl.NID]`` / ``edata[dgl.EID]`` (ids in the graph partitioned, the reshuffled one with
``reshuffle``), ``inner_node`` (int32), ``part_id``, ``edata["inner_edge"]`` (int8: the edge ends inside the
part), and with ``reshuffle`` ``orig_id`` on both (ids in the input graph); the input's features stay behind,
as in DGL.  A graph with ``dgl.ETYPE`` in ``edata`` has its reshuffled edges sorted by part and type, stably
here (DGL's ``std::sort`` leaves equal keys in an unspecified order).

The assignment is bgl's partitioner's (:func:`bgl.dgl.sampling.cluster_gcn.cluster_assignment`: KaMinPar on
the symmetrized graph, METIS through pymetis where KaMinPar has no wheel), where DGL calls METIS: connected,
balanced parts with few edges between them, but not METIS's parts.  ``balance_ntypes`` / ``balance_edges`` /
``mode`` / ``objtype`` are checked as DGL checks them; bgl's partitioner balances node counts and edges itself.

Cost per part: O(N) for a seen-mask plus O(edges met) for each hop (vectorised gathers and one ``torch.unique``
a hop); the graph's edges are sorted twice once (by destination, by source).
"""
from __future__ import annotations

import torch

from bgl.dgl.base import EID, ETYPE, NID, NTYPE, DGLError
from bgl.dgl.heterograph import DGLGraph
from bgl.dgl.relation import row_positions

MODES = ("k-way", "recursive")


class _Adjacency:
    """A graph's edges (int64 ``src`` / ``dst`` by edge id) and each node's in- and out-edges in the order the
    partitioner reads them: ``in_order`` / ``out_order`` list edge ids grouped by destination / source."""

    def __init__(self, num_nodes: int, src: torch.Tensor, dst: torch.Tensor, in_order: torch.Tensor,
                 out_order: torch.Tensor):
        self.num_nodes, self.src, self.dst = num_nodes, src, dst
        self.in_order, self.out_order = in_order, out_order
        self.in_ptr = _offsets(dst, num_nodes)
        self.out_ptr = _offsets(src, num_nodes)

    def in_edges(self, nodes: torch.Tensor) -> torch.Tensor:
        """Edge ids into ``nodes``, node after node."""
        return _segments(self.in_ptr, self.in_order, nodes)

    def out_edges(self, nodes: torch.Tensor) -> torch.Tensor:
        """Edge ids out of ``nodes``, node after node."""
        return _segments(self.out_ptr, self.out_order, nodes)


def _offsets(ends: torch.Tensor, num_nodes: int) -> torch.Tensor:
    ptr = torch.zeros(num_nodes + 1, dtype=torch.int64)
    torch.cumsum(torch.bincount(ends, minlength=num_nodes), 0, out=ptr[1:])
    return ptr


def _segments(ptr: torch.Tensor, order: torch.Tensor, nodes: torch.Tensor) -> torch.Tensor:
    """``order[ptr[v]:ptr[v + 1]]`` for each ``v`` of ``nodes``, concatenated (one gather, no loop)."""
    return order[row_positions(ptr, nodes)]


def _first_seen(ids: torch.Tensor) -> torch.Tensor:
    """The distinct values of ``ids`` in the order of their first appearance."""
    if ids.numel() == 0:
        return ids
    unique, inverse = torch.unique(ids, return_inverse=True)
    first = torch.full((unique.shape[0],), ids.shape[0], dtype=torch.int64)
    first.scatter_reduce_(0, inverse, torch.arange(ids.shape[0]), "amin")
    return unique[torch.argsort(first)]


def _halo(adj: _Adjacency, inner: torch.Tensor, hops: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(node ids, edge ids)`` of one part's subgraph: its ``inner`` nodes first, then the halo, in the order of
    DGL's ``GetSubgraphWithHalo`` (module doc)."""
    is_inner = torch.zeros(adj.num_nodes, dtype=torch.bool)
    is_inner[inner] = True
    eids = adj.in_edges(inner)
    src = adj.src[eids]
    if hops == 0:
        return inner, eids[is_inner[src]]
    seen = is_inner.clone()
    nodes, edges = [inner], [eids]
    frontier = _first_seen(src[~seen[src]])
    for _ in range(1, hops):  # the in-edges of each new ring of halo nodes, from outside the part
        seen[frontier] = True
        nodes.append(frontier)
        eids = adj.in_edges(frontier)
        src = adj.src[eids]
        edges.append(eids[~is_inner[src]])
        frontier = _first_seen(src[~seen[src]])
    seen[frontier] = True
    nodes.append(frontier)
    eids = adj.out_edges(inner)  # the part's edges out of it; their ends join without being expanded
    dst = adj.dst[eids]
    edges.append(eids[~is_inner[dst]])
    nodes.append(_first_seen(dst[~seen[dst]]))
    return torch.cat(nodes), torch.cat(edges)


def _reshuffle(g: DGLGraph, src: torch.Tensor, dst: torch.Tensor, node_part: torch.Tensor):
    """DGL's ``reshuffle_graph``: nodes renumbered part by part (and by ``dgl.NTYPE`` within a part when there are
    several), edges by destination, each destination's in-edges in id order (by part and ``dgl.ETYPE`` when
    ``edata`` has it).  Returns the new graph's adjacency, each node's part, and the new-to-old node and edge
    ids."""
    n = g.num_nodes()
    ntype = g.ndata[NTYPE].long().cpu() if NTYPE in g.ndata else None
    if ntype is not None and torch.unique(ntype).numel() > 1:
        num_types = int(ntype.max()) + 1
        key, new2old = torch.sort(node_part * num_types + ntype)
        sorted_part = torch.div(key, num_types, rounding_mode="floor")
    else:
        sorted_part, new2old = torch.sort(node_part)
    new_id = torch.empty(n, dtype=torch.int64)
    new_id[new2old] = torch.arange(n)
    new_src, new_dst = new_id[src], new_id[dst]
    positions = torch.argsort(new_dst, stable=True)  # the in-CSR of the renumbered graph: old edge ids
    if ETYPE in g.edata:
        etype = g.edata[ETYPE].long().cpu()[positions]
        num_etypes = int(etype.max()) + 1 if etype.numel() else 1
        order = torch.argsort(sorted_part[new_dst[positions]] * num_etypes + etype, stable=True)
        old_eids = positions[order]
        new_at_position = torch.empty_like(order)
        new_at_position[order] = torch.arange(order.shape[0])
    else:
        old_eids, new_at_position = positions, torch.arange(positions.shape[0])
    s, d = new_src[old_eids], new_dst[old_eids]
    # DGL reads in-edges in the in-CSR's positions and out-edges from its transpose (by source, then destination)
    out_order = new_at_position[torch.argsort(s[new_at_position], stable=True)]
    return _Adjacency(n, s, d, new_at_position, out_order), sorted_part, new2old, old_eids


def _subgraph(adj: _Adjacency, nodes: torch.Tensor, eids: torch.Tensor, num_inner: int, hops: int,
              reshuffle: bool) -> DGLGraph:
    from bgl.dgl.convert import graph

    local = torch.full((adj.num_nodes,), -1, dtype=torch.int64)
    local[nodes] = torch.arange(nodes.shape[0])
    if reshuffle and eids.numel():  # the inner edges (into the part) first, each group by edge id
        outer = local[adj.dst[eids]] >= num_inner
        eids = eids[torch.sort(eids + (int(eids.max()) + 1) * outer.long()).indices]
    s, d = local[adj.src[eids]], local[adj.dst[eids]]
    sub = graph((s, d), num_nodes=nodes.shape[0], idtype=torch.int64)
    sub.ndata[NID] = nodes
    sub.edata[EID] = eids
    inner_node = torch.zeros(nodes.shape[0], dtype=torch.int32)
    inner_node[:num_inner] = 1
    sub.ndata["inner_node"] = inner_node
    sub.edata["inner_edge"] = (d < num_inner).to(torch.int8) if hops >= 1 else \
        torch.ones(eids.shape[0], dtype=torch.int8)
    return sub


def _homogeneous(g: DGLGraph, what: str) -> None:
    if len(g.ntypes) != 1 or len(g.canonical_etypes) != 1:
        raise DGLError(f"{what} only supports homogeneous graphs, got node types {g.ntypes} and edge types "
                       f"{g.canonical_etypes}.")


def partition_graph_with_halo(g: DGLGraph, node_part, extra_cached_hops: int, reshuffle: bool = False):
    """Split ``g`` into one subgraph per part of ``node_part``, each with its HALO nodes (module doc).

    Parameters
    ----------
    g : a homogeneous graph with int64 ids
    node_part : int tensor [num_nodes]: each node's part (parts ``0 .. max``, none empty)
    extra_cached_hops : how many hops of in-neighbours (plus the out-neighbours) join each part as HALO nodes
    reshuffle : renumber nodes and edges part by part first

    Returns
    -------
    ``({part id: DGLGraph}, orig_nids, orig_eids)``: the mappings (int64 [num_nodes] / [num_edges], new id to
    the input's) with ``reshuffle``, else ``None, None``.

    Raises
    ------
    AssertionError : ``node_part`` of another length than the node count (as DGL)
    DGLError : an int32 or typed graph, a negative part id, a part with no node
    """
    node_part = torch.as_tensor(node_part).view(-1)
    if len(node_part) != g.num_nodes():
        raise AssertionError(f"node_part has {len(node_part)} entries for {g.num_nodes()} nodes")
    _homogeneous(g, "partition_graph_with_halo")
    if g.idtype != torch.int64:
        raise DGLError("halo subgraph only supports 64bits graph")
    node_part = node_part.long().cpu()
    hops = int(extra_cached_hops)
    if node_part.numel() and int(node_part.min()) < 0:
        raise DGLError(f"node_part must hold part ids >= 0, got {int(node_part.min())}")
    src, dst = (t.long().cpu() for t in g.edges())
    if reshuffle:
        adj, node_part, orig_nids, orig_eids = _reshuffle(g, src, dst, node_part)
    else:  # DGL builds both CSRs from the COO: each node's edges in id order
        adj = _Adjacency(g.num_nodes(), src, dst, torch.argsort(dst, stable=True), torch.argsort(src, stable=True))
    counts = torch.bincount(node_part) if node_part.numel() else torch.zeros(1, dtype=torch.int64)
    if bool((counts == 0).any()):
        raise DGLError(f"part {int(torch.nonzero(counts == 0)[0])} has no node: node_part must use every id "
                       f"from 0 to {counts.shape[0] - 1}")
    by_part = torch.argsort(node_part, stable=True)  # each part's nodes, ascending
    bounds = [0, *torch.cumsum(counts, 0).tolist()]
    parts = {}
    for p in range(counts.shape[0]):  # one vectorised pass per part
        inner = by_part[bounds[p]:bounds[p + 1]]
        nodes, eids = _halo(adj, inner, hops)
        sub = _subgraph(adj, nodes, eids, inner.shape[0], hops, reshuffle)
        sub.ndata["part_id"] = node_part[nodes]
        if reshuffle:
            sub.ndata["orig_id"] = orig_nids[nodes]
            sub.edata["orig_id"] = orig_eids[sub.edata[EID]]
        parts[p] = sub
    return (parts, orig_nids, orig_eids) if reshuffle else (parts, None, None)


def metis_partition_assignment(g: DGLGraph, k: int, balance_ntypes=None, balance_edges: bool = False,
                               mode: str = "k-way", objtype: str = "cut") -> torch.Tensor:
    """Each node's part, int64 [num_nodes] in ``[0, k)``: bgl's partitioner where DGL runs METIS (module doc).

    Raises
    ------
    AssertionError : an unknown ``mode``, an int32 graph, ``balance_ntypes`` of another length (as DGL)
    DGLError : a typed graph, ``k < 1``

    ``k`` at or above the node count gives each node a part of its own (parts ``0 .. num_nodes - 1``), where METIS
    spreads the nodes over ``k`` parts and leaves some empty.
    """
    from bgl.dgl.sampling.cluster_gcn import cluster_assignment

    if mode not in MODES:
        raise AssertionError("'mode' can only be 'k-way' or 'recursive'")
    if g.idtype != torch.int64:
        raise AssertionError("IdType of graph is required to be int64 for now.")
    _homogeneous(g, "metis_partition_assignment")
    if balance_ntypes is not None and len(balance_ntypes) != g.num_nodes():
        raise AssertionError("The length of balance_ntypes should be equal to #nodes in the graph")
    k = int(k)
    if k < 1:
        raise DGLError(f"Error in Metis partitioning: input error (k must be >= 1, got {k})")
    if k >= g.num_nodes():  # as many parts as nodes or more: each node a part of its own (METIS: some empty)
        return torch.arange(g.num_nodes(), dtype=torch.int64)
    return torch.from_numpy(cluster_assignment(g, k))


def metis_partition(g: DGLGraph, k: int, extra_cached_hops: int = 0, reshuffle: bool = False,
                    balance_ntypes=None, balance_edges: bool = False, mode: str = "k-way") -> dict:
    """``{part id: DGLGraph}``: :func:`partition_graph_with_halo` of :func:`metis_partition_assignment`."""
    if mode not in MODES:
        raise AssertionError("'mode' can only be 'k-way' or 'recursive'")
    node_part = metis_partition_assignment(g, k, balance_ntypes, balance_edges, mode)
    return partition_graph_with_halo(g, node_part, extra_cached_hops, reshuffle)[0]
