"""Feed a feature cache sampled batches ``depth`` ahead of the fetch: the fetch stage's lookahead.

A :class:`~bgl.cache.lookahead.LookaheadCache` can only keep what the coming
batches need if it hears about them before it fetches the current one.  The
sampler already runs ahead of the fetch (the pipeline's queues hold sampled
batches in flight), so the fetch stage only has to read ``depth`` batches
ahead of the one it fetches, announcing each as it arrives.  This wrapper does
exactly that for any iterator of sampled batches, so the same few lines serve
the inline pipeline (wrap the sampler's generator) and a fetch-stage process
(wrap the generator of items read from its input queue).

Costs: holds ``depth`` sampled batches (their blocks) in memory besides the
one being fetched; adds no copy.
"""
from __future__ import annotations

from collections import deque
from typing import Any, Callable, Iterable, Iterator, Optional

import torch

from .base import MissSource


def _src_ids(item) -> torch.Tensor:
    return item.blocks[0].src_ids


def _num_seeds(item) -> int:
    return int(item.blocks[-1].num_dst)


class LookaheadFeeder:
    """Turn an iterator of sampled batches into ``(batch, features)`` with ``depth`` batches of lookahead.

    Parameters
    ----------
    cache : a cache with ``fetch(ids, miss_source, num_seeds=)``; when it also has
        ``announce(ids)`` (a :class:`~bgl.cache.lookahead.LookaheadCache`) each batch is
        announced as soon as it is read, ``depth`` fetches before it is fetched.
    miss_source : ``f(unique_missing_ids) -> rows``, as for ``cache.fetch``.
    depth : batches read ahead of the one fetched (k; the pipeline's queue size by default
        in the loader).  0 = no lookahead.  Caches without ``announce`` get depth 0: reading
        ahead would only add latency.
    ids_of : item -> int64 ids tensor on the cache device (default ``item.blocks[0].src_ids``).
    num_seeds_of : item -> number of leading ids that are seeds (default
        ``item.blocks[-1].num_dst``), or None to pass 0.
    on_fetch : optional ``f(item)`` called right before the item's fetch (the fetch stage uses it
        to let the item's labels ride in the same request as its missing rows).

    Raises
    ------
    ValueError
        for a negative ``depth``.  Errors of ``ids_of``/``announce``/``fetch`` propagate;
        batches announced but not fetched are then forgotten, so the cache stays usable.
    """

    def __init__(self, cache, miss_source: MissSource, depth: int,
                 ids_of: Callable[[Any], torch.Tensor] = _src_ids,
                 num_seeds_of: Optional[Callable[[Any], int]] = _num_seeds,
                 on_fetch: Optional[Callable[[Any], None]] = None):
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
            raise ValueError(f"depth must be an int >= 0, got {depth!r}")
        self.cache = cache
        self.miss_source = miss_source
        self.announce = getattr(cache, "announce", None)
        self.depth = depth if self.announce is not None else 0
        self.ids_of = ids_of
        self.num_seeds_of = num_seeds_of
        self.on_fetch = on_fetch

    def __call__(self, items: Iterable) -> Iterator[tuple[Any, torch.Tensor]]:
        """Yield ``(item, cache.fetch(ids_of(item), ...))`` for every item, in order."""
        window: deque = deque()
        try:
            for item in items:
                ids = self.ids_of(item)
                if self.announce is not None:
                    self.announce(ids)
                window.append((item, ids))
                if len(window) > self.depth:
                    yield self._fetch(*window.popleft())
            while window:
                yield self._fetch(*window.popleft())
        finally:
            # an abandoned or failed stream leaves announced batches that will never be
            # fetched; drop them so the next stream can announce afresh
            if getattr(self.cache, "pending", 0):
                self.cache.forget_announced()

    def _fetch(self, item, ids: torch.Tensor):
        num_seeds = self.num_seeds_of(item) if self.num_seeds_of is not None else 0
        if self.on_fetch is not None:
            self.on_fetch(item)
        return item, self.cache.fetch(ids, self.miss_source, num_seeds=num_seeds)
