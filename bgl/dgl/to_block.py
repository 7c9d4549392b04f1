"""``dgl.to_block`` and ``dgl.compact_graphs``: a graph relabelled to the nodes its edges touch.

``to_block``: a frontier (a graph of sampled edges over every node) as the block a layer runs on.

A DGL user's own sampler makes each layer as ``to_block(sample_neighbors(g, seeds, fanout), seeds)``
(:mod:`bgl.dgl.sampling`).  As DGL's: the destination nodes of each type are ``dst_nodes`` (default:
the sorted distinct nodes with an in-edge); the source nodes of a type are its destination nodes first
(``include_dst_in_src``), then every other node with an out-edge, in order of first appearance over
the relations in canonical order and their edges in id order (or exactly ``src_nodes``); edge ``i`` of
a relation is the frontier's edge ``i``.  ``srcdata`` / ``dstdata`` hold ``dgl.NID`` (ids in the
frontier) and the frontier's node features at those ids, read on first use as DGL's lazy columns are;
``edata`` holds the frontier's edge features and ``dgl.EID`` = the frontier's edge positions (DGL
overwrites a frontier's own ``EID``; its samplers copy it back: ``block.edata[dgl.EID] =
frontier.edata[dgl.EID]``).

Cost: O(D + S + E) per call for D destination, S source and E edges: bgl's sampler relabels the ids
(a hash table of ~16 B per id, freed on return), nothing per node of the graph (no map of its size);
the default ``dst_nodes`` adds a sort of the edges' destinations.

``compact_graphs``: graphs over the same node types with every node no edge of any of them touches
dropped (a link-prediction batch's positive and negative pair graphs, over the nodes the sampler then
starts from).  As DGL's: a type's nodes are ``always_preserve`` first, then in order of first appearance
over the graphs, their relations in canonical order and each relation's sources then destinations;
``ndata[dgl.NID]`` the old ids, the node features at them (read on first use), edges and their features
unchanged.  The same relabel and cost as ``to_block``.
"""
from __future__ import annotations

from typing import Mapping

import torch

from bgl.dgl.base import EID, NID, DGLError
from bgl.dgl.frames import Frame
from bgl.dgl.heterograph import DGLGraph
from bgl.dgl.relation import Relation
from bgl.dgl.transforms import _plain
from bgl.sampler import ops


def to_block(g: DGLGraph, dst_nodes=None, include_dst_in_src: bool = True, src_nodes=None) -> DGLGraph:
    """The block of ``g``'s edges into ``dst_nodes`` (module doc); DGLError naming an edge whose
    destination (source) is not among ``dst_nodes`` (``src_nodes``), or a node they repeat."""
    _plain(g, "to_block")
    dst = _given(g, dst_nodes, "dst_nodes") if dst_nodes is not None else _nodes_with_in_edges(g)
    dst = {nt: dst.get(nt, _no_ids(g)) for nt in g.ntypes}
    given_src = None if src_nodes is None else _given(g, src_nodes, "src_nodes")
    local_dst = {}
    for cet, rel in g._rels.items():
        nodes, local_dst[cet] = _relabel(dst[cet[2]], rel.coo()[1], "dst_nodes")
        _check_inside(nodes, dst[cet[2]], "destination", cet, "dst_nodes")
    src, local_src = {}, {}
    for nt in g.ntypes:
        if given_src is not None:
            first = given_src.get(nt, _no_ids(g))
        else:
            first = dst[nt] if include_dst_in_src else _no_ids(g)
        out_rels = [cet for cet in g._rels if cet[0] == nt]
        ends = [g._rels[cet].coo()[0] for cet in out_rels]
        src[nt], local = _relabel(first, torch.cat(ends) if ends else _no_ids(g), "src_nodes")
        if given_src is not None:
            _check_inside(src[nt], first, "source", out_rels, "src_nodes")
        local_src.update(zip(out_rels, local.split([int(e.shape[0]) for e in ends])))
    rels, edge_frames = {}, {}
    for cet, rel in g._rels.items():
        rels[cet] = Relation(int(src[cet[0]].shape[0]), int(dst[cet[2]].shape[0]), local_src[cet].to(g.idtype),
                             local_dst[cet].to(g.idtype))
        frame = g._edge_frames[cet].shared_copy()  # one not read yet stays unread
        frame[EID] = torch.arange(rel.num_edges, dtype=g.idtype, device=g.device)
        edge_frames[cet] = frame
    nodes = g._node_frames()
    src_frames, dst_frames = {}, {}
    for nt in g.ntypes:
        src_frames[nt] = nodes[nt].rows_on_read(src[nt])
        src_frames[nt][NID] = src[nt].to(g.idtype)
        dst_frames[nt] = nodes[nt].rows_on_read(dst[nt])
        dst_frames[nt][NID] = dst[nt].to(g.idtype)
    return DGLGraph(rels, {nt: int(ids.shape[0]) for nt, ids in src.items()},
                    {nt: int(ids.shape[0]) for nt, ids in dst.items()}, idtype=g.idtype, src_frames=src_frames,
                    dst_frames=dst_frames, edge_frames=edge_frames)


