"""``bgl.dgl.dataloading``: DGL 2.1's loader names over bgl's loader, yielding ``bgl.dgl`` graphs.

After ``import bgl.dgl as dgl``, ``dgl.dataloading.DataLoader(g, train_ids, dgl.dataloading.
NeighborSampler([10, 10]), batch_size=1024)`` runs as DGL's does: batches of
``(input_nodes, output_nodes, blocks)``, or ``(input_nodes, pair_graph, neg_pair_graph, blocks)``
with an edge-prediction sampler, where the blocks and pair graphs are ``bgl.dgl`` graphs (so
``bgl.dgl.nn`` layers, ``block.srcdata["feat"]`` and ``apply_edges(fn.u_dot_v(...))`` work).

This is a face of names, not a second loader.  The samplers *are* bgl's (``NeighborSampler`` is
``bgl.NeighborSampler``, and so on): settings objects the core loader reads.  :class:`DataLoader`
hands a ``bgl.dgl`` graph to ``bgl.DataLoader`` as it is: the edge's frontend choice
(:mod:`bgl.dgl.frontend_choice`) reads it in place and builds ``bgl.dgl`` blocks with the graph's
fields (:mod:`bgl.dgl.in_place`), so ``bgl.DataLoader(g, ...)`` yields the same batches.  Other
graphs (a store, a partition with graph servers) go to the core loader as they are and their bgl
batches are converted by the same frontend (without a graph's fields to add).
"""
from __future__ import annotations

from typing import Iterator

import torch

from .. import negative_sampler  # noqa: F401  (dgl.dataloading.negative_sampler)
from ..loader.dataloader import DataLoader as _CoreLoader
from ..loader.edge_prediction import EdgePredictionSampler, as_edge_prediction_sampler
from ..loader.labor import LaborSampler
from ..loader.sampler_options import MultiLayerFullNeighborSampler, MultiLayerNeighborSampler, NeighborSampler
from .graph_dataloader import GraphDataLoader  # noqa: F401  (whole small graphs: not the sampling pipeline)
from .in_place import BglBatchFrontend, graph_arrays, is_bgl_dgl_graph  # noqa: F401  (graph_arrays: the reader's)
from .base import EID, NID, DGLError

__all__ = ["DataLoader", "NeighborSampler", "MultiLayerNeighborSampler", "MultiLayerFullNeighborSampler",
           "LaborSampler", "as_edge_prediction_sampler", "EdgePredictionSampler", "negative_sampler",
           "GraphDataLoader", "Sampler", "BlockSampler", "ShaDowKHopSampler", "SAINTSampler", "ClusterGCNSampler",
           "set_node_lazy_features", "set_edge_lazy_features", "set_src_lazy_features", "set_dst_lazy_features"]


class Sampler:
    """DGL's base class of a user's own sampler: ``sample(g, indices)`` makes one batch, anything the
    training loop takes; :class:`DataLoader` calls it for each batch of seeds (:mod:`bgl.dgl.own_sampler`)."""

    def sample(self, g, indices):
        raise NotImplementedError


class BlockSampler(Sampler):
    """DGL's base class of a user's own block sampler: a subclass writes ``sample_blocks(g, seed_nodes,
    exclude_eids=None)`` returning ``(input_nodes, output_nodes, blocks)`` (usually with
    ``dgl.sampling.sample_neighbors`` and ``dgl.to_block``); ``sample`` adds the named fields as DGL's
    prefetch does: ``prefetch_node_feats`` to the first block's ``srcdata``, ``prefetch_labels`` to the last
    block's ``dstdata``, ``prefetch_edge_feats`` to every block's ``edata`` (``{type: names}`` on a typed
    graph), each the graph's rows at the block's ``dgl.NID`` / ``dgl.EID``, read on first use; then moves
    the batch to ``output_device``."""

    def __init__(self, prefetch_node_feats=None, prefetch_labels=None, prefetch_edge_feats=None,
                 output_device=None):
        super().__init__()
        self.prefetch_node_feats = prefetch_node_feats or []
        self.prefetch_labels = prefetch_labels or []
        self.prefetch_edge_feats = prefetch_edge_feats or []
        self.output_device = output_device

    def sample_blocks(self, g, seed_nodes, exclude_eids=None):
        raise NotImplementedError

    def sample(self, g, seed_nodes, exclude_eids=None):
        input_nodes, output_nodes, blocks = self.sample_blocks(g, seed_nodes, exclude_eids=exclude_eids)
        if blocks:
            _prefetch(blocks[0]._src_frames, g, g._node_frames(), self.prefetch_node_feats, NID)
            _prefetch(blocks[-1]._dst_frames, g, g._node_frames(), self.prefetch_labels, NID)
            for block in blocks:
                _prefetch(block._edge_frames, g, g._edge_frames, self.prefetch_edge_feats, EID)
        result = (input_nodes, output_nodes, blocks)
        if self.output_device is None:
            return result
        from .own_sampler import _to_device

        return _to_device(result, self.output_device)


