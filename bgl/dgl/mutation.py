"""DGL's graph edits: ``g.add_nodes`` / ``g.add_edges`` / ``g.remove_edges`` / ``g.remove_nodes`` change
the graph itself and return None, as DGLGraph's methods do; ``dgl.add_nodes(g, ...)`` and the other
module functions edit a clone and return it, leaving ``g`` as it was.

A script that calls ``g.remove_edges(eids)`` and goes on with ``g`` expects the edges gone: an edit
that returned a new graph instead would leave them there without a word.  Each edit builds the
graph's new relations and frames (a concatenation, or a keep-mask and a gather over the edge
arrays: no Python loop over nodes or edges) and then the graph takes them in place of its own.
New nodes and edges get zeros in every existing feature (DGL's default initializer); a feature
that only ``data`` names gets zeros for the rows that were there.
"""
from __future__ import annotations

import torch

from bgl.dgl.base import DGLError
from bgl.dgl.batching import batch_after_removal
from bgl.dgl.frames import Frame
from bgl.dgl.graph_queries import check_node_ids
from bgl.dgl.heterograph import DGLGraph
from bgl.dgl.relation import Relation
from bgl.dgl.transforms import _plain, clone, node_subgraph, remove_edges as _without_edges


def _take_over(g: DGLGraph, new: DGLGraph) -> None:
    """``g`` becomes ``new`` (structure, counts, frames) and stays the same object."""
    g.__dict__.clear()
    g.__dict__.update(new.__dict__)


def _grown(frame: Frame, num: int, data: dict | None, kind: str) -> Frame:
    """``frame`` with ``num`` rows appended: ``data[key]`` where given, zeros elsewhere."""
    data = dict(data or {})
    for key, value in data.items():
        if not isinstance(value, torch.Tensor) or value.dim() == 0 or value.shape[0] != num:
            got = type(value).__name__ if not isinstance(value, torch.Tensor) else tuple(value.shape)
            raise DGLError(f"Expect number of features to match number of {kind} (len(u)). "
                           f"Got {got} for {key!r} and {num} instead.")
    out = Frame(frame.num_rows + num, frame.kind)
    for key in list(frame.keys()) + [k for k in data if k not in frame]:
        old = frame[key] if key in frame else None
        new = data.get(key)
        like = old if old is not None else new
        if old is None:
            old = torch.zeros((frame.num_rows, *like.shape[1:]), dtype=like.dtype, device=like.device)
        if new is None:
            new = torch.zeros((num, *like.shape[1:]), dtype=like.dtype, device=like.device)
        out[key] = torch.cat([old, new.to(device=old.device, dtype=old.dtype)])
    return out


def _ids(values, g: DGLGraph, what: str) -> torch.Tensor:
    ids = torch.as_tensor(values, device=g.device)
    if ids.dtype == torch.bool or ids.is_floating_point():
        raise DGLError(f"{what} must be integer node ids, got {ids.dtype}")
    return ids.view(-1).to(g.idtype)


def add_nodes_in_place(g: DGLGraph, num: int, data: dict | None = None, ntype=None) -> None:
    """``num`` new nodes of ``ntype`` (ids from the current count on), ``data`` their features."""
    _plain(g, "add_nodes")
    num = int(num)
    if num < 0:
        raise DGLError(f"Expect a non-negative number of nodes to add, got {num}.")
    nt = g.ntypes[g.get_ntype_id(ntype)]
    counts = {t: g.num_nodes(t) for t in g.ntypes}
    counts[nt] += num
    rels = {cet: Relation(counts[cet[0]], counts[cet[2]], *rel.coo()) for cet, rel in g._rels.items()}
    frames = dict(g._node_frames())
    frames[nt] = _grown(frames[nt], num, data, "nodes")
    _take_over(g, DGLGraph(rels, counts, idtype=g.idtype, src_frames=frames, edge_frames=dict(g._edge_frames)))