def _no_ids(g: DGLGraph) -> torch.Tensor:
    return torch.zeros(0, dtype=torch.int64, device=g.device)


def _given(g: DGLGraph, nodes, what: str) -> dict:
    """``{ntype: int64 ids}`` of ``dst_nodes`` / ``src_nodes`` (a tensor only on a one-type graph)."""
    if not isinstance(nodes, Mapping):
        if len(g.ntypes) > 1:
            raise DGLError(f"Graph has more than one node type; please specify a dict for {what}.")
        nodes = {g.ntypes[0]: nodes}
    out = {}
    for key, ids in nodes.items():
        nt = g.ntypes[g.get_ntype_id(key)]
        ids = torch.as_tensor(ids, device=g.device)
        if ids.dtype == torch.bool or ids.is_floating_point():
            raise DGLError(f"{what} must be integer node ids, got {ids.dtype}.")
        ids = ids.view(-1).long()
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= g.num_nodes(nt)):
            raise DGLError(f"{what} of type {nt!r} must be in [0, {g.num_nodes(nt)}).")
        out[nt] = ids
    return out


def _nodes_with_in_edges(g: DGLGraph) -> dict:
    """Each type's distinct nodes with an in-edge of any relation, sorted (DGL's default ``dst_nodes``)."""
    ends: dict = {}
    for cet, rel in g._rels.items():
        ends.setdefault(cet[2], []).append(rel.coo()[1].long())
    return {nt: torch.unique(torch.cat(parts)) for nt, parts in ends.items()}


def _relabel(first: torch.Tensor, ids: torch.Tensor, what: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(``first`` then the other distinct ``ids`` in order of first appearance, each of ``ids``' position
    in that list): bgl's sampler relabel (one hash-table pass, :func:`bgl.sampler.ops.relabel`)."""
    device = ids.device
    try:
        nodes, local = ops.relabel(first.cpu().numpy(), ids.cpu().numpy())
    except ValueError as e:  # a node given twice
        raise DGLError(f"{what} must not repeat a node ({str(e).split('; ', 1)[-1]}).") from None
    return torch.from_numpy(nodes).to(device), torch.from_numpy(local).to(device)


def _check_inside(nodes: torch.Tensor, given: torch.Tensor, end: str, where, what: str) -> None:
    """DGLError naming the first end node of an edge that ``given`` (``nodes``' head) lacks."""
    if nodes.shape[0] > given.shape[0]:
        raise DGLError(f"The {end} node {int(nodes[given.shape[0]])} of an edge of {where} is not in {what}.")


def compact_graphs(graphs, always_preserve=None, copy_ndata: bool = True, copy_edata: bool = True):
    """``graphs`` (one graph or a list over the same node types) over only the nodes their edges touch
    (module doc); a list in, a list out."""
    single = not isinstance(graphs, (list, tuple))
    graphs = [graphs] if single else list(graphs)
    if not graphs:
        return []
    ntypes = graphs[0].ntypes
    for g in graphs:
        _plain(g, "compact_graphs")
        if g.ntypes != ntypes:
            raise DGLError(f"compact_graphs needs graphs of the same node types, got {ntypes} and {g.ntypes}.")
    keep = {} if always_preserve is None else _given(graphs[0], always_preserve, "always_preserve")
    nodes, local = {}, {}
    for nt in ntypes:
        keys, parts = [], []
        for i, g in enumerate(graphs):
            for cet, rel in g._rels.items():
                src, dst = rel.coo()
                for side, ends, end_type in ((0, src, cet[0]), (1, dst, cet[2])):
                    if end_type == nt:
                        keys.append((i, cet, side))
                        parts.append(ends)
        head = keep.get(nt, _no_ids(graphs[0]))
        nodes[nt], where = _relabel(head, torch.cat(parts) if parts else _no_ids(graphs[0]), "always_preserve")
        local.update(zip(keys, where.split([int(p.shape[0]) for p in parts])))
    out = []
    for i, g in enumerate(graphs):
        rels = {cet: Relation(int(nodes[cet[0]].shape[0]), int(nodes[cet[2]].shape[0]), local[(i, cet, 0)].to(g.idtype),
                              local[(i, cet, 1)].to(g.idtype)) for cet in g._rels}
        node_frames = {}
        for nt, frame in g._node_frames().items():
            node_frames[nt] = frame.rows_on_read(nodes[nt]) if copy_ndata else Frame(int(nodes[nt].shape[0]))
            node_frames[nt][NID] = nodes[nt].to(g.idtype)
        edge_frames = {cet: g._edge_frames[cet].shared_copy() if copy_edata else Frame(rel.num_edges, "edges")
                       for cet, rel in g._rels.items()}
        out.append(DGLGraph(rels, {nt: int(ids.shape[0]) for nt, ids in nodes.items()}, idtype=g.idtype,
                            src_frames=node_frames, edge_frames=edge_frames))
    return out[0] if single else out
