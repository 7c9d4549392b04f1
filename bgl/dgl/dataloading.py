"""``bgl.dgl.dataloading``: DGL 2.1's loader names over bgl's loader, yielding ``bgl.dgl`` graphs.

After ``import bgl.dgl as dgl``, ``dgl.dataloading.DataLoader(g, train_ids, dgl.dataloading.
NeighborSampler([10, 10]), batch_size=1024)`` runs as DGL's does: batches of
``(input_nodes, output_nodes, blocks)``, or ``(input_nodes, pair_graph, neg_pair_graph, blocks)``
with an edge-prediction sampler, where the blocks and pair graphs are ``bgl.dgl`` graphs (so
``bgl.dgl.nn`` layers, ``block.srcdata["feat"]`` and ``apply_edges(fn.u_dot_v(...))`` work).

This is a thin face, not a second loader.  The samplers *are* bgl's (``NeighborSampler`` is
``bgl.NeighborSampler``, and so on): settings objects the core loader reads.  :class:`DataLoader`
hands the core ``bgl.DataLoader`` the graph's own arrays and converts what it yields:

* a homogeneous ``bgl.dgl`` graph becomes a :class:`~bgl.loader.graph_arrays.GraphArrays` over its
  cached CSC (``indices`` and the CSC's edge ids are the graph's own tensors, zero copy; an int32
  ``indptr`` is widened, 8 B a node), its ``ndata`` feature and label tensors (zero copy) and its
  ``edata``; a typed one a :class:`~bgl.sources.hetero.TypedArrays` (the core's fused CSC is built
  once, per-type features and labels are views);
* each core :class:`~bgl.blocks.Block` becomes a ``bgl.dgl`` block (:func:`bgl.dgl.block_from_bgl`,
  index tensors shared), each pair graph a ``bgl.dgl`` graph (:func:`bgl.dgl.graph_from_pair`).

Node and edge data come as DGL's loader gives them: the features named first in
``prefetch_node_feats`` (default ``"feat"``) through the core's fetch stage (and its cache) into
``blocks[0].srcdata``, the labels into ``blocks[-1].dstdata``, and, as DGL exposes every field
of the graph on a batch, every other ``ndata`` field into ``blocks[0].srcdata``,
``blocks[-1].dstdata`` and the pair graphs' ``ndata``, and every ``edata`` field into each block's
``edata`` (gathered by ``NID`` / ``EID`` per batch; DGL gathers them lazily, on every block).
Other graphs (a store, a partition with graph servers) go to the core loader as they are and
their batches are converted the same way.
"""
from __future__ import annotations

import copy
from typing import Any, Iterator, Optional

import numpy as np
import torch

from .. import negative_sampler  # noqa: F401  (dgl.dataloading.negative_sampler)
from ..loader.dataloader import DataLoader as _CoreLoader
from ..loader.edge_prediction import EdgePredictionSampler, as_edge_prediction_sampler, is_edge_prediction_sampler
from ..loader.graph_arrays import GraphArrays
from ..loader.labor import LaborSampler
from ..loader.sampler_options import (MultiLayerFullNeighborSampler, MultiLayerNeighborSampler, NeighborSampler,
                                      prefetch_names)

__all__ = ["DataLoader", "NeighborSampler", "MultiLayerNeighborSampler", "MultiLayerFullNeighborSampler",
           "LaborSampler", "as_edge_prediction_sampler", "EdgePredictionSampler", "negative_sampler"]

NID = EID = "_ID"


def is_bgl_dgl_graph(obj: Any) -> bool:
    """True for a ``bgl.dgl.DGLGraph`` (not a block)."""
    from .heterograph import DGLGraph

    return isinstance(obj, DGLGraph) and not obj.is_block


