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
  (:mod:`bgl.loader.pyg_fields`): ``y``, ``train_mask``, ``year`` and every other node-level
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

import numpy as np
import torch

from ..blocks import Block
from ._pyg_kernels import write_hop_edges
from .arguments import owned_ids
from .graph_arrays import GraphArrays
from .loader_state import DelegatedState
from .pyg_batches import PygDataBuilder
from .pyg_options import pyg_options

_NO_IDS = np.empty(0, np.int64)  # write_hop_edges' "no edge ids"

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


def _pyg_data_class():
    try:
        from torch_geometric.data import Data
    except ImportError:
        return None
    return Data


def is_pyg_data(obj: Any) -> bool:
    """True for a homogeneous ``torch_geometric.data.Data`` (duck-typed: ``edge_index`` + ``num_nodes``)."""
    return hasattr(obj, "edge_index") and hasattr(obj, "num_nodes") and not hasattr(obj, "node_types") \
        or type(obj).__name__ == "Data" and type(obj).__module__.startswith("torch_geometric")


def data_arrays(data) -> GraphArrays:
    """A PyG ``Data`` (``edge_index`` source -> target, ``x``, ``y``) as the loader's graph, edges as given.

    ``x`` and integer ``y`` are the caller's own storage (read-only views); only the
    CSC is built, over targets (the in-neighbours of each node, PyG's message direction).
    """
    n = int(data.num_nodes)
    ei = data.edge_index
    if ei is None or ei.dim() != 2 or ei.shape[0] != 2:
        raise ValueError(f"data.edge_index must be an int tensor [2, E], got {None if ei is None else list(ei.shape)}")
    src, dst = ei[0].cpu().numpy(), ei[1].cpu().numpy()
    if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= n):
        raise ValueError(f"data.edge_index holds node ids outside [0, {n})")
    order = np.argsort(dst, kind="stable")  # CSC over targets: in-neighbours of each node
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(dst, minlength=n), out=indptr[1:])
    indices = src[order].astype(np.int64, copy=False)
    edata = {}
    keys = data.edge_attrs() if callable(getattr(data, "edge_attrs", None)) else ["edge_attr", "edge_weight"]
    for key in keys:
        value = getattr(data, key, None)
        if key != "edge_index" and torch.is_tensor(value) and value.dim() >= 1 and value.shape[0] == src.size:
            edata[key] = value.detach().cpu()
    feat = label = None
    x = getattr(data, "x", None)
    if x is not None:
        feat = x.detach().cpu()
        if feat.dim() != 2:
            raise ValueError(f"data.x must be [num_nodes, F], got {list(feat.shape)}")
        if not feat.is_contiguous():
            feat = feat.contiguous()
    y = getattr(data, "y", None)
    if y is not None and y.dim() == 1 and not torch.is_floating_point(y):
        label = y.detach().cpu()
        if label.dtype != torch.int64 or not label.is_contiguous():
            label = label.to(torch.int64).contiguous()
    num_classes = int(label.max()) + 1 if label is not None and label.numel() else 0
    return GraphArrays(torch.from_numpy(indptr), torch.from_numpy(indices), feat, label,
                       num_classes=num_classes, name="pyg-data", edge_ids=torch.from_numpy(order), edata=edata)


def pyg_graph(data):
    """The loader's graph for PyG input ``data``: a ``Data``'s arrays, else ``data`` as given."""
    return data_arrays(data) if is_pyg_data(data) else data


def input_fields(data, edge_attr: Optional[str]):
    """(node fields, edge fields) a batch takes from a PyG ``Data`` input (:mod:`~bgl.loader.pyg_fields`),
    or None for a store or servers; ``x`` and ``edge_attr`` come from the pipeline when it delivers them."""
    if not is_pyg_data(data) or not callable(getattr(data, "node_attrs", None)):
        return None  # (a duck-typed Data without PyG's attribute kinds carries x, y and edge_attr only)
    from .pyg_fields import data_fields

    return data_fields(data, skip_node=("x",), skip_edge=() if edge_attr is None else ("edge_attr",))


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


def blocks_to_pyg(blocks: Sequence[Block]) -> dict[str, Any]:
    """PyG's layout of one sampled batch from bgl blocks (``blocks[-1]`` holds the seeds).

    Block ``l``'s src ids are a prefix of ``blocks[0].src_ids``, so local ids
    agree across blocks and ``n_id = blocks[0].src_ids``.  Hop ``h`` (block
    ``L - h``) contributes the in-edges of the nodes it newly reached: dst
    positions ``[blocks[L-h+1].num_dst, blocks[L-h].num_dst)``.

    On the CPU the batch's ``edge_index`` and ``e_id`` are one numba pass per hop over
    its sampled edges (:func:`_pyg_layout_cpu`): ``torch.repeat_interleave`` and
    ``torch.cat`` took 3/4 of the PyG loader's data path on Cora (profiled, batch 256,
    fanouts 10,10), and each scalar read of a torch tensor (``int(indptr[lo])``) costs
    microseconds a NumPy read does not.  Device batches stay on their device
    (:func:`_pyg_layout_torch`).
    """
    if blocks[0].indptr.device.type == "cpu":
        return _pyg_layout_cpu(blocks)
    return _pyg_layout_torch(blocks)


