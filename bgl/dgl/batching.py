"""Batches of small graphs, as DGL's graph-classification scripts use them: ``dgl.batch`` / ``dgl.unbatch`` /
``dgl.slice_batch`` and the readouts over each graph of a batch (``sum_nodes``, ``mean_nodes``, ``max_nodes``, the
``_edges`` ones, ``readout_nodes`` / ``readout_edges``, ``broadcast_nodes`` / ``broadcast_edges``, ``softmax_nodes`` /
``softmax_edges``).

A batch is one graph whose node ids run graph after graph (each graph's ids offset by the nodes before
it), features concatenated, and ``batch_num_nodes`` / ``batch_num_edges`` per type saying where each
graph ends.  Readouts are segment reductions over those counts (one ``segment_reduce`` per call);
nothing loops over the graphs in Python but the concatenation of their arrays.  As in DGL, removing
edges or nodes (``remove_edges``, ``remove_self_loop``, ``remove_nodes``) keeps the batch, each graph's
counts less what it lost (:func:`kept_per_graph`); the transforms that add edges or nodes and
``to_simple`` / ``reverse`` / ``add_reverse_edges`` give an unbatched graph, as DGL's do (DGL's advice:
``set_batch_num_nodes`` / ``set_batch_num_edges`` on the result).  Cost: two int64 counts per graph and type.
"""
from __future__ import annotations

from typing import Optional

import torch

from bgl.dgl.base import ALL, EID, NID, DGLError, is_all
from bgl.dgl.frames import Frame
from bgl.dgl.heterograph import DGLGraph
from bgl.dgl.ops.segment import segment_reduce, segment_softmax
from bgl.dgl.relation import Relation


def _check_keys(frames: list, keys, where: str) -> list:
    """The feature names to join: ``keys``, or (ALL) every name, which every graph must have alike."""
    if not frames:
        return []
    schemes = [{k: (tuple(v.shape[1:]), v.dtype) for k, v in f.items()} for f in frames]
    if is_all(keys):
        if any(s != schemes[0] for s in schemes[1:]):
            raise DGLError(f"Expect all graphs to have the same schema on {where}, but got {schemes[0]} and "
                           f"{next(s for s in schemes[1:] if s != schemes[0])}.")
        return list(schemes[0])
    for key in keys:
        if any(key not in s or s[key] != schemes[0].get(key) for s in schemes):
            raise DGLError(f"Expect all graphs to have feature {key!r} of the same shape and dtype on {where}.")
    return list(keys)


def batch(graphs, ndata=ALL, edata=ALL) -> DGLGraph:
    """One graph of ``graphs`` side by side (DGL's ``dgl.batch``): node and edge ids offset graph after graph,
    the features named by ``ndata`` / ``edata`` (all by default, None for none) concatenated."""
    graphs = list(graphs)
    if not graphs:
        raise DGLError("The input list of graphs cannot be empty.")
    if any(g.is_block for g in graphs):
        raise DGLError("Batching a MFG is not supported.")
    first = graphs[0]
    if any(g.canonical_etypes != first.canonical_etypes or g.ntypes != first.ntypes for g in graphs[1:]):
        raise DGLError("Expect all graphs to have the same node and edge types to batch them.")
    counts = {nt: torch.tensor([g.num_nodes(nt) for g in graphs]) for nt in first.ntypes}
    rels = {}
    for c in first.canonical_etypes:
        srcs, dsts, before = [], [], {c[0]: 0, c[2]: 0}
        for g in graphs:
            s, d = g._rels[c].coo()
            srcs.append(s.to(first.idtype) + before[c[0]])
            dsts.append(d.to(first.idtype) + before[c[2]])
            before[c[0]] += g.num_nodes(c[0])
            if c[2] != c[0]:
                before[c[2]] += g.num_nodes(c[2])
        rels[c] = Relation(int(counts[c[0]].sum()), int(counts[c[2]].sum()), torch.cat(srcs), torch.cat(dsts))
    node_frames = {nt: _joined([g._node_frames()[nt] for g in graphs], int(counts[nt].sum()), "nodes", ndata)
                   for nt in first.ntypes}
    edge_frames = {c: _joined([g._edge_frames[c] for g in graphs], rels[c].num_edges, "edges", edata)
                   for c in first.canonical_etypes}
    out = DGLGraph(rels, {nt: int(n.sum()) for nt, n in counts.items()}, idtype=first.idtype,
                   src_frames=node_frames, edge_frames=edge_frames)
    out._batch_num_nodes = {nt: torch.cat([g.batch_num_nodes(nt) for g in graphs]) for nt in first.ntypes}
    out._batch_num_edges = {c: torch.cat([g.batch_num_edges(c) for g in graphs]) for c in first.canonical_etypes}
    return out


def _joined(frames: list, rows: int, kind: str, keys) -> Frame:
    """One frame of ``frames`` one after the other (graphs with no rows skipped, as DGL skips them)."""
    out = Frame(rows, kind)
    if keys is None:
        return out
    live = [f for f in frames if f.num_rows > 0] or frames
    for key in _check_keys(live, keys, f"{kind} data"):
        out[key] = torch.cat([f[key] for f in live])
    return out


