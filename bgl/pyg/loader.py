"""``bgl.pyg.NeighborLoader``: PyG's ``torch_geometric.loader.NeighborLoader``, backed by bgl.

Swap ``from torch_geometric.loader import NeighborLoader`` for
``from bgl.pyg import NeighborLoader`` and a PyG training loop runs on bgl's
sampler, feature cache and epoch order (it wraps :class:`bgl.DataLoader` with
bgl blocks).  PyG's own loader needs ``pyg-lib`` or ``torch-sparse``, which
have no PyPI wheels; this one needs neither, and not even PyG itself unless
the input is a ``torch_geometric.data.Data``.

Each mini-batch is laid out as PyG's:

* ``n_id`` int64 [N]: global ids of every sampled node, seeds first, then the
  nodes first reached at hop 1, hop 2, ...
* ``batch_size``: number of seeds (``n_id[:batch_size]`` are the seeds, in
  batch order);
* ``edge_index`` int64 [2, E] over local ids (positions in ``n_id``); row 0 is
  the source (the sampled neighbour), row 1 the target.  Like PyG, each node's
  in-edges are sampled once, at the hop that reached it (``num_neighbors[h]``
  for nodes first reached at hop ``h``; seeds use ``num_neighbors[0]``); nodes
  of the last hop have none;
* ``x`` [N, F] features of ``n_id`` (from bgl's pipeline and feature cache);
* ``input_id`` [batch_size]: the seeds' positions in ``input_nodes`` (their node ids for
  ``input_nodes=None`` or a mask), as PyG numbers them;
* a ``Data`` input's own attributes, as PyG's ``filter_data`` gives them
  (:mod:`bgl.pyg.fields`): ``y``, ``train_mask``, ``year`` and every other node-level
  attribute at ``n_id``, every edge-level one at ``e_id``, graph-level ones as they are.  From a
  store or servers, ``y`` holds the labels of the **seeds** only (``[batch_size]``; a loop reads
  ``y[:batch_size]``, which is the same);
* ``num_sampled_nodes`` / ``num_sampled_edges``: per-hop counts, as PyG's
  (for ``trim_to_layer``);
* ``edge_attr`` [E, ...] rows of the sampled edges when the ``Data`` has an
  ``edge_attr``, and ``e_id`` (their positions in ``data.edge_index``) when the
  input is a ``Data``; ``weight_attr="w"`` samples by the edge attribute ``w``
  (bgl's weighted sampling, as ``NeighborSampler(prob="w")``).

A batch is a ``torch_geometric.data.Data`` when PyG is importable, else a
:class:`PygBatch` with the same attributes.

Cost: a ``Data`` input's ``x`` and ``y`` are used in place (zero-copy views,
:class:`~bgl.loader.graph_arrays.GraphArrays`); its ``edge_index`` (COO) is
sorted once into an in-memory CSC: 8 bytes per node of ``indptr`` and 8 per
edge of source ids, 8 per edge of CSC edge ids (the sort order, kept for
``e_id`` and edge attributes), plus edge attributes permuted to CSC order on
first use (``itemsize * width`` per edge per attribute used).  No file is
written.  A store, partition dir or server list is used in place.  Per batch, the conversion from bgl blocks
is one pass over the sampled edges, plus one ``index_select`` per attribute of a ``Data`` input.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional, Sequence

import torch

from .base import PygLoaderBase
from .base import _pyg_data_class, data_arrays, input_fields, is_pyg_data, pyg_graph  # noqa: F401 (re-exported)
from .batches import PygDataBuilder
from .layout import _pyg_layout_cpu, _pyg_layout_torch, blocks_to_pyg  # noqa: F401 (re-exported)
from .options import pyg_options


@dataclass
class PygBatch:
    """A PyG-shaped mini-batch for when ``torch_geometric`` is not installed (attributes as ``Data``)."""

    n_id: torch.Tensor
    batch_size: int
    edge_index: torch.Tensor
    x: Optional[torch.Tensor] = None
    y: Optional[torch.Tensor] = None
    num_sampled_nodes: list = field(default_factory=list)
    num_sampled_edges: list = field(default_factory=list)
    edge_attr: Optional[torch.Tensor] = None
    e_id: Optional[torch.Tensor] = None
    input_id: Optional[torch.Tensor] = None

    @property
    def num_nodes(self) -> int:
        return int(self.n_id.shape[0])

    @property
    def num_edges(self) -> int:
        return int(self.edge_index.shape[1])

    def to(self, device, non_blocking: bool = False) -> "PygBatch":
        mv = lambda t: None if t is None else t.to(device, non_blocking=non_blocking)  # noqa: E731
        return PygBatch(mv(self.n_id), self.batch_size, mv(self.edge_index), mv(self.x), mv(self.y),
                        list(self.num_sampled_nodes), list(self.num_sampled_edges), mv(self.edge_attr),
                        mv(self.e_id), mv(self.input_id))


def edge_attr_name(graph, edge_attr: Optional[str]) -> Optional[str]:
    """The edge array a PyG batch carries as ``edge_attr``: ``edge_attr`` when given (a str),
    else ``"edge_attr"`` if the graph (a ``Data``'s arrays, a store or store dir) has one."""
    if edge_attr is not None:
        if not isinstance(edge_attr, str):
            raise TypeError(f"edge_attr must name an edge array (a str), got {type(edge_attr).__name__}")
        return edge_attr
    names = getattr(graph, "edata", None)
    if names is None:
        from ..store import GraphStore

        meta = getattr(graph, "meta", None)
        if meta is None and isinstance(graph, (str, Path)) and (Path(graph) / "meta.json").is_file():
            meta = GraphStore(graph).meta
        names = getattr(meta, "edata", None) or {}
    return "edge_attr" if "edge_attr" in names else None


class NeighborLoader(PygLoaderBase):
    """PyG's ``NeighborLoader(data, num_neighbors, input_nodes=None, replace=False, batch_size=1, shuffle=False)``.

    Parameters
    ----------
    data : ``torch_geometric.data.Data`` | GraphStore | store dir | partition dir | list of server addresses
    num_neighbors : list of int, PyG order: ``num_neighbors[0]`` for the seeds' hop; -1 = all
    input_nodes : None (all nodes) | int ids | bool mask over nodes
    replace : sample with replacement
    weight_attr : name of an edge attribute of ``data`` (or an edge array of the store / servers):
        sample neighbours proportionally to it (PyG's ``weight_attr``)
    edge_attr : (bgl) the edge array delivered as the batch's ``edge_attr``: any edge array of
        ``data``, the store or the servers' parts; default ``"edge_attr"`` when ``data`` or the
        store has one (servers: only when named, the loader does not ask them before it starts)
    batch_size : as in PyG
    shuffle : as in PyG
    drop_last : as in PyG
    num_workers : as in PyG (``num_workers > 0`` runs bgl's process pipeline)
    **kwargs : ``transform=`` (a callable applied to every batch before it is yielded, PyG's
        ``transform``), ``input_id=`` (PyG's numbering of ``input_nodes``; default: positions in
        ``input_nodes``, node ids for ``None`` or a mask; read back per batch as ``batch.input_id``)
        and bgl.DataLoader options (``cache``, ``cache_ratio``, ``order``,
        ``pipeline``, ``device``, ...).  PyG's options that only tune its own workers
        (``filter_per_worker``, ``is_sorted``, ``persistent_workers``, ...) are accepted and
        ignored; its non-directional options raise ``ValueError`` naming the option
        (:mod:`bgl.pyg.options`), on every kind of ``data``.  ``time_attr=`` (with
        ``input_time=``, ``temporal_strategy=``) makes PyG's temporal loader
        (:mod:`bgl.pyg.temporal_loader`).
    """

    def __new__(cls, data=None, *args, **kwargs):
        from .hetero import HeteroNeighborLoader, is_hetero_data

        if is_hetero_data(data):  # PyG's one NeighborLoader takes Data and HeteroData alike
            if cls is not NeighborLoader:
                raise ValueError(f"bgl.pyg.{cls.__name__} does not support a HeteroData yet; pass "
                                 "data.to_homogeneous(), or bgl.DataLoader with bgl.as_edge_prediction_sampler")
            if kwargs.get("time_attr") is not None:  # bgl/pyg/hetero_temporal.py
                from .hetero_temporal import HeteroTemporalNeighborLoader

                return HeteroTemporalNeighborLoader(data, *args, **kwargs)
            return HeteroNeighborLoader(data, *args, **kwargs)
        if kwargs.get("time_attr") is not None:  # PyG's temporal loader (bgl/pyg/temporal_loader.py)
            from .temporal_loader import TemporalNeighborLoader

            return TemporalNeighborLoader(data, *args, **kwargs)
        return super().__new__(cls)

    def __init__(self, data, num_neighbors: Sequence[int], input_nodes=None, replace: bool = False,
                 batch_size: int = 1, shuffle: bool = False, drop_last: bool = False, num_workers: int = 0,
                 weight_attr: Optional[str] = None, edge_attr: Optional[str] = None, **kwargs):
        from ..loader.sampler_options import NeighborSampler
        from ..loader.dataloader import DataLoader
        from .fields import SeedPositions

        self.options = pyg_options(kwargs, "NeighborLoader")
        graph = pyg_graph(data)
        self.data = data
        num_nodes = self._num_nodes(graph)
        ids, by_id = self._input_ids(input_nodes, num_nodes)
        self._input_id = SeedPositions(ids, by_id, self.options.input_id)
        self.num_neighbors = list(num_neighbors)
        # DGL/bgl order is the reverse: fanouts[-1] applies to the seeds.
        self.edge_attr = edge_attr_name(graph, edge_attr)
        edge_feats = [] if self.edge_attr is None else [self.edge_attr]
        self._fields = input_fields(data, self.edge_attr)
        sampler = NeighborSampler(list(reversed(self.num_neighbors)), replace=replace, prob=weight_attr,
                                  prefetch_edge_feats=edge_feats)
        self.batch_size = int(batch_size)
        # PyG's loaders are torch DataLoaders over range(num seeds): loops read len(loader.dataset).
        self.dataset = range(int(ids.shape[0]))
        self._loader = DataLoader(graph, ids, sampler, batch_size=batch_size, shuffle=shuffle,
                                  drop_last=drop_last, num_workers=num_workers, blocks="bgl", **kwargs)
        self._data_class = _pyg_data_class()
        self._build_data = None if self._data_class is None else PygDataBuilder(self._data_class)

    def _epoch_batches(self) -> Iterator[Any]:
        for _, _, blocks in self._loader:
            fields = blocks_to_pyg(blocks)
            if self.edge_attr is not None:
                fields["edge_attr"] = fields.pop(self.edge_attr)
            fields["x"] = blocks[0].srcdata.get("feat")
            if self._fields is None:  # a Data's own y, at every n_id, comes with its other attributes
                fields["y"] = blocks[-1].dstdata.get("label")
            fields["input_id"] = self._input_id(fields["n_id"][:fields["batch_size"]])
            self._add_data_fields(fields)
            yield self.options.finish(self._make(fields))

    def _make(self, fields: dict):
        if self._data_class is None:
            return PygBatch(**fields)
        return self._build_data(fields)