def csc_tensors(g) -> tuple[torch.Tensor, torch.Tensor, Optional[torch.Tensor]]:
    """``(indptr int64 [n + 1], indices [E], eids [E] or None)``: the in-edge CSC a homogeneous
    ``bgl.dgl`` graph caches (built on first use, kept in the graph), on the CPU; ``eids`` is
    None when CSC positions are the edge ids.  ``indices`` and ``eids`` are the graph's tensors."""
    csc = g._relation(None).csc()
    indptr = csc.indptr.cpu()
    if indptr.dtype != torch.int64:
        indptr = indptr.to(torch.int64)  # the sampler's row spans are int64
    return indptr, csc.indices.cpu(), None if csc.eids is None else csc.eids.cpu()


def graph_arrays(g, feat_key: Optional[str], label_key: Optional[str]) -> GraphArrays:
    """A homogeneous ``bgl.dgl`` graph as the core loader's graph, sharing its tensors (module doc).

    ``ndata[feat_key]`` serves as the features when it is a 2-D float tensor, ``ndata[label_key]``
    as the labels when it is 1-D integer; any other field is attached per batch instead.
    """
    indptr, indices, eids = csc_tensors(g)
    feat = label = None
    num_classes = 0
    ndata = g.ndata
    if feat_key in ndata:
        value = ndata[feat_key].detach().cpu()
        if value.dim() == 2 and value.is_floating_point():
            feat = value if value.is_contiguous() else value.contiguous()
    if label_key in ndata:
        value = ndata[label_key].detach().cpu()
        if value.dim() == 1 and not value.is_floating_point() and value.dtype != torch.bool:
            label = value if value.dtype == torch.int64 and value.is_contiguous() else value.to(torch.int64).contiguous()
            num_classes = int(label.max()) + 1 if label.numel() else 0
    edata = {k: v.detach().cpu() for k, v in g.edata.items() if k != EID}
    return GraphArrays(indptr, indices, feat, label, num_classes=num_classes, name="bgl.dgl graph",
                       edge_ids=eids, edata=edata)


class TypedEdgeIdsInCsc:
    """Typed link prediction: the user's per-relation edge ids (DGL's) as the fused CSC positions the core
    reads seeds of typed in-memory arrays as, and the positive pair graph's ``EID`` back (blocks already
    carry per-relation ids).  8 B per edge (the core's inverse of its fused CSC)."""

    def __init__(self, arrays):
        from ..loader.typed_edge_ids import position_map

        self.schema = arrays.schema
        self.edge_ids = torch.from_numpy(np.asarray(arrays.edge_ids).astype(np.int64))
        self._to_position = position_map(arrays, len(self.schema.edge_types))

    def seeds(self, indices) -> dict:
        if not isinstance(indices, dict):
            raise TypeError("a graph with several edge types takes seed edges as {etype: edge ids}")
        out = {}
        for key, ids in indices.items():
            c = self.schema.canonical_etypes[_relation_index(self.schema, key)]
            ids = torch.as_tensor(ids)
            count = self.schema.edge_types[self.schema.canonical_etypes.index(c)].count
            if ids.dtype == torch.bool or ids.is_floating_point():
                raise TypeError(f"seed edges of edge type {c} must be integer ids, got dtype {ids.dtype}")
            if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= count):
                bad = int(ids.min()) if int(ids.min()) < 0 else int(ids.max())
                raise ValueError(f"seed edges of edge type {c} contain edge id {bad}, outside [0, {count})")
            r = self.schema.canonical_etypes.index(c)
            out[c] = torch.from_numpy(self._to_position(r, ids.long().cpu().numpy()))
        return out

    def to_ids(self, positions: torch.Tensor) -> torch.Tensor:
        return self.edge_ids.to(positions.device)[positions.long()]


def _relation_index(schema, key) -> int:
    """Index of edge type ``key`` (a relation name or a canonical triple); ValueError naming it otherwise."""
    cets = [tuple(c) for c in schema.canonical_etypes]
    if isinstance(key, tuple) and tuple(key) in cets:
        return cets.index(tuple(key))
    found = [i for i, c in enumerate(cets) if c[1] == key]
    if len(found) != 1:
        raise ValueError(f"edge type {key!r} is {'ambiguous' if found else 'not'} in the graph's {cets}")
    return found[0]


