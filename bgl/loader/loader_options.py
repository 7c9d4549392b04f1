"""The loader's own options (cache, order, pipeline, queues), resolved once from ``bgl.DataLoader``'s arguments.

DGL's ``DataLoader`` signature is kept as is; bgl's extra keyword arguments (the cache,
BGL's proximity order, the stage pipeline) and DGL's tuning arguments that bgl's pipeline
replaces arrive in ``**kwargs``.  :func:`resolve_loader_options` checks all of them and
returns one frozen :class:`LoaderOptions`, so an unknown or bad option fails with one
line before anything is built, and the loader never looks at ``kwargs`` again.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from .pipeline.resources import available_cores
from .stages.order import ORDERS
from .stages.row_buffers import RELEASE_BYTES

log = logging.getLogger(__name__)

PIPELINES = ("inline", "thread", "processes")
#: Batches in flight between two stages unless ``queue_size`` says otherwise.
DEFAULT_QUEUE = 4
#: ... where the queue holds finished batches (``pipeline="thread"`` on a CPU device: DGL blocks with
#: their CSR and input rows): each waiting batch costs its memory (~45 MiB on a 10.6M-edge user-item
#: graph), and the producer runs ahead of the model anyway (bench/results/recsys.md, 2026-12-04, 3
#: alternating seeds: 0.80x DGL's epoch and 1.05x its peak RSS with 2, 0.82x and 1.06x with 4).  One
#: held a batch less (Cora link prediction 852 against 870 MiB) but let the typed R-GCN's trainer wait
#: 6.7 % of its epoch against 4.8 % (bench/results/dataloader.md, 2026-12-06).
FINISHED_BATCHES_QUEUE = 2
#: Input rows a batch at or above which a producer thread keeps one batch ahead, not ``queue_size``
#: (``bgl.loader.pipeline.background``): the row buffers' own line for a batch's rows being a mapping of
#: their own (glibc's largest dynamic mmap threshold); PubMed with 8,192-dim rows (144 MB a batch): peak
#: RSS 1.20x -> 1.02x DGL's.
ONE_AHEAD_BYTES = RELEASE_BYTES
# DGL DataLoader keyword arguments that tune DGL's own machinery; accepted so
# scripts run unchanged, and ignored because bgl's pipeline replaces them.
DGL_TUNING_KWARGS = frozenset({
    "use_uva", "use_prefetch_thread", "use_alternate_streams", "pin_prefetcher", "persistent_workers",
    "pin_memory", "prefetch_factor", "gpu_cache", "worker_init_fn", "timeout", "generator",
    "multiprocessing_context",
})


def choose_pipeline(named: Optional[str], graph_kind: str, device_type: str, rng_user: Optional[str] = None) -> str:
    """The loader's pipeline: ``named`` (its ``pipeline=``, or "processes" from ``num_workers``), else
    :func:`default_pipeline`.  ``rng_user``: the name of a user's callable that the sample stage calls
    under torch's global RNG (a callable negative sampler, reseeded per batch inside ``fork_rng``), or None.

    torch's CPU generator is one per process: in a producer thread, the callable's reseed-draw-restore
    interleaves with the training loop's own draws (dropout), so its negatives stop being a function
    of the batch and the loop's stream is rewound (seen: 1 of 62 batches' negatives as inline's, and
    repeated draws in the loop).  Such a loader runs inline by default; ``pipeline="thread"`` named
    with it is a ValueError."""
    if named == "thread" and rng_user is not None:
        raise ValueError(f"pipeline='thread' would call the negative sampler {rng_user} in a background thread, "
                         "where its draws from torch's global RNG and the training loop's race (neither "
                         "reproducible); use pipeline='inline' (the default with it) or 'processes'")
    if named is not None:
        return named
    return "inline" if rng_user is not None else default_pipeline(graph_kind, device_type)


def default_pipeline(graph_kind: str, device_type: str, cores: Optional[int] = None) -> str:
    """The pipeline a loader runs when none is named and ``num_workers == 0`` (docs/trainer-wait.md).

    ``"thread"`` overlaps the next batches with the model step: with graph servers (their round
    trips), and with a local graph on a CPU device when the process may run on >= 2 cores (the
    producer thread needs a core of its own besides the trainer's).  ``"inline"`` otherwise: one core
    (the producer would only take turns with the model) or a GPU device, where the trainer's thread
    mostly queues kernels.  ``cores``: the usable cores (default: this process's CPU affinity).
    A batch in flight costs memory: the thread pipeline holds at most ``FINISHED_BATCHES_QUEUE``
    finished batches plus the one the producer is building, beside the one the model is using.
    """
    if graph_kind == "servers":
        return "thread"
    if cores is None:
        cores = len(available_cores())
    return "thread" if device_type == "cpu" and cores >= 2 else "inline"


@dataclass(frozen=True)
class LoaderOptions:
    """bgl's loader options (see ``bgl.DataLoader``'s "Other Parameters"); ``pipeline`` None until the
    graph and device are known (:func:`default_pipeline`)."""

    batch_size: int
    num_workers: int
    cache: Any = None
    cache_ratio: Optional[float] = None
    cache_bytes: Optional[int] = None
    cache_lookahead: Any = None
    order: str = "random"
    pipeline: Optional[str] = None
    stage_cores: Any = None
    blocks: Optional[str] = None
    server_timeout: float = 5.0
    num_sequences: int = 8
    queue_size: Optional[int] = None  # None: DEFAULT_QUEUE, or FINISHED_BATCHES_QUEUE (the loader decides)
    feat_dtype: Any = None  # checked by TransferStage
    seed_time: Any = None  # a temporal sampler's time per seed (bgl.loader.temporal_sampler)
    seed_layout: Any = None  # a caller's per-batch seed layout over item positions (temporal_edges.LaidOutSeeds)
    order_dir: Optional[str] = None  # where proximity orders are saved and read back (saved_orders.py)

    @property
    def cache_args(self) -> tuple:
        """The arguments :func:`~bgl.loader.cache_choice.resolve_cache` takes first, in its order."""
        return (self.cache, self.cache_ratio, self.cache_bytes, self.cache_lookahead, self.queue_size or DEFAULT_QUEUE)


def _is_count(value, least: int) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, np.integer)) and value >= least


def _order_dir(value) -> str:
    """``order_dir`` as a path string; TypeError for a non-path, NotADirectoryError for a file."""
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"order_dir must be a directory path (str or os.PathLike), got {type(value).__name__}")
    path = os.fspath(value)
    if os.path.exists(path) and not os.path.isdir(path):
        raise NotADirectoryError(f"order_dir {path!r} exists and is not a directory")
    return path


def resolve_loader_options(batch_size, num_workers, kwargs: dict) -> LoaderOptions:
    """The :class:`LoaderOptions` of ``batch_size``, ``num_workers`` and the loader's other keyword
    arguments; TypeError naming unknown keywords, ValueError naming a bad value."""
    kwargs = dict(kwargs)
    named = {k: kwargs.pop(k) for k in ("cache", "cache_ratio", "cache_bytes", "cache_lookahead", "order",
                                         "pipeline", "stage_cores", "blocks", "feat_dtype", "seed_time",
                                         "seed_layout", "order_dir")
             if k in kwargs}
    numbers = {k: kwargs.pop(k) for k in ("server_timeout", "num_sequences", "queue_size") if k in kwargs}
    ignored = sorted(set(kwargs) & DGL_TUNING_KWARGS)
    unknown = sorted(set(kwargs) - DGL_TUNING_KWARGS)
    if unknown:
        raise TypeError(f"bgl.DataLoader got unexpected keyword arguments {unknown}")
    if ignored:
        log.debug("ignoring DGL tuning arguments %s (bgl's pipeline replaces them)", ignored)
    if not _is_count(batch_size, 1):
        raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")
    if not _is_count(num_workers, 0):
        raise ValueError(f"num_workers must be an int >= 0, got {num_workers!r}")
    order = named.get("order", "random")
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    pipeline = named.get("pipeline")
    if pipeline is None and num_workers > 0:
        pipeline = "processes"
    if pipeline is not None and pipeline not in PIPELINES:
        raise ValueError(f"pipeline must be one of {PIPELINES}, got {pipeline!r}")
    if "queue_size" in numbers and not _is_count(numbers["queue_size"], 1):
        raise ValueError(f"queue_size must be an int >= 1, got {numbers['queue_size']!r}")
    if named.get("blocks") not in (None, "dgl", "bgl"):
        raise ValueError(f"blocks must be 'dgl', 'bgl' or None, got {named['blocks']!r}")
    named.update(order=order, pipeline=pipeline)
    if named.get("order_dir") is not None:
        named["order_dir"] = _order_dir(named["order_dir"])
    return LoaderOptions(batch_size=int(batch_size), num_workers=int(num_workers), **named,
                         server_timeout=float(numbers.get("server_timeout", 5.0)),
                         num_sequences=int(numbers.get("num_sequences", 8)),
                         queue_size=int(numbers["queue_size"]) if "queue_size" in numbers else None)
