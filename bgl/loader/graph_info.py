"""The loader's one description of its graph: :class:`GraphInfo`, resolved once from the graph argument.

DGL's DataLoader accepts a DGLGraph; bgl also accepts a ``bgl.dgl`` graph, in-memory arrays (a PyG
graph's), a graph store, a partition dir or graph-server addresses.  :func:`resolve_graph` turns
whichever it is, once, in the loader's constructor, into one frozen :class:`GraphInfo`: counts,
types, field names and dtypes, where the arrays come from (a store, arrays, servers, or a frontend's
graph read in place through the edge's reader) and the names its blocks carry.  The seeds
(:mod:`bgl.loader.seeds.items`), the sampler's options, the stages, the cache choice and the
transfer stage read that description, so a bad graph fails here with a clear message, before any
process starts, and no later step asks the raw argument again.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np
import torch

from ..errors import ServerUnavailable
from ..store import GraphStore
from .stages.specs import SamplingSpec


def is_dgl_object(obj: Any) -> bool:
    """True for an object of DGL's (a DGLGraph, a DGL sampler): read by duck type, never imported."""
    return type(obj).__module__.split(".")[0] == "dgl"


def check_graph_fields(info: "GraphInfo", feat_keys: Sequence[str], edge_keys: Sequence[str]
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
        if key not in info.node_names:
            raise ValueError(f"prefetch_node_feats names {key!r}, which is not in the graph's ndata "
                             f"{sorted(info.node_names)}")
    for key in edge_keys:
        if key not in info.edge_names:
            raise ValueError(f"prefetch_edge_feats names {key!r}, which is not in the graph's edata "
                             f"{sorted(info.edge_names)}")
    return tuple(extra), tuple(dict.fromkeys(edge_keys))


class GraphInfo:
    """The loader's one description of its graph, resolved once by :func:`resolve_graph` before anything
    starts; every later step (seeds, sampler options, stages, cache, store) reads this, never the raw argument.

    Attributes
    ----------
    spec : :class:`~bgl.loader.stages.specs.SamplingSpec`, where the stages sample from (a store or in-memory
        arrays, or graph servers)
    num_nodes, feat_dim, feat_dtype, has_label : the graph's node count, first feature's width and torch
        dtype (None: no features), whether labels are served
    store : the opened :class:`~bgl.store.GraphStore` or in-memory arrays (None: graph servers)
    partition_dir : the partition the servers serve (None: unknown or local)
    schema : :class:`bgl.schema.GraphSchema` of its node and edge types (None: homogeneous)
    edge_names, edge_dtypes : its edge arrays by name and their NumPy dtype names (None: not known here)
    node_names : node arrays known by name: the servers' (each part's), a frontend graph's ``ndata``
    feat_codec : :class:`bgl.codec.RowCodec` of encoded feature rows (a typed store's ``{ntype: RowCodec}``)
    from_dgl : the graph is a frontend's object read in place (a DGLGraph or a ``bgl.dgl`` graph: DGL's
        API, its own edge ids)
    reader : the edge's :class:`~bgl.loader.batch_frontend.GraphReader` of such a graph (None otherwise)
    type_names : (node type, edge type) names a one-type frontend graph's blocks carry (``("_N", "_E")``
        otherwise)
    graph : the graph argument as given: read in place through ``reader``, handed to a user's callables
        (a negative sampler's ``g``); it stays in the trainer's process (a pickled GraphInfo drops it)

    Frozen: a changed graph (a DGLGraph's replaced feature tensor: :meth:`changed`) is resolved again
    into a new one.
    """

    def __init__(self, spec: SamplingSpec, num_nodes: int, feat_dim: int, feat_dtype, has_label: bool,
                 store: Optional[GraphStore] = None, partition_dir: Optional[Path] = None,
                 from_dgl: bool = False, schema=None, edge_names: Optional[Sequence[str]] = None,
                 edge_dtypes: Optional[dict] = None, feat_codec=None, node_names: Sequence[str] = (),
                 graph: Any = None, reader: Any = None, type_names: tuple[str, str] = ("_N", "_E"),
                 watched: Sequence[Optional[str]] = ()):
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
        self.node_names = tuple(node_names)
        self.graph, self.reader, self.type_names = graph, reader, tuple(type_names)
        # the in-place fields read here (feature, label names) and their versions now: changed() compares
        self._watched = tuple(watched)
        self._versions = self.field_versions(self._watched) if self._watched else ()
        self._structure = self._structure_now()
        self._frozen = True

    def __setattr__(self, name: str, value) -> None:
        if getattr(self, "_frozen", False):
            raise AttributeError(f"GraphInfo is frozen (set {name!r}): resolve the graph again for a new one")
        object.__setattr__(self, name, value)

    @property
    def typed(self) -> bool:
        """True for a graph with several node or edge types."""
        return self.schema is not None and not self.schema.is_homogeneous

    def changed(self) -> bool:
        """True when a field this description read in place (a one-type frontend graph's feature or label
        tensor) was replaced or written to since, or its nodes or edges were edited in place: the loader asks
        at each epoch's start and resolves the graph again only then."""
        if not self._watched or self.graph is None:
            return False
        return self.field_versions(self._watched) != self._versions or self.structure_changed()

    def structure_changed(self) -> bool:
        """True when the in-place graph's nodes or edges were edited since (its reader's ``structure``)."""
        return self._structure is not None and self._structure_now() != self._structure

    def _structure_now(self):
        structure = getattr(self.reader, "structure", None)  # a reader from before the protocol had it: None
        return None if self.graph is None or structure is None else structure(self.graph)

    def field_versions(self, keys) -> tuple:
        """Identity and in-place version of the in-place graph's ``ndata[key]`` for each key (None where
        absent): ``torch.Tensor._version`` counts in-place writes, so both ``g.ndata['feat'] = new`` and
        ``g.ndata['feat'][ids] = rows`` change it, at no cost per batch."""
        ndata = self.graph.ndata
        out = []
        for key in keys:
            t = ndata[key] if key is not None and key in ndata else None
            out.append((key, None if t is None else (id(t), t._version, tuple(t.shape), t.dtype)))
        return tuple(out)

    def __getstate__(self) -> dict:
        return {**self.__dict__, "graph": None}


def _ping_all(addresses: Sequence[str], timeout: float) -> None:
    from ..sampler.client import ping

    for addr in addresses:
        if not isinstance(addr, str) or not addr.startswith(("tcp://", "ipc://", "inproc://")):
            raise ValueError(f"graph server address must look like 'tcp://host:port', got {addr!r}")
        if not ping(addr, timeout=timeout):
            raise ServerUnavailable(addr, f"no PING reply within {timeout} s")


def _servers_info(addresses: Sequence[str], timeout: float, partition_dir: Optional[Path] = None,
                  graph: Any = None) -> GraphInfo:
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
        ndata = [set(i.get("ndata", {})) for i in client.infos]  # node times the servers filter by
        return GraphInfo(spec, int(client.num_nodes), int(client.feat_dim or 0), client.feat_dtype,
                         int(client.num_classes or 0) > 0 or any(t.has_label for t in (schema.node_types if schema else ())),
                         partition_dir=partition_dir, schema=schema,
                         edge_names=sorted(set.intersection(*edata)) if edata else [], edge_dtypes=dtypes,
                         feat_codec=client.feat_codec, node_names=sorted(set.intersection(*ndata)) if ndata else [],
                         graph=graph)


def resolve_graph(graph, feat_key, label_key, timeout: float, shared: bool = False) -> GraphInfo:
    """The :class:`GraphInfo` of any graph the DataLoader accepts, with ``feat_key`` / ``label_key`` the
    feature and label names it serves.

    A frontend's graph (a DGLGraph, a ``bgl.dgl`` graph: the edge's reader says which) is used in place: its
    CSC and feature/label tensors, zero-copy (:mod:`bgl.loader.graph_arrays`); ``shared`` (stage processes)
    copies them once into shared memory.
    """
    from .batch_frontend import frontend_reader
    from .graph_arrays import GraphArrays

    reader = frontend_reader(graph)
    if reader is not None:
        return frontend_graph_info(graph, reader, feat_key, label_key, shared)
    if isinstance(graph, GraphArrays):  # e.g. a PyG Data's arrays (bgl.pyg.NeighborLoader)
        return arrays_info(graph, shared, graph=graph)
    from ..sources.hetero import TypedArrays

    if isinstance(graph, TypedArrays):  # e.g. a PyG HeteroData's arrays
        return arrays_typed_info(graph, graph=graph)
    if isinstance(graph, GraphStore):
        return store_info(graph, graph=graph)
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
            return _servers_info(addresses, timeout, partition_dir=path, graph=graph)
        return store_info(GraphStore(path), graph=graph)
    if isinstance(graph, (list, tuple)) and graph and all(isinstance(a, str) for a in graph):
        from ..cache.ordering.partition_order import env_partition_dir

        env_dir = env_partition_dir()
        return _servers_info(list(graph), timeout, partition_dir=Path(env_dir) if env_dir else None, graph=graph)
    raise TypeError(f"graph must be a DGLGraph, GraphStore, store/partition dir or list of server "
                    f"addresses, got {type(graph).__name__}")


def frontend_graph_info(graph, reader, feat_key, label_key, shared: bool) -> GraphInfo:
    """GraphInfo of a frontend's graph read in place by ``reader``: a one-type graph's arrays
    (:meth:`~bgl.loader.batch_frontend.GraphReader.arrays`), a typed one's
    (:class:`bgl.sources.hetero.TypedArrays`), its field names and its type names."""
    if not hasattr(graph, "ndata") or not hasattr(graph, "canonical_etypes"):
        raise TypeError(f"graph must be a DGLGraph, got {type(graph).__name__}")
    in_place = dict(from_dgl=True, graph=graph, reader=reader)
    if len(graph.ntypes) != 1 or len(graph.canonical_etypes) != 1:
        from ..sources.hetero import TypedArrays

        return arrays_typed_info(TypedArrays.from_dglgraph(graph, feat_key, label_key, fuse=_kept_fused_csc(graph)),
                                 **in_place)
    return arrays_info(reader.arrays(graph, feat_key, label_key), shared, node_names=tuple(graph.ndata.keys()),
                       type_names=reader.type_names(graph), watched=(feat_key, label_key), **in_place)


def _kept_fused_csc(graph):
    """:func:`~bgl.sources.hetero.fused_csc`, its result kept per graph while the graph's edge arrays are the
    same ones (:mod:`bgl.loader.graph_derivations`): the next loader over the graph does not build it again."""
    from ..sources.hetero import fused_csc
    from .graph_derivations import derivations_of, storage_key

    derivations = derivations_of(graph)
    if derivations is None:
        return fused_csc

    def fuse(schema, rel_edges):
        key = (tuple(t.count for t in schema.node_types),
               tuple(storage_key(np.asarray(a)) for edges in rel_edges for a in edges))
        return derivations.kept("fused_csc", key, lambda: fused_csc(schema, rel_edges))

    return fuse


def arrays_info(arrays, shared: bool, **described) -> GraphInfo:
    """GraphInfo of in-memory :class:`~bgl.loader.graph_arrays.GraphArrays` (shared-memory copies
    for stage processes when ``shared``); ``described``: more of :class:`GraphInfo`'s arguments."""
    if shared:
        arrays = arrays.share_memory()
    dtype = None if arrays.feat is None else arrays.tensor("feat").dtype
    return GraphInfo(SamplingSpec("store", arrays=arrays), arrays.num_nodes, arrays.feat_dim, dtype,
                     arrays.label is not None, store=arrays, **described)


def arrays_typed_info(arrays, **described) -> GraphInfo:
    """GraphInfo of in-memory typed arrays (:class:`bgl.sources.hetero.TypedArrays`)."""
    dtypes = arrays.edge_dtypes()  # per-relation edge data, fused on first use (bgl/sources/typed/edata.py)
    return GraphInfo(SamplingSpec("store", arrays=arrays), arrays.num_nodes, 0, None, bool(arrays.type_label),
                     store=arrays, schema=arrays.schema, edge_names=list(dtypes), edge_dtypes=dtypes, **described)


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


def store_info(store: GraphStore, graph: Any = None) -> GraphInfo:
    """GraphInfo of a whole graph store (a partition part is refused: it needs its servers)."""
    if store.node_offset != 0 or store.global_num_nodes != store.num_nodes:
        raise ValueError(f"{store.path} is a partition part; pass the partition dir with graph servers")
    spec = SamplingSpec("store", path=str(store.path))
    name = store.feat_dtype_name
    dtype = None if name is None else torch.from_numpy(np.empty(0, np.dtype(name))).dtype
    return GraphInfo(spec, store.num_nodes, store.feat_dim, dtype,
                     store.label is not None or bool(store.type_label), store=store, schema=store.schema, graph=graph)
