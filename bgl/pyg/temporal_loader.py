"""``bgl.pyg.NeighborLoader`` / ``LinkNeighborLoader`` with ``time_attr=``: PyG's temporal loaders on bgl.

``NeighborLoader(data, num_neighbors, time_attr="time", input_time=..., temporal_strategy="uniform" |
"last")`` and ``LinkNeighborLoader(..., time_attr=, edge_label_time=)`` on a homogeneous ``Data`` (node-
or edge-level times, decided as PyG decides it), a store (``time_attr`` names its int64 node array, from
``bgl ingest --node-time``, or else its edge array, e.g. ``--edge-time-column``'s ``timestamp``), a
partition dir or graph servers (a node array every server lists, else an edge array; node times the loader
itself needs, a seed's own and the negatives', are read from the partition dir's part stores, so bare
addresses without ``BGL_PARTITION`` take ``input_time=`` and no negatives).  Both go
through :class:`bgl.DataLoader` with a :class:`bgl.TemporalNeighborSampler` in its disjoint layout:
no sampled edge (or, with node times, node) is newer than its subgraph's seed time, at any hop.
Batches have PyG's disjoint layout (:mod:`bgl.pyg.temporal`): ``n_id``, ``batch``,
``edge_index``, ``e_id``, ``num_sampled_nodes`` / ``num_sampled_edges``, ``x``, the ``Data``'s own node
(at ``n_id``) and edge (at ``e_id``) attributes, and ``input_id`` / ``seed_time`` / ``batch_size``
(node loader) or ``edge_label_index`` / ``edge_label`` / ``edge_label_time`` (link loader; triplet
negatives: ``src_index`` / ``dst_pos_index`` / ``dst_neg_index`` / ``seed_time``).

Departs from PyG 2.8 where PyG has no value to give: ``seed_time`` is the seeds' times actually
used also when ``input_time`` is not given (PyG leaves it None); ``disjoint`` is accepted and
ignored, temporal sampling being always disjoint (PyG forces it too).  ``weight_attr=`` draws among the
eligible edges by weight (a ``Data``, a store or its graph servers; refused with
``temporal_strategy="last"``).  Not supported (one line each): ``replace=True``.

Both are one ``bgl.DataLoader``: the node loader's items are its seeds at their times; the link loader's
are its pairs' positions, each batch's seeds (the pairs' ends and negatives, in PyG's order and at PyG's
times) laid out in the sample stage (:class:`~bgl.pyg.temporal.PygLinkLayout`), so every
pipeline, order and ``state_dict`` works as for any loader.  Cost: 24 B a pair (ends, time), plus labels.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator, Optional, Sequence

import numpy as np
import torch

from .base import PygLoaderBase, _pyg_data_class, input_fields, is_pyg_data
from .batches import PygDataBuilder
from .layout import blocks_to_pyg
from .options import pyg_options
from .temporal import (PygLinkLayout, TimedSeedPositions, disjoint_fields, node_seed_fields, seed_times,
                           temporal_args, time_source)

def temporal_graph(data, time_attr: Optional[str], loader: str,
                   timeout: float = 5.0) -> tuple[Any, str, Optional[np.ndarray]]:
    """``(graph for bgl.DataLoader, "node" | "edge", node times or None)`` of PyG input ``data``.

    A ``Data``'s node times ride on its arrays as ``ndata[time_attr]`` (where the temporal sampler reads
    node times); a local store's ``time_attr`` is its node array if it has one of that name, else an edge
    array (checked here).  Graph servers (addresses, or a partition dir with ``BGL_SERVERS``) are asked
    (INFO) whether ``time_attr`` is a node array of every part, node-level first as PyG decides; their node
    times are then read on this side from the partition dir's part stores when it is known (the ``data``
    itself or ``BGL_PARTITION``: :class:`~bgl.partition.node_arrays.PartitionNodeArray`), else None (the
    servers still filter by them; only PyG's defaults that need a seed's own time cannot be had).
    """
    from .base import data_arrays

    if time_attr is None:
        raise ValueError(f"bgl.pyg.{loader}: time_attr= is required for temporal sampling")
    if is_pyg_data(data):
        kind, times = time_source(data, time_attr)
        graph = data_arrays(data)
        if kind == "node":
            graph.ndata = {time_attr: torch.from_numpy(times)}
            return graph, kind, times
        return graph, kind, None
    if not isinstance(time_attr, str):
        raise TypeError(f"time_attr must name an edge array (a str), got {type(time_attr).__name__}")
    store = data
    if isinstance(data, (str, Path)) and (Path(data) / "meta.json").is_file():
        from ..store import GraphStore

        store = GraphStore(data, validate="none")
    if not hasattr(store, "meta"):  # graph servers: what their INFO lists
        return _server_time_source(data, time_attr, timeout)
    names = getattr(store.meta, "edata", None)
    nodes = getattr(store.meta, "ndata", None) or {}
    if time_attr in nodes:  # node-level first, as PyG decides: the store's node times (bgl ingest --node-time)
        from ..sampler.temporal.sampling import check_times

        return data, "node", check_times(store.node_array(time_attr), int(store.num_nodes), f"time_attr={time_attr!r}")
    if names is not None and time_attr not in names:
        raise ValueError(f"time_attr={time_attr!r} is neither a node nor an edge array of the store (it has node "
                         f"arrays {sorted(nodes)}, edge arrays {sorted(names)}; bgl ingest --node-time / "
                         "--edge-time-column)")
    return data, "edge", None


def _server_time_source(data, time_attr: str, timeout: float) -> tuple[Any, str, Optional[Any]]:
    """:func:`temporal_graph` of graph servers: node-level when every server lists ``time_attr`` in its
    ``ndata``, edge-level when in its ``edata``, else one line naming both lists."""
    from ..loader.graph_info import resolve_graph

    info = resolve_graph(data, None, None, timeout)
    nodes, edges = list(getattr(info, "node_names", [])), list(info.edge_names or [])
    if time_attr in nodes:
        node_time = None
        if info.partition_dir is not None:
            from ..partition.node_arrays import PartitionNodeArray

            node_time = PartitionNodeArray(info.partition_dir, time_attr)
            if node_time.dtype.kind not in "iu" or node_time.dtype == np.uint64 or len(node_time.shape) != 1:
                raise TypeError(f"time_attr={time_attr!r}: the partition's node array must be integers [num_nodes], "
                                f"got {node_time.dtype} {list(node_time.shape)}")
        return data, "node", node_time
    if time_attr not in edges:
        raise ValueError(f"time_attr={time_attr!r} is neither a node nor an edge array of every graph server (they "
                         f"have node arrays {nodes}, edge arrays {edges}; bgl ingest --node-time / "
                         "--edge-time-column, then bgl partition)")
    return data, "edge", None


def temporal_sampler(num_neighbors: Sequence[int], kind: str, time_attr: str, strategy: str,
                     weight_attr: Optional[str] = None):
    """The :class:`bgl.TemporalNeighborSampler` of PyG's ``num_neighbors`` (-1: every eligible edge),
    drawing by the edge array ``weight_attr`` among the eligible edges when given."""
    from ..loader.temporal_sampler import TemporalNeighborSampler

    fanouts = list(reversed(list(num_neighbors)))
    names = {f"{kind}_timestamp_attr_name": time_attr}
    return TemporalNeighborSampler(fanouts, strategy=strategy, layout="disjoint", prob_name=weight_attr, **names)


def _refuse(replace, weight_attr, strategy: str, loader: str) -> None:
    if replace:
        raise ValueError(f"bgl.pyg.{loader} with time_attr= does not support replace=True (each eligible edge "
                         "is drawn at most once); drop it")
    if weight_attr is not None and strategy == "last":
        raise ValueError(f"bgl.pyg.{loader}: weight_attr={weight_attr!r} weighs the uniform temporal draw; "
                         "temporal_strategy='last' takes the most recent eligible edges whatever their weight: "
                         "use temporal_strategy='uniform' or drop weight_attr")


class _TemporalBatches(PygLoaderBase):
    """What both temporal loaders do with a batch's disjoint blocks (they route here from
    ``bgl.pyg.NeighborLoader`` / ``LinkNeighborLoader``, which they therefore do not subclass)."""

    def _layout(self, blocks, batch=None) -> dict:
        layout = blocks_to_pyg(blocks)
        batch = blocks[0].srcdata["batch"] if batch is None else batch
        fields = disjoint_fields(layout["n_id"], batch, *layout["edge_index"], layout.get("e_id"),
                                 layout["num_sampled_nodes"], layout["num_sampled_edges"])
        fields["x"] = blocks[0].srcdata.get("feat")
        return fields

    def _make(self, fields: dict):
        if self._data_class is None:
            from types import SimpleNamespace

            return SimpleNamespace(**{k: v for k, v in fields.items() if v is not None})
        return self._build_data(fields)


class TemporalNeighborLoader(_TemporalBatches):
    """PyG's temporal ``NeighborLoader`` (what ``bgl.pyg.NeighborLoader(..., time_attr=)`` builds).

    Parameters as :class:`~bgl.pyg.loader.NeighborLoader`, plus ``time_attr`` (required),
    ``input_time`` (int64 [num seeds]; default with node-level times: the seeds' own; required with
    edge-level ones), ``temporal_strategy`` ("uniform" | "last") and ``disjoint`` (ignored: always).
    """

    def __init__(self, data, num_neighbors: Sequence[int], input_nodes=None, replace: bool = False,
                 batch_size: int = 1, shuffle: bool = False, drop_last: bool = False, num_workers: int = 0,
                 weight_attr: Optional[str] = None, edge_attr: Optional[str] = None, **kwargs):
        from ..loader.dataloader import DataLoader

        args = temporal_args(kwargs)
        self.options = pyg_options(kwargs, "NeighborLoader")
        _refuse(replace, weight_attr, args.strategy, "NeighborLoader")
        if edge_attr is not None:
            raise ValueError("edge_attr= with time_attr=: a Data's edge attributes come along at e_id by "
                             "themselves; drop it")
        graph, kind, node_time = temporal_graph(data, args.time_attr, "NeighborLoader",
                                                 float(kwargs.get("server_timeout", 5.0)))
        self.data, self.edge_attr = data, None
        ids, by_id = self._input_ids(input_nodes, self._num_nodes(graph))
        times = seed_times(args.input_time, kind, node_time, ids.numpy())
        self._input_id = TimedSeedPositions(ids.numpy(), times, by_id, self.options.input_id)
        self.num_neighbors = list(num_neighbors)
        self._fields = input_fields(data, None)
        self.batch_size = int(batch_size)
        self.dataset = range(int(ids.shape[0]))
        sampler = temporal_sampler(self.num_neighbors, kind, args.time_attr, args.strategy, weight_attr)
        self._loader = DataLoader(graph, ids, sampler, seed_time=torch.from_numpy(times), batch_size=batch_size,
                                  shuffle=shuffle, drop_last=drop_last, num_workers=num_workers, blocks="bgl",
                                  **kwargs)
        self._data_class = _pyg_data_class()
        self._build_data = None if self._data_class is None else PygDataBuilder(self._data_class)

    def _epoch_batches(self) -> Iterator[Any]:
        for _, seeds, blocks in self._loader:
            fields = self._layout(blocks)
            b = int(seeds.shape[0])
            seed_time = blocks[0].srcdata["seed_time"][:b]
            if self._fields is None:
                fields["y"] = blocks[-1].dstdata.get("label")
            fields.update(node_seed_fields(self._input_id(seeds, seed_time), seed_time.numpy()))
            self._add_data_fields(fields)
            yield self.options.finish(self._make(fields))


class TemporalLinkNeighborLoader(_TemporalBatches):
    """PyG's temporal ``LinkNeighborLoader`` (what ``bgl.pyg.LinkNeighborLoader(..., time_attr=)`` builds).

    Parameters as :class:`~bgl.pyg.link_loader.LinkNeighborLoader`, plus ``time_attr`` and
    ``edge_label_time`` (int64 [num pairs]; both or neither, PyG's rule) and ``temporal_strategy``.
    Each pair's subgraphs (its two ends, and its negatives') grow at its ``edge_label_time``.
    """

    def __init__(self, data, num_neighbors: Sequence[int], edge_label_index=None, edge_label=None,
                 replace: bool = False, neg_sampling=None, neg_sampling_ratio: Optional[float] = None,
                 batch_size: int = 1, shuffle: bool = False, drop_last: bool = False, num_workers: int = 0,
                 **kwargs):
        from ..sampler.temporal.sampling import check_times
        from ..loader.graph_info import resolve_graph
        from ..loader.dataloader import DataLoader
        from .negatives import _check_label_index, _negatives, check_edge_label

        args = temporal_args(kwargs)
        self.options = pyg_options(kwargs, "LinkNeighborLoader")
        weight_attr = kwargs.pop("weight_attr", None)
        _refuse(replace, weight_attr, args.strategy, "LinkNeighborLoader")
        if args.edge_label_time is None:
            raise ValueError("bgl.pyg.LinkNeighborLoader: edge_label_time= is required with time_attr= (PyG's "
                             "rule): one int64 time per pair of edge_label_index")
        graph, kind, self._node_time = temporal_graph(data, args.time_attr, "LinkNeighborLoader",
                                                      float(kwargs.get("server_timeout", 5.0)))
        self.data = data
        self._fields = input_fields(data, None)
        if edge_label_index is None:
            if not is_pyg_data(data):
                raise ValueError("edge_label_index=None (all edges) needs a Data input; pass the pairs")
            edge_label_index = data.edge_index
        num_nodes = self._num_nodes(graph)
        if num_nodes is None:
            num_nodes = resolve_graph(graph, None, None, float(kwargs.get("server_timeout", 5.0))).num_nodes
        self._pairs = _check_label_index(edge_label_index, num_nodes)
        n = self._pairs.shape[1]
        self._label_time = check_times(args.edge_label_time, n, "edge_label_time")
        self._given_input_id = self._user_input_id(n)
        self.neg_sampling = _negatives(neg_sampling, neg_sampling_ratio)
        self.edge_label = check_edge_label(edge_label, n, self.neg_sampling)
        if kind == "node" and self._node_time is None and self.neg_sampling is not None:
            raise ValueError("bgl.pyg.LinkNeighborLoader: negatives with node-level time_attr over graph servers "
                             "need the node times on the loader's side (a negative newer than its pair is redrawn, "
                             "PyG's rule), read from the partition dir's part stores: pass the partition dir "
                             "(BGL_SERVERS set) or set BGL_PARTITION, or drop the negatives")
        self.num_neighbors = list(num_neighbors)
        sampler = temporal_sampler(self.num_neighbors, kind, args.time_attr, args.strategy, weight_attr)
        self.batch_size = int(batch_size)
        self.dataset = range(n)
        # One bgl.DataLoader over the pairs' positions; each batch's seeds (its pairs' ends and its
        # negatives, PyG's order and times) are laid out in the sample stage by PygLinkLayout.
        layout = PygLinkLayout(self._pairs, self._label_time, self.edge_label, self.neg_sampling, num_nodes,
                               self._node_time)
        self._loader = DataLoader(graph, torch.arange(n), sampler, seed_layout=layout, batch_size=batch_size,
                                  shuffle=shuffle, drop_last=drop_last, num_workers=num_workers, blocks="bgl",
                                  **kwargs)
        self._data_class = _pyg_data_class()
        self._build_data = None if self._data_class is None else PygDataBuilder(self._data_class)

    def _epoch_batches(self) -> Iterator[Any]:
        for _, link, blocks in self._loader:
            fields = self._layout(blocks, link.subgraph(blocks[0].srcdata["batch"]))
            fields.update(link.fields)
            input_id = link.positions
            fields["input_id"] = input_id if self._given_input_id is None else self._given_input_id[input_id]
            self._add_data_fields(fields)
            yield self.options.finish(self._make(fields))
