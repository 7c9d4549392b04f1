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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np
import torch

from ..cache.ordering.partition_order import env_partition_dir
from ..errors import ServerUnavailable
from ..store import GraphStore
from .edge_options import edge_names_of, edge_option
from .specs import CacheSpec, SamplingSpec

PIPELINES = ("inline", "thread", "processes")
DEFAULT_CACHE_RATIO = 0.1
# The policy of ``cache=True`` / a cache size without a policy name: keep what the
# already-sampled batches need (fewest rows from the source in bench/results/cache.md).
DEFAULT_CACHE_POLICY = "lookahead"
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
                 output_device=None, *, prob: Optional[str] = None, mask: Optional[str] = None,
                 prefetch_edge_feats: Sequence[str] = ()):
        self.fanouts = _check_fanouts(fanouts)
        self.replace = bool(replace)
        self.prefetch_node_feats = list(prefetch_node_feats or [])
        self.prefetch_labels = list(prefetch_labels or [])
        self.output_device = output_device
        self.prob = edge_option(prob, mask)
        self.mask = mask
        self.prefetch_edge_feats = edge_names_of(prefetch_edge_feats)

    def __repr__(self) -> str:
        weights = "" if self.prob is None else f", prob={self.prob!r}"
        return f"bgl.NeighborSampler(fanouts={self.fanouts}, replace={self.replace}{weights})"


def _check_fanouts(fanouts) -> list[int]:
    if isinstance(fanouts, (int, np.integer)) or not hasattr(fanouts, "__len__") or len(fanouts) == 0:
        raise ValueError(f"fanouts must be a non-empty list of ints, got {fanouts!r}")
    out = []
    for f in fanouts:
        if isinstance(f, bool) or not isinstance(f, (int, np.integer)) or f < -1 or f == 0:
            raise ValueError(f"each fanout must be an int >= 1 or -1 (all neighbours), got {f!r} in {list(fanouts)}")
        out.append(int(f))
    return out


def is_dgl_object(obj: Any) -> bool:
    return type(obj).__module__.split(".")[0] == "dgl"


def sampler_settings(graph_sampler) -> tuple[list[int], bool, list[str], list[str], bool]:
    """(fanouts, replace, feature keys, label keys, came from DGL) of a supported sampler."""
    from .labor import LaborSampler

    if isinstance(graph_sampler, (NeighborSampler, LaborSampler)):
        return (graph_sampler.fanouts, graph_sampler.replace, graph_sampler.prefetch_node_feats,
                graph_sampler.prefetch_labels, False)
    name = type(graph_sampler).__name__
    if is_dgl_object(graph_sampler) and hasattr(graph_sampler, "fanouts") and name in (
            "NeighborSampler", "MultiLayerFullNeighborSampler", "LaborSampler"):
        if getattr(graph_sampler, "edge_dir", "in") != "in":
            raise ValueError(f"only edge_dir='in' is supported, got {graph_sampler.edge_dir!r}")
        feats = graph_sampler.prefetch_node_feats
        labels = graph_sampler.prefetch_labels
        if isinstance(feats, dict) or isinstance(labels, dict):
            raise ValueError("heterogeneous prefetch dicts are not supported (homogeneous graphs only)")
        # DGL exposes every ndata field lazily even without prefetch; bgl's store
        # has one feature array and one label array, offered under the usual names.
        return (_check_fanouts(list(graph_sampler.fanouts)), bool(getattr(graph_sampler, "replace", False)),
                list(feats) or ["feat"], list(labels) or ["label"], True)
    raise TypeError(
        f"unsupported graph_sampler {type(graph_sampler).__module__}.{name}; use bgl.NeighborSampler, "
        f"bgl.LaborSampler or dgl.dataloading.NeighborSampler / MultiLayerFullNeighborSampler / LaborSampler")


class GraphInfo:
    """What the loader learned about its graph before starting anything."""

    def __init__(self, spec: SamplingSpec, num_nodes: int, feat_dim: int, feat_dtype, has_label: bool,
                 store: Optional[GraphStore] = None, partition_dir: Optional[Path] = None,
                 from_dgl: bool = False, edge_names: Optional[Sequence[str]] = None,
                 edge_dtypes: Optional[dict] = None):
        self.spec, self.num_nodes, self.feat_dim, self.feat_dtype = spec, num_nodes, feat_dim, feat_dtype
        self.has_label, self.store, self.partition_dir, self.from_dgl = has_label, store, partition_dir, from_dgl
        if edge_names is None and store is not None:
            edge_names = list(store.edata)
        self.edge_names = None if edge_names is None else tuple(edge_names)  # None: not known here
        if edge_dtypes is None and store is not None:
            edge_dtypes = {k: np.asarray(store.edata[k][:0]).dtype.name for k in store.edata}
        self.edge_dtypes = dict(edge_dtypes or {})


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
        edata = [set(info.get("edata", {})) for info in client.infos]
        dtypes = {k: v.get("dtype") for k, v in client.infos[0].get("edata", {}).items()}
        return GraphInfo(spec, int(client.num_nodes), int(client.feat_dim or 0), client.feat_dtype,
                         int(client.num_classes or 0) > 0, partition_dir=partition_dir,
                         edge_names=sorted(set.intersection(*edata)) if edata else [], edge_dtypes=dtypes)


