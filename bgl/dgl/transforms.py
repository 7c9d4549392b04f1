"""DGL's graph transforms: self-loops, reverse and bidirected edges, simple graphs, subgraphs,
homogeneous <-> typed.  Each returns a new graph; each is a few sorts / gathers over the edge
arrays (no Python loop over nodes or edges); features are copied as DGL copies them.
"""
from __future__ import annotations

import torch

from bgl.dgl.base import EID, ETYPE, NID, NTYPE, DGLError, not_built
from bgl.dgl.frames import Frame
from bgl.dgl.heterograph import DGLGraph
from bgl.dgl.relation import Relation


def _plain(g: DGLGraph, what: str) -> None:
    if g.is_block:
        raise DGLError(f"{what} is not supported on a block.")


def _new_graph(g: DGLGraph, rels: dict, node_frames: dict | None, edge_frames: dict | None) -> DGLGraph:
    counts = {nt: g.num_nodes(nt) for nt in g.ntypes}
    return DGLGraph(rels, counts, idtype=g.idtype, src_frames=node_frames, edge_frames=edge_frames)


def _copied_nodes(g: DGLGraph) -> dict:
    return {nt: f.shared_copy() for nt, f in g._node_frames().items()}


def _edges_frame(g: DGLGraph, cet, rows: torch.Tensor | None, num: int, fill=None, extra: int = 0) -> Frame:
    """Edge features of ``cet`` at ``rows`` (None: all), plus ``extra`` rows filled with ``fill``."""
    frame = Frame(num, "edges")
    for key, value in g._edge_frames[cet].items():
        part = value if rows is None else value[rows.to(value.device)]
        if extra:
            part = torch.cat([part, torch.full((extra, *value.shape[1:]), fill, dtype=value.dtype,
                                               device=value.device)])
        frame[key] = part
    return frame


def _edge_copy(g: DGLGraph, cet, copy: bool) -> Frame:
    """Relation ``cet``'s edge features (``copy``) or an empty frame of its edge count."""
    num = g._rels[cet].num_edges
    return _edges_frame(g, cet, None, num) if copy else Frame(num, "edges")


def add_self_loop(g: DGLGraph, edge_feat_names=None, fill_data=1.0, etype=None) -> DGLGraph:
    """``g`` with one self-loop per node appended after the existing edges (ids E .. E + N - 1);
    their features are ``fill_data`` (for ``edge_feat_names``, default every feature)."""
    _plain(g, "add_self_loop")
    cet = g.to_canonical_etype(etype)
    if cet[0] != cet[2]:
        raise DGLError("add_self_loop does not support unidirectional bipartite graphs: " + str(cet))
    rels, frames = dict(g._rels), {}
    for key in rels:
        frames[key] = _edges_frame(g, key, None, rels[key].num_edges)
    rel = rels[cet]
    src, dst = rel.coo()
    loops = torch.arange(rel.num_src, device=src.device, dtype=src.dtype)
    rels[cet] = Relation(rel.num_src, rel.num_dst, torch.cat([src, loops]), torch.cat([dst, loops]))
    names = list(g._edge_frames[cet]) if edge_feat_names is None else list(edge_feat_names)
    frame = Frame(rels[cet].num_edges, "edges")
    for key, value in g._edge_frames[cet].items():
        if key in names:
            fill = torch.full((rel.num_src, *value.shape[1:]), fill_data, dtype=value.dtype, device=value.device)
        else:
            fill = torch.zeros((rel.num_src, *value.shape[1:]), dtype=value.dtype, device=value.device)
        frame[key] = torch.cat([value, fill])
    frames[cet] = frame
    return _new_graph(g, rels, _copied_nodes(g), frames)


def _keep_edges(g: DGLGraph, cet, keep: torch.Tensor) -> DGLGraph:
    rels, frames = dict(g._rels), {k: _edges_frame(g, k, None, r.num_edges) for k, r in g._rels.items()}
    rel = rels[cet]
    src, dst = rel.coo()
    eids = keep.nonzero().view(-1)
    rels[cet] = Relation(rel.num_src, rel.num_dst, src[eids], dst[eids])
    frames[cet] = _edges_frame(g, cet, eids, int(eids.shape[0]))
    from bgl.dgl.batching import batch_after_removal  # a batch stays one, each graph less its removed edges

    return batch_after_removal(g, _new_graph(g, rels, _copied_nodes(g), frames), {}, {cet: keep})


