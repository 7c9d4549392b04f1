"""The loader's seeds, resolved once into one item kind the stages read.

``bgl.DataLoader``'s ``indices`` are node ids (one tensor, or DGL's ``{ntype: ids}`` on a typed
graph) or, with an edge-prediction sampler, edge ids (or PyG's given node pairs).  Whatever the
form, :func:`resolve_seeds` returns one frozen :class:`SeedItems`: the int64 items the order stage
cuts into batches, and what the sample stage needs to turn a batch of items into seed nodes
(``edges`` for edge seeds).  The stages never ask again which form the user gave (GraphBolt's
``ItemSet`` / ``ItemSetDict``, PyG's ``NodeSamplerInput`` / ``EdgeSamplerInput``: STYLE.md); the
untyped node case is the simplest one: the checked ids themselves.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ..arguments import check_indices, has_repeats

NODES, EDGES = "nodes", "edges"


@dataclass(frozen=True)
class SeedItems:
    """One loader's seeds as items.

    ``ids`` : [n], the items the order stage batches: int64 global node ids (``kind == "nodes"``), or
    positions into ``edges`` (``kind == "edges"``, :class:`~bgl.loader.seeds.edges.EdgeSeeds`, or a
    typed graph's :class:`~bgl.loader.seeds.typed_edges.TypedEdgeSeeds`, ``{etype: eids}`` mixed),
    :func:`positions` (int32 while they fit; the order stage widens each batch);
    ``repeated`` : some node id occurs twice (DGL accepts it; proximity order does not);
    ``order_nodes`` : for edge items, the node of each item that proximity order places (its dst).
    """

    kind: str
    typed: bool
    ids: np.ndarray
    repeated: bool = False
    edges: Any = None
    order_nodes: Optional[np.ndarray] = None
    temporal: Any = None  # temporal seeds: items are positions (a bgl.loader.temporal_sampler.TemporalSampling)

    @property
    def is_edges(self) -> bool:
        return self.kind == EDGES


def positions(n: int) -> np.ndarray:
    """Items ``0 .. n-1`` that index the seeds (edges, or seeds with times): int32 while ``n`` fits,
    4 B an item less for the loader's life, and an epoch's shuffled copy as narrow (73 -> 36 MiB
    each for 9.5M seed edges)."""
    return np.arange(n, dtype=np.int32 if n < np.iinfo(np.int32).max else np.int64)


def resolve_seeds(indices, info, sampler, schema, order: str, seed_time=None, seed_layout=None) -> SeedItems:
    """The :class:`SeedItems` of ``indices`` over the resolved graph ``info``
    (:class:`~bgl.loader.graph_info.GraphInfo`) for ``sampler``
    (:class:`~bgl.loader.sampler_options.SamplerOptions`); ``schema`` is the typed graph's, or None.

    Raises ValueError / TypeError naming the bad id, type or combination, before anything starts.
    """
    typed = schema is not None
    if seed_layout is not None:  # items are positions; the caller lays out each batch's seeds (PyG's link loader)
        from .temporal import laid_out_seeds

        items, seeds = laid_out_seeds(indices, seed_layout, info, sampler.temporal, schema)
        return SeedItems(EDGES, typed, items, order_nodes=seed_layout.order_nodes, temporal=seeds)
    if sampler.temporal is not None or seed_time is not None:
        from .temporal import resolve_temporal_seeds

        seeds = resolve_temporal_seeds(indices, seed_time, info, sampler.temporal, sampler.link, schema)
        # A node may be a seed at many times: items are positions, placed by their node (proximity).
        if sampler.link is not None:
            return SeedItems(EDGES, typed, positions(seeds.times.shape[0]), edges=seeds.edges,
                             order_nodes=_order_nodes(seeds.edges, order), temporal=seeds)
        return SeedItems(NODES, typed, positions(seeds.nodes.shape[0]), temporal=seeds,
                         order_nodes=seeds.nodes)
    if sampler.link is not None:
        if typed:
            from .typed_edges import resolve_typed_edge_seeds

            edges = resolve_typed_edge_seeds(indices, info, sampler.link)
            return SeedItems(EDGES, typed, positions(edges.eids.shape[0]), edges=edges,
                             order_nodes=_order_nodes(edges, order))
        from ..edge_prediction import resolve_edge_seeds

        edges = resolve_edge_seeds(indices, info, sampler.link)
        # Items are positions into the seed-edge list; the sample stage turns them into nodes.
        return SeedItems(EDGES, typed, positions(edges.eids.shape[0]), edges=edges,
                         order_nodes=edges.dst)
    if typed:
        from ..typed import typed_seed_ids

        ids = typed_seed_ids(indices, schema)
    else:
        ids = check_indices(indices, info.num_nodes)
    repeated = has_repeats(ids)
    if repeated and order == "proximity":
        raise ValueError("order='proximity' needs distinct seed ids (its BFS visits each node once); "
                         "pass torch.unique(ids), or use order='random' to keep the repeats")
    return SeedItems(NODES, typed, ids, repeated=repeated)


def _order_nodes(edges, order: str) -> Optional[np.ndarray]:
    """The node proximity order places each seed edge by (its destination).  A typed DGLGraph's seed
    edges hold no destinations (found per batch: :mod:`.typed_located`); they are made here only for a
    proximity order, the one reader (a random order never reads them)."""
    if edges.dst is not None:
        return edges.dst
    return edges.order_nodes if order == "proximity" else None
