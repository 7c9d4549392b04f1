"""Graphs built from other graphs or drawn at random, as DGL 2.1 builds them: ``dgl.merge``,
``dgl.adj_product_graph``, ``dgl.adj_sum_graph``, ``dgl.rand_bipartite``.

All vectorised over edges.  The adjacency products and sums are :class:`bgl.dgl.derived_graphs._Counts` over the
edge weights (differentiable in them): a product expands every pair of entries that meet (~40 B a pair), a sum
costs one ``unique`` over the stacked entries.  Edge order of both: row-major, columns ascending within a row
(DGL's follows its CSR kernels' hash maps: the same entries, possibly another order within a row).
"""
from __future__ import annotations

import torch

from bgl.dgl.base import DGLError
from bgl.dgl.convert import distinct_pairs, heterograph
from bgl.dgl.derived_graphs import _Counts
from bgl.dgl.heterograph import DGLGraph


def merge(graphs) -> DGLGraph:
    """One graph with every edge of ``graphs`` (DGL's ``dgl.merge``): the node and edge types of ``graphs[0]``,
    per type as many nodes as the largest graph has; edges concatenated graph after graph (each in edge-id order)
    with their features (the fields of ``graphs[0]``, which every graph must have); node features written
    graph after graph into the rows ``0..n-1`` of each (a later graph's value wins, rows no graph gave are 0).

    Raises
    ------
    DGLError : an empty list
    """
    if len(graphs) == 0:
        raise DGLError("The input list of graphs cannot be empty.")
    ref = graphs[0]
    data, edata = {}, {}
    for cet in ref.canonical_etypes:
        ends = [g.edges(etype=cet, order="eid") for g in graphs]
        data[cet] = (torch.cat([s.to(ref.idtype) for s, _ in ends]).to(ref.device),
                     torch.cat([d.to(ref.idtype) for _, d in ends]).to(ref.device))
        edata[cet] = {k: torch.cat([g.edges[cet].data[k] for g in graphs]) for k in ref.edges[cet].data.keys()}
    num_nodes = {nt: max(g.num_nodes(nt) for g in graphs) for nt in ref.ntypes}
    out = heterograph(data, num_nodes, idtype=ref.idtype, device=ref.device)
    for cet, fields in edata.items():
        for k, v in fields.items():
            out.edges[cet].data[k] = v
    for nt in ref.ntypes:
        fields = {}
        for g in graphs:
            for k, v in g.nodes[nt].data.items():
                if k not in fields:
                    fields[k] = v.new_zeros((num_nodes[nt],) + tuple(v.shape[1:]))
                fields[k] = torch.cat([v.to(fields[k].dtype), fields[k][v.shape[0]:]])
        for k, v in fields.items():
            out.nodes[nt].data[k] = v
    return out


def rand_bipartite(utype, etype, vtype, num_src_nodes, num_dst_nodes, num_edges, idtype=torch.int64,
                   device=torch.device("cpu")) -> DGLGraph:
    """``num_edges`` distinct edges ``utype -> vtype`` drawn uniformly among the ``num_src_nodes x num_dst_nodes``
    pairs (DGL's ``dgl.rand_bipartite``; torch's generator, so ``torch.manual_seed`` repeats it, not DGL's).

    Raises
    ------
    DGLError : more edges than pairs
    """
    chosen = distinct_pairs(int(num_src_nodes) * int(num_dst_nodes), int(num_edges))
    rows, cols = (chosen // num_dst_nodes).to(idtype), (chosen % num_dst_nodes).to(idtype)
    return heterograph({(utype, etype, vtype): (rows, cols)}, {utype: num_src_nodes, vtype: num_dst_nodes},
                       idtype=idtype, device=device)


def _weighted(g: DGLGraph, weight_name: str) -> _Counts:
    cet = g.canonical_etypes[0]
    src, dst = (t.long() for t in g.edges(order="eid"))
    return _Counts(src, dst, g.edata[weight_name], (g.num_nodes(cet[0]), g.num_nodes(cet[2])))


def _from_counts(c: _Counts, cet: tuple, num_nodes: dict, weight_name: str, like: DGLGraph) -> DGLGraph:
    out = heterograph({cet: (c.row.to(like.idtype), c.col.to(like.idtype))}, num_nodes, idtype=like.idtype,
                      device=like.device)
    out.edata[weight_name] = c.count
    return out


def adj_product_graph(A: DGLGraph, B: DGLGraph, weight_name: str, etype="_E") -> DGLGraph:
    """The graph of the product of ``A``'s and ``B``'s weighted adjacencies (DGL's ``dgl.adj_product_graph``):
    an edge ``u -> w`` of weight ``sum over v of A[u, v] * B[v, w]`` for each pair with a path ``u -> v -> w``
    (parallel edges add up); node types ``A``'s source and ``B``'s destination type (one when they are equal),
    edge type ``etype``.  Gradients flow to both weights."""
    srctype, dsttype = A.canonical_etypes[0][0], B.canonical_etypes[0][2]
    product = _weighted(A, weight_name) @ _weighted(B, weight_name)
    num_nodes = {srctype: A.num_nodes(srctype), dsttype: B.num_nodes(dsttype)}
    return _from_counts(product, (srctype, etype, dsttype), num_nodes, weight_name, A)


def adj_sum_graph(graphs, weight_name: str) -> DGLGraph:
    """The graph of the sum of the weighted adjacencies of ``graphs`` (DGL's ``dgl.adj_sum_graph``; one
    relation, the same node counts in each): an edge per (u, v) present in any graph, its weights summed.

    Raises
    ------
    ValueError : an empty list (DGL's)
    """
    if len(graphs) == 0:
        raise ValueError("The list of graphs must not be empty.")
    parts = [_weighted(g, weight_name) for g in graphs]
    ref = graphs[0]
    total = _Counts(torch.cat([p.row for p in parts]), torch.cat([p.col for p in parts]),
                    torch.cat([p.count for p in parts]), parts[0].shape)
    cet = ref.canonical_etypes[0]
    return _from_counts(total, cet, {nt: ref.num_nodes(nt) for nt in ref.ntypes}, weight_name, ref)