class ShaDowKHopSampler(Sampler):
    """DGL's ``ShaDowKHopSampler`` (Zeng et al., shallow subgraphs): ``fanouts[i]`` neighbours drawn hop by hop
    from the seeds (``sample_neighbors`` + ``to_block``, as DGL's), then the subgraph the reached nodes induce,
    every edge among them, less ``exclude_eids``.  A batch is ``(input_nodes, output_nodes, subgraph)``: the
    seeds lead ``input_nodes``, the subgraph's ``ndata`` / ``edata`` are the graph's rows, ``dgl.NID`` /
    ``dgl.EID`` its ids."""

    def __init__(self, fanouts, replace=False, prob=None, prefetch_node_feats=None, prefetch_edge_feats=None,
                 output_device=None):
        super().__init__()
        self.fanouts, self.replace, self.prob = fanouts, replace, prob
        self.prefetch_node_feats, self.prefetch_edge_feats = prefetch_node_feats, prefetch_edge_feats
        self.output_device = output_device

    def sample(self, g, seed_nodes, exclude_eids=None):
        from .sampling import sample_neighbors
        from .to_block import to_block
        from .transforms import node_subgraph, remove_edges

        output_nodes = seed_nodes
        for fanout in reversed(self.fanouts):
            frontier = sample_neighbors(g, seed_nodes, fanout, replace=self.replace, prob=self.prob,
                                        exclude_edges=exclude_eids)
            seed_nodes = to_block(frontier, seed_nodes).srcdata[NID]
        subg = node_subgraph(g, seed_nodes, output_device=self.output_device)
        if exclude_eids is not None:  # DGL's EidExcluder: the excluded edges out of the induced subgraph
            excluded = exclude_eids if isinstance(exclude_eids, dict) else {subg.canonical_etypes[0]: exclude_eids}
            for etype, ids in excluded.items():
                cet = subg.to_canonical_etype(etype)
                parent = subg.edges[cet].data[EID]
                drop = torch.isin(parent, torch.as_tensor(ids, device=parent.device).to(parent.dtype))
                subg = remove_edges(subg, drop.nonzero().view(-1), etype=cet)
        return seed_nodes, output_nodes, subg


def _set_lazy(frames: dict, feature_names) -> None:
    from .frames import LazyFeature

    if feature_names is None:
        return
    if not isinstance(feature_names, dict):
        if len(frames) != 1:
            raise DGLError("feature_names must be a dict of names per type on a graph with several types.")
        feature_names = {next(iter(frames)): feature_names}
    for key, names in feature_names.items():
        found = [f for k, f in frames.items() if k == key or (isinstance(k, tuple) and k[1] == key)]
        if not found:
            raise DGLError(f"Type {key!r} does not exist in the graph; types are {list(frames)}.")
        found[0].update({name: LazyFeature(name) for name in names})


def set_node_lazy_features(g, feature_names) -> None:
    """DGL's ``set_node_lazy_features``: ``g.ndata[k] = dgl.LazyFeature(k)`` for each name (``{ntype: names}``
    on a typed graph), for the loader to fill with the graph's field at ``g.ndata[dgl.NID]``."""
    _set_lazy(g._src_frames, feature_names)


def set_edge_lazy_features(g, feature_names) -> None:
    """DGL's ``set_edge_lazy_features``: ``g.edata[k] = dgl.LazyFeature(k)`` for each name (``{etype: names}``
    on a typed graph), for the loader to fill at ``g.edata[dgl.EID]``."""
    _set_lazy(g._edge_frames, feature_names)


def set_src_lazy_features(g, feature_names) -> None:
    """DGL's ``set_src_lazy_features``: a block's ``srcdata[k] = dgl.LazyFeature(k)`` for each name."""
    _set_lazy(g._src_frames, feature_names)


def set_dst_lazy_features(g, feature_names) -> None:
    """DGL's ``set_dst_lazy_features``: a block's ``dstdata[k] = dgl.LazyFeature(k)`` for each name."""
    _set_lazy(g._dst_frames, feature_names)


def _prefetch(frames: dict, g, sources: dict, names, id_key: str) -> None:
    """Each named field missing from a block's ``frames`` (per type) as the graph's rows at the block's
    ``id_key`` column, read on first use."""
    for key, frame in frames.items():
        for name in _names_for(names, key):
            if name in frame or name not in sources[key]:
                continue
            frame.set_rows_on_read(name, sources[key][name], frame[id_key].long())


