"""Temporal sampling in the loader: GraphBolt's ``TemporalNeighborSampler`` settings and the seeds' times.

A temporal loader is the same pipeline as any other (order -> sample -> fetch -> transfer): its items
are positions into the seed list, each seed a node with a time (GraphBolt's ``ItemSet`` of
``(seeds, timestamp)``; bgl takes them as ``bgl.DataLoader(g, ids, sampler, seed_time=times)``), and
the sample stage asks :class:`TemporalSeeds` for a batch's blocks instead of the neighbour sampler.
Only edges with time <= their subgraph's seed time are drawn, at every hop (and, with node times,
only nodes with time <= it): the sampler never returns the future.

Two layouts of the same sample (:mod:`bgl.loader.stages.temporal_blocks`):

* ``"tree"`` (GraphBolt's, the default): no node is merged; each hop's sources are its destinations
  followed by one node per sampled edge, carrying its destination's time.  ``fanouts`` in DGL order.
* ``"disjoint"`` (PyG's ``disjoint=True``): a node reached twice within one subgraph is one node,
  only nodes new at a hop are expanded at the next, ``blocks[0].srcdata["batch"]`` names each node's
  subgraph (the PyG loaders use this one).

Costs: the seeds' times, 8 B a seed, travel with the stage; an in-memory graph's node times
(``g.ndata[name]``), 8 B a node, too; a store's (``bgl ingest --node-time``) are read where they lie by
name, memory-mapped, and the servers' stay there: each part filters by its copy of its in-edges'
source times (8 B per part edge, written by ``bgl partition``), so only their name travels.  A store
keeps edge times (``bgl ingest --edge-time-column``) with their time order (:mod:`bgl.sampler.temporal.sampling`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np
import torch

from .sampler_options import NeighborSampler

LAYOUTS = ("tree", "disjoint")


class TemporalNeighborSampler(NeighborSampler):
    """GraphBolt's ``TemporalNeighborSampler`` as loader settings (``bgl.TemporalNeighborSampler([10, 5],
    edge_timestamp_attr_name="timestamp")``), given to ``bgl.DataLoader`` with ``seed_time=``.

    Parameters
    ----------
    fanouts : neighbours per layer, DGL order (``fanouts[-1]`` is applied to the seeds); -1 takes
        every eligible neighbour
    replace : must be False (each eligible edge is drawn at most once)
    prob_name : an edge array of weights (float, integer or a bool mask; a store's ``edata/<name>.npy``, a
        DGLGraph's ``g.edata[name]``): each layer draws among the eligible edges by weight (a zero weight
        never), as GraphBolt's; ``strategy="uniform"``, an untyped graph (in process or its graph servers)
    node_timestamp_attr_name : a node array of int64 times (a store's ``ndata/<name>.npy``, a DGLGraph's
        ``g.ndata[name]``, graph servers' parts'); a node is eligible at ``t`` when its time is <= ``t``
    edge_timestamp_attr_name : an edge array of int64 times (a store's ``edata/<name>.npy``, a
        DGLGraph's ``g.edata[name]``); an edge is eligible at ``t`` when its time is <= ``t``
    strategy : ``"uniform"`` (each eligible edge equally likely) or ``"last"`` (the most recent
        ones, PyG's ``temporal_strategy``)
    layout : ``"tree"`` (GraphBolt's) or ``"disjoint"`` (PyG's), see the module docstring
    prefetch_node_feats : as :class:`~bgl.NeighborSampler`
    prefetch_labels : as :class:`~bgl.NeighborSampler`
    output_device : as :class:`~bgl.NeighborSampler`

    Notes
    -----
    Differences from GraphBolt 2.1, on purpose: an edge whose time equals the seed's is eligible
    (``<=``, PyG's rule; GraphBolt's kernel takes ``<``: give ``seed_time - 1`` for that), and each
    block carries its edges' times in ``edata[edge_timestamp_attr_name]``.
    """

    def __init__(self, fanouts: Sequence[int], replace: bool = False, prob_name: Optional[str] = None,
                 node_timestamp_attr_name: Optional[str] = None, edge_timestamp_attr_name: Optional[str] = None,
                 prefetch_node_feats: Optional[Sequence[str]] = None, prefetch_labels: Optional[Sequence[str]] = None,
                 output_device=None, *, strategy: str = "uniform", layout: str = "tree"):
        from ..sampler.temporal.sampling import check_strategy

        super().__init__(fanouts, prefetch_node_feats=prefetch_node_feats, prefetch_labels=prefetch_labels,
                         output_device=output_device)
        if replace:
            raise ValueError("temporal sampling draws each eligible edge at most once: replace=True is not supported")
        if prob_name is not None and not isinstance(prob_name, str):
            raise TypeError(f"prob_name must be a str naming the edge array of weights, got {prob_name!r}")
        if prob_name is not None and strategy == "last":
            raise ValueError(f"prob_name={prob_name!r} weighs a uniform draw; strategy='last' takes the most recent "
                             "eligible edges whatever their weight: use strategy='uniform' or drop prob_name")
        for what, name in (("node_timestamp_attr_name", node_timestamp_attr_name),
                           ("edge_timestamp_attr_name", edge_timestamp_attr_name)):
            if name is not None and not isinstance(name, str):
                raise TypeError(f"{what} must be a str naming the time array, got {name!r}")
        if node_timestamp_attr_name is None and edge_timestamp_attr_name is None:
            raise ValueError("a TemporalNeighborSampler needs node_timestamp_attr_name= or edge_timestamp_attr_name= "
                             "(the graph's int64 time array)")
        check_strategy(strategy)
        if layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
        self.node_timestamp_attr_name = node_timestamp_attr_name
        self.edge_timestamp_attr_name = edge_timestamp_attr_name
        self.strategy, self.layout, self.prob_name = strategy, layout, prob_name

    def sample(self, g, seed_nodes, exclude_eids=None):
        raise TypeError("bgl.TemporalNeighborSampler samples in bgl.DataLoader's pipeline (seed times with "
                        "seed_time=); it has no DGL sample(g, seeds) form")

    def temporal_options(self) -> "TemporalOptions":
        """What the loader's sample stage reads of this sampler (hop order: the first hop first)."""
        return TemporalOptions(tuple(reversed(self.fanouts)), self.strategy, self.layout,
                               self.edge_timestamp_attr_name, self.node_timestamp_attr_name, self.prob_name)

    def __repr__(self) -> str:
        return (f"bgl.TemporalNeighborSampler(fanouts={self.fanouts}, strategy={self.strategy!r}, "
                f"layout={self.layout!r}, edge_timestamp_attr_name={self.edge_timestamp_attr_name!r}, "
                f"node_timestamp_attr_name={self.node_timestamp_attr_name!r}"
                + (f", prob_name={self.prob_name!r})" if self.prob_name is not None else ")"))


@dataclass(frozen=True)
class TemporalOptions:
    """What the sample stage reads of a :class:`TemporalNeighborSampler` (hop order: the first hop first)."""

    hop_fanouts: tuple[int, ...]
    strategy: str
    layout: str
    edge_time: Optional[str]
    node_time_name: Optional[str]
    prob_name: Optional[str] = None  # an untyped in-process graph's edge array of weights


@dataclass
class TemporalSampling:
    """What every temporal loader's seeds share: the options, the node times (8 B a node) when the sampler
    names some, and a typed graph's per-hop fanouts and schema.  :meth:`sample` draws the blocks of seed
    nodes at times; each seed kind (:class:`TemporalSeeds`, :mod:`.temporal_edges`) lays out its batch's
    seed nodes and times in its ``sample_batch``, the sample stage's step."""

    options: TemporalOptions
    node_time: Optional[np.ndarray] = None
    typed_fanouts: Optional[tuple] = None  # a typed graph's per-hop int64 [R] fanouts, the first hop first
    schema: Any = None  # a typed graph's GraphSchema

    def __post_init__(self):
        self._sampler = None  # the stage's sampler, with this loader's node times where it has some

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_sampler": None}

    def _layer_source(self, sampler):
        """What samples a layer: an in-memory graph's layer with this loader's node times; a store's or the
        servers' naming their own node time array (a store's memory-mapped one; each part's copy of its
        in-edges' source times)."""
        import functools

        node_name = None if self.node_time is not None else self.options.node_time_name
        if self.schema is not None:
            if self._sampler is None:
                if hasattr(sampler, "store"):
                    from ..sampler.temporal.typed import TypedTemporalLayer

                    layer = TypedTemporalLayer(sampler.store, node_time=self.node_time)
                    self._sampler = layer if node_name is None else functools.partial(layer, node_time_name=node_name)
                else:
                    self._sampler = _ServerTypedLayer(sampler, node_name)
            return self._sampler
        names = {k: v for k, v in (("node_time_name", node_name), ("prob_name", self.options.prob_name)) if v}
        if self.node_time is None and not names:
            return sampler
        if self._sampler is None:
            base = sampler
            if self.node_time is not None:
                from ..sampler import LocalSampler

                base = LocalSampler(sampler.store, node_time=self.node_time)
            if names:  # the layer reads these arrays by name (a store's memory-mapped, the servers' own)
                from types import SimpleNamespace

                base = SimpleNamespace(temporal_layer=functools.partial(base.temporal_layer, **names))
            self._sampler = base
        return self._sampler

    def sample(self, sampler, nodes: np.ndarray, times: np.ndarray, seed: int) -> tuple[torch.Tensor, list]:
        """``(seed node ids, blocks)`` of seed ``nodes`` at ``times``, sampled with RNG ``seed``."""
        from ..sampler.temporal.sampling import sample_temporal
        from .stages.temporal_blocks import disjoint_blocks, tree_blocks

        opts, source = self.options, self._layer_source(sampler)
        if self.schema is not None:
            layer, fanouts = source, list(self.typed_fanouts)
        else:
            layer, fanouts = source.temporal_layer, list(opts.hop_fanouts)
        if opts.layout == "disjoint":
            sample = sample_temporal(layer, nodes, times, fanouts, opts.strategy, seed, time_name=opts.edge_time)
            blocks = disjoint_blocks(sample, opts.edge_time, self.schema)
        else:
            blocks = tree_blocks(layer, nodes, times, fanouts, opts, seed, self.schema)
        return torch.from_numpy(nodes), blocks


@dataclass(kw_only=True)
class TemporalSeeds(TemporalSampling):
    """A temporal loader's node seeds: ``nodes`` int64 [n] and their ``times`` int64 [n] (items are
    positions into them, so a node may be a seed at many times)."""

    nodes: np.ndarray
    times: np.ndarray

    def sample_batch(self, sampler, mb):
        """The sample stage's step: ``mb.seeds`` (positions) become the seed nodes, ``mb.blocks`` set."""
        pos = mb.seeds.numpy()
        mb.seeds, mb.blocks = self.sample(sampler, self.nodes[pos], self.times[pos], mb.sample_seed)
        return mb


class _ServerTypedLayer:
    """A typed temporal layer over graph servers in the loader's id space (a
    :class:`~bgl.sampler.typed.remote.TypedServerSampler`: ids mapped to the servers' and back; edge
    ids are the partition's)."""

    def __init__(self, sampler, node_time_name: Optional[str] = None):
        self.sampler = sampler
        self.schema = sampler.schema
        self.node_time_name = node_time_name  # the servers' node array of times, or None

    def __call__(self, dst, times, fanouts, strategy: str, seed: int, time_name: Optional[str] = None):
        s = self.sampler
        counts, nbrs, eids, etime, etypes = s.client.temporal_layer(s.to_server(dst), times, np.asarray(fanouts),
                                                                    strategy, seed, time_name=time_name,
                                                                    node_time_name=self.node_time_name)
        return counts, s.to_loader(nbrs), eids, etime, etypes
