"""A temporal loader's seeds, checked once: node ids or seed edge ids, a time each, the graph's time arrays.

:func:`resolve_temporal_seeds` is what :func:`~bgl.loader.seeds.items.resolve_seeds` calls when the
sampler is a :class:`~bgl.loader.temporal_sampler.TemporalNeighborSampler` (or ``seed_time=`` is
given): every problem is one ValueError / TypeError naming it, before any process starts.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .temporal_edges import LaidOutSeeds, TemporalEdgeSeeds, TemporalTypedEdgeSeeds
from ..temporal_sampler import TemporalOptions, TemporalSeeds


def resolve_temporal_seeds(indices, seed_time, info, options: Optional[TemporalOptions], link=None,
                           schema=None):
    """The :class:`TemporalSeeds` of node ids ``indices`` at ``seed_time`` (with ``link``, the
    edge-prediction settings, a :class:`~bgl.loader.seeds.temporal_edges.TemporalEdgeSeeds` of seed edge
    ids); ValueError / TypeError naming what is missing or malformed (a time per seed, int64; the
    graph's time arrays), before anything runs."""
    from ...sampler.temporal.sampling import check_times
    from ..arguments import check_indices

    if options is None:
        raise ValueError("seed_time= is for temporal sampling: give a bgl.TemporalNeighborSampler(fanouts, "
                         "edge_timestamp_attr_name=...) as the graph_sampler, or drop seed_time")
    _check_weights(info, options.prob_name, schema)
    if schema is not None:
        return _typed_seeds(indices, seed_time, info, options, link, schema)
    edges = None
    if link is not None:
        from ..edge_prediction import resolve_edge_seeds

        if link.exclude is not None:
            raise ValueError(f"exclude={link.exclude!r}: temporal link prediction excludes by time, not by id (give "
                             "each seed edge a seed_time before its own time, e.g. time - 1); pass exclude=None")
        edges = resolve_edge_seeds(indices, info, link)
        nodes = edges.dst
    else:
        nodes = check_indices(indices, info.num_nodes)
    if seed_time is None:
        raise ValueError("a TemporalNeighborSampler needs a time for every seed: bgl.DataLoader(..., seed_time=times)")
    times = check_times(seed_time, int(nodes.shape[0]), "seed_time")
    if options.edge_time is not None:
        _check_edge_time(info, options.edge_time)
    node_time = None if options.node_time_name is None else _node_times(options.node_time_name, info)
    if edges is None:
        return TemporalSeeds(options, node_time, nodes=nodes, times=times)
    return TemporalEdgeSeeds(options, node_time, times=times, edges=edges)


def _check_weights(info, name: Optional[str], schema) -> None:
    """One line, before anything runs, for weights the temporal sampler cannot draw by: on a typed graph (its
    layer draws per relation without them), or an edge array the graph lacks (graph servers: one that not
    every server lists; they check its values on the first request) or that is not weights."""
    if name is None:
        return
    if schema is not None and not schema.is_homogeneous:
        raise ValueError(f"prob_name={name!r}: weighted temporal sampling runs on an untyped graph (a DGLGraph, a "
                         "PyG Data, a store or its graph servers), not on a typed graph; sample it without weights")
    if info.spec.kind != "store":
        if info.edge_names is not None and name not in info.edge_names:
            raise ValueError(f"prob_name={name!r}: the graph servers have no edge array {name!r}; they have "
                             f"{sorted(info.edge_names) or 'none'}")
        return
    from ...sampler import ops

    store, values = _local_edge_array(info, "prob_name", name)
    ops.check_weights(values, int(store.num_edges), name)


def _check_edge_time(info, name: str) -> None:
    """ValueError when a local graph lacks edge array ``name`` or it is not int64 [num_edges] times."""
    if info.spec.kind != "store":
        return  # graph servers check the name on the first request (their parts hold the arrays)
    from ...sampler.temporal.sampling import check_times

    store, arr = _local_edge_array(info, "edge_timestamp_attr_name", name)
    check_times(arr, int(store.num_edges), f"edge time array {name!r}")


def _local_edge_array(info, what: str, name: str):
    """``(store, edge array name)`` of a local graph (its arrays, or its store opened by path); ValueError
    naming the argument ``what`` and the edge arrays there are when it has none of that name."""
    store = info.store  # the arrays, or the store the graph was resolved from (opened once)
    try:
        return store, store.edge_array(name)
    except KeyError as e:
        raise ValueError(f"{what}={name!r}: {e.args[0]}") from None


def _node_times(name: str, info) -> Optional[np.ndarray]:
    """Node times ``name`` of an in-memory graph (a DGLGraph's ``g.ndata[name]``) as int64 [num_nodes];
    None for a store or graph servers, which sample by the name (checked here, nothing read)."""
    from ...sampler.temporal.sampling import check_times

    if _names_node_times(info, name):
        return None
    ndata = getattr(info.graph, "ndata", None)
    if ndata is None or name not in ndata:
        raise ValueError(f"node_timestamp_attr_name={name!r}: the graph has no node array {name!r} (node times "
                         f"come from g.ndata, or a store's node array: bgl ingest --node-time)")
    return check_times(ndata[name], int(info.num_nodes), f"node time array {name!r}")


def _names_node_times(info, name: str) -> bool:
    """True when the layers read node times ``name`` themselves, by name: a store's node array (memory-mapped:
    never a copy per loader or stage process; its layer keys each edge by its source's time, 8 B per edge)
    or the servers' (each part's copy of its in-edges' source times); ValueError listing the node arrays
    there are, or naming a non-integer one.  False for an in-memory graph (its ``ndata``)."""
    from ...sampler.temporal.sampling import check_times

    if info.spec.kind == "servers":
        have = getattr(info, "node_names", None)
        if have is not None and name not in have:
            raise ValueError(f"node_timestamp_attr_name={name!r}: the graph servers have no node array {name!r} "
                             f"(with its source copy, written by bgl partition); they have {sorted(have) or 'none'}")
        return True
    store = info.store
    if not hasattr(store, "node_array"):
        return False  # a DGLGraph's arrays: its g.ndata
    try:
        arr = store.node_array(name)
    except KeyError as e:
        raise ValueError(f"node_timestamp_attr_name={name!r}: {e.args[0]}") from None
    check_times(arr[:0] if arr.ndim == 1 else arr, 0, f"node time array {name!r} of {store.path}")  # dtype only
    return True


def _typed_seeds(indices, seed_time, info, options: TemporalOptions, link, schema) -> TemporalSeeds:
    """Typed node seeds ``{ntype: ids}`` at ``seed_time`` (``{ntype: times}``, the same types and lengths;
    a tensor for a one-type graph), fanouts per relation for each hop."""
    from ...sampler.temporal.sampling import check_times
    from ..typed import typed_fanouts, typed_seed_ids

    if link is not None:
        return _typed_edge_seeds(indices, seed_time, info, options, link, schema)
    nodes = typed_seed_ids(indices, schema)
    if seed_time is None:
        raise ValueError("a TemporalNeighborSampler needs a time for every seed: seed_time={ntype: times}")
    if isinstance(indices, dict) != isinstance(seed_time, dict) or (
            isinstance(seed_time, dict) and list(seed_time) != list(indices)):
        raise ValueError(f"seed_time must give the seeds' node types in their order "
                         f"({list(indices) if isinstance(indices, dict) else 'a tensor'}), got "
                         f"{list(seed_time) if isinstance(seed_time, dict) else type(seed_time).__name__}")
    if isinstance(seed_time, dict):
        times = np.concatenate([check_times(seed_time[nt], len(ids), f"seed_time[{nt!r}]")
                                for nt, ids in indices.items()]) if seed_time else np.zeros(0, np.int64)
    else:
        times = check_times(seed_time, int(nodes.shape[0]), "seed_time")
    if options.edge_time is not None:
        _check_edge_time(info, options.edge_time)
    node_time = None
    if options.node_time_name is not None:
        node_time = _typed_node_times(options.node_time_name, schema, info)
    fanouts = typed_fanouts(list(options.hop_fanouts), schema)
    return TemporalSeeds(options, node_time, typed_fanouts=fanouts, schema=schema, nodes=nodes, times=times)


def _typed_node_times(name: str, schema, info) -> Optional[np.ndarray]:
    """Node times ``name`` of a heterogeneous DGLGraph (``g.nodes[t].data[name]`` for every type) or typed
    arrays carrying ``type_ndata[name] = {ntype: times}`` (a PyG HeteroData's), as int64 over global ids
    (types in the schema's order); None for a typed store or graph servers (sampled by the name)."""
    from ...sampler.temporal.sampling import check_times

    if _names_node_times(info, name):
        return None
    graph = info.graph
    nodes = getattr(graph, "nodes", None)
    given = getattr(graph, "type_ndata", {}).get(name)  # typed arrays' {ntype: times} (a PyG HeteroData's)
    parts = []
    for nt in schema.node_types:
        if given is not None:
            data = {name: given[nt.name]} if nt.name in given else None
        else:
            data = None if nodes is None or not hasattr(graph, "ntypes") else graph.nodes[nt.name].data
        if data is None or name not in data:
            raise ValueError(f"node_timestamp_attr_name={name!r}: node type {nt.name!r} has no node array {name!r} "
                             "(a heterogeneous DGLGraph's g.nodes[ntype].data, or a typed store's node array: "
                             "bgl ingest --node-time NTYPE=FILE)")
        parts.append(check_times(data[name], nt.count, f"node time array {name!r} of {nt.name!r}"))
    return np.concatenate(parts)


def _typed_edge_seeds(indices, seed_time, info, options: TemporalOptions, link, schema):
    """Typed seed edges ``{etype: eids}`` at ``seed_time`` (``{etype: times}``, the same keys in order;
    a tensor for a one-relation graph): every endpoint its own seed, exclusion by time only."""
    import dataclasses

    from ...sampler.temporal.sampling import check_times
    from ..typed import typed_fanouts
    from .typed_edges import resolve_typed_edge_seeds

    if link.exclude is not None:
        raise ValueError(f"exclude={link.exclude!r}: temporal link prediction excludes by time, not by id (give "
                         "each seed edge a seed_time before its own time, e.g. time - 1); pass exclude=None")
    edges = dataclasses.replace(resolve_typed_edge_seeds(indices, info, link), node_order="disjoint")
    if seed_time is None:
        raise ValueError("a TemporalNeighborSampler needs a time for every seed edge: seed_time={etype: times}")
    if isinstance(indices, dict):
        if not isinstance(seed_time, dict) or list(seed_time) != list(indices):
            raise ValueError(f"seed_time must give the seed edges' types in their order ({list(indices)}), got "
                             f"{list(seed_time) if isinstance(seed_time, dict) else type(seed_time).__name__}")
        times = np.concatenate([check_times(seed_time[k], len(ids), f"seed_time[{k!r}]") for k, ids in indices.items()]
                               ) if indices else np.zeros(0, np.int64)
    else:
        times = check_times(seed_time, int(edges.eids.shape[0]), "seed_time")
    if options.edge_time is not None:
        _check_edge_time(info, options.edge_time)
    node_time = None if options.node_time_name is None else _typed_node_times(options.node_time_name, schema,
                                                                              info)
    return TemporalTypedEdgeSeeds(options, node_time, times=times,
                                  typed_fanouts=typed_fanouts(list(options.hop_fanouts), schema), schema=schema,
                                  edges=edges)


def laid_out_seeds(indices, layout, info, options: Optional[TemporalOptions],
                   schema=None) -> tuple[np.ndarray, LaidOutSeeds]:
    """``(items, seeds)``: the checked item positions ``indices`` into ``layout`` (``layout.num_items``
    items, ``layout.order_nodes`` the node proximity order places each by) and their
    :class:`~bgl.loader.seeds.temporal_edges.LaidOutSeeds`, sampled by ``options``' temporal sampler."""
    from ..arguments import check_indices

    if options is None:
        raise ValueError("seed_layout= lays out temporal seeds: give a bgl.TemporalNeighborSampler")
    items = check_indices(indices, int(layout.num_items))
    _check_weights(info, options.prob_name, schema)
    if options.edge_time is not None:
        _check_edge_time(info, options.edge_time)
    if schema is not None:  # a typed graph: the layout gives global ids; fanouts per relation
        from ..typed import typed_fanouts

        node_time = None if options.node_time_name is None else _typed_node_times(options.node_time_name,
                                                                                  schema, info)
        return items, LaidOutSeeds(options, node_time, layout=layout, schema=schema,
                                   typed_fanouts=typed_fanouts(list(options.hop_fanouts), schema))
    node_time = None if options.node_time_name is None else _node_times(options.node_time_name, info)
    return items, LaidOutSeeds(options, node_time, layout=layout)