def _core_graph(g, feat_key: Optional[str], label_key: Optional[str]):
    """What the core loader samples for ``g``: arrays of a ``bgl.dgl`` graph, else ``g`` itself."""
    if not is_bgl_dgl_graph(g):
        return g
    if g.is_homogeneous:
        return graph_arrays(g, feat_key, label_key)
    from ..sources.hetero import TypedArrays

    return TypedArrays.from_dglgraph(g, feat_key, label_key)


def _one_feature_sampler(graph_sampler):
    """The sampler as the core reads it for a ``bgl.dgl`` graph: one node-feature name (the core
    serves one array; the other names are attached per batch here)."""
    inner = graph_sampler.sampler if is_edge_prediction_sampler(graph_sampler) else graph_sampler
    names = prefetch_names(getattr(inner, "prefetch_node_feats", None) or [])
    if len(names) <= 1 or isinstance(inner.prefetch_node_feats, dict):
        return graph_sampler
    inner = copy.copy(inner)
    inner.prefetch_node_feats = names[:1]
    if not is_edge_prediction_sampler(graph_sampler):
        return inner
    outer = copy.copy(graph_sampler)
    outer.sampler = inner
    return outer


class DataLoader:
    """DGL 2.1's ``dgl.dataloading.DataLoader`` for ``bgl.dgl`` graphs (module doc).

    Parameters
    ----------
    graph : bgl.dgl.DGLGraph, or anything ``bgl.DataLoader`` takes (store dir, partition, servers)
    indices : int tensor [n] of seed node ids (seed edge ids with an edge-prediction sampler);
        ``{ntype: ids}`` on a typed graph
    graph_sampler : ``NeighborSampler`` / ``MultiLayerFullNeighborSampler`` / ``LaborSampler``,
        optionally wrapped by ``as_edge_prediction_sampler`` (bgl's; DGL's own are read too)
    device, use_ddp, ddp_seed, batch_size, drop_last, shuffle : as DGL's
    **kwargs : DGL's tuning arguments (``num_workers``, ``use_uva``, ...) and ``bgl.DataLoader``'s own
        (``cache=``, ``order=``, ``pipeline=``); see :class:`bgl.DataLoader`

    The core loader is ``self.loader``; ``len()``, ``set_epoch``, ``state_dict`` / ``load_state_dict``,
    ``cache_stats`` and ``close`` are its.
    """

    def __init__(self, graph, indices, graph_sampler, device=None, use_ddp: bool = False, ddp_seed: int = 0,
                 batch_size: int = 1, drop_last: bool = False, shuffle: bool = False, **kwargs):
        if kwargs.get("blocks", "bgl") != "bgl":
            raise ValueError(f"bgl.dgl.dataloading.DataLoader yields bgl.dgl blocks; blocks={kwargs['blocks']!r} "
                             "asks for another kind: use bgl.DataLoader for that")
        kwargs.pop("blocks", None)
        self.graph, self.graph_sampler = graph, graph_sampler
        inner = graph_sampler.sampler if is_edge_prediction_sampler(graph_sampler) else graph_sampler
        feats = prefetch_names(getattr(inner, "prefetch_node_feats", None) or [])
        labels = prefetch_names(getattr(inner, "prefetch_labels", None) or [])
        own = is_bgl_dgl_graph(graph)
        self._attach = own  # a bgl.dgl graph's other fields are attached per batch (module doc)
        self._edge_ids: Optional[TypedEdgeIdsInCsc] = None
        core_sampler = _one_feature_sampler(graph_sampler) if own else graph_sampler
        core_graph = _core_graph(graph, feats[0] if feats else None, labels[0] if labels else None)
        if own and not graph.is_homogeneous and is_edge_prediction_sampler(graph_sampler):
            self._edge_ids = TypedEdgeIdsInCsc(core_graph)
            indices = self._edge_ids.seeds(indices)
        self.loader = _CoreLoader(core_graph, indices, core_sampler, device=device, batch_size=batch_size, shuffle=shuffle, drop_last=drop_last,
                                  use_ddp=use_ddp, ddp_seed=ddp_seed, blocks="bgl", **kwargs)
        self.device = self.loader.device
        self.batch_size, self.shuffle, self.drop_last = batch_size, shuffle, drop_last

    def __iter__(self) -> Iterator[tuple]:
        for batch in self.loader:
            yield self._convert(batch)

    def _convert(self, batch: tuple) -> tuple:
        from .convert import block_from_bgl, graph_from_pair

        *head, core_blocks = batch
        blocks = [block_from_bgl(b) for b in core_blocks]
        if len(head) == 2 and not hasattr(head[1], "edges"):  # (input_nodes, output_nodes)
            pairs = []
        else:  # (input_nodes, pair_graph[, neg_pair_graph])
            pairs = [typed_pair_graph(p) if hasattr(p, "canonical_etypes") else graph_from_pair(p) for p in head[1:]]
            head = head[:1] + pairs
        if self._edge_ids is not None and pairs:  # typed: the positive pairs' ids only
            for c in pairs[0].canonical_etypes:
                data = pairs[0].edges[c].data
                if EID in data:
                    data[EID] = self._edge_ids.to_ids(data[EID])
        if self._attach:
            attach_graph_fields(self.graph, blocks, pairs)
        return (*head, blocks)

    def __len__(self) -> int:
        return len(self.loader)

    def __getattr__(self, name: str):
        if name == "loader":  # not yet set: __init__ failed part-way
            raise AttributeError(name)
        return getattr(self.loader, name)  # set_epoch, state_dict, cache_stats, close, ...