def unbatch(g: DGLGraph, node_split=None, edge_split=None) -> list:
    """The graphs of a batch (DGL's ``dgl.unbatch``), each with its own ids and its rows of every feature;
    ``node_split`` / ``edge_split`` (per type, like ``batch_num_nodes``) split a graph that was not batched."""
    nodes = _split_counts(g, node_split, g.ntypes, g.batch_num_nodes)
    edges = _split_counts(g, edge_split, g.canonical_etypes, g.batch_num_edges)
    size = int(next(iter(nodes.values())).shape[0])
    # counts and starts as Python lists once: a tensor element read per graph and type cost ~1 us each
    node_n = {nt: n.tolist() for nt, n in nodes.items()}
    node_lo = {nt: (torch.cumsum(n, 0) - n).tolist() for nt, n in nodes.items()}
    edge_n = {c: n.tolist() for c, n in edges.items()}
    edge_lo = {c: (torch.cumsum(n, 0) - n).tolist() for c, n in edges.items()}
    return [_graph_at(g, i, node_n, node_lo, edge_n, edge_lo) for i in range(size)]


def _graph_at(g: DGLGraph, i: int, node_n: dict, node_lo: dict, edge_n: dict, edge_lo: dict,
              store_ids: bool = False) -> DGLGraph:
    """Graph ``i`` of a batch whose graph ``i`` has ``node_n[t][i]`` nodes of type ``t`` from ``node_lo[t][i]`` on
    (``edge_n`` / ``edge_lo`` per canonical edge type): its relations, and its rows of every field (views)."""
    rels, edge_frames = {}, {}
    for c, rel in g._rels.items():
        lo, n = edge_lo[c][i], edge_n[c][i]
        s, d = (t[lo:lo + n] for t in rel.coo())
        rels[c] = Relation(node_n[c[0]][i], node_n[c[2]][i], s - node_lo[c[0]][i], d - node_lo[c[2]][i])
        edge_frames[c] = Frame(n, "edges", {k: v[lo:lo + n] for k, v in g._edge_frames[c].items()})
        if store_ids:
            edge_frames[c][EID] = torch.arange(lo, lo + n, dtype=g.idtype, device=g.device)
    node_frames = {}
    for nt, f in g._node_frames().items():
        lo, n = node_lo[nt][i], node_n[nt][i]
        node_frames[nt] = Frame(n, "nodes", {k: v[lo:lo + n] for k, v in f.items()})
        if store_ids:
            node_frames[nt][NID] = torch.arange(lo, lo + n, dtype=g.idtype, device=g.device)
    return DGLGraph(rels, {nt: n[i] for nt, n in node_n.items()}, idtype=g.idtype, src_frames=node_frames,
                    edge_frames=edge_frames)


def slice_batch(g: DGLGraph, gid: int, store_ids: bool = False) -> DGLGraph:
    """Graph ``gid`` of the batch ``g`` (DGL's ``dgl.slice_batch``), with its rows of every feature (views of the
    batch's); ``store_ids`` puts its ids in the batch into ``ndata[dgl.NID]`` / ``edata[dgl.EID]``.  As DGL's:
    IndexError past the batch, RuntimeError for a negative ``gid``.  Cost: O(its edges)."""
    gid = int(gid)
    if gid < 0:
        raise RuntimeError(f"gid must be >= 0 (a graph's position in the batch), got {gid}")

    def at(counts: torch.Tensor) -> tuple[dict, dict]:
        counts = counts.long().tolist()
        return {gid: counts[gid]}, {gid: sum(counts[:gid])}

    node_n, node_lo = {}, {}
    for nt in g.ntypes:
        node_n[nt], node_lo[nt] = at(g.batch_num_nodes(nt))
    edge_n, edge_lo = {}, {}
    for c in g.canonical_etypes:
        edge_n[c], edge_lo[c] = at(g.batch_num_edges(c))
    return _graph_at(g, gid, node_n, node_lo, edge_n, edge_lo, store_ids)


def _split_counts(g: DGLGraph, split, types, counts_of) -> dict:
    """{type: rows per graph}: ``split`` (a tensor for a one-type graph, else per type), or the batch's own."""
    if split is None:
        return {t: counts_of(t).long() for t in types}
    if not isinstance(split, dict):
        if len(types) != 1:
            raise DGLError("node_split / edge_split of a graph with several types must be a dict per type.")
        split = {types[0]: split}
    to_key = (lambda t: t) if types == g.ntypes else g.to_canonical_etype
    return {to_key(t): torch.as_tensor(n).long() for t, n in split.items()}


