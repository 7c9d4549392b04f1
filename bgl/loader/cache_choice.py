"""Which feature cache ``bgl.DataLoader``'s ``cache=`` / ``cache_ratio=`` / ``cache_bytes=`` arguments ask for.

Resolved before anything starts (a :class:`~bgl.loader.stages.specs.CacheSpec` that the fetch stage
builds in its own process, or a live cache object for inline pipelines), so a bad size or
policy fails at construction with the value named.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import numpy as np
import torch

from .stages.specs import CacheSpec, TypedCacheSpec

if TYPE_CHECKING:
    from .graph_info import GraphInfo

DEFAULT_CACHE_RATIO = 0.1
# The policy of ``cache=True`` / a cache size without a policy name: keep what the
# already-sampled batches need (fewest rows from the source in bench/results/cache.md).
DEFAULT_CACHE_POLICY = "lookahead"
# The policies that read node in-degrees: static-degree pins by degree; fifo uses them only to
# choose which misses stay when one batch overflows the ring (hubs), and lookahead to rank the
# rows no sampled batch needs, so those two can do without them.
DEGREE_POLICIES = ("static-degree", "fifo", "lookahead")


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


def is_live_cache(cache, cache_ratio, cache_bytes) -> bool:
    """True when ``cache=`` is a cache object of the caller's (no policy name, no size, not None/False)."""
    return cache_policy_name(cache, cache_ratio, cache_bytes) is None and cache not in (None, False)


def asks_for_cache(cache, cache_ratio, cache_bytes) -> bool:
    """True when the ``cache*`` arguments ask for a cache (a policy, a size, or a live cache object)."""
    sizes = (cache_ratio, cache_bytes)
    return cache_policy_name(cache, *sizes) is not None or is_live_cache(cache, *sizes)


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
    if info.typed:
        return typed_cache_spec(policy, cache_ratio, cache_bytes, info, pipeline, device)
    if info.feat_dim <= 0:
        raise ValueError("cache requested but the graph has no node features")
    # The cache holds the rows as they arrive: encoded ones when the graph has a feature codec
    # (bgl/codec), so cache_bytes= counts encoded bytes and the same budget holds 2-4x the rows.
    codec = info.feat_codec
    row_dtype = (info.feat_dtype or torch.float32) if codec is None else codec.torch_row_dtype
    row_width = info.feat_dim if codec is None else codec.row_width
    itemsize = torch.empty(0, dtype=row_dtype).element_size()
    ratio, cache_bytes = checked_size(cache_ratio, cache_bytes)
    if cache_bytes is not None:
        capacity = cache_bytes // (row_width * itemsize)
    else:
        capacity = int(ratio * info.num_nodes)
    capacity = min(capacity, info.num_nodes)
    degrees = None
    if policy in DEGREE_POLICIES:
        if info.store is not None:
            degrees = np.asarray(info.store.in_degrees())
        elif info.partition_dir is not None:
            degrees = partition_degrees(info.partition_dir)
        if degrees is None and policy == "static-degree":
            raise ValueError("cache='static-degree' needs node degrees: pass a store or partition dir")
    dtype = str(row_dtype).replace("torch.", "")
    return CacheSpec(policy=policy, capacity=capacity, num_nodes=info.num_nodes, dim=row_width,
                     dtype=dtype, device=cache_device(pipeline, device), degrees=degrees)


def cache_device(pipeline: str, device: torch.device) -> str:
    """Where the cache lives: on the CPU inside a stage process; inline it may sit on the GPU."""
    return str(device) if pipeline != "processes" else "cpu"


def checked_size(cache_ratio, cache_bytes) -> tuple[float, Optional[int]]:
    """``(ratio, bytes)`` of the cache size arguments: ``cache_bytes`` as an int when given (it wins),
    else the ``cache_ratio`` (default :data:`DEFAULT_CACHE_RATIO`); ValueError naming a bad value."""
    if cache_bytes is not None:
        if cache_bytes < 0:
            raise ValueError(f"cache_bytes must be >= 0, got {cache_bytes}")
        return 0.0, int(cache_bytes)
    ratio = DEFAULT_CACHE_RATIO if cache_ratio is None else float(cache_ratio)
    if not 0.0 <= ratio <= 1.0:
        raise ValueError(f"cache_ratio must be in [0, 1], got {cache_ratio}")
    return ratio, None