def add_edges_in_place(g: DGLGraph, u, v, data: dict | None = None, etype=None) -> None:
    """Edges ``u[i] -> v[i]`` of ``etype`` appended (ids from the current count on); one of ``u`` / ``v``
    of length 1 is repeated; end nodes past the current counts are added first, as DGL adds them."""
    _plain(g, "add_edges")
    cet = g.to_canonical_etype(etype)
    u, v = _ids(u, g, "u"), _ids(v, g, "v")
    if u.shape[0] == 1 and v.shape[0] > 1:
        u = u.expand(v.shape[0])
    elif v.shape[0] == 1 and u.shape[0] > 1:
        v = v.expand(u.shape[0])
    if u.shape[0] != v.shape[0]:
        raise DGLError(f"Expect the number of source nodes ({u.shape[0]}) to equal the number of "
                       f"destination nodes ({v.shape[0]}).")
    if u.numel() and int(torch.minimum(u.min(), v.min())) < 0:
        raise DGLError("Expect all node IDs to be non-negative.")
    new_edge_frame = _grown(g._edge_frames[cet], int(u.shape[0]), data, "edges")  # checked before any change
    for nt, ids in ((cet[0], u), (cet[2], v)):
        needed = int(ids.max()) + 1 - g.num_nodes(nt) if ids.numel() else 0
        if needed > 0:
            add_nodes_in_place(g, needed, ntype=nt)
    rel = g._rels[cet]
    src, dst = rel.coo()
    rels = dict(g._rels)
    rels[cet] = Relation(rel.num_src, rel.num_dst, torch.cat([src, u.to(src.dtype)]), torch.cat([dst, v.to(dst.dtype)]))
    edge_frames = dict(g._edge_frames)
    edge_frames[cet] = new_edge_frame
    counts = {t: g.num_nodes(t) for t in g.ntypes}
    _take_over(g, DGLGraph(rels, counts, idtype=g.idtype, src_frames=dict(g._node_frames()), edge_frames=edge_frames))


def remove_edges_in_place(g: DGLGraph, eids, etype=None, store_ids=False) -> None:
    """The edges ``eids`` of ``etype`` gone; the others keep their order (ids renumbered from 0) and features."""
    _plain(g, "remove_edges")
    ids = torch.as_tensor(eids, device=g.device).view(-1)
    if ids.numel() == 0:
        return
    cet = g.to_canonical_etype(etype)  # DGL's error first where the edge type is ambiguous
    check_node_ids(ids.long(), g.num_edges(cet), "edge")
    _take_over(g, _without_edges(g, ids, etype=cet, store_ids=store_ids))


def remove_nodes_in_place(g: DGLGraph, nids, ntype=None, store_ids=False) -> None:
    """The nodes ``nids`` of ``ntype`` gone with every edge at them; the others keep their order (ids
    renumbered from 0), as DGL's node subgraph of the nodes left."""
    _plain(g, "remove_nodes")
    nt = g.ntypes[g.get_ntype_id(ntype)]
    ids = torch.as_tensor(nids, device=g.device).view(-1)
    if ids.numel() == 0:
        return
    check_node_ids(ids.long(), g.num_nodes(nt))
    keep = torch.ones(g.num_nodes(nt), dtype=torch.bool, device=g.device)
    keep[ids.long()] = False
    nodes = {t: keep if t == nt else torch.ones(g.num_nodes(t), dtype=torch.bool, device=g.device) for t in g.ntypes}
    edge_keep = {}  # a batch stays one (as DGL's remove_nodes keeps it): each graph less what it lost
    for c, rel in g._rels.items():
        if nt in (c[0], c[2]):
            src, dst = (t.long() for t in rel.coo())
            edge_keep[c] = nodes[c[0]][src] & nodes[c[2]][dst]
    _take_over(g, batch_after_removal(g, node_subgraph(g, nodes, store_ids=store_ids), {nt: keep}, edge_keep))


def add_nodes(g: DGLGraph, num: int, data: dict | None = None, ntype=None) -> DGLGraph:
    """A copy of ``g`` with ``num`` more nodes of ``ntype`` (``dgl.add_nodes``); ``g`` is unchanged."""
    out = clone(g)
    add_nodes_in_place(out, num, data, ntype)
    return out


def add_edges(g: DGLGraph, u, v, data: dict | None = None, etype=None) -> DGLGraph:
    """A copy of ``g`` with the edges ``u -> v`` added (``dgl.add_edges``); ``g`` is unchanged."""
    out = clone(g)
    add_edges_in_place(out, u, v, data, etype)
    return out


def remove_nodes(g: DGLGraph, nids, ntype=None, store_ids=False) -> DGLGraph:
    """A copy of ``g`` without the nodes ``nids`` (``dgl.remove_nodes``); ``g`` is unchanged."""
    out = clone(g)
    remove_nodes_in_place(out, nids, ntype, store_ids)
    return out


DGLGraph.add_nodes = add_nodes_in_place
DGLGraph.add_edges = add_edges_in_place
DGLGraph.remove_edges = remove_edges_in_place
DGLGraph.remove_nodes = remove_nodes_in_place