def remove_self_loop(g: DGLGraph, etype=None) -> DGLGraph:
    """``g`` without its self-loops (the other edges keep their order and features)."""
    _plain(g, "remove_self_loop")
    cet = g.to_canonical_etype(etype)
    if cet[0] != cet[2]:
        raise DGLError("remove_self_loop does not support unidirectional bipartite graphs: " + str(cet))
    src, dst = g._rels[cet].coo()
    return _keep_edges(g, cet, src != dst)


def remove_edges(g: DGLGraph, eids, etype=None, store_ids=False) -> DGLGraph:
    """``g`` without the edges ``eids`` of ``etype`` (DGL's ``dgl.remove_edges``)."""
    _plain(g, "remove_edges")
    cet = g.to_canonical_etype(etype)
    rel = g._rels[cet]
    keep = torch.ones(rel.num_edges, dtype=torch.bool, device=rel.device)
    keep[torch.as_tensor(eids, device=rel.device).long()] = False
    out = _keep_edges(g, cet, keep)
    if store_ids:
        out._edge_frames[cet][EID] = keep.nonzero().view(-1).to(g.idtype)
    return out


def reverse(g: DGLGraph, copy_ndata=True, copy_edata=False) -> DGLGraph:
    """Every edge turned around; relation (s, r, d) becomes (d, r, s), edge ids kept."""
    _plain(g, "reverse")
    rels = {(d, r, s): rel.reversed() for (s, r, d), rel in g._rels.items()}
    frames = {(d, r, s): _edge_copy(g, (s, r, d), copy_edata) for (s, r, d) in g._rels}
    return _new_graph(g, rels, _copied_nodes(g) if copy_ndata else None, frames)


def add_reverse_edges(g: DGLGraph, readonly=None, copy_ndata=True, copy_edata=False, ignore_bipartite=False,
                      exclude_self=True) -> DGLGraph:
    """Each relation (s, r, s) with its edges reversed appended (self-loops once if
    ``exclude_self``); the reverse edge of edge ``i`` has id ``E + i`` (among those kept)."""
    _plain(g, "add_reverse_edges")
    rels, frames = {}, {}
    for cet, rel in g._rels.items():
        if cet[0] != cet[2]:
            if not ignore_bipartite:
                raise DGLError("add_reverse_edges is not well defined for unidirectional bipartite graphs"
                               f" ({cet}); pass ignore_bipartite=True to skip them.")
            rels[cet], frames[cet] = rel, _edge_copy(g, cet, copy_edata)
            continue
        src, dst = rel.coo()
        back = (src != dst).nonzero().view(-1) if exclude_self else torch.arange(rel.num_edges, device=src.device)
        rels[cet] = Relation(rel.num_src, rel.num_dst, torch.cat([src, dst[back]]), torch.cat([dst, src[back]]))
        frame = Frame(rels[cet].num_edges, "edges")
        if copy_edata:
            for key, value in g._edge_frames[cet].items():
                frame[key] = torch.cat([value, value[back.to(value.device)]])
            frame[EID] = torch.cat([torch.arange(rel.num_edges, device=back.device), back]).to(g.idtype)
        frames[cet] = frame
    return _new_graph(g, rels, _copied_nodes(g) if copy_ndata else None, frames)


