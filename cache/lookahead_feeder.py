"""Feed a feature cache sampled batches ``depth`` ahead of the fetch: the fetch stage's lookahead.

A :class:`~bgl.cache.lookahead.LookaheadCache` can only keep what the coming
batches need if it hears about them before it fetches the current one.  The
sampler already runs ahead of the fetch (the pipeline's queues hold sampled
batches in flight), so the fetch stage only has to read ``depth`` batches
ahead of the one it fetches, announcing each as it arrives.  This wrapper does
exactly that for any iterator of sampled batches, so the same few lines serve
the inline pipeline (wrap the sampler's generator) and a fetch-stage process
(wrap the generator of items read from its input queue).

``depth="auto"`` sizes the window to the cache instead (:class:`CacheSizedWindow`): read
ahead while the cached rows the announced batches need leave room in the cache, up to
``max_depth`` batches and ``max_bytes`` of queued blocks.  It is the loader's default
(``cache_lookahead``): four batches of lookahead see only a sliver of what a cache can keep when
batches are small (PubMed, batch 32, 10 % cache: 1.37x Belady's rows at depth 4, 1.00x with the
window sized to the cache; bench/results/cache.md).

Costs: holds the window's sampled batches (their blocks) in memory besides the one being
fetched: at most :data:`DEFAULT_MAX_BYTES` (64 MiB, plus the one batch that crosses it) with
the sized window, or ``depth`` batches.  In a fetch *process* (``pipeline="processes"``) each
held batch also keeps its shared-memory segments open, one file descriptor each under torch's
default sharing strategy, so the window there is also bounded by the open-file limit
(:func:`process_window`).  Adds no copy; the sized window adds one O(capacity) count of the
protected slots per batch read.
"""
from __future__ import annotations

import resource
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Optional

import torch

from .base import MissSource


def _src_ids(item) -> torch.Tensor:
    return item.blocks[0].src_ids


def _num_seeds(item) -> int:
    return int(item.blocks[-1].num_dst)


def _block_bytes(item) -> int:
    """Bytes of a sampled batch's block tensors (what the window holds per queued batch)."""
    total = 0
    for b in getattr(item, "blocks", ()):
        for t in (b.src_ids, b.indptr, b.indices, getattr(b, "edge_ids", None)):
            if isinstance(t, torch.Tensor):
                total += t.numel() * t.element_size()
    return total


AUTO = "auto"
# The window's batch cap.  The byte budget is the bound that matters; the cap only stops a
# window of tiny batches.  256 was too short on R-MAT 20 (batch 32, a 104,858-row cache: the
# window sat at the cap, 1.15x Belady's rows; replayed at 1024, 1.003x with a mean depth of 892,
# ~40 KB of blocks a batch, well inside 64 MiB).  The price: an epoch whose cache starts empty
# fetches its first batch only after the window is read (up to this many sampled batches).
DEFAULT_MAX_DEPTH = 1024
DEFAULT_MAX_BYTES = 64 << 20
# Batches a sized window always reads ahead when its input can say whether reading more is free
# (``items.ready()``: a fetch *process*, True while its next batch is queued and the trainer still
# has a fetched batch waiting).  Beyond these it reads on only while that holds, so the trainer never
# idles while the window fills: a window that waited to fill made pipeline="processes" epochs
# 1.3-1.6x longer on PubMed (sampling alone at each epoch's start, then fetch and training alone;
# bench/results/cache.md).  Four is the fixed depth the loader had before the sized window.
READY_MIN_AHEAD = 4


# Shared-memory segments one sampled batch holds open in a fetch process: its packed blocks
# (bgl/loader/stages/minibatch.py) and, for seed edges, the EdgeBatch's up to six tensors; one spare.
SEGMENTS_PER_BATCH = 8


