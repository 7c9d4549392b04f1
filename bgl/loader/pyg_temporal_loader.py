"""``bgl.pyg.NeighborLoader`` / ``LinkNeighborLoader`` with ``time_attr=``: PyG's temporal loaders on bgl.

``NeighborLoader(data, num_neighbors, time_attr="time", input_time=..., temporal_strategy="uniform" |
"last")`` and ``LinkNeighborLoader(..., time_attr=, edge_label_time=)`` on a homogeneous ``Data`` (node-
or edge-level times, decided as PyG decides it), a store, a partition dir or graph servers (``time_attr``
then names an int64 edge array, e.g. ``bgl ingest --edge-time-column``'s ``timestamp``).  Both go
through :class:`bgl.DataLoader` with a :class:`bgl.TemporalNeighborSampler` in its disjoint layout:
no sampled edge (or, with node times, node) is newer than its subgraph's seed time, at any hop.
Batches have PyG's disjoint layout (:mod:`bgl.loader.pyg_temporal`): ``n_id``, ``batch``,
``edge_index``, ``e_id``, ``num_sampled_nodes`` / ``num_sampled_edges``, ``x``, the ``Data``'s own node
(at ``n_id``) and edge (at ``e_id``) attributes, and ``input_id`` / ``seed_time`` / ``batch_size``
(node loader) or ``edge_label_index`` / ``edge_label`` / ``edge_label_time`` (link loader; triplet
negatives: ``src_index`` / ``dst_pos_index`` / ``dst_neg_index`` / ``seed_time``).

Departs from PyG 2.8 where PyG has no value to give: ``seed_time`` is the seeds' times actually
used also when ``input_time`` is not given (PyG leaves it None); ``disjoint`` is accepted and
ignored, temporal sampling being always disjoint (PyG forces it too).  Not supported (one line each):
``replace=True``, ``weight_attr=`` with times, ``HeteroData`` (its typed temporal batches).

Cost: the link loader lays out one chunk of :data:`CHUNK_BATCHES` batches' seeds at a time (its
positives and their negatives, 16 B per seed) and runs one ``bgl.DataLoader`` per chunk (its pipeline
starts once per chunk); the node loader is one ``bgl.DataLoader`` over its seeds and their times.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterator, Optional, Sequence

import numpy as np
import torch

from .pyg_base import PygLoaderBase, _pyg_data_class, input_fields, is_pyg_data
from .pyg_batches import PygDataBuilder
from .pyg_layout import blocks_to_pyg
from .pyg_options import pyg_options
from .pyg_temporal import (TimedSeedPositions, disjoint_fields, link_seeds, node_seed_fields, seed_times,
                           temporal_args, time_source)

#: Batches of a temporal link loader laid out (and sampled by one bgl.DataLoader) at a time.
CHUNK_BATCHES = 1024


def temporal_graph(data, time_attr: Optional[str], loader: str) -> tuple[Any, str, Optional[np.ndarray]]:
    """``(graph for bgl.DataLoader, "node" | "edge", node times or None)`` of PyG input ``data``.

    A ``Data``'s node times ride on its arrays as ``ndata[time_attr]`` (where the temporal sampler reads
    node times); any other input names an edge array, checked here for a local store.
    """
    from .pyg_base import data_arrays

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
    names = getattr(getattr(store, "meta", None), "edata", None)
    if names is not None and time_attr not in names:
        raise ValueError(f"time_attr={time_attr!r} is not an edge array of the store (it has {sorted(names)}); "
                         "a store keeps edge times (bgl ingest --edge-time-column)")
    return data, "edge", None


def temporal_sampler(num_neighbors: Sequence[int], kind: str, time_attr: str, strategy: str):
    """The :class:`bgl.TemporalNeighborSampler` of PyG's ``num_neighbors`` (-1: every eligible edge)."""
    from ..sampler.ops import MAX_FANOUT
    from .temporal_sampler import TemporalNeighborSampler

    fanouts = [MAX_FANOUT if f == -1 else f for f in reversed(list(num_neighbors))]
    names = {f"{kind}_timestamp_attr_name": time_attr}
    return TemporalNeighborSampler(fanouts, strategy=strategy, layout="disjoint", **names)


