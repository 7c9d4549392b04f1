"""Everything ``bgl.DataLoader`` learns from its arguments before it starts a stage.

DGL's DataLoader accepts a DGLGraph, a sampler object and an id tensor; bgl
also accepts a graph store, a partition dir or graph-server addresses, and a
cache policy.  This module resolves the *graph* argument into one picklable
:class:`GraphInfo` (with its :class:`~bgl.loader.stages.specs.SamplingSpec`) and checks
seed ids, so a bad argument fails here with a clear message, before any process
starts.  The sampler's options are resolved in :mod:`bgl.loader.sampler_options`,
the seeds in :mod:`bgl.loader.seeds.items`, the loader's own options in
:mod:`bgl.loader.loader_options`; :mod:`bgl.loader.dataloader` wires the stages
from those four descriptions.
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
from .stages.specs import SamplingSpec


def is_dgl_object(obj: Any) -> bool:
    """True for an object of DGL's (a DGLGraph, a DGL sampler): read by duck type, never imported."""
    return type(obj).__module__.split(".")[0] == "dgl"


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
    and edge types, :class:`bgl.schema.GraphSchema`; None = homogeneous).

    A frontend's graph read in place (``from_dgl``: a DGLGraph or a ``bgl.dgl`` graph, DGL's API) keeps
    ``graph``, the user's object, and ``reader``, the edge's
    :class:`~bgl.loader.batch_frontend.GraphReader` of it; both None otherwise.  ``graph`` stays in the
    trainer's process (a pickled GraphInfo drops it).
    """

    reader = None
    graph = None

    def __init__(self, spec: SamplingSpec, num_nodes: int, feat_dim: int, feat_dtype, has_label: bool,
                 store: Optional[GraphStore] = None, partition_dir: Optional[Path] = None,
                 from_dgl: bool = False, schema=None, edge_names: Optional[Sequence[str]] = None,
                 edge_dtypes: Optional[dict] = None, feat_codec=None):
        self.spec, self.num_nodes, self.feat_dim, self.feat_dtype = spec, num_nodes, feat_dim, feat_dtype
        # bgl.codec.RowCodec (a typed store's {ntype: RowCodec}, bgl/codec/typed_rows.py): feature rows are
        # fetched, cached and moved encoded, decoded by the transfer stage
        if feat_codec is None:
            from ..codec.typed_rows import type_codecs

            feat_codec = getattr(store, "feat_codec", None) or type_codecs(store) or None
        self.feat_codec = feat_codec
        self.has_label, self.store, self.partition_dir, self.from_dgl = has_label, store, partition_dir, from_dgl
        self.schema = schema
        edata = getattr(store, "edata", None)  # a typed DGLGraph's arrays name theirs (arrays_typed_info)
        if edge_names is None and edata is not None:
            edge_names = list(edata)
        self.edge_names = None if edge_names is None else tuple(edge_names)  # None: not known here
        if edge_dtypes is None and edata is not None:
            dtype_of = getattr(edata, "dtype", None)  # a DGLGraph's, without permuting every array
            edge_dtypes = {k: (dtype_of(k) if dtype_of else np.asarray(edata[k][:0]).dtype).name for k in edata}
        self.edge_dtypes = dict(edge_dtypes or {})

    @property
    def typed(self) -> bool:
        """True for a graph with several node or edge types."""
        return self.schema is not None and not self.schema.is_homogeneous

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "graph"}


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
        if client.schema is not None:  # typed: the loader's ids (bgl/sampler/typed/remote.py)
            from ..sampler.typed.remote import TypedServerSampler

            spec = SamplingSpec("servers", addresses=tuple(addresses), timeout=timeout,
                                partition=None if partition_dir is None else str(partition_dir))
            schema = TypedServerSampler(client, spec.partition).schema
        edata = [set(info.get("edata", {})) for info in client.infos]
        dtypes = {k: v.get("dtype") for k, v in client.infos[0].get("edata", {}).items()}
        info = GraphInfo(spec, int(client.num_nodes), int(client.feat_dim or 0), client.feat_dtype,
                         int(client.num_classes or 0) > 0 or any(t.has_label for t in (schema.node_types if schema else ())),
                         partition_dir=partition_dir, schema=schema,
                         edge_names=sorted(set.intersection(*edata)) if edata else [], edge_dtypes=dtypes,
                         feat_codec=client.feat_codec)
        ndata = [set(i.get("ndata", {})) for i in client.infos]  # node times the servers filter by
        info.node_names = sorted(set.intersection(*ndata)) if ndata else []
        return info


def resolve_graph(graph, feat_key, label_key, timeout: float, shared: bool = False) -> GraphInfo:
    """GraphInfo for any graph the DataLoader accepts.

    A DGLGraph is used in place: its CSC and feature/label tensors, zero-copy
    (:mod:`bgl.loader.graph_arrays`); ``shared`` (stage processes) copies them
    once into shared memory.
    """
    from .batch_frontend import frontend_reader
    from .graph_arrays import GraphArrays

    reader = frontend_reader(graph)
    if reader is not None or is_dgl_object(graph):  # a frontend's graph (a DGLGraph, a bgl.dgl graph), in place
        if not hasattr(graph, "ndata") or not hasattr(graph, "canonical_etypes"):
            raise TypeError(f"graph must be a DGLGraph, got {type(graph).__name__}")
        if len(graph.ntypes) != 1 or len(graph.canonical_etypes) != 1:
            info = typed_info(graph, feat_key, label_key)
        else:
            info = arrays_info(reader.arrays(graph, feat_key, label_key), shared, from_dgl=True)
        info.reader, info.graph = reader, graph
        return info
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
            from ..sampler.endpoints import check_endpoint

            for a in addresses:
                check_endpoint(a, "$BGL_SERVERS address")
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
    dtypes = arrays.edge_dtypes()  # per-relation edge data, fused on first use (bgl/sources/typed/edata.py)
    return GraphInfo(SamplingSpec("store", arrays=arrays), arrays.num_nodes, 0, None, bool(arrays.type_label),
                     store=arrays, from_dgl=from_dgl, schema=arrays.schema, edge_names=list(dtypes),
                     edge_dtypes=dtypes)


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
    (see :mod:`bgl.loader.seeds.duplicates`)."""
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