def _hop_spans(blocks: Sequence[Block], indptrs: Sequence) -> list[tuple]:
    """``(block, indptr, lo, hi, a, e)`` per hop, seeds' hop first: the hop's block, its CSC
    offsets (``indptrs[l]`` for block ``l``: NumPy views on the CPU, where a scalar read of a
    tensor costs microseconds, else the tensors), the dst positions ``[lo, hi)`` the hop
    reached first and their edges ``[a, e)``."""
    num_layers = len(blocks)
    spans = []
    for layer in reversed(range(num_layers)):
        b, indptr = blocks[layer], indptrs[layer]
        lo = blocks[layer + 1].num_dst if layer + 1 < num_layers else 0
        spans.append((b, indptr, lo, b.num_dst, int(indptr[lo]), int(indptr[b.num_dst])))
    return spans


def _layout_fields(blocks: Sequence[Block], spans: list[tuple], edge_index: torch.Tensor) -> dict[str, Any]:
    """The fields both layouts share around their ``edge_index``, edge arrays' rows included."""
    out = {"n_id": blocks[0].src_ids, "batch_size": int(blocks[-1].num_dst), "edge_index": edge_index,
           "num_sampled_nodes": [blocks[-1].num_dst] + [b.num_src - b.num_dst for b, *_ in spans],
           "num_sampled_edges": [e - a for *_, a, e in spans]}
    for key in blocks[0].edata:
        out[key] = torch.cat([b.edata[key][a:e] for b, _, _, _, a, e in spans])
    return out


def _pyg_layout_torch(blocks: Sequence[Block]) -> dict[str, Any]:
    """:func:`blocks_to_pyg` by torch ops on the blocks' own device (a GPU batch stays there)."""
    spans = _hop_spans(blocks, [b.indptr for b in blocks])
    srcs = [b.indices[a:e] for b, _, _, _, a, e in spans]
    dsts = [torch.repeat_interleave(torch.arange(lo, hi, device=ip.device), ip[lo + 1:hi + 1] - ip[lo:hi])
            for _, ip, lo, hi, _, _ in spans]
    out = _layout_fields(blocks, spans, torch.stack([torch.cat(srcs), torch.cat(dsts)]).to(torch.int64))
    if all(b.edge_ids is not None for b in blocks):
        out["e_id"] = torch.cat([b.edge_ids[a:e] for b, _, _, _, a, e in spans])
    return out


def _pyg_layout_cpu(blocks: Sequence[Block]) -> dict[str, Any]:
    """:func:`blocks_to_pyg` for CPU blocks: one :func:`write_hop_edges` pass per hop (same fields, same values)."""
    spans = _hop_spans(blocks, [b.indptr.numpy() for b in blocks])
    edge_index = np.empty((2, sum(e - a for *_, a, e in spans)), np.int64)
    with_eids = all(b.edge_ids is not None for b in blocks)
    e_id = np.empty(edge_index.shape[1], np.int64) if with_eids else _NO_IDS
    pos = 0
    for b, indptr, lo, hi, _, _ in spans:
        pos = write_hop_edges(indptr, b.indices.numpy(), b.edge_ids.numpy() if with_eids else _NO_IDS,
                              lo, hi, edge_index, e_id, pos)
    out = _layout_fields(blocks, spans, torch.from_numpy(edge_index))
    if with_eids:
        out["e_id"] = torch.from_numpy(e_id)
    return out