def _refuse(replace, weight_attr, loader: str) -> None:
    if replace:
        raise ValueError(f"bgl.pyg.{loader} with time_attr= does not support replace=True (each eligible edge "
                         "is drawn at most once); drop it")
    if weight_attr is not None:
        raise ValueError(f"bgl.pyg.{loader} with time_attr= does not support weight_attr= (weighted temporal "
                         "sampling is not supported yet); drop one of them")


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

    Parameters as :class:`~bgl.loader.pyg_loader.NeighborLoader`, plus ``time_attr`` (required),
    ``input_time`` (int64 [num seeds]; default with node-level times: the seeds' own; required with
    edge-level ones), ``temporal_strategy`` ("uniform" | "last") and ``disjoint`` (ignored: always).
    """

    def __init__(self, data, num_neighbors: Sequence[int], input_nodes=None, replace: bool = False,
                 batch_size: int = 1, shuffle: bool = False, drop_last: bool = False, num_workers: int = 0,
                 weight_attr: Optional[str] = None, edge_attr: Optional[str] = None, **kwargs):
        from .dataloader import DataLoader

        args = temporal_args(kwargs)
        self.options = pyg_options(kwargs, "NeighborLoader")
        _refuse(replace, weight_attr, "NeighborLoader")
        if edge_attr is not None:
            raise ValueError("edge_attr= with time_attr=: a Data's edge attributes come along at e_id by "
                             "themselves; drop it")
        graph, kind, node_time = temporal_graph(data, args.time_attr, "NeighborLoader")
        self.data, self.edge_attr = data, None
        ids, by_id = self._input_ids(input_nodes, self._num_nodes(graph))
        times = seed_times(args.input_time, kind, node_time, ids.numpy())
        self._input_id = TimedSeedPositions(ids.numpy(), times, by_id, self.options.input_id)
        self.num_neighbors = list(num_neighbors)
        self._fields = input_fields(data, None)
        self.batch_size = int(batch_size)
        self.dataset = range(int(ids.shape[0]))
        sampler = temporal_sampler(self.num_neighbors, kind, args.time_attr, args.strategy)
        self._loader = DataLoader(graph, ids, sampler, seed_time=torch.from_numpy(times), batch_size=batch_size,
                                  shuffle=shuffle, drop_last=drop_last, num_workers=num_workers, blocks="bgl",
                                  **kwargs)
        self._data_class = _pyg_data_class()
        self._build_data = None if self._data_class is None else PygDataBuilder(self._data_class)

    def __iter__(self) -> Iterator[Any]:
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

    Parameters as :class:`~bgl.loader.pyg_link_loader.LinkNeighborLoader`, plus ``time_attr`` and
    ``edge_label_time`` (int64 [num pairs]; both or neither, PyG's rule) and ``temporal_strategy``.
    Each pair's subgraphs (its two ends, and its negatives') grow at its ``edge_label_time``.
    """

    def __init__(self, data, num_neighbors: Sequence[int], edge_label_index=None, edge_label=None,
                 replace: bool = False, neg_sampling=None, neg_sampling_ratio: Optional[float] = None,
                 batch_size: int = 1, shuffle: bool = False, drop_last: bool = False, num_workers: int = 0,
                 **kwargs):
        from ..sampler.temporal import check_times
        from .arguments import resolve_graph
        from .pyg_negatives import _check_label_index, _negatives, check_edge_label

        args = temporal_args(kwargs)
        self.options = pyg_options(kwargs, "LinkNeighborLoader")
        _refuse(replace, kwargs.pop("weight_attr", None), "LinkNeighborLoader")
        if args.edge_label_time is None:
            raise ValueError("bgl.pyg.LinkNeighborLoader: edge_label_time= is required with time_attr= (PyG's "
                             "rule): one int64 time per pair of edge_label_index")
        graph, kind, self._node_time = temporal_graph(data, args.time_attr, "LinkNeighborLoader")
        self.data, self._graph = data, graph
        self._fields = input_fields(data, None)
        if edge_label_index is None:
            if not is_pyg_data(data):
                raise ValueError("edge_label_index=None (all edges) needs a Data input; pass the pairs")
            edge_label_index = data.edge_index
        num_nodes = self._num_nodes(graph)
        if num_nodes is None:
            num_nodes = resolve_graph(graph, None, None, float(kwargs.get("server_timeout", 5.0))).num_nodes
        self._num_nodes_ = num_nodes
        self._pairs = _check_label_index(edge_label_index, num_nodes)
        n = self._pairs.shape[1]
        self._label_time = check_times(args.edge_label_time, n, "edge_label_time")
        self._given_input_id = self._user_input_id(n)
        self.neg_sampling = _negatives(neg_sampling, neg_sampling_ratio)
        self.edge_label = check_edge_label(edge_label, n, self.neg_sampling)
        self.num_neighbors = list(num_neighbors)
        self._sampler = temporal_sampler(self.num_neighbors, kind, args.time_attr, args.strategy)
        self.batch_size, self._shuffle, self._drop_last = int(batch_size), shuffle, drop_last
        if kwargs.get("order", "random") != "random":  # batches are laid out in the loader's own order
            raise ValueError(f"bgl.pyg.LinkNeighborLoader with time_attr= takes order='random' only (shuffle= "
                             f"orders the pairs), got order={kwargs['order']!r}")
        self._loader_kwargs = dict(kwargs, num_workers=num_workers)
        self.dataset = range(n)
        self._loader = None
        self._data_class = _pyg_data_class()
        self._build_data = None if self._data_class is None else PygDataBuilder(self._data_class)

    _NO_STATE = ("bgl.pyg.LinkNeighborLoader with time_attr= cannot save its position yet (its batches and "
                 "negatives are laid out per epoch); restart the epoch instead")

    def state_dict(self) -> dict:
        raise NotImplementedError(self._NO_STATE)

    def load_state_dict(self, state: dict) -> None:
        raise NotImplementedError(self._NO_STATE)

    def __len__(self) -> int:
        n = self._pairs.shape[1]
        return n // self.batch_size if self._drop_last else math.ceil(n / self.batch_size)

    def __iter__(self) -> Iterator[Any]:
        from ..sampler.ops import layer_seed
        from ..sampler.multilayer import draw_seed

        n = self._pairs.shape[1]
        order = torch.randperm(n).numpy() if self._shuffle else np.arange(n)
        epoch_seed = draw_seed()  # negatives: one stream per batch, torch.manual_seed reproduces them
        starts = list(range(0, len(self) * self.batch_size, self.batch_size))
        for chunk in range(0, len(starts), CHUNK_BATCHES):
            picks = [order[s:s + self.batch_size] for s in starts[chunk:chunk + CHUNK_BATCHES]]
            links = [self._link_seeds(idx, layer_seed(epoch_seed, chunk + k)) for k, idx in enumerate(picks)]
            yield from self._chunk(picks, links)

    def _link_seeds(self, idx: np.ndarray, seed: int):
        label = None if self.edge_label is None else self.edge_label[torch.from_numpy(idx)]
        return link_seeds(self._pairs[0, idx], self._pairs[1, idx], self._label_time[idx], label,
                          self.neg_sampling, self._num_nodes_, seed, self._node_time)

    def _chunk(self, picks: list, links: list) -> Iterator[Any]:
        """The batches of one chunk: its seeds laid out batch after batch (every batch but the last has
        the same count), sampled by one ``bgl.DataLoader`` in that order."""
        from .dataloader import DataLoader

        nodes = np.concatenate([ls.seeds for ls in links])
        times = np.concatenate([ls.times for ls in links])
        self.close()
        self._loader = DataLoader(self._graph, torch.from_numpy(nodes), self._sampler,
                                  seed_time=torch.from_numpy(times), batch_size=int(links[0].seeds.shape[0]),
                                  shuffle=False, drop_last=False, blocks="bgl", **self._loader_kwargs)
        for idx, ls, (_, _, blocks) in zip(picks, links, self._loader):
            fields = self._layout(blocks, ls.subgraph(blocks[0].srcdata["batch"]))
            fields.update(ls.fields)
            input_id = torch.from_numpy(idx)
            fields["input_id"] = input_id if self._given_input_id is None else self._given_input_id[input_id]
            self._add_data_fields(fields)
            yield self.options.finish(self._make(fields))