def resolve_graph(graph, feat_key, label_key, timeout: float, shared: bool = False) -> GraphInfo:
    """GraphInfo for any graph the DataLoader accepts.

    A DGLGraph is used in place: its CSC and feature/label tensors, zero-copy
    (:mod:`bgl.loader.graph_arrays`); ``shared`` (stage processes) copies them
    once into shared memory.
    """
    from .graph_arrays import GraphArrays, dglgraph_arrays

    if is_dgl_object(graph):
        if not hasattr(graph, "ndata") or len(getattr(graph, "ntypes", ["_N"])) != 1:
            raise ValueError("only homogeneous DGLGraphs are supported")
        return arrays_info(dglgraph_arrays(graph, feat_key, label_key), shared, from_dgl=True)
    if isinstance(graph, GraphArrays):  # e.g. a PyG Data's arrays (bgl.pyg.NeighborLoader)
        return arrays_info(graph, shared)
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
    dtype = None if store.feat is None else torch.from_numpy(np.empty(0, store.feat.dtype)).dtype
    return GraphInfo(spec, store.num_nodes, store.feat_dim, dtype, store.label is not None, store=store)


def check_indices(indices, num_nodes: int) -> np.ndarray:
    """Seed ids as contiguous int64 [n]; refuses non-integer, non-1-D, out-of-range or duplicate ids."""
    if isinstance(indices, dict):
        raise TypeError("dict indices (heterogeneous graphs) are not supported; pass one id tensor")
    if torch.is_tensor(indices):
        if indices.dtype.is_floating_point or indices.dtype.is_complex or indices.dtype == torch.bool:
            raise TypeError(f"indices must be integer node ids, got dtype {indices.dtype}")
        arr = indices.detach().cpu().numpy()
    else:
        arr = np.asarray(indices)
        if arr.dtype.kind not in "iu":
            raise TypeError(f"indices must be integer node ids, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"indices must be 1-D, got shape {tuple(arr.shape)}")
    arr = arr.astype(np.int64, copy=False)
    if arr.size:
        lo, hi = int(arr.min()), int(arr.max())
        if lo < 0 or hi >= num_nodes:
            bad = lo if lo < 0 else hi
            raise ValueError(f"indices contain node id {bad}, outside [0, {num_nodes})")
        if np.unique(arr).shape[0] != arr.shape[0]:
            raise ValueError("indices contain duplicate node ids")
    return np.ascontiguousarray(arr)


def cache_policy_name(cache, cache_ratio, cache_bytes) -> Optional[str]:
    """The policy a ``cache=`` argument asks for: None for no cache or a live cache object.

    A policy name is taken as given.  ``cache=True``, ``cache=<fraction>`` or a size
    (``cache_ratio=`` / ``cache_bytes=``) without a policy name means
    :data:`DEFAULT_CACHE_POLICY`; ``cache=False`` means no cache.
    """
    if cache is None or cache is True:
        sized = cache is True or cache_ratio is not None or cache_bytes is not None
        return DEFAULT_CACHE_POLICY if sized else None
    if cache is False:
        return None
    if isinstance(cache, (float, np.floating)):
        if cache_ratio is not None or cache_bytes is not None:
            raise ValueError(f"cache={cache} is already a size (a fraction of nodes); do not also pass "
                             "cache_ratio or cache_bytes")
        return DEFAULT_CACHE_POLICY
    return cache if isinstance(cache, str) else None


def resolve_cache_spec(cache, cache_ratio, cache_bytes, info: GraphInfo, pipeline: str,
                       device: torch.device) -> Optional[CacheSpec]:
    """The CacheSpec of a ``cache=`` argument (None for no cache or a live cache object, which is checked).

    See :func:`cache_policy_name` for how a policy is chosen; ``cache=<float>`` is the
    fraction of nodes cached (as ``cache_ratio``).
    """
    if cache is not None and not isinstance(cache, (str, bool, float, np.floating)):
        if pipeline == "processes":
            raise ValueError("a cache object cannot move into a stage process; with pipeline='processes' "
                             "pass a policy name (cache='lookahead')")
        if not hasattr(cache, "fetch"):
            raise TypeError(f"cache must be a policy name, True, a fraction of nodes or an object with "
                            f"fetch(ids, miss_source), got {type(cache).__name__}")
        return None
    policy = cache_policy_name(cache, cache_ratio, cache_bytes)
    if policy is None:
        return None
    if isinstance(cache, (float, np.floating)):
        cache_ratio = float(cache)
    from ..cache import POLICIES

    if policy not in POLICIES:
        raise ValueError(f"unknown cache policy {policy!r}; choose from {', '.join(POLICIES)}")
    if info.feat_dim <= 0:
        raise ValueError("cache requested but the graph has no node features")
    itemsize = torch.empty(0, dtype=info.feat_dtype or torch.float32).element_size()
    if cache_bytes is not None:
        if cache_bytes < 0:
            raise ValueError(f"cache_bytes must be >= 0, got {cache_bytes}")
        capacity = int(cache_bytes) // (info.feat_dim * itemsize)
    else:
        ratio = DEFAULT_CACHE_RATIO if cache_ratio is None else float(cache_ratio)
        if not 0.0 <= ratio <= 1.0:
            raise ValueError(f"cache_ratio must be in [0, 1], got {cache_ratio}")
        capacity = int(ratio * info.num_nodes)
    capacity = min(capacity, info.num_nodes)
    degrees = None
    # static-degree pins by degree; fifo uses degrees only to choose which misses
    # stay when one batch overflows the ring (hubs), and lookahead to rank the rows
    # no sampled batch needs, so those two can do without them.
    if policy in ("static-degree", "fifo", "lookahead"):
        if info.store is not None:
            degrees = np.asarray(info.store.in_degrees())
        elif info.partition_dir is not None:
            degrees = partition_degrees(info.partition_dir)
        if degrees is None and policy == "static-degree":
            raise ValueError("cache='static-degree' needs node degrees: pass a store or partition dir")
    # A cache inside a stage process lives on the CPU; inline it may sit on the GPU.
    device = str(device) if pipeline != "processes" else "cpu"
    dtype = str(info.feat_dtype or torch.float32).replace("torch.", "")
    return CacheSpec(policy=policy, capacity=capacity, num_nodes=info.num_nodes, dim=info.feat_dim,
                     dtype=dtype, device=device, degrees=degrees)


@dataclass(frozen=True)
class CacheChoice:
    """What the ``cache*`` arguments resolved to.

    ``spec`` builds the cache in the fetch stage (None for no cache or a live cache object);
    ``live`` is the user's cache object (inline only) or None; ``policy`` the policy name used
    (``loader.cache_policy``; None without a cache); ``lookahead`` the sampled batches the fetch
    stage reads ahead when the cache takes announcements.
    """

    spec: Optional[CacheSpec]
    live: Any
    policy: Optional[str]
    lookahead: int


def resolve_cache(cache, cache_ratio, cache_bytes, cache_lookahead, queue_size: int, info: GraphInfo,
                  pipeline: str, device: torch.device) -> CacheChoice:
    """Resolve and check every ``cache*`` argument of the DataLoader (see :func:`resolve_cache_spec`).

    ``cache_lookahead`` defaults to ``queue_size`` (what is in flight between sample and fetch
    anyway); it is refused for a cache that takes no announcements.
    """
    spec = resolve_cache_spec(cache, cache_ratio, cache_bytes, info, pipeline, device)
    live = None
    if spec is None and cache_policy_name(cache, cache_ratio, cache_bytes) is None and cache not in (None, False):
        live = cache
    policy = spec.policy if spec is not None else getattr(live, "policy", None)
    if cache_lookahead is None:
        lookahead = int(queue_size)
    else:
        if isinstance(cache_lookahead, bool) or not isinstance(cache_lookahead, (int, np.integer)) \
                or cache_lookahead < 0:
            raise ValueError(f"cache_lookahead must be an int >= 0 (sampled batches read ahead), "
                             f"got {cache_lookahead!r}")
        if not (policy == "lookahead" or hasattr(live, "announce")):
            raise ValueError(f"cache_lookahead applies to the lookahead cache; this loader's cache is "
                             f"{policy or 'none'}")
        lookahead = int(cache_lookahead)
    return CacheChoice(spec, live, policy, lookahead)


def partition_degrees(path: Path) -> np.ndarray:
    """In-degrees of all nodes (new ids, parts own contiguous ranges) from the part stores."""
    from ..partition.format import open_partition

    book = open_partition(path)
    return np.concatenate([np.asarray(book.part_store(k).in_degrees()) for k in range(book.num_parts)])