def typed_cache_spec(policy: str, cache_ratio, cache_bytes, info: GraphInfo, pipeline: str,
                     device: torch.device) -> TypedCacheSpec:
    """One cache per featured node type, each holding the same fraction of its type's rows
    (``cache_ratio``, or ``cache_bytes`` over the bytes of all types' rows, each in its own width
    and dtype), all of ``policy``.  Degrees (the fill order of ``lookahead``, the ranking of
    ``static-degree``) are each type's slice of the store's in-degrees (over servers, its partition's,
    in the loader's original ids; without the partition dir there are none and ``static-degree`` is
    refused); ``presample`` counts come per type from the loader's presampled epoch
    (:func:`bgl.loader.stages.presample.presample_cache_spec`)."""
    schema = info.schema
    featured = [t for t in schema.node_types if t.feat_dim > 0]
    if not featured:
        raise ValueError("cache requested but no node type of this graph has features")
    # each type's rows as they arrive: encoded where the type has a codec (bgl/codec/typed_rows.py)
    codecs = info.feat_codec if isinstance(info.feat_codec, dict) else {}
    dtypes = {t.name: codecs[t.name].row_dtype if t.name in codecs else np.dtype(t.feat_dtype or "float32")
              for t in featured}
    widths = {t.name: codecs[t.name].row_width if t.name in codecs else t.feat_dim for t in featured}
    total = sum(t.count * widths[t.name] * dtypes[t.name].itemsize for t in featured)
    fraction, cache_bytes = checked_size(cache_ratio, cache_bytes)
    if cache_bytes is not None:
        fraction = min(1.0, cache_bytes / total) if total else 0.0
    degrees = None
    if policy in DEGREE_POLICIES and info.store is not None:
        degrees = np.asarray(info.store.in_degrees())
    elif policy in DEGREE_POLICIES and info.partition_dir is not None:
        degrees = original_degrees(info.partition_dir)
    if degrees is None and policy == "static-degree":
        raise ValueError("cache='static-degree' needs node degrees: pass a store, or the partition dir with "
                         "graph servers (as graph, or BGL_PARTITION)")
    specs = {t.name: CacheSpec(policy=policy, capacity=min(int(fraction * t.count), t.count), num_nodes=t.count,
                               dim=widths[t.name], dtype=dtypes[t.name].name,
                               device=cache_device(pipeline, device),
                               degrees=None if degrees is None else degrees[t.offset:t.offset + t.count])
             for t in featured}
    return TypedCacheSpec(specs=specs, ntypes=schema.ntypes, offsets=np.asarray(schema.offsets, np.int64))


@dataclass(frozen=True)
class CacheChoice:
    """What the ``cache*`` arguments resolved to.

    ``spec`` builds the cache in the fetch stage (None for no cache or a live cache object);
    ``live`` is the user's cache object (inline only) or None; ``policy`` the policy name used
    (``loader.cache_policy``; None without a cache); ``lookahead`` the sampled batches the fetch
    stage reads ahead when the cache takes announcements: an int, or a window sized to the cache
    (:class:`bgl.cache.lookahead_feeder.CacheSizedWindow`, with the bounds of the pipeline).
    """

    spec: Optional[CacheSpec]
    live: Any
    policy: Optional[str]
    lookahead: Any  # int | CacheSizedWindow


def resolve_cache(cache, cache_ratio, cache_bytes, cache_lookahead, queue_size: int, info: GraphInfo,
                  pipeline: str, device: torch.device) -> CacheChoice:
    """Resolve and check every ``cache*`` argument of the DataLoader (see :func:`resolve_cache_spec`).

    ``cache_lookahead`` (an int, or ``"auto"``: the default for a cache that takes announcements)
    is refused for a cache that takes none.  ``"auto"`` becomes a window sized to the cache
    (:func:`sized_window`); without a lookahead cache the depth is ``queue_size`` (unused).
    """
    spec = resolve_cache_spec(cache, cache_ratio, cache_bytes, info, pipeline, device)
    live = None
    if spec is None and is_live_cache(cache, cache_ratio, cache_bytes):
        live = cache
    policy = spec.policy if spec is not None else getattr(live, "policy", None)
    announces = policy == "lookahead" or hasattr(live, "announce")
    if cache_lookahead is None:
        lookahead = sized_window(pipeline) if announces else int(queue_size)
    else:
        if cache_lookahead != "auto" and (isinstance(cache_lookahead, bool) or not isinstance(
                cache_lookahead, (int, np.integer)) or cache_lookahead < 0):
            raise ValueError(f"cache_lookahead must be an int >= 0 (sampled batches read ahead) or 'auto', "
                             f"got {cache_lookahead!r}")
        if not announces:
            raise ValueError(f"cache_lookahead applies to the lookahead cache; this loader's cache is "
                             f"{policy or 'none'}")
        lookahead = sized_window(pipeline) if cache_lookahead == "auto" else int(cache_lookahead)
    return CacheChoice(spec, live, policy, lookahead)


def sized_window(pipeline: str):
    """The loader's lookahead window: as many sampled batches as the cache has room to keep rows
    for (:class:`~bgl.cache.lookahead_feeder.CacheSizedWindow`), within a budget of
    ``DEFAULT_MAX_BYTES`` (64 MiB) of blocks in flight and 1024 batches, and with
    ``pipeline="processes"`` within what the fetch process can hold open
    (:func:`~bgl.cache.lookahead_feeder.process_window`: half the open-file limit).

    Reading ahead only changes what the cache keeps while it has room, so the window reaches
    the rows Belady's optimum moves where a fixed depth of 4 moves 1.28-1.37x as many at batch
    32 (bench/results/cache.md); it costs the blocks it holds, never more than the budget."""
    from ..cache.lookahead_feeder import CacheSizedWindow, process_window

    return process_window() if pipeline == "processes" else CacheSizedWindow()


def original_degrees(path: Path) -> np.ndarray:
    """In-degrees of all nodes of a typed partition in ORIGINAL ids (what a typed loader over its servers
    speaks, :class:`~bgl.sampler.typed.remote.TypedServerSampler`): the parts' degrees put back in place."""
    from ..partition.format import open_partition

    new = partition_degrees(path)
    out = np.empty_like(new)
    out[np.asarray(open_partition(path).orig_ids)] = new
    return out


def partition_degrees(path: Path) -> np.ndarray:
    """In-degrees of all nodes (new ids, parts own contiguous ranges) from the part stores."""
    from ..partition.format import open_partition

    book = open_partition(path)
    return np.concatenate([np.asarray(book.part_store(k).in_degrees()) for k in range(book.num_parts)])