def process_window(max_depth: int = DEFAULT_MAX_DEPTH, max_bytes: int = DEFAULT_MAX_BYTES,
                   open_files: int | None = None) -> "CacheSizedWindow":
    """The sized window a fetch stage *process* may hold: at most half the soft open-file limit
    (``open_files``, default this process's ``RLIMIT_NOFILE``) in queued batches' shared-memory
    segments (:data:`SEGMENTS_PER_BATCH` each), so a long window cannot exhaust the descriptors
    torch's ``file_descriptor`` sharing strategy keeps open per received tensor (a 1024-file
    limit: 64 batches; 20000: the 1024-batch cap).  No file bound under ``file_system`` sharing."""
    if torch.multiprocessing.get_sharing_strategy() == "file_system":
        return CacheSizedWindow(max_depth, max_bytes)
    if open_files is None:
        open_files = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        open_files = 1 << 20 if open_files == resource.RLIM_INFINITY else open_files
    return CacheSizedWindow(max(1, min(max_depth, open_files // 2 // SEGMENTS_PER_BATCH)), max_bytes)


@dataclass(frozen=True)
class CacheSizedWindow:
    """When to read one more sampled batch ahead: a window sized to the cache.

    Reading further ahead only changes what the cache keeps while some of its slots hold
    rows no announced batch needs (those compete by the fill rule, not by next use); once
    every slot is protected, the cache keeps exactly what a longer window would make it
    keep.  So: read ahead while ``cache.protected_rows() < cache.capacity``, at most
    ``max_depth`` batches and ``max_bytes`` of queued batches (``bytes_of(item)``), and never
    fewer than one batch.  A loader's fetch stage carries one (``FetchStage.lookahead``), its
    bounds chosen once for its pipeline (:func:`process_window` in a stage process).

    Parameters
    ----------
    max_depth : int >= 1, batches read ahead at most.
    max_bytes : int >= 0, memory budget for the queued batches (the window may exceed it
        by the one batch that crossed it).
    """

    max_depth: int = DEFAULT_MAX_DEPTH
    max_bytes: int = DEFAULT_MAX_BYTES

    def __post_init__(self):
        if isinstance(self.max_depth, bool) or not isinstance(self.max_depth, int) or self.max_depth < 1:
            raise ValueError(f"max_depth must be an int >= 1, got {self.max_depth!r}")
        if isinstance(self.max_bytes, bool) or not isinstance(self.max_bytes, int) or self.max_bytes < 0:
            raise ValueError(f"max_bytes must be an int >= 0, got {self.max_bytes!r}")

    def wants_more(self, cache, ahead: int, queued_bytes: int) -> bool:
        """Read another batch, with ``ahead`` batches (``queued_bytes``) already read ahead?"""
        if ahead < 1:
            return True
        if ahead >= self.max_depth or queued_bytes >= self.max_bytes:
            return False
        return cache.protected_rows() < cache.capacity


class LookaheadFeeder:
    """Turn an iterator of sampled batches into ``(batch, features)`` with ``depth`` batches of lookahead.

    Parameters
    ----------
    cache : a cache with ``fetch(ids, miss_source, num_seeds=)``; when it also has
        ``announce(ids)`` (a :class:`~bgl.cache.lookahead.LookaheadCache`) each batch is
        announced as soon as it is read, ``depth`` fetches before it is fetched.
    miss_source : ``f(unique_missing_ids) -> rows``, as for ``cache.fetch``.
    depth : batches read ahead of the one fetched (k).  0 = no lookahead.  ``"auto"`` = a
        window sized to the cache (:class:`CacheSizedWindow` with ``max_depth`` and
        ``max_bytes``), or that window given as a :class:`CacheSizedWindow` (its bounds win;
        the loader's default).  Caches without ``announce`` get depth 0: reading ahead would
        only add latency.  When ``items`` has ``ready()`` (True when reading one more item delays
        no one), a sized window reads past :data:`READY_MIN_AHEAD` batches only while it is.
    ids_of : item -> int64 ids tensor on the cache device (default ``item.blocks[0].src_ids``).
    num_seeds_of : item -> number of leading ids that are seeds (default
        ``item.blocks[-1].num_dst``), or None to pass 0.
    on_fetch : optional ``f(item)`` called right before the item's fetch (the fetch stage uses it
        to let the item's labels ride in the same request as its missing rows).
    max_depth, max_bytes : bounds of the ``"auto"`` window; ``bytes_of(item)`` sizes a queued
        item (default: its blocks' tensors).
    out_for : optional ``f(n) -> tensor or None``: the ``out=`` of a fetch of ``n`` ids (the fetch
        stage's recycled arrays, :mod:`bgl.loader.stages.row_buffers`); None lets the cache allocate.

    Raises
    ------
    ValueError
        for a negative ``depth`` (or one that is neither an int nor ``"auto"``) or bad bounds.  Errors of ``ids_of``/``announce``/``fetch`` propagate;
        batches announced but not fetched are then forgotten, so the cache stays usable.
    """

    def __init__(self, cache, miss_source: MissSource, depth: int,
                 ids_of: Callable[[Any], torch.Tensor] = _src_ids,
                 num_seeds_of: Optional[Callable[[Any], int]] = _num_seeds,
                 on_fetch: Optional[Callable[[Any], None]] = None, *,
                 max_depth: int = DEFAULT_MAX_DEPTH, max_bytes: int = DEFAULT_MAX_BYTES,
                 bytes_of: Callable[[Any], int] = _block_bytes,
                 out_for: Optional[Callable[[int], Optional[torch.Tensor]]] = None):
        if depth == AUTO:
            depth = CacheSizedWindow(max_depth, max_bytes)
        if not isinstance(depth, CacheSizedWindow) and (isinstance(depth, bool) or not isinstance(depth, int)
                                                         or depth < 0):
            raise ValueError(f"depth must be an int >= 0 or 'auto', got {depth!r}")
        self.cache = cache
        self.miss_source = miss_source
        self.announce = getattr(cache, "announce", None)
        self.window = depth if isinstance(depth, CacheSizedWindow) else None
        self.bytes_of = bytes_of
        self.depth = (depth.max_depth if self.window is not None else depth) if self.announce is not None else 0
        self.ids_of = ids_of
        self.num_seeds_of = num_seeds_of
        self.on_fetch = on_fetch
        self.out_for = out_for

    def __call__(self, items: Iterable) -> Iterator[tuple[Any, torch.Tensor]]:
        """Yield ``(item, cache.fetch(ids_of(item), ...))`` for every item, in order."""
        window: deque = deque()
        sized = self.window if self.depth > 0 else None
        queued = 0  # bytes of the window's items (sized windows only)
        ready = getattr(items, "ready", None) if sized is not None else None
        try:
            for item in items:
                ids = self.ids_of(item)
                if self.announce is not None:
                    self.announce(ids)
                size = self.bytes_of(item) if sized is not None else 0
                window.append((item, ids, size))
                queued += size
                # a sized window reads on while the cache wants more (at least the one fetched next)
                # and, past READY_MIN_AHEAD, while the next batch is already waiting
                while window and (len(window) > self.depth if sized is None
                                  else not sized.wants_more(self.cache, len(window) - 1, queued - window[0][2])
                                  or (ready is not None and len(window) > READY_MIN_AHEAD and not ready())):
                    item0, ids0, size0 = window.popleft()
                    queued -= size0
                    yield self._fetch(item0, ids0)
            while window:
                item0, ids0, _ = window.popleft()
                yield self._fetch(item0, ids0)
        finally:
            # an abandoned or failed stream leaves announced batches that will never be
            # fetched; drop them so the next stream can announce afresh
            if getattr(self.cache, "pending", 0):
                self.cache.forget_announced()

    def _fetch(self, item, ids: torch.Tensor):
        num_seeds = self.num_seeds_of(item) if self.num_seeds_of is not None else 0
        if self.on_fetch is not None:
            self.on_fetch(item)
        out = self.out_for(int(ids.shape[0])) if self.out_for is not None else None
        if out is None:  # caches without an ``out=`` (sharded, typed, a user's) get none
            return item, self.cache.fetch(ids, self.miss_source, num_seeds=num_seeds)
        return item, self.cache.fetch(ids, self.miss_source, out=out, num_seeds=num_seeds)
