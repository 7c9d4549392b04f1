"""Picking parts of a graph as DGL does: node or edge ids by a predicate (``g.filter_nodes`` /
``g.filter_edges``), the relations of some edge types or among some node types
(``dgl.edge_type_subgraph`` / ``dgl.node_type_subgraph`` and their methods), every in- or out-edge of
some nodes (``dgl.in_subgraph`` / ``dgl.out_subgraph``: :func:`bgl.dgl.sampling.sample_neighbors` with
fanout -1, then :func:`bgl.dgl.compact_graphs` with ``relabel_nodes``), and ``g.local_var()``.

The type subgraphs share the graph's relations and its frames (no copy: a feature written to one
shows in the other, as DGL's share theirs); ``local_var`` shares the relations and the tensors but
not the feature dicts, so a feature set on it leaves the graph as it was (``local_scope`` without the
``with``, DGL's older idiom).  A predicate runs once over all the nodes or edges asked about.
"""
from __future__ import annotations

import torch

from bgl.dgl.base import DGLError, is_all
from bgl.dgl.frames import Frame
from bgl.dgl.graph_queries import check_node_ids
from bgl.dgl.heterograph import DGLGraph
from bgl.dgl.transforms import _method, _plain, with_remade_frames
from bgl.dgl.udf import EdgeBatch, NodeBatch, _Rows


def _mask(result, count: int, what: str) -> torch.Tensor:
    if not isinstance(result, torch.Tensor) or result.dim() != 1 or result.shape[0] != count:
        got = tuple(result.shape) if isinstance(result, torch.Tensor) else type(result).__name__
        raise DGLError(f"The predicate of {what} must return a 1-D tensor of {count} values, got {got}.")
    return result.to(torch.bool)


def filter_nodes(g: DGLGraph, predicate, nodes=None, ntype=None) -> torch.Tensor:
    """Ids of the nodes of ``ntype`` (``nodes``, all by default) for which ``predicate(NodeBatch)`` is true."""
    nt = g.ntypes[g.get_ntype_id(ntype)]
    frame = g._node_frames()[nt]
    if is_all(nodes):
        ids = torch.arange(frame.num_rows, device=g.device)
    else:
        ids = torch.as_tensor(nodes, device=g.device).long().view(-1)
        check_node_ids(ids, frame.num_rows)
    batch = NodeBatch(g, ids, nt, _Rows(frame, None if is_all(nodes) else ids))
    return ids[_mask(predicate(batch), int(ids.shape[0]), "filter_nodes")].to(g.idtype)


def filter_edges(g: DGLGraph, predicate, edges=None, etype=None) -> torch.Tensor:
    """Ids of the edges of ``etype`` (``edges``, all by default) for which ``predicate(EdgeBatch)`` is true."""
    cet = g.to_canonical_etype(etype)
    rel = g._rels[cet]
    src, dst = rel.coo()
    if is_all(edges):
        ids, picked = torch.arange(rel.num_edges, device=src.device), None  # the batch reads whole columns
    else:
        ids = picked = torch.as_tensor(edges, device=src.device).long().view(-1)
        check_node_ids(ids, rel.num_edges, "edge")
        src, dst = src[ids], dst[ids]
    batch = EdgeBatch(g, picked, cet, src.long(), dst.long(), g._src_frames[cet[0]], g._dst_frames[cet[2]],
                      g._edge_frames[cet])
    return ids[_mask(predicate(batch), int(ids.shape[0]), "filter_edges")].to(g.idtype)


def edge_type_subgraph(graph: DGLGraph, etypes, output_device=None) -> DGLGraph:
    """The graph of the relations ``etypes`` (names or canonical triples) and the node types they join;
    structure and frames shared with ``graph``.  Its relations are listed sorted, as every bgl.dgl graph's
    (DGL lists them in the order asked for)."""
    _plain(graph, "edge_type_subgraph")
    cets = [graph.to_canonical_etype(e) for e in etypes]
    if not cets:
        raise DGLError("edge_type_subgraph needs at least one edge type.")
    ntypes = sorted({t for c in cets for t in (c[0], c[2])})
    frames = graph._node_frames()
    out = DGLGraph({c: graph._rels[c] for c in cets}, {nt: graph.num_nodes(nt) for nt in ntypes},
                   idtype=graph.idtype, src_frames={nt: frames[nt] for nt in ntypes},
                   edge_frames={c: graph._edge_frames[c] for c in cets})
    return out if output_device is None else out.to(output_device)


def node_type_subgraph(graph: DGLGraph, ntypes, output_device=None) -> DGLGraph:
    """The graph of every relation between node types ``ntypes`` (:func:`edge_type_subgraph` of them)."""
    wanted = {graph.ntypes[graph.get_ntype_id(nt)] for nt in ntypes}
    cets = [c for c in graph.canonical_etypes if c[0] in wanted and c[2] in wanted]
    if not cets:
        raise DGLError("There are no edges among nodes of the specified types.")
    return edge_type_subgraph(graph, cets, output_device)


def local_var(g: DGLGraph) -> DGLGraph:
    """The graph with feature dicts of its own (the tensors and the structure shared): features set on
    it stay off ``g``; in-place edits of a shared tensor show in both, as with DGL's ``local_var``."""
    return with_remade_frames(g, Frame.shared_copy)


def in_subgraph(graph: DGLGraph, nodes, *, relabel_nodes: bool = False, store_ids: bool = True,
                output_device=None) -> DGLGraph:
    """Every in-edge of ``nodes`` (ids, or ``{ntype: ids}``), grouped by node in the given order, each node's in
    edge-id order; every node of the graph kept, or with ``relabel_nodes`` only the edges' ends (``ndata[NID]``,
    sources before destinations in order of first appearance, as DGL's); ``edata[EID]`` with ``store_ids``."""
    return _edges_of(graph, nodes, "in", relabel_nodes, store_ids, output_device)


def out_subgraph(graph: DGLGraph, nodes, *, relabel_nodes: bool = False, store_ids: bool = True,
                 output_device=None) -> DGLGraph:
    """:func:`in_subgraph` of out-edges."""
    return _edges_of(graph, nodes, "out", relabel_nodes, store_ids, output_device)


def _edges_of(graph: DGLGraph, nodes, edge_dir: str, relabel_nodes: bool, store_ids: bool, output_device):
    import importlib

    from bgl.dgl.base import EID, NID
    from bgl.dgl.to_block import compact_graphs

    _plain(graph, f"{edge_dir}_subgraph")
    # the sampler loads on first use (importing bgl.dgl stays free of it), as dgl.sampling does
    sampling = importlib.import_module("bgl.dgl.sampling")
    sub = sampling.sample_neighbors(graph, nodes, -1, edge_dir=edge_dir)
    if relabel_nodes:
        sub = compact_graphs(sub)
    if not store_ids:
        for frame in list(sub._edge_frames.values()) + (list(sub._node_frames().values()) if relabel_nodes else []):
            for key in (EID, NID):
                if key in frame:
                    del frame[key]
    return sub if output_device is None else sub.to(output_device)


DGLGraph.in_subgraph = _method(in_subgraph)
DGLGraph.out_subgraph = _method(out_subgraph)
DGLGraph.filter_nodes = filter_nodes
DGLGraph.filter_edges = filter_edges
DGLGraph.edge_type_subgraph = _method(edge_type_subgraph)
DGLGraph.node_type_subgraph = _method(node_type_subgraph)
DGLGraph.local_var = local_var
