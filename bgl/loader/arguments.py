"""Everything ``bgl.DataLoader`` learns from its arguments before it starts a stage.

DGL's DataLoader accepts a DGLGraph, a sampler object and an id tensor; bgl
also accepts a graph store, a partition dir or graph-server addresses, and a
cache policy.  This module turns those arguments into picklable facts
(:class:`GraphInfo`, :class:`~bgl.loader.specs.SamplingSpec`,
:class:`~bgl.loader.specs.CacheSpec`) and validates them, so a bad argument
fails here with a clear message, before any process starts.  Iteration lives
in :mod:`bgl.loader.dataloader`.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np
import torch

from ..cache.ordering.partition_order import env_partition_dir
from ..errors import ServerUnavailable
from ..store import GraphStore
from .edge_options import EdgeOptions, edge_names_of, edge_option
from .specs import SamplingSpec

PIPELINES = ("inline", "thread", "processes")
# DGL DataLoader keyword arguments that tune DGL's own machinery; accepted so
# scripts run unchanged, and ignored because bgl's pipeline replaces them.
_DGL_TUNING_KWARGS = frozenset({
    "use_uva", "use_prefetch_thread", "use_alternate_streams", "pin_prefetcher", "persistent_workers",
    "pin_memory", "prefetch_factor", "gpu_cache", "worker_init_fn", "timeout", "generator",
    "multiprocessing_context",
})


class NeighborSampler:
    """Neighbour sampler settings, DGL style (``bgl.NeighborSampler([10, 10])``).

    Parameters
    ----------
    fanouts : sequence of int
        Neighbours per layer, DGL order: ``fanouts[-1]`` is applied to the
        seeds (output layer); -1 takes all in-neighbours.
    replace : bool
        Sample with replacement.
    prefetch_node_feats : names under which ``blocks[0].srcdata`` receives
        the input features (the store has one feature array).
    prefetch_labels : names under which ``blocks[-1].dstdata`` receives labels.
    prob : name of an edge array (weights): each neighbour is drawn with probability
        proportional to its edge's weight, never through a zero-weight edge (DGL's ``prob=``).
    mask : name of a bool edge array: only edges marked True may be drawn (DGL's ``mask=``;
        mutually exclusive with ``prob``).
    prefetch_edge_feats : edge arrays whose rows of the sampled edges each block
        gets in ``blocks[i].edata[name]``.
    """

    def __init__(self, fanouts: Sequence[int], replace: bool = False,
                 prefetch_node_feats: Sequence[str] = ("feat",), prefetch_labels: Sequence[str] = ("label",),
                 prefetch_edge_feats: Sequence[str] = (), output_device=None, *, prob: Optional[str] = None,
                 mask: Optional[str] = None):
        self.fanouts = _check_fanouts(fanouts)
        self.replace = bool(replace)
        self.prefetch_node_feats = list(prefetch_node_feats or [])
        self.prefetch_labels = list(prefetch_labels or [])
        self.output_device = output_device
        self.prob = edge_option(prob, mask)
        self.mask = mask
        self.prefetch_edge_feats = edge_names_of(prefetch_edge_feats)

    def sample(self, g, seed_nodes, exclude_eids=None):
        """DGL's sampler interface over a DGLGraph: ``(input_nodes, output_nodes, dgl blocks)``.

        Lets DGL's own machinery drive this sampler (``dgl.dataloading.as_edge_prediction_sampler``
        checks for a ``sample(g, indices, exclude_eids)`` method; DGL's DataLoader calls it).
        Edges in ``exclude_eids`` (DGL edge ids) are never sampled; the prefetched node features
        and labels are attached as DGL's prefetch does.  ``bgl.DataLoader`` does not call this: it
        reads the settings and samples in its own pipeline.
        """
        from ..dgl_adapter import to_dgl_blocks
        from ..sampler import LocalSampler
        from .graph_arrays import dglgraph_arrays

        blocks = LocalSampler(dglgraph_arrays(g, None, None)).sample_blocks(
            seed_nodes, self.fanouts, replace=self.replace, exclude=exclude_eids)
        first, last = blocks[0], blocks[-1]
        for key in self.prefetch_node_feats:
            if key in g.ndata:
                first.srcdata[key] = g.ndata[key][first.src_ids.to(g.device)]
        for key in self.prefetch_labels:
            if key in g.ndata:
                last.dstdata[key] = g.ndata[key][last.dst_ids.to(g.device)]
        return first.src_ids, last.dst_ids, to_dgl_blocks(blocks)

    def __repr__(self) -> str:
        weights = "" if self.prob is None else f", prob={self.prob!r}"
        return f"bgl.NeighborSampler(fanouts={self.fanouts}, replace={self.replace}{weights})"


class MultiLayerFullNeighborSampler(NeighborSampler):
    """Every in-neighbour at each of ``num_layers`` layers (DGL's ``MultiLayerFullNeighborSampler``):
    ``NeighborSampler([-1] * num_layers)``, the sampler DGL's examples run layer-wise inference with.

    ``edge_dir`` must be ``"in"`` (see :func:`sampler_settings` for why out-edges are refused); the
    other arguments are :class:`NeighborSampler`'s (``replace`` does not apply: all are taken).
    """

    def __init__(self, num_layers: int, edge_dir: str = "in", **kwargs):
        if isinstance(num_layers, bool) or not isinstance(num_layers, (int, np.integer)) or num_layers < 1:
            raise ValueError(f"num_layers must be an int >= 1, got {num_layers!r}")
        if edge_dir != "in":
            raise ValueError(f"edge_dir={edge_dir!r} is not supported: sample the reversed graph with edge_dir='in'")
        super().__init__([-1] * int(num_layers), **kwargs)


MultiLayerNeighborSampler = NeighborSampler  # DGL's older name for the same class (DGL 2.1 keeps it)


def _check_fanouts(fanouts) -> list:
    """Validated fanouts: ints, or (a typed graph's) per-layer dicts {edge type: int}, checked
    against the graph's edge types when the loader knows them (:mod:`bgl.loader.typed`)."""
    if isinstance(fanouts, (int, np.integer)) or not hasattr(fanouts, "__len__") or len(fanouts) == 0:
        raise ValueError(f"fanouts must be a non-empty list of ints, got {fanouts!r}")
    if any(isinstance(f, dict) for f in fanouts):
        return [dict(f) if isinstance(f, dict) else f for f in fanouts]
    out = []
    for f in fanouts:
        if isinstance(f, bool) or not isinstance(f, (int, np.integer)) or f < -1 or f == 0:
            given = [v.item() if isinstance(v, np.generic) else v for v in fanouts]  # numpy 2 reprs name the type
            raise ValueError(f"each fanout must be an int >= 1 or -1 (all neighbours), "
                             f"got {given[len(out)]!r} in {given}")
        out.append(int(f))
    return out


def is_dgl_object(obj: Any) -> bool:
    return type(obj).__module__.split(".")[0] == "dgl"


def sampler_settings(graph_sampler) -> tuple[list[int], bool, list[str], list[str], bool]:
    """(fanouts, replace, feature keys, label keys, came from DGL) of a supported sampler."""
    if isinstance(graph_sampler, NeighborSampler):  # bgl.LaborSampler is one too
        return (graph_sampler.fanouts, graph_sampler.replace, graph_sampler.prefetch_node_feats,
                graph_sampler.prefetch_labels, False)
    name = type(graph_sampler).__name__
    if is_dgl_object(graph_sampler) and hasattr(graph_sampler, "fanouts") and name in (
            "NeighborSampler", "MultiLayerFullNeighborSampler", "LaborSampler"):
        if getattr(graph_sampler, "edge_dir", "in") != "in":
            # DGL 2.1's blocks from edge_dir='out' hold edges whose destination falls outside the
            # block's dst nodes, so no message passing is defined on them.
            raise ValueError(
                f"edge_dir={graph_sampler.edge_dir!r} is not supported: DGL 2.1's blocks from out-edge sampling "
                "have edges whose destinations are not dst nodes of the block; to aggregate over "
                "out-neighbours, sample the reversed graph with edge_dir='in' (bgl.DataLoader(dgl.reverse(g, "
                "copy_ndata=True, copy_edata=True), ...))")
        feats = graph_sampler.prefetch_node_feats
        labels = graph_sampler.prefetch_labels
        # A heterogeneous graph's {ntype: [names]}: bgl reads each type's one feature array.
        feats = sorted({k for v in feats.values() for k in v}) if isinstance(feats, dict) else feats
        labels = sorted({k for v in labels.values() for k in v}) if isinstance(labels, dict) else labels
        # DGL exposes every ndata field lazily even without prefetch (bgl does too for a
        # DGLGraph: TransferStage); a store has one feature and one label array, offered
        # under the usual names.
        return (_check_fanouts(list(graph_sampler.fanouts)), bool(getattr(graph_sampler, "replace", False)),
                list(feats) or ["feat"], list(labels) or ["label"], True)
    raise TypeError(
        f"unsupported graph_sampler {type(graph_sampler).__module__}.{name}; use bgl.NeighborSampler, "
        f"bgl.LaborSampler or dgl.dataloading.NeighborSampler / MultiLayerFullNeighborSampler / LaborSampler")


def edge_options(graph_sampler) -> EdgeOptions:
    """The :class:`~bgl.loader.edge_options.EdgeOptions` of a sampler :func:`sampler_settings` accepts."""
    if isinstance(graph_sampler, NeighborSampler):  # bgl's (a bgl.LaborSampler has no prob / mask)
        return EdgeOptions(graph_sampler.prob, graph_sampler.prefetch_edge_feats, graph_sampler.mask is not None)
    if type(graph_sampler).__name__ == "LaborSampler":  # DGL's: its prob is refused by labor_of
        return EdgeOptions(None, edge_names_of(getattr(graph_sampler, "prefetch_edge_feats", None)))
    # DGL keeps ``prob or mask`` in ``prob`` (it refuses both at construction)
    return EdgeOptions(edge_option(getattr(graph_sampler, "prob", None), None),
                       edge_names_of(getattr(graph_sampler, "prefetch_edge_feats", None)))


def check_graph_fields(info: "GraphInfo", graph, feat_keys: Sequence[str], edge_keys: Sequence[str]
                       ) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(extra node feature names, edge feature names) the trainer reads from a DGLGraph in place.

    The first distinct feature name is served by the fetch stage (and its cache); the
    others, and every edge feature, are read in place where the graph is a DGLGraph.
    Refuses, naming the field, a name the DGLGraph lacks, or extra node fields of a store or
    graph servers (a store holds one feature array).  A store's edge features come with the
    sampled edges instead (checked by :func:`~bgl.loader.edge_options.check_edge_options`).
    """
    distinct = list(dict.fromkeys(feat_keys))
    extra = distinct[1:]
    if not info.from_dgl:
        if extra:
            raise ValueError(f"prefetch_node_feats={distinct}: a bgl store holds one node feature array, served "
                             f"under any one name; pass one name, or pass the DGLGraph itself to read several")
        return (), ()
    for key in extra:
        if key not in graph.ndata:
            raise ValueError(f"prefetch_node_feats names {key!r}, which is not in the graph's ndata "
                             f"{sorted(graph.ndata.keys())}")
    for key in edge_keys:
        if key not in graph.edata:
            raise ValueError(f"prefetch_edge_feats names {key!r}, which is not in the graph's edata "
                             f"{sorted(graph.edata.keys())}")
    return tuple(extra), tuple(dict.fromkeys(edge_keys))


class GraphInfo:
    """What the loader learned about its graph before starting anything (``schema``: its node
    and edge types, :class:`bgl.schema.GraphSchema`; None = homogeneous)."""

    def __init__(self, spec: SamplingSpec, num_nodes: int, feat_dim: int, feat_dtype, has_label: bool,
                 store: Optional[GraphStore] = None, partition_dir: Optional[Path] = None,
                 from_dgl: bool = False, schema=None, edge_names: Optional[Sequence[str]] = None,
                 edge_dtypes: Optional[dict] = None, feat_codec=None):
        self.spec, self.num_nodes, self.feat_dim, self.feat_dtype = spec, num_nodes, feat_dim, feat_dtype
        # bgl.codec.RowCodec: feature rows are fetched, cached and moved encoded, decoded by the transfer stage
        self.feat_codec = feat_codec if feat_codec is not None else getattr(store, "feat_codec", None)
        self.has_label, self.store, self.partition_dir, self.from_dgl = has_label, store, partition_dir, from_dgl
        self.schema = schema
        edata = getattr(store, "edata", None)  # a typed DGLGraph's arrays carry none
        if edge_names is None and edata is not None:
            edge_names = list(edata)
        self.edge_names = None if edge_names is None else tuple(edge_names)  # None: not known here
        if edge_dtypes is None and edata is not None:
            edge_dtypes = {k: np.asarray(edata[k][:0]).dtype.name for k in edata}
        self.edge_dtypes = dict(edge_dtypes or {})

    @property
    def typed(self) -> bool:
        """True for a graph with several node or edge types."""
        return self.schema is not None and not self.schema.is_homogeneous


def _ping_all(addresses: Sequence[str], timeout: float) -> None:
    from ..sampler.client import ping

    for addr in addresses:
        if not isinstance(addr, str) or not addr.startswith(("tcp://", "ipc://", "inproc://")):
            raise ValueError(f"graph server address must look like 'tcp://host:port', got {addr!r}")
        if not ping(addr, timeout=timeout):
            raise ServerUnavailable(addr, f"no PING reply within {timeout} s")


def _servers_info(addresses: Sequence[str], timeout: float, partition_dir: Optional[Path] = None) -> GraphInfo:
    _ping_all(addresses, timeout)
    from ..sampler import SamplingClient

    with SamplingClient(list(addresses), timeout=timeout) as client:
        spec = SamplingSpec("servers", addresses=tuple(addresses), timeout=timeout)
        schema = None
        if client.schema is not None:  # typed: the loader's ids (bgl/sampler/typed_remote.py)
            from ..sampler.typed_remote import TypedServerSampler

            spec = SamplingSpec("servers", addresses=tuple(addresses), timeout=timeout,
                                partition=None if partition_dir is None else str(partition_dir))
            schema = TypedServerSampler(client, spec.partition).schema
        edata = [set(info.get("edata", {})) for info in client.infos]
        dtypes = {k: v.get("dtype") for k, v in client.infos[0].get("edata", {}).items()}
        return GraphInfo(spec, int(client.num_nodes), int(client.feat_dim or 0), client.feat_dtype,
                         int(client.num_classes or 0) > 0 or any(t.has_label for t in (schema.node_types if schema else ())),
                         partition_dir=partition_dir, schema=schema,
                         edge_names=sorted(set.intersection(*edata)) if edata else [], edge_dtypes=dtypes,
                         feat_codec=client.feat_codec)


def resolve_graph(graph, feat_key, label_key, timeout: float, shared: bool = False) -> GraphInfo:
    """GraphInfo for any graph the DataLoader accepts.

    A DGLGraph is used in place: its CSC and feature/label tensors, zero-copy
    (:mod:`bgl.loader.graph_arrays`); ``shared`` (stage processes) copies them
    once into shared memory.
    """
    from .graph_arrays import GraphArrays, dglgraph_arrays

    if is_dgl_object(graph):
        if not hasattr(graph, "ndata") or not hasattr(graph, "canonical_etypes"):
            raise TypeError(f"graph must be a DGLGraph, got {type(graph).__name__}")
        if len(graph.ntypes) != 1 or len(graph.canonical_etypes) != 1:
            return typed_info(graph, feat_key, label_key)
        return arrays_info(dglgraph_arrays(graph, feat_key, label_key), shared, from_dgl=True)
    if isinstance(graph, GraphArrays):  # e.g. a PyG Data's arrays (bgl.pyg.NeighborLoader)
        return arrays_info(graph, shared)
    from ..sources.hetero import TypedArrays

    if isinstance(graph, TypedArrays):  # e.g. a PyG HeteroData's arrays
        return arrays_typed_info(graph)
    if isinstance(graph, GraphStore):
        return store_info(graph)
    if isinstance(graph, (str, os.PathLike)):
        path = Path(graph)
        if (path / "partition.json").is_file():
            servers = os.environ.get("BGL_SERVERS", "")
            addresses = [a.strip() for a in servers.split(",") if a.strip()]
            if not addresses:
                raise ValueError(f"{path} is a partition dir; set BGL_SERVERS to its graph servers' "
                                 "addresses (bgl launch does this) or pass a store dir")
            return _servers_info(addresses, timeout, partition_dir=path)
        return store_info(GraphStore(path))
    if isinstance(graph, (list, tuple)) and graph and all(isinstance(a, str) for a in graph):
        env_dir = env_partition_dir()
        return _servers_info(list(graph), timeout, partition_dir=Path(env_dir) if env_dir else None)
    raise TypeError(f"graph must be a DGLGraph, GraphStore, store/partition dir or list of server "
                    f"addresses, got {type(graph).__name__}")


def arrays_info(arrays, shared: bool, from_dgl: bool = False) -> GraphInfo:
    """GraphInfo of in-memory :class:`~bgl.loader.graph_arrays.GraphArrays` (shared-memory copies
    for stage processes when ``shared``)."""
    if shared:
        arrays = arrays.share_memory()
    dtype = None if arrays.feat is None else arrays.tensor("feat").dtype
    return GraphInfo(SamplingSpec("store", arrays=arrays), arrays.num_nodes, arrays.feat_dim, dtype,
                     arrays.label is not None, store=arrays, from_dgl=from_dgl)


def typed_info(graph, feat_key, label_key) -> GraphInfo:
    """GraphInfo of a heterogeneous DGLGraph, read in place (:class:`bgl.sources.hetero.TypedArrays`)."""
    from ..sources.hetero import TypedArrays

    return arrays_typed_info(TypedArrays.from_dglgraph(graph, feat_key, label_key), from_dgl=True)


def arrays_typed_info(arrays, from_dgl: bool = False) -> GraphInfo:
    """GraphInfo of in-memory typed arrays (:class:`bgl.sources.hetero.TypedArrays`)."""
    return GraphInfo(SamplingSpec("store", arrays=arrays), arrays.num_nodes, 0, None, bool(arrays.type_label),
                     store=arrays, from_dgl=from_dgl, schema=arrays.schema)


def proximity_partition(info: GraphInfo) -> str:
    """The partition dir that proximity ordering reads when sampling from graph servers."""
    if info.partition_dir is None:
        raise ValueError("order='proximity' with graph servers needs the partition dir: pass it as graph "
                         "(with BGL_SERVERS set) or set BGL_PARTITION; or use a local store / DGLGraph")
    from ..partition.format import open_partition

    book = open_partition(info.partition_dir)  # PartitionFormatError names a bad dir
    if book.num_nodes != info.num_nodes:
        raise ValueError(f"partition dir {info.partition_dir} has {book.num_nodes} nodes but the graph "
                         f"servers serve {info.num_nodes}; BGL_PARTITION / graph names another partition")
    return str(info.partition_dir)


def store_info(store: GraphStore) -> GraphInfo:
    """GraphInfo of a whole graph store (a partition part is refused: it needs its servers)."""
    if store.node_offset != 0 or store.global_num_nodes != store.num_nodes:
        raise ValueError(f"{store.path} is a partition part; pass the partition dir with graph servers")
    spec = SamplingSpec("store", path=str(store.path))
    name = store.feat_dtype_name
    dtype = None if name is None else torch.from_numpy(np.empty(0, np.dtype(name))).dtype
    return GraphInfo(spec, store.num_nodes, store.feat_dim, dtype,
                     store.label is not None or bool(store.type_label), store=store, schema=store.schema)


def as_int_array(values, name: str) -> np.ndarray:
    """An integer tensor/array-like as int64 [n]; TypeError for non-integer dtypes, ValueError if not 1-D."""
    if isinstance(values, dict):
        raise TypeError(f"dict {name} (heterogeneous graphs) are not supported; pass one id tensor")
    if torch.is_tensor(values):
        if values.dtype.is_floating_point or values.dtype.is_complex or values.dtype == torch.bool:
            raise TypeError(f"{name} must be integer ids, got dtype {values.dtype}")
        arr = values.detach().cpu().numpy()
    else:
        arr = np.asarray(values)
        if arr.dtype.kind not in "iu":
            raise TypeError(f"{name} must be integer ids, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {tuple(arr.shape)}")
    return arr.astype(np.int64, copy=False)


def check_ids(values, count: int, kind: str = "node", name: str = "indices", unique: bool = True) -> np.ndarray:
    """Seed ids as contiguous int64 [n]; refuses non-integer, non-1-D, out-of-range (outside
    ``[0, count)``) or (``unique``) duplicate ids, naming the offending id."""
    arr = as_int_array(values, name)
    if arr.size:
        lo, hi = int(arr.min()), int(arr.max())
        if lo < 0 or hi >= count:
            bad = lo if lo < 0 else hi
            raise ValueError(f"{name} contain {kind} id {bad}, outside [0, {count})")
        if unique:
            uniq, counts = np.unique(arr, return_counts=True)
            if uniq.shape[0] != arr.shape[0]:
                raise ValueError(f"{name} contain duplicate {kind} ids (e.g. {int(uniq[np.argmax(counts > 1)])})")
    return np.ascontiguousarray(arr)


def check_indices(indices, num_nodes: int) -> np.ndarray:
    """Seed node ids (see :func:`check_ids`); repeated ids are accepted, as DGL accepts them
    (see :mod:`bgl.loader.duplicate_seeds`)."""
    return check_ids(indices, num_nodes, unique=False)


def has_repeats(ids: np.ndarray) -> bool:
    """True when some id occurs twice (one sort of the ids)."""
    return ids.shape[0] > 1 and np.unique(ids).shape[0] != ids.shape[0]


def owned_ids(ids) -> torch.Tensor:
    """A copy of seed ids or a mask (seeds are small; a memmap is read-only).  A tensor is cloned:
    ``np.array(tensor)`` warns under numpy 2 with torch's ``__array__``, which takes no ``copy``."""
    if isinstance(ids, torch.Tensor):
        return ids.detach().clone()
    return torch.as_tensor(np.array(ids))