class NeighborLoader(DelegatedState):
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
    batch_size, shuffle, drop_last, num_workers : as in PyG (``num_workers > 0`` runs
        bgl's process pipeline)
    transform : a callable applied to every batch before it is yielded (PyG's ``transform``)
    input_id : PyG's numbering of ``input_nodes`` (default: positions in ``input_nodes``; node ids
        for ``None`` or a mask), read back per batch as ``batch.input_id``
    **kwargs : bgl.DataLoader options (``cache``, ``cache_ratio``, ``order``,
        ``pipeline``, ``device``, ...).  PyG's options that only tune its own workers
        (``filter_per_worker``, ``is_sorted``, ``persistent_workers``, ...) are accepted and
        ignored; its non-directional options raise ``ValueError`` naming the option
        (:mod:`bgl.loader.pyg_options`), on every kind of ``data``.  ``time_attr=`` (with
        ``input_time=``, ``temporal_strategy=``) makes PyG's temporal loader
        (:mod:`bgl.loader.pyg_temporal_loader`).
    """

    def __new__(cls, data=None, *args, **kwargs):
        from .pyg_hetero import HeteroNeighborLoader, is_hetero_data

        if is_hetero_data(data):  # PyG's one NeighborLoader takes Data and HeteroData alike
            if cls is not NeighborLoader:
                raise ValueError(f"bgl.pyg.{cls.__name__} does not support a HeteroData yet; pass "
                                 "data.to_homogeneous(), or bgl.DataLoader with bgl.as_edge_prediction_sampler")
            return HeteroNeighborLoader(data, *args, **kwargs)
        if kwargs.get("time_attr") is not None:  # PyG's temporal loader (bgl/loader/pyg_temporal_loader.py)
            from .pyg_temporal_loader import TemporalNeighborLoader

            return super().__new__(TemporalNeighborLoader)
        return super().__new__(cls)

    def __init__(self, data, num_neighbors: Sequence[int], input_nodes=None, replace: bool = False,
                 batch_size: int = 1, shuffle: bool = False, drop_last: bool = False, num_workers: int = 0,
                 weight_attr: Optional[str] = None, edge_attr: Optional[str] = None, **kwargs):
        from .sampler_options import NeighborSampler
        from .dataloader import DataLoader
        from .pyg_fields import SeedPositions

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

    def _num_nodes(self, graph) -> Optional[int]:
        """The node count of a local graph (None for servers or a partition); a typed store is refused."""
        if isinstance(graph, (str, Path)) and (Path(graph) / "meta.json").is_file():
            from ..store import GraphStore

            graph = GraphStore(graph)
        if getattr(graph, "is_typed", False):
            raise ValueError(f"bgl.pyg.{type(self).__name__} takes a typed graph as a PyG HeteroData, not a "
                             "typed store; pass the HeteroData, or give the store to bgl.DataLoader with "
                             "{node_type: ids} seeds")
        if hasattr(graph, "num_nodes") and not callable(graph.num_nodes):
            return int(graph.num_nodes)
        return None

    @staticmethod
    def _input_ids(input_nodes, num_nodes: Optional[int]) -> tuple[torch.Tensor, bool]:
        """(seed ids, whether PyG numbers them by node id: all nodes or a mask)."""
        if input_nodes is None:
            if num_nodes is None:
                raise ValueError("input_nodes=None (all nodes) needs a Data or store input; pass the seed ids")
            return torch.arange(num_nodes), True
        if isinstance(input_nodes, tuple):
            raise ValueError("heterogeneous input_nodes (node_type, ids) need a HeteroData input; "
                             "give a Data, a store or servers plain ids or a mask")
        ids = owned_ids(input_nodes)  # a copy: seeds are small, memmaps are read-only
        if ids.dtype == torch.bool:
            if num_nodes is not None and ids.shape[0] != num_nodes:
                raise ValueError(f"input_nodes mask has {ids.shape[0]} entries for {num_nodes} nodes")
            return ids.nonzero().flatten(), True
        return ids, False

    def __len__(self) -> int:
        return len(self._loader)

    def __iter__(self) -> Iterator[Any]:
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

    def _add_data_fields(self, fields: dict) -> None:
        """The input ``Data``'s own attributes for the batch's nodes (``n_id``) and edges (``e_id``),
        and its graph-level ones, as PyG's ``filter_data`` gives them (nothing for a store or servers).
        The batch's own fields win, as in PyG, which sets them after filtering (a ``Data`` holding
        ``edge_label_index`` from ``RandomLinkSplit`` keeps the batch's pairs)."""
        if self._fields is not None:
            node, edge = self._fields
            for key, value in node.take(fields["n_id"]).items():
                fields.setdefault(key, value)
            for key, value in edge.take(fields.get("e_id")).items():
                fields.setdefault(key, value)

    def _make(self, fields: dict):
        if self._data_class is None:
            return PygBatch(**fields)
        return self._build_data(fields)

    def cache_stats(self) -> Optional[dict]:
        """The feature cache's counters (see :meth:`bgl.DataLoader.cache_stats`)."""
        return self._loader.cache_stats()

    def close(self) -> None:
        """Stop the pipeline (stage processes, server sockets); the loader may be iterated again."""
        loader = getattr(self, "_loader", None)
        if loader is not None:
            loader.close()

    def __enter__(self) -> "NeighborLoader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