def to_simple(g: DGLGraph, return_counts="count", writeback_mapping=False, copy_ndata=True, copy_edata=False,
              aggregator="arbitrary"):
    """Parallel edges merged into one, edges sorted by (src, dst); ``edata[return_counts]`` =
    multiplicity; ``writeback_mapping`` also returns each old edge's new id."""
    _plain(g, "to_simple")
    if copy_edata and aggregator != "arbitrary":
        raise not_built(f"to_simple(aggregator={aggregator!r})", "aggregate edge features with update_all")
    rels, frames, maps = {}, {}, {}
    for cet, rel in g._rels.items():
        src, dst = rel.coo()
        key = src.long() * max(rel.num_dst, 1) + dst.long()
        uniq, inverse, counts = torch.unique(key, sorted=True, return_inverse=True, return_counts=True)
        new_src = (uniq // max(rel.num_dst, 1)).to(src.dtype)
        new_dst = (uniq % max(rel.num_dst, 1)).to(dst.dtype)
        rels[cet] = Relation(rel.num_src, rel.num_dst, new_src, new_dst)
        frame = Frame(int(uniq.shape[0]), "edges")
        if copy_edata:  # "arbitrary" as DGL picks it: the first edge (by id) of each group
            first = torch.full((uniq.shape[0],), rel.num_edges, dtype=torch.int64, device=src.device)
            first.scatter_reduce_(0, inverse, torch.arange(rel.num_edges, device=src.device), "amin")
            for name, value in g._edge_frames[cet].items():
                frame[name] = value[first.to(value.device)]
            frame[EID] = first.to(g.idtype)
        if return_counts is not None:
            frame[return_counts] = counts.to(g.idtype)
        frames[cet], maps[cet] = frame, inverse.to(g.idtype)
    out = _new_graph(g, rels, _copied_nodes(g) if copy_ndata else None, frames)
    if writeback_mapping:
        return out, (next(iter(maps.values())) if len(maps) == 1 else maps)
    return out


def to_bidirected(g: DGLGraph, copy_ndata=False, readonly=None) -> DGLGraph:
    """Both directions of every edge, parallel edges merged (DGL: ``to_simple`` of
    ``add_reverse_edges``, no edge features)."""
    both = add_reverse_edges(g, copy_ndata=copy_ndata, exclude_self=False)
    return to_simple(both, return_counts=None, copy_ndata=copy_ndata)


def node_subgraph(graph: DGLGraph, nodes, *, relabel_nodes=True, store_ids=True, output_device=None) -> DGLGraph:
    """The subgraph induced by ``nodes`` (ids or a bool mask; a dict per type for typed graphs):
    nodes in the given order, edges between them in edge-id order, ``ndata[NID]`` / ``edata[EID]``."""
    _plain(graph, "node_subgraph")
    if not relabel_nodes:
        raise not_built("node_subgraph(relabel_nodes=False)", "use edge_subgraph with relabel_nodes=False")
    if not isinstance(nodes, dict):
        nodes = {graph.ntypes[graph.get_ntype_id(None)]: nodes}
    picked = {}
    for nt in graph.ntypes:
        ids = nodes.get(nt, torch.zeros(0, dtype=torch.int64))
        ids = torch.as_tensor(ids, device=graph.device)
        picked[nt] = ids.nonzero().view(-1) if ids.dtype == torch.bool else ids.long().view(-1)
        from bgl.dgl.graph_queries import check_node_ids

        check_node_ids(picked[nt], graph.num_nodes(nt))
    rels, frames = {}, {}
    for cet, rel in graph._rels.items():
        src, dst = rel.coo()
        new_src = torch.full((rel.num_src,), -1, dtype=torch.int64, device=src.device)
        new_dst = torch.full((rel.num_dst,), -1, dtype=torch.int64, device=src.device)
        new_src[picked[cet[0]]] = torch.arange(picked[cet[0]].shape[0], device=src.device)
        new_dst[picked[cet[2]]] = torch.arange(picked[cet[2]].shape[0], device=src.device)
        s, d = new_src[src.long()], new_dst[dst.long()]
        eids = ((s >= 0) & (d >= 0)).nonzero().view(-1)
        eids = eids[torch.sort(s[eids], stable=True).indices]  # DGL's order: by new src, then edge id
        rels[cet] = Relation(int(picked[cet[0]].shape[0]), int(picked[cet[2]].shape[0]),
                             s[eids].to(graph.idtype), d[eids].to(graph.idtype))
        frames[cet] = _edges_frame(graph, cet, eids, int(eids.shape[0]))
        if store_ids:
            frames[cet][EID] = eids.to(graph.idtype)
    node_frames = {}
    for nt, frame in graph._node_frames().items():
        node_frames[nt] = frame.subset(picked[nt])
        if store_ids:
            node_frames[nt][NID] = picked[nt].to(graph.idtype)
    counts = {nt: int(p.shape[0]) for nt, p in picked.items()}
    out = DGLGraph(rels, counts, idtype=graph.idtype, src_frames=node_frames, edge_frames=frames)
    return out if output_device is None else out.to(output_device)


def edge_subgraph(graph: DGLGraph, edges, *, relabel_nodes=True, store_ids=True, output_device=None) -> DGLGraph:
    """The subgraph of ``edges`` (ids or bool mask, dict per type): edges in the given order,
    nodes = the sorted endpoints (``relabel_nodes``) or all nodes; ``ndata[NID]`` / ``edata[EID]``."""
    _plain(graph, "edge_subgraph")
    if not isinstance(edges, dict):
        edges = {graph.to_canonical_etype(None): edges}
    picked = {}
    for cet in graph.canonical_etypes:
        key = next((k for k in edges if graph.to_canonical_etype(k) == cet), None)
        ids = torch.as_tensor(edges[key] if key is not None else [], device=graph.device)
        picked[cet] = ids.nonzero().view(-1) if ids.dtype == torch.bool else ids.long().view(-1)
        from bgl.dgl.graph_queries import check_node_ids

        check_node_ids(picked[cet], graph._rels[cet].num_edges, "edge")
    ends = {nt: [] for nt in graph.ntypes}
    for cet, eids in picked.items():
        src, dst = graph._rels[cet].coo()
        ends[cet[0]].append(src[eids].long())
        ends[cet[2]].append(dst[eids].long())
    keep, where = {}, {}
    for nt, e in ends.items():
        if relabel_nodes:
            keep[nt], where[nt] = _first_appearance(torch.cat(e) if e else torch.zeros(0, dtype=torch.int64),
                                                    graph.num_nodes(nt))
        else:
            keep[nt] = where[nt] = torch.arange(graph.num_nodes(nt), device=graph.device)
    rels, frames = {}, {}
    for cet, eids in picked.items():
        src, dst = graph._rels[cet].coo()
        s, d = where[cet[0]][src[eids].long()], where[cet[2]][dst[eids].long()]
        rels[cet] = Relation(int(keep[cet[0]].shape[0]), int(keep[cet[2]].shape[0]), s.to(graph.idtype),
                             d.to(graph.idtype))
        frames[cet] = _edges_frame(graph, cet, eids, int(eids.shape[0]))
        if store_ids:
            frames[cet][EID] = eids.to(graph.idtype)
    node_frames = {}
    for nt, frame in graph._node_frames().items():
        node_frames[nt] = frame.subset(keep[nt])
        if store_ids and relabel_nodes:
            node_frames[nt][NID] = keep[nt].to(graph.idtype)
    counts = {nt: int(k.shape[0]) for nt, k in keep.items()}
    out = DGLGraph(rels, counts, idtype=graph.idtype, src_frames=node_frames, edge_frames=frames)
    return out if output_device is None else out.to(output_device)


def _first_appearance(ids: torch.Tensor, count: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(distinct ``ids`` in order of first appearance, new id of each old id [count])."""
    uniq, inverse = torch.unique(ids, return_inverse=True)
    first = torch.full((uniq.shape[0],), ids.shape[0], dtype=torch.int64, device=ids.device)
    first.scatter_reduce_(0, inverse, torch.arange(ids.shape[0], device=ids.device), "amin")
    kept = uniq[torch.argsort(first)]
    where = torch.full((count,), -1, dtype=torch.int64, device=ids.device)
    where[kept] = torch.arange(kept.shape[0], device=ids.device)
    return kept, where


def to_homogeneous(G: DGLGraph, ndata=None, edata=None, store_type=True, return_count=False):
    """One node type and one edge type: nodes numbered type after type (``G.ntypes`` order),
    edges relation after relation; ``ndata[NTYPE]`` / ``ndata[NID]`` (type-local id),
    ``edata[ETYPE]`` / ``edata[EID]``; features in ``ndata`` / ``edata`` concatenated."""
    _plain(G, "to_homogeneous")
    ntypes = G.ntypes
    offset, counts = {}, []
    for nt in ntypes:
        offset[nt] = sum(counts)
        counts.append(G.num_nodes(nt))
    srcs, dsts, etype_ids, eids, ecounts = [], [], [], [], []
    for t, (cet, rel) in enumerate(G._rels.items()):
        src, dst = rel.coo()
        srcs.append(src.long() + offset[cet[0]])
        dsts.append(dst.long() + offset[cet[2]])
        etype_ids.append(torch.full((rel.num_edges,), t, dtype=torch.int64, device=src.device))
        eids.append(torch.arange(rel.num_edges, device=src.device))
        ecounts.append(rel.num_edges)
    n = sum(counts)
    from bgl.dgl.convert import graph as make_graph

    out = make_graph((torch.cat(srcs).to(G.idtype), torch.cat(dsts).to(G.idtype)), num_nodes=n, idtype=G.idtype)
    frames = G._node_frames()
    for name in ndata or []:
        out.ndata[name] = torch.cat([frames[nt][name] for nt in ntypes])
    for name in edata or []:
        out.edata[name] = torch.cat([G._edge_frames[cet][name] for cet in G._rels])
    if store_type:
        out.ndata[NTYPE] = torch.repeat_interleave(torch.arange(len(ntypes)), torch.tensor(counts)).to(G.idtype)
        out.ndata[NID] = torch.cat([torch.arange(c) for c in counts]).to(G.idtype) if n else \
            torch.zeros(0, dtype=G.idtype)
        out.edata[ETYPE] = torch.cat(etype_ids).to(G.idtype)
        out.edata[EID] = torch.cat(eids).to(G.idtype)
    return (out, counts, ecounts) if return_count else out


def to_heterogeneous(G: DGLGraph, ntypes, etypes, ntype_field=NTYPE, etype_field=ETYPE, metagraph=None) -> DGLGraph:
    """Split a homogeneous graph by its ``ndata[ntype_field]`` / ``edata[etype_field]`` into types
    ``ntypes`` / ``etypes`` (names or canonical triples); nodes keep their order within a type."""
    if metagraph is not None:
        raise not_built("to_heterogeneous(metagraph=...)", "pass canonical etypes as etypes")
    ntype_of = G.ndata[ntype_field].long()
    etype_of = G.edata[etype_field].long()
    local = torch.zeros_like(ntype_of)
    counts = {}
    for t, nt in enumerate(ntypes):  # one pass per type (a handful), vectorised inside
        members = (ntype_of == t).nonzero().view(-1)
        local[members] = torch.arange(members.shape[0], device=members.device)
        counts[nt] = int(members.shape[0])
    src, dst = G.edges()
    rels = {}
    for t, et in enumerate(etypes):
        sel = (etype_of == t).nonzero().view(-1)
        s, d = src[sel].long(), dst[sel].long()
        if isinstance(et, tuple):
            cet = et
        else:
            if sel.numel() == 0:
                raise DGLError(f"Edge type {et!r} has no edges; pass canonical etypes to name its node types.")
            cet = (ntypes[int(ntype_of[s[0]])], et, ntypes[int(ntype_of[d[0]])])
        rels[cet] = Relation(counts[cet[0]], counts[cet[2]], local[s].to(G.idtype), local[d].to(G.idtype))
    return DGLGraph(rels, counts, idtype=G.idtype)


def _method(func):
    def method(self, *args, **kwargs):
        return func(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = func.__name__
    method.__doc__ = func.__doc__
    return method


def clone(g: DGLGraph) -> DGLGraph:
    """A new graph over the same structure whose feature dicts are copies (the tensors shared), as
    ``DGLGraph.clone``: writing a feature to the clone leaves ``g`` as it was."""
    _plain(g, "clone")
    out = _new_graph(g, dict(g._rels), _copied_nodes(g), {cet: _edge_copy(g, cet, True) for cet in g._rels})
    out._batch_num_nodes, out._batch_num_edges = g._batch_num_nodes, g._batch_num_edges  # a batch's clone is one
    return out


# DGL offers these as graph methods too (``g.subgraph(nodes)``, ``g.add_self_loop()``, ...)
DGLGraph.subgraph = _method(node_subgraph)
DGLGraph.edge_subgraph = _method(edge_subgraph)
for _func in (add_self_loop, remove_self_loop, add_reverse_edges, to_simple, reverse, clone):
    setattr(DGLGraph, _func.__name__, _method(_func))
# g.remove_edges / add_edges / add_nodes / remove_nodes edit g itself, as DGL's do: bgl/dgl/mutation.py


def norm_by_dst(g: DGLGraph, etype=None) -> torch.Tensor:
    """Per edge of ``etype``, one over its destination's in-degree (within that edge type): float32 [E],
    as ``dgl.norm_by_dst`` (R-GCN's edge norm).  One scatter-count and one gather."""
    _, dst = g.edges(etype=etype)
    dst = dst.long()
    counts = torch.bincount(dst, minlength=int(dst.max()) + 1 if dst.numel() else 0)
    return 1.0 / counts[dst].to(torch.float32)


class AddSelfLoop:
    """DGL's ``AddSelfLoop`` transform (``dgl.AddSelfLoop``, ``dgl.transforms.AddSelfLoop``): on every edge
    type whose source and destination node types agree, drop the self-loops already there (unless
    ``allow_duplicate``) and add one per node (:func:`add_self_loop`).  Passed as ``transform=`` to a
    dataset, as DGL's GCN and GAT examples do.

    Parameters
    ----------
    allow_duplicate : keep existing self-loops (a node may then have two)
    new_etypes : DGL's extra ``(nt, "self", nt)`` edge types; not provided (ValueError)
    edge_feat_names, fill_data : as :func:`add_self_loop`
    """

    def __init__(self, allow_duplicate=False, new_etypes=False, edge_feat_names=None, fill_data=1.0):
        if new_etypes:
            raise ValueError("AddSelfLoop(new_etypes=True) is not provided by bgl.dgl; "
                             "add the self-loop edge types with bgl.dgl.heterograph")
        self.allow_duplicate, self.new_etypes = bool(allow_duplicate), False
        self.edge_feat_names, self.fill_data = edge_feat_names, fill_data

    def __call__(self, g: DGLGraph) -> DGLGraph:
        for cet in g.canonical_etypes:
            if cet[0] != cet[2]:
                continue
            if not self.allow_duplicate:
                g = remove_self_loop(g, etype=cet)
            g = add_self_loop(g, edge_feat_names=self.edge_feat_names, fill_data=self.fill_data, etype=cet)
        return g

    def __repr__(self) -> str:
        return "AddSelfLoop()"


def with_remade_frames(g: DGLGraph, remake) -> DGLGraph:
    """``g``'s structure with each of its frames replaced by ``remake(frame)``, once per distinct frame (a
    graph's node frame serves both its src and dst views: the copy does too)."""
    copies: dict = {}

    def own(frames: dict) -> dict:
        out = {}
        for key, frame in frames.items():
            if id(frame) not in copies:
                copies[id(frame)] = remake(frame)
            out[key] = copies[id(frame)]
        return out

    return g._rebuild(dict(g._rels), own(g._src_frames), own(g._dst_frames), own(g._edge_frames))


def _cast_features(g: DGLGraph, dtype: torch.dtype) -> DGLGraph:
    """``g`` with every floating-point node and edge feature cast to ``dtype`` (others shared), as DGL's ``to_*``."""

    def cast(frame: Frame) -> Frame:
        copy = Frame(frame.num_rows, frame.kind)
        for name, value in frame.items():
            copy[name] = value.to(dtype) if value.is_floating_point() else value
        return copy

    return with_remade_frames(g, cast)


def to_float(g: DGLGraph) -> DGLGraph:
    """``g`` with float32 features (DGL's ``dgl.to_float``)."""
    return _cast_features(g, torch.float32)


def to_double(g: DGLGraph) -> DGLGraph:
    """``g`` with float64 features (DGL's ``dgl.to_double``)."""
    return _cast_features(g, torch.float64)


def to_half(g: DGLGraph) -> DGLGraph:
    """``g`` with float16 features (DGL's ``dgl.to_half``)."""
    return _cast_features(g, torch.float16)
