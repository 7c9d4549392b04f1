"""DGL's ``dgl.sampling.sample_neighbors`` and ``select_topk`` on ``bgl.dgl`` graphs, by bgl's sampler.

What a DGL user's own sampler calls (``dgl.dataloading.BlockSampler`` subclasses: a frontier per layer,
then :func:`bgl.dgl.to_block`).  Each relation's draw is :func:`bgl.sampler.ops.sample_neighbors`, the
numba kernels ``bgl.DataLoader`` samples with, over the relation's cached CSC (in-edges) or CSR
(out-edges): the same per-row draws (uniform, with or without replacement, by weight, around excluded
edges), and a sample is a pure function of the call's seed, drawn from torch's generator, so
``torch.manual_seed`` / ``dgl.seed`` repeat it.  Relation ``r`` draws from the seed mixed with ``r``
(:func:`bgl.sampler.typed.sampling.relation_seed`), as a typed loader's layer does.  DGL's own draws are
its RNG's: the same distribution, not the same edges.  One difference: DGL drops excluded edges after drawing (a
row of 10 edges, 5 of them excluded, keeps ~2 of a fanout of 4), where this draws the fanout among the
remaining edges, as bgl's loader does for link prediction.

The frontier is what DGL returns: every node of the graph, the sampled edges of each relation grouped
by seed in the seeds' order, ``edata[dgl.EID]`` their ids in the graph and the graph's edge features at
them (``copy_edata``), the graph's node features shared (``copy_ndata``).

Cost per call: O(seeds + sampled edges) plus, once per graph structure (kept while it lives, as
DGL keeps a CSC it built), the CSC or CSR (:mod:`bgl.dgl.relation`), its int64 ``indptr`` (8 B a node)
and, when edges are excluded, each edge's CSC position (8 B an edge); with ``prob``, the weights in CSC
order once per version of the weight tensor (:mod:`bgl.loader.graph_derivations`).
"""
from __future__ import annotations

from typing import Mapping

import numpy as np
import torch

from bgl.dgl.base import EID, DGLError, not_built
from bgl.dgl.frames import Frame
from bgl.dgl.graph_queries import check_node_ids
from bgl.dgl.heterograph import DGLGraph
from bgl.dgl.relation import Relation
from bgl.loader.graph_derivations import derivations_of, storage_key
from bgl.sampler import ops
from bgl.sampler.multilayer import draw_seed
from bgl.sampler.typed.sampling import MASK64, relation_seed

EDGE_DIRS = ("in", "out")


def sample_neighbors(g: DGLGraph, nodes, fanout, edge_dir: str = "in", prob=None, exclude_edges=None,
                     replace: bool = False, copy_ndata: bool = True, copy_edata: bool = True,
                     output_device=None) -> DGLGraph:
    """Up to ``fanout`` in-edges (``edge_dir="out"``: out-edges) of each of ``nodes``, per relation.

    Parameters
    ----------
    g : a ``bgl.dgl`` graph (not a block)
    nodes : ids of the seed nodes (a tensor for a one-type graph, else ``{ntype: ids}``)
    fanout : int (every relation; -1 all), or ``{etype: int}`` naming every relation
    prob : name of an edge feature: each edge drawn with probability proportional to it (a bool one:
        only True edges), never a zero one; a relation without that feature draws uniformly
    exclude_edges : edge ids never drawn (a tensor, or ``{etype: ids}``)
    replace, copy_ndata, copy_edata, output_device : as DGL's

    Returns
    -------
    DGLGraph with every node of ``g`` and the sampled edges (module doc).
    """
    seeds, fanouts, excluded = frontier_arguments(g, nodes, fanout, edge_dir, exclude_edges, "sample_neighbors")
    call_seed = draw_seed() if any(f >= 0 for f in fanouts) else 0  # all edges: no draw (torch's RNG untouched)
    picks = {cet: _sample_relation(g, cet, g._rels[cet], edge_dir, seeds.get(cet[2] if edge_dir == "in" else cet[0]),
                                   fanouts[r], replace, relation_seed(call_seed, r) & MASK64, prob, excluded.get(cet))
             for r, cet in enumerate(g.canonical_etypes)}
    return _frontier(g, picks, edge_dir, copy_ndata, copy_edata, output_device)


def frontier_arguments(g: DGLGraph, nodes, fanout, edge_dir: str, exclude_edges, what: str):
    """``(seeds {ntype: int64 ids}, fanouts [one per relation], excluded {canonical etype: ids})`` of a frontier
    sampler's arguments (sample_neighbors', sample_labors'), with DGL's errors; ``what`` names the caller."""
    if g.is_block:
        raise not_built(f"{what} on a block", "sample from the graph the block came from")
    if edge_dir not in EDGE_DIRS:
        raise DGLError(f"edge_dir must be 'in' or 'out', got {edge_dir!r}.")
    seeds = _per_type(g, nodes, "nodes", g.ntypes, g.get_ntype_id)
    if not seeds:
        raise ValueError("Got an empty dictionary in the nodes argument. "
                         "Please pass in a dictionary with empty tensors as values instead.")
    excluded = {} if exclude_edges is None else _per_type(g, exclude_edges, "exclude_edges", g.canonical_etypes,
                                                          g.get_etype_id)
    return seeds, _fanouts(g, fanout), excluded


