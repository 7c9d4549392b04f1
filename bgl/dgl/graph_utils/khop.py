"""DGL's ``dgl.khop_in_subgraph`` / ``dgl.khop_out_subgraph``: the subgraph induced by the nodes within
``k`` hops of the seeds (against / along edge direction), and where the seeds land in it.

Each hop is one vectorised ``in_edges`` / ``out_edges`` call per relation plus a ``torch.unique``: O(E) a hop
at most, 8 B per neighbour found; the subgraph itself is :func:`bgl.dgl.node_subgraph`'s (nodes sorted by
id, as DGL's ``unique`` leaves them).
"""
from __future__ import annotations

from collections.abc import Mapping

import torch

from bgl.dgl.base import EID, DGLError
from bgl.dgl.heterograph import DGLGraph


def _seeds(graph: DGLGraph, nodes) -> tuple[dict, bool]:
    """``{ntype: int64 ids}`` of the seeds and whether they came as a dict; DGL's dtype and range checks."""
    if graph.is_block:
        raise DGLError("Extracting subgraph of a block graph is not allowed.")
    is_mapping = isinstance(nodes, Mapping)
    if not is_mapping:
        if len(graph.ntypes) != 1:
            raise DGLError("need a dict of node type and IDs for graph with multiple node types")
        nodes = {graph.ntypes[0]: nodes}
    out = {}
    for nt, ids in nodes.items():
        if isinstance(ids, torch.Tensor):
            if ids.dtype != graph.idtype:
                raise DGLError(f'Expect argument "nodes["{nt}"]" to have data type {graph.idtype}. '
                               f"But got {ids.dtype}.")
            ids = ids.view(-1)
        else:
            ids = torch.as_tensor([ids] if isinstance(ids, int) else list(ids), dtype=torch.int64)
        ids = ids.long().to(graph.device)
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= graph.num_nodes(nt)):
            raise DGLError(f"{nt} contains invalid node IDs")
        out[nt] = ids
    return out, is_mapping


def _khop(graph: DGLGraph, nodes, k: int, relabel_nodes: bool, store_ids: bool, output_device, incoming: bool):
    seeds, is_mapping = _seeds(graph, nodes)
    empty = torch.zeros(0, dtype=torch.int64, device=graph.device)
    hops, last = [seeds], seeds
    for _ in range(k):
        found = {nt: [] for nt in graph.ntypes}
        for cet in graph.canonical_etypes:
            near, far = (cet[2], cet[0]) if incoming else (cet[0], cet[2])
            at = last.get(near, empty)
            src, dst = graph.in_edges(at, etype=cet) if incoming else graph.out_edges(at, etype=cet)
            found[far].append((src if incoming else dst).long())
        last = {nt: torch.unique(torch.cat(f)) if f else empty for nt, f in found.items()}
        hops.append(last)
    picked, inverse = {}, {}
    for nt in graph.ntypes:
        picked[nt], inverse[nt] = torch.unique(torch.cat([h.get(nt, empty) for h in hops]), return_inverse=True)
    sub = _induced(graph, picked, relabel_nodes, store_ids)
    if output_device is not None:
        sub = sub.to(output_device)
    if not relabel_nodes:
        return sub
    where = {nt: inverse[nt][: seeds[nt].shape[0]] for nt in seeds}
    if output_device is not None:
        where = {nt: ids.to(output_device) for nt, ids in where.items()}
    return sub, (where if is_mapping else next(iter(where.values())))


def _induced(graph: DGLGraph, picked: dict, relabel_nodes: bool, store_ids: bool) -> DGLGraph:
    """``node_subgraph``; without relabelling (which it does not do) every node stays and only the edges
    between picked nodes remain, in edge-id order (DGL's result then: no ``NID``, ``EID`` when ``store_ids``)."""
    from bgl.dgl.transforms import edge_subgraph, node_subgraph

    if relabel_nodes:
        return node_subgraph(graph, picked, store_ids=store_ids)
    eids = {}
    for cet in graph.canonical_etypes:
        src, dst = graph.edges(etype=cet, order="eid")
        inside_src = torch.zeros(graph.num_nodes(cet[0]), dtype=torch.bool, device=graph.device)
        inside_dst = torch.zeros(graph.num_nodes(cet[2]), dtype=torch.bool, device=graph.device)
        inside_src[picked[cet[0]]] = True
        inside_dst[picked[cet[2]]] = True
        eids[cet] = (inside_src[src.long()] & inside_dst[dst.long()]).nonzero().view(-1)
    sub = edge_subgraph(graph, eids, relabel_nodes=False, store_ids=store_ids)
    if not store_ids:
        for cet in sub.canonical_etypes:
            sub.edges[cet].data.pop(EID, None)
    return sub


def khop_in_subgraph(graph: DGLGraph, nodes, k: int, *, relabel_nodes=True, store_ids=True, output_device=None):
    """The subgraph induced by the nodes with a path of at most ``k`` edges *to* a seed (DGL's
    ``dgl.khop_in_subgraph``).

    Parameters
    ----------
    graph : DGLGraph (not a block); nodes : int, ids or int tensor of ``graph.idtype``, or a dict per node type
    k : int, the number of hops; relabel_nodes, store_ids, output_device : as :func:`bgl.dgl.node_subgraph`'s

    Returns
    -------
    ``(subgraph, inverse)`` when ``relabel_nodes``: ``inverse`` int64 [num seeds] (a dict per type when ``nodes``
    was a dict) is each seed's id in the subgraph, whose nodes are sorted by original id; else the subgraph.

    Raises
    ------
    DGLError : a block, seeds of the wrong dtype or out of range, a non-dict on a graph of several node types
    """
    return _khop(graph, nodes, k, relabel_nodes, store_ids, output_device, incoming=True)


def khop_out_subgraph(graph: DGLGraph, nodes, k: int, *, relabel_nodes=True, store_ids=True, output_device=None):
    """:func:`khop_in_subgraph` along edge direction: the nodes reachable *from* a seed in at most ``k`` edges
    (DGL's ``dgl.khop_out_subgraph``)."""
    return _khop(graph, nodes, k, relabel_nodes, store_ids, output_device, incoming=False)