def typed_pair_graph(pair):
    """A ``bgl.dgl`` heterograph of a typed pair graph (:class:`bgl.loader.seeds.typed_edges.TypedPairGraph`):
    every edge type of the graph, every node type's batch nodes, ``NID`` per node type, ``EID`` per edge
    type on the positive one, as DGL's ``EdgePredictionSampler`` makes it (its tensors shared)."""
    from .convert import heterograph

    node_ids = pair.ndata[NID]
    g = heterograph({c: pair.edges(etype=c) for c in pair.canonical_etypes},
                    num_nodes_dict={nt: int(ids.shape[0]) for nt, ids in node_ids.items()})
    for nt, ids in node_ids.items():
        g.nodes[nt].data[NID] = ids
    for c, ids in pair.edata.get(EID, {}).items():
        g.edges[c].data[EID] = ids
    return g


def _gather(column: torch.Tensor, ids: torch.Tensor, device) -> torch.Tensor:
    return column[ids.to(column.device).long()].to(device)


def attach_graph_fields(g, blocks: list, pairs: list) -> None:
    """Every ``ndata`` / ``edata`` field of ``g`` a batch does not carry yet, gathered by ``NID`` / ``EID``
    (module doc: which sides get them)."""
    first, last = blocks[0], blocks[-1]
    for nt in first.srctypes:
        _fill(first.srcnodes[nt].data, g.nodes[nt].data)
    for nt in last.dsttypes:
        _fill(last.dstnodes[nt].data, g.nodes[nt].data)
    for pair in pairs:
        for nt in pair.ntypes:
            _fill(pair.nodes[nt].data, g.nodes[nt].data)
    for b in blocks:
        for cet in b.canonical_etypes:
            target = b.edges[cet].data
            if EID in target:
                _fill(target, g.edges[cet].data)


def _fill(target, source) -> None:
    ids = target[NID] if NID in target else None
    if ids is None:
        return
    device = ids.device
    for key, column in source.items():
        if key not in target:
            target[key] = _gather(column, ids, device)