def kept_per_graph(counts: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """How many of each graph's ``counts`` rows (consecutive, graph after graph) ``keep`` (bool) keeps."""
    graph_of = torch.repeat_interleave(torch.arange(counts.shape[0], device=keep.device), counts.to(keep.device))
    return torch.zeros(counts.shape[0], dtype=torch.int64, device=keep.device).index_add_(0, graph_of, keep.long())


def batch_after_removal(old: DGLGraph, new: DGLGraph, node_keep: dict, edge_keep: dict) -> DGLGraph:
    """``new``, made from ``old`` by removing the rows that ``node_keep`` ({ntype: bool}) / ``edge_keep``
    ({etype: bool over old edge ids}) do not keep, marked as ``old``'s batch less those rows."""
    if old._batch_num_nodes is None:
        return new
    new._batch_num_nodes = {nt: kept_per_graph(n, node_keep[nt]) if nt in node_keep else n
                            for nt, n in old._batch_num_nodes.items()}
    new._batch_num_edges = {c: kept_per_graph(n, edge_keep[c]) if c in edge_keep else n
                            for c, n in old._batch_num_edges.items()}
    return new


# ----------------------------------------------------------------------------- readouts


def _node_values(graph: DGLGraph, feat: str, weight: Optional[str], ntype) -> tuple:
    nt = graph.ntypes[graph.get_ntype_id(ntype)]
    x = graph.nodes[nt].data[feat]
    if weight is not None:
        x = x * graph.nodes[nt].data[weight]
    return x, graph.batch_num_nodes(nt)


def _edge_values(graph: DGLGraph, feat: str, weight: Optional[str], etype) -> tuple:
    c = graph.to_canonical_etype(etype)
    x = graph.edges[c].data[feat]
    if weight is not None:
        x = x * graph.edges[c].data[weight]
    return x, graph.batch_num_edges(c)


def readout_nodes(graph: DGLGraph, feat: str, weight: Optional[str] = None, *, op: str = "sum", ntype=None):
    """``op`` (sum / mean / max / min) of each graph's ``ndata[feat]`` (times ``ndata[weight]``): [batch_size, *]."""
    x, counts = _node_values(graph, feat, weight, ntype)
    return segment_reduce(counts, x, reducer=op)


def readout_edges(graph: DGLGraph, feat: str, weight: Optional[str] = None, *, op: str = "sum", etype=None):
    """``op`` of each graph's ``edata[feat]`` (times ``edata[weight]``): [batch_size, *]."""
    x, counts = _edge_values(graph, feat, weight, etype)
    return segment_reduce(counts, x, reducer=op)


def _named_readout(op: str, of_nodes: bool):
    """DGL's ``<op>_nodes(graph, feat, weight=None, *, ntype=None)`` / ``<op>_edges(..., etype=None)``."""
    if of_nodes:
        def readout(graph, feat, weight=None, *, ntype=None):
            return readout_nodes(graph, feat, weight, op=op, ntype=ntype)
    else:
        def readout(graph, feat, weight=None, *, etype=None):
            return readout_edges(graph, feat, weight, op=op, etype=etype)
    what = "nodes" if of_nodes else "edges"
    readout.__name__ = readout.__qualname__ = f"{op}_{what}"
    readout.__doc__ = f"``{op}`` of each graph's {what}' ``feat`` (times ``weight``): [batch_size, *]."
    return readout


sum_nodes, mean_nodes, max_nodes = (_named_readout(op, True) for op in ("sum", "mean", "max"))
sum_edges, mean_edges, max_edges = (_named_readout(op, False) for op in ("sum", "mean", "max"))


def softmax_nodes(graph: DGLGraph, feat: str, *, ntype=None):
    """Softmax of ``ndata[feat]`` over each graph's nodes (the shape of the feature)."""
    x, counts = _node_values(graph, feat, None, ntype)
    return segment_softmax(counts, x)


def softmax_edges(graph: DGLGraph, feat: str, *, etype=None):
    """Softmax of ``edata[feat]`` over each graph's edges."""
    x, counts = _edge_values(graph, feat, None, etype)
    return segment_softmax(counts, x)


def broadcast_nodes(graph: DGLGraph, graph_feat: torch.Tensor, *, ntype=None) -> torch.Tensor:
    """Row ``i`` of ``graph_feat`` [batch_size, *] given to every node of graph ``i``: [num_nodes, *]."""
    counts = graph.batch_num_nodes(ntype).to(graph_feat.device)
    if graph_feat.shape[0] != counts.shape[0]:
        raise DGLError(f"graph_feat has {graph_feat.shape[0]} rows for a batch of {counts.shape[0]} graphs.")
    return torch.repeat_interleave(graph_feat, counts, dim=0)


def broadcast_edges(graph: DGLGraph, graph_feat: torch.Tensor, *, etype=None) -> torch.Tensor:
    """Row ``i`` of ``graph_feat`` given to every edge of graph ``i``: [num_edges, *]."""
    counts = graph.batch_num_edges(etype).to(graph_feat.device)
    if graph_feat.shape[0] != counts.shape[0]:
        raise DGLError(f"graph_feat has {graph_feat.shape[0]} rows for a batch of {counts.shape[0]} graphs.")
    return torch.repeat_interleave(graph_feat, counts, dim=0)