def _frontier(g: DGLGraph, picks: dict, edge_dir: str, copy_ndata: bool, copy_edata: bool, output_device) -> DGLGraph:
    """The graph of every node of ``g`` and the edges ``picks`` names: ``{canonical etype: (edge ids, the node
    each was picked for, its other end)}``; ``edata[EID]`` and the graph's edge fields at them, gathered when
    read (as DGL's subframes), with ``copy_edata``; the node fields shared with ``copy_ndata``."""
    rels, edge_frames = {}, {}
    for cet, (picked, own, other) in picks.items():
        rel = g._rels[cet]
        own, other = own.to(g.idtype), other.to(g.idtype)
        rels[cet] = Relation(rel.num_src, rel.num_dst, *((other, own) if edge_dir == "in" else (own, other)))
        if copy_edata:
            frame = g._edge_frames[cet].rows_on_read(picked)
            frame[EID] = picked.to(g.idtype)
        else:
            frame = Frame(int(picked.shape[0]), "edges")
        edge_frames[cet] = frame
    node_frames = {nt: f.shared_copy() if copy_ndata else Frame(f.num_rows) for nt, f in g._node_frames().items()}
    out = DGLGraph(rels, {nt: g.num_nodes(nt) for nt in g.ntypes}, idtype=g.idtype, src_frames=node_frames,
                   edge_frames=edge_frames)
    return out if output_device is None else out.to(output_device)


def select_topk(g: DGLGraph, k, weight: str, nodes=None, edge_dir: str = "in", ascending: bool = False,
                copy_ndata: bool = True, copy_edata: bool = True, output_device=None) -> DGLGraph:
    """Each node's ``k`` in-edges (``edge_dir="out"``: out-edges) of largest ``weight`` (``ascending``:
    smallest), per relation (``k`` an int or ``{etype: int}``; -1 all); ``nodes`` (default: every node) as
    :func:`sample_neighbors` takes them, and its frontier back: every node, ``edata[EID]``, the fields.  One
    sort of the nodes' edges by (node, weight), O(their edges x log)."""
    if g.is_block:
        raise not_built("select_topk on a block", "select from the graph the block came from")
    if edge_dir not in EDGE_DIRS:
        raise DGLError(f"edge_dir must be 'in' or 'out', got {edge_dir!r}.")
    counts = _fanouts(g, k)
    ends = {nt: torch.arange(g.num_nodes(nt), device=g.device) for nt in g.ntypes} if nodes is None else \
        _per_type(g, nodes, "nodes", g.ntypes, g.get_ntype_id)
    picks = {}
    for r, cet in enumerate(g.canonical_etypes):
        rel = g._rels[cet]
        if weight not in g._edge_frames[cet]:
            raise DGLError(f"Edge weights {weight!r} do not exist for edge type {cet}.")
        own = ends.get(cet[2] if edge_dir == "in" else cet[0])
        picked, owner = _top_edges(rel.csc() if edge_dir == "in" else rel.csr(), g._edge_frames[cet][weight], own,
                                   counts[r], ascending, g.device)
        src, dst = rel.coo()
        picks[cet] = picked, owner, (src if edge_dir == "in" else dst)[picked]
    return _frontier(g, picks, edge_dir, copy_ndata, copy_edata, output_device)


def _top_edges(comp, weights: torch.Tensor, nodes, k: int, ascending: bool, device):
    """(edge ids, their node) of each of ``nodes``' ``k`` top-weighted edges in the compressed adjacency ``comp``."""
    empty = torch.zeros(0, dtype=torch.int64, device=device)
    if nodes is None or nodes.numel() == 0 or k == 0:
        return empty, empty
    indptr = comp.indptr.long()
    starts, degs = indptr[nodes], indptr[nodes + 1] - indptr[nodes]
    row = torch.repeat_interleave(torch.arange(nodes.shape[0], device=device), degs)
    offset = torch.arange(row.shape[0], device=device) - torch.repeat_interleave(torch.cumsum(degs, 0) - degs, degs)
    positions = starts[row] + offset
    eids = positions if comp.eids is None else comp.eids[positions].long()
    order = torch.sort(weights[eids.to(weights.device)].to(device), descending=not ascending, stable=True).indices
    order = order[torch.sort(row[order], stable=True).indices]
    if k >= 0:
        order = order[rank_in_row(row[order]) < k]
    return eids[order], nodes[row[order]]


def rank_in_row(rows: torch.Tensor) -> torch.Tensor:
    """Each entry's position among the entries of its row (``rows`` grouped, ascending): the top-k cut of
    select_topk and of PinSAGE's neighbour selection."""
    first = torch.searchsorted(rows, rows)
    return torch.arange(rows.shape[0], device=rows.device) - first