class DataLoader:
    """DGL 2.1's ``dgl.dataloading.DataLoader`` yielding ``bgl.dgl`` graphs (module doc).

    Parameters
    ----------
    graph : bgl.dgl.DGLGraph, or anything ``bgl.DataLoader`` takes (store dir, partition, servers)
    indices : int tensor [n] of seed node ids (seed edge ids with an edge-prediction sampler);
        ``{ntype: ids}`` on a typed graph
    graph_sampler : ``NeighborSampler`` / ``MultiLayerFullNeighborSampler`` / ``LaborSampler``,
        optionally wrapped by ``as_edge_prediction_sampler`` (bgl's; DGL's own are read too), or your
        own :class:`Sampler` / :class:`BlockSampler` subclass (its ``sample`` is called per batch of seeds)
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
        self.batch_size, self.shuffle, self.drop_last = batch_size, shuffle, drop_last
        own = graph_sampler if isinstance(graph_sampler, Sampler) else None
        if isinstance(graph_sampler, EdgePredictionSampler) and isinstance(graph_sampler.sampler, Sampler):
            from .own_sampler import OwnEdgePrediction

            own = OwnEdgePrediction(graph_sampler)
        if own is not None:  # the user's own sampler: bgl's order, their sample (own_sampler.py)
            from .own_sampler import OwnSamplerLoader

            graph_sampler = own
            self._convert_with = None
            self.loader = OwnSamplerLoader(graph, indices, graph_sampler, device, use_ddp, ddp_seed, batch_size,
                                           drop_last, shuffle, **kwargs)
            self.device = self.loader.device if self.loader.device is not None else torch.device("cpu")
            return
        own = is_bgl_dgl_graph(graph)  # the core builds its bgl.dgl blocks; other graphs' bgl ones are converted here
        self._convert_with = None if own else BglBatchFrontend()
        self.loader = _CoreLoader(graph, indices, graph_sampler, device=device, batch_size=batch_size, shuffle=shuffle,
                                  drop_last=drop_last, use_ddp=use_ddp, ddp_seed=ddp_seed,
                                  blocks=None if own else "bgl", **kwargs)
        self.device = self.loader.device

    def __iter__(self) -> Iterator[tuple]:
        if self._convert_with is None:
            yield from self.loader
            return
        for batch in self.loader:
            yield self._convert(batch)

    def _convert(self, batch: tuple) -> tuple:
        """A core batch of bgl objects as ``bgl.dgl`` ones, by the frontend the core uses for a ``bgl.dgl`` graph."""
        frontend = self._convert_with
        *head, core_blocks = batch
        blocks = frontend.blocks(core_blocks, None, None, ("_N", "_E"), with_csr=False)
        if len(head) == 3 or (len(head) == 2 and hasattr(head[1], "edges")):  # (input_nodes, pair[, neg])
            head = head[:1] + [_pair_of(frontend, p) for p in head[1:]]
        return (*head, blocks)

    def __len__(self) -> int:
        return len(self.loader)

    def __getattr__(self, name: str):
        if name == "loader":  # not yet set: __init__ failed part-way
            raise AttributeError(name)
        return getattr(self.loader, name)  # set_epoch, state_dict, cache_stats, close, ...


def _pair_of(frontend: BglBatchFrontend, pair):
    """A ``bgl.dgl`` graph of a core pair graph: a typed one's (:class:`bgl.loader.seeds.typed_edges.TypedPairGraph`)
    by its edges per type, node ids and positive edge ids."""
    if not hasattr(pair, "canonical_etypes"):
        return frontend.pair_graph(pair)
    edge_ids = pair.edata.get("_ID")
    return frontend.typed_pair_graph({c: pair.edges(etype=c) for c in pair.canonical_etypes}, pair.ndata["_ID"],
                                     edge_ids or None)


def _names_for(names, key) -> list:
    """The prefetch names of one node type or relation: a list names them for every type; a dict by
    type (a relation by its canonical triple or its name)."""
    if not isinstance(names, dict):
        return names
    if key in names:
        return names[key]
    return names.get(key[1], ()) if isinstance(key, tuple) else ()


# DGL 2.1 names under dgl.dataloading that bgl.dgl does not build, and what to use instead
_INSTEAD = {
    "SpotTarget": "as_edge_prediction_sampler(..., exclude='self') or a callable exclude",
    "DistDataLoader": "bgl.DataLoader over a partition with graph servers (bgl launch)",
    "DistNodeDataLoader": "bgl.DataLoader over a partition with graph servers (bgl launch)",
    "DistEdgeDataLoader": "bgl.DataLoader over a partition with graph servers (bgl launch)",
    "GPUCache": "bgl.DataLoader(cache=...)",
}


# whole-subgraph samplers (bgl.dgl.sampling), loaded on first use: they subclass Sampler above
_SUBGRAPH_SAMPLERS = {"SAINTSampler": "bgl.dgl.sampling.saint", "ClusterGCNSampler": "bgl.dgl.sampling.cluster_gcn"}


def __getattr__(name: str):
    if name in _SUBGRAPH_SAMPLERS:
        import importlib

        return getattr(importlib.import_module(_SUBGRAPH_SAMPLERS[name]), name)
    if name.startswith("__") or name not in _INSTEAD:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from .base import not_built

    raise not_built(f"dgl.dataloading.{name}", _INSTEAD[name], attribute=True)
