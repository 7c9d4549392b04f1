"""A temporal loader's seeds, checked once: node ids or seed edge ids, a time each, the graph's time arrays.

:func:`resolve_temporal_seeds` is what :func:`~bgl.loader.seed_items.resolve_seeds` calls when the
sampler is a :class:`~bgl.loader.temporal_sampler.TemporalNeighborSampler` (or ``seed_time=`` is
given): every problem is one ValueError / TypeError naming it, before any process starts.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .temporal_edges import TemporalEdgeSeeds
from .temporal_sampler import TemporalOptions, TemporalSeeds


def resolve_temporal_seeds(graph, indices, seed_time, info, options: Optional[TemporalOptions], link=None):
    """The :class:`TemporalSeeds` of node ids ``indices`` at ``seed_time`` (with ``link``, the
    edge-prediction settings, a :class:`~bgl.loader.temporal_edges.TemporalEdgeSeeds` of seed edge
    ids); ValueError / TypeError naming what is missing or malformed (a time per seed, int64; the
    graph's time arrays), before anything runs."""
    from ..sampler.temporal import check_times
    from .arguments import check_indices

    if options is None:
        raise ValueError("seed_time= is for temporal sampling: give a bgl.TemporalNeighborSampler(fanouts, "
                         "edge_timestamp_attr_name=...) as the graph_sampler, or drop seed_time")
    if isinstance(indices, dict) or info.typed:
        raise ValueError("temporal sampling of a typed graph is not supported yet: it would mix relations under "
                         "one fanout; pass a homogeneous graph")
    edges = None
    if link is not None:
        from .edge_prediction import resolve_edge_seeds

        if link.exclude is not None:
            raise ValueError(f"exclude={link.exclude!r}: temporal link prediction excludes by time, not by id (give "
                             "each seed edge a seed_time before its own time, e.g. time - 1); pass exclude=None")
        edges = resolve_edge_seeds(graph, indices, info, link)
        nodes = edges.dst
    else:
        nodes = check_indices(indices, info.num_nodes)
    if seed_time is None:
        raise ValueError("a TemporalNeighborSampler needs a time for every seed: bgl.DataLoader(..., seed_time=times)")
    times = check_times(seed_time, int(nodes.shape[0]), "seed_time")
    if options.edge_time is not None:
        _check_edge_time(info, options.edge_time)
    node_time = None if options.node_time_name is None else _node_times(graph, options.node_time_name, info)
    if edges is None:
        return TemporalSeeds(nodes, times, options, node_time)
    return TemporalEdgeSeeds(np.zeros(0, np.int64), times, options, node_time, edges=edges)


def _check_edge_time(info, name: str) -> None:
    """ValueError when a local graph lacks edge array ``name`` or it is not int64 [num_edges] times."""
    if info.spec.kind != "store":
        return  # graph servers check the name on the first request (their parts hold the arrays)
    from ..sampler.temporal import check_times

    store = info.spec.arrays
    if store is None:
        from ..store import GraphStore

        store = GraphStore(info.spec.path, validate="none")
    try:
        arr = store.edge_array(name)
    except KeyError as e:
        raise ValueError(f"edge_timestamp_attr_name={name!r}: {e.args[0]}") from None
    check_times(arr, int(store.num_edges), f"edge time array {name!r}")


def _node_times(graph, name: str, info) -> np.ndarray:
    """Node times ``name`` of ``graph`` (``graph.ndata[name]``) as int64 [num_nodes]."""
    from ..sampler.temporal import check_times

    ndata = getattr(graph, "ndata", None)
    if ndata is None or name not in ndata:
        raise ValueError(f"node_timestamp_attr_name={name!r}: the graph has no node array {name!r} (node times "
                         f"come from g.ndata; a store keeps edge times only: use edge_timestamp_attr_name=)")
    return check_times(ndata[name], int(info.num_nodes), f"node time array {name!r}")