def _per_type(g: DGLGraph, value, what: str, types, type_id) -> dict:
    """``{type: int64 ids}`` of a tensor (one-type graphs) or a dict keyed by any name of a type."""
    if not isinstance(value, Mapping):
        if len(types) > 1:
            raise DGLError(f"Must specify the type of {what} when the graph is not homogeneous.")
        value = {types[0]: value}
    out = {}
    for key, ids in value.items():
        t = types[type_id(key)]
        ids = torch.as_tensor(ids, device=g.device)
        if ids.dtype == torch.bool or ids.is_floating_point():
            raise DGLError(f"{what} must be integer ids, got {ids.dtype}.")
        out[t] = ids.view(-1).long()
    return out


def _fanouts(g: DGLGraph, fanout) -> list[int]:
    """One fanout per relation (canonical order); DGL's error for a dict that misses a relation."""
    if not isinstance(fanout, Mapping):
        return [ops.check_fanout(int(fanout))] * len(g.canonical_etypes)
    if len(fanout) != len(g.canonical_etypes):
        raise DGLError("Fan-out must be specified for each edge type if a dict is provided.")
    out = [None] * len(g.canonical_etypes)
    for key, value in fanout.items():
        out[g.get_etype_id(key)] = ops.check_fanout(int(value))
    if any(f is None for f in out):
        raise DGLError("Fan-out must be specified for each edge type if a dict is provided.")
    return out


def _sample_relation(g, cet, rel: Relation, edge_dir: str, ends, fanout: int, replace: bool, seed: int, prob,
                     excluded, weights_of=None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(edge ids drawn int64 [k], the seed each one belongs to int64 [k], its other end [k]) of one relation;
    ``weights_of(eids)``, when given, makes the draw's weights in CSC / CSR order instead of edge feature ``prob``."""
    empty = torch.zeros(0, dtype=torch.int64, device=g.device)
    if ends is None or ends.numel() == 0 or fanout == 0:
        return empty, empty, empty
    check_node_ids(ends, rel.num_dst if edge_dir == "in" else rel.num_src,
                   f"{cet[2] if edge_dir == 'in' else cet[0]!r} node")
    comp = rel.csc() if edge_dir == "in" else rel.csr()
    keep = derivations_of(g)
    tag = f"{cet}:{edge_dir}"
    key = (storage_key(comp.indptr.cpu().numpy()), storage_key(comp.indices.cpu().numpy()))
    indptr = keep.kept(f"indptr64:{tag}", key, lambda: ops._read_only(comp.indptr.cpu().numpy().astype(np.int64)))
    eids = None if comp.eids is None else comp.eids.cpu().numpy()
    weights = ordered_weights(g, cet, edge_dir, prob, eids) if weights_of is None else weights_of(eids)
    drop, positions = None, None
    if excluded is not None and excluded.numel():
        drop = excluded.cpu().numpy()
        if eids is not None:
            positions = keep.kept(f"positions:{tag}", key, lambda: _edge_positions(eids))
    seeds_np = ends.cpu().numpy().astype(np.int64)
    try:
        counts, other, pos = ops.sample_neighbors(indptr, comp.indices.cpu().numpy(), seeds_np, 0, fanout, replace, seed,
                                              prob=weights, exclude=drop, edge_ids=eids,
                                              edge_pos=positions)
    except ValueError as e:
        raise DGLError(str(e)) from None
    picked = torch.from_numpy(pos if eids is None else eids[pos].astype(np.int64))
    owners = torch.from_numpy(np.repeat(ends.cpu().numpy(), counts))  # numpy's: torch 2.2's costs ms a call
    return picked.to(g.device), owners.to(g.device), torch.from_numpy(other).to(g.device)


def ordered_weights(g: DGLGraph, cet, edge_dir: str, name, eids) -> np.ndarray | None:
    """Edge feature ``name`` of relation ``cet`` as checked weights in its CSC (``edge_dir="in"``) or CSR
    order (``eids``: the edge id at each position, None when positions are ids), read-only, a bool mask as
    its uint8 view; checked and permuted once per version of the tensor (``graph_derivations``).  None when
    ``name`` is None or the relation lacks it (draw uniformly, as DGL does).  What sample_neighbors and the
    random walks draw by."""
    if name is None or name not in g._edge_frames[cet]:
        return None
    tensor = g._edge_frames[cet][name]
    if tensor.dim() != 1:
        raise DGLError(f"prob {name!r} must be a 1-D edge feature, got shape {tuple(tensor.shape)}.")
    plain = tensor if tensor.device.type == "cpu" and not tensor.requires_grad else tensor.detach().cpu()
    keep, tag, num_edges = derivations_of(g), f"{cet}:{edge_dir}:{name}", g._rels[cet].num_edges
    try:
        keep.check_weights(tag, plain, num_edges)
    except ValueError as e:
        raise DGLError(str(e)) from None
    rows = plain.numpy() if eids is None else keep.csc_order(tag, plain, eids)
    return ops._read_only(ops.weights_form(rows, num_edges, name))


def _edge_positions(eids: np.ndarray) -> np.ndarray:
    """Each edge id's CSC position (the sampler's map for excluded edges), read-only."""
    from bgl.sampler.exclusion import edge_positions

    return ops._read_only(edge_positions(eids))
