"""The map stages of the bgl loader, each a small picklable spec with one job.

GraphBolt-style: ``OrderStage`` (epoch seed order -> batches of seed ids,
in :mod:`bgl.loader.order_stage`), then here ``SampleStage`` (seeds ->
blocks), ``FetchStage`` (blocks -> input features through the cache / miss
source, and labels) and ``TransferStage`` (to the training device, and to
``dgl.Block`` when asked).  :mod:`bgl.loader.pipeline` runs
them inline or one process each; :mod:`bgl.loader.dataloader` only wires them.

Items flowing between stages are :class:`~bgl.loader.minibatch.MiniBatch`
objects; the stages hold :mod:`bgl.loader.specs` rather than live objects.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Optional

import numpy as np
import torch

from .minibatch import MiniBatch
from .pipeline import Stage
from .remote_rows import RemoteRowsOnly
from .specs import CacheSpec, SamplingSpec

log = logging.getLogger(__name__)


# Linux 5.14+ madvise advice that maps (and reads if needed) every page of a range now;
# Python 3.11's mmap module does not name it.
_MADV_POPULATE_READ = 22
# Prefault a memmap only while it takes at most this share of the available memory.
PREFAULT_MAX_MEM_FRACTION = 0.25


def prefault_memmap(arr, max_fraction: float = PREFAULT_MAX_MEM_FRACTION) -> bool:
    """Map every page of a read-only memmap into this process now, when it fits comfortably in RAM.

    Each first touch of a memmap page is a page fault, even when the file sits
    in the page cache.  Random feature rows of a fresh R-MAT 2^20 store
    (512 MiB) cost ~5-8 ms per 1024-seed batch in faults during the first
    epochs, more than the gather itself (~1.2 ms); populating the mapping up
    front took 40 ms.  Arrays larger than ``max_fraction`` of MemAvailable
    are left to fault on demand (a billion-node store must not be read whole).
    Returns True when the mapping was populated; any failure (old kernel,
    not a memmap) only logs and returns False.
    """
    mm = getattr(arr, "_mmap", None)
    if mm is None or arr.nbytes == 0:
        return False
    import psutil

    avail = psutil.virtual_memory().available  # Linux: MemAvailable
    if not avail or arr.nbytes > max_fraction * avail:
        return False
    try:
        mm.madvise(_MADV_POPULATE_READ)
    except (OSError, ValueError, AttributeError) as e:
        log.debug("could not prefault a %d-byte memmap: %s", arr.nbytes, e)
        return False
    return True



@dataclass
class SampleStage(Stage):
    """Seeds -> blocks (``fanouts`` in DGL order: fanouts[-1] is applied to the seeds).

    ``prob`` names the edge array (weights or bool mask) to sample by; ``edge_feats`` the
    edge arrays each block carries in ``edata`` (``prefetch_edge_feats``), read with the sample;
    ``labor`` (:class:`~bgl.loader.labor.LaborOptions`) samples by LABOR instead.
    """

    source: SamplingSpec
    fanouts: tuple[int, ...]
    replace: bool = False
    name: str = "sample"
    prob: Optional[str] = None
    edge_feats: tuple[str, ...] = ()
    labor: Any = None

    def __post_init__(self):
        self._sampler = None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_sampler": None}

    def open(self) -> None:
        """Open the sampler (local store or server client) in this process."""
        if self._sampler is None:
            self._sampler = self.source.open()
            store = getattr(self._sampler, "store", None)
            if store is not None:
                # Random rows of the CSC fault page by page otherwise (see prefault_memmap).
                prefault_memmap(store.indptr)
                prefault_memmap(store.indices)

    def __call__(self, mb: MiniBatch) -> MiniBatch:
        if self._sampler is None:
            self.open()
        mb.blocks = self.sample(self._sampler, mb.seeds, mb.sample_seed, mb.index)
        return mb

    def sample(self, sampler, seeds, seed, index: int = 0):
        """``sampler.sample_blocks`` with this stage's settings (the edge and LABOR options only when set)."""
        extra = {} if self.prob is None else {"prob": self.prob}
        if self.edge_feats:
            extra["edge_data"] = tuple(self.edge_feats)
        if self.labor is not None:
            seed, extra["labor"] = self.labor.for_batch(seed, index)
        return sampler.sample_blocks(seeds, list(self.fanouts), replace=self.replace, seed=seed, **extra)

    def close(self) -> None:
        """Close the sampler (releases server sockets)."""
        if self._sampler is not None and hasattr(self._sampler, "close"):
            self._sampler.close()
        self._sampler = None


@dataclass
class FetchStage(Stage):
    """Blocks -> input features (``blocks[0].srcdata``) and labels (``blocks[-1].dstdata``).

    Features go through the feature cache when one is configured: hits are
    one gather, unique misses one call to the miss source (the local store or
    the graph servers).  ``cache`` is a :class:`CacheSpec` (built inside the
    stage's process) or, inline only, a live cache object.  ``lookahead`` is
    how many sampled batches the stage reads ahead of the one it fetches when
    the cache takes announcements (``lookahead`` policy; see :meth:`stream`);
    it holds that many batches' blocks besides the one being fetched.
    """

    source: SamplingSpec
    feat_keys: tuple[str, ...] = ("feat",)
    label_keys: tuple[str, ...] = ("label",)
    cache: Any = None
    lookahead: int = 0
    name: str = "fetch"

    def __post_init__(self):
        if isinstance(self.lookahead, bool) or not isinstance(self.lookahead, int) or self.lookahead < 0:
            raise ValueError(f"lookahead must be an int >= 0, got {self.lookahead!r}")
        self._sampler = None
        self._feat_rows: Optional[np.ndarray] = None
        self._label_ids: Optional[torch.Tensor] = None  # labels to fetch with the next rows
        self._labels: Optional[torch.Tensor] = None     # labels that came with them
        self._cache = None if isinstance(self.cache, CacheSpec) else self.cache
        self._remote: Optional[RemoteRowsOnly] = None  # with co-located parts: what the cache sees

    def __getstate__(self) -> dict:
        if self.cache is not None and not isinstance(self.cache, CacheSpec):
            raise TypeError("a live cache object cannot move to a stage process; pass a policy name")
        return {**self.__dict__, "_sampler": None, "_cache": None, "_feat_rows": None,
                "_label_ids": None, "_labels": None, "_remote": None}

    def _labels_ride_along(self, mb: MiniBatch) -> None:
        """Let ``mb``'s seed labels ride in the request for its (missing) input rows.

        Over graph servers the labels were a second round trip per batch: profiled
        on Slashdot (2 servers, 2 trainers, batch 1024), 20 ms of a 76 ms batch, as
        much as the feature fetch, because each 1-thread server queues it behind the
        other trainer's requests (bench/results/distdgl.md).  When the batch's rows
        all hit the cache, nothing is fetched and :meth:`_attach` asks for the labels alone.
        """
        self._labels = None
        self._label_ids = None
        if (self.label_keys and self._feat_rows is None
                and hasattr(self._sampler, "fetch_features_and_labels")):
            self._label_ids = mb.blocks[-1].dst_ids

    def _fetch_features(self, ids: torch.Tensor) -> torch.Tensor:
        """Feature rows [n, dim] of global ``ids`` from the source (the cache's miss source too).

        From a local store this is one ``np.take`` on the memmap: measured on the
        2-core VM, 1.4 ms for 24k rows x 128 float32, steady, while the sampler's
        numba gather took 1.2-7 ms (its parallel kernel waits for threads that
        the other jobs on the box hold).  Out-of-range ids raise IndexError.
        """
        if self._feat_rows is not None:
            # ids may sit on the cache's device (a GPU cache asks for its misses there)
            rows = np.take(self._feat_rows, ids.detach().cpu().numpy().astype(np.int64, copy=False), axis=0)
            return torch.from_numpy(rows)
        if self._label_ids is not None:  # one round trip for rows and labels
            feat, self._labels = self._sampler.fetch_features_and_labels(ids, self._label_ids)
            self._label_ids = None
            return feat
        return self._sampler.fetch_features(ids)

    def open(self) -> None:
        """Open the feature/label source and build the configured cache in this process."""
        if self._sampler is None:
            self._sampler = self.source.open()
            store = getattr(self._sampler, "store", None)
            self._feat_rows = None
            if store is not None:
                for arr in (store.feat if self.feat_keys else None, store.label if self.label_keys else None):
                    prefault_memmap(arr)
                if store.feat is not None and store.node_offset == 0:
                    # Plain ndarray view of the memmap (np.take on a memmap subclass would
                    # wrap every result in a file-less memmap object).
                    self._feat_rows = np.asarray(store.feat)
        if self._cache is None and isinstance(self.cache, CacheSpec):
            self._cache = self.cache.build()
        if self._cache is not None and RemoteRowsOnly.applies(self._sampler):
            self._remote = RemoteRowsOnly(self._sampler)

    def reads_ahead(self) -> int:
        """Sampled batches this stage reads ahead of the one it fetches: ``lookahead`` when its
        cache takes announcements (:class:`~bgl.cache.lookahead.LookaheadCache`), else 0.

        Call after :meth:`open` (a cache spec is built there)."""
        if self.feat_keys and hasattr(self._cache, "announce"):
            return int(self.lookahead)
        return 0

    def stream(self, items: Iterable[MiniBatch]) -> Iterator[MiniBatch]:
        """Fetch a stream of sampled batches, in order, each exactly once.

        With a lookahead cache each batch is announced to it as soon as it is read and
        fetched :meth:`reads_ahead` batches later (:class:`~bgl.cache.lookahead_feeder.LookaheadFeeder`);
        otherwise this is ``self(item)`` per item.  The pipeline calls it in both modes for
        a stage whose :meth:`reads_ahead` is > 0.
        """
        if self._sampler is None:
            self.open()
        depth = self.reads_ahead()
        if depth <= 0:
            for mb in items:
                yield self(mb)
            return
        from ..cache.lookahead_feeder import LookaheadFeeder

        cache = self._cache
        if self._remote is not None:
            self._remote.forget()
        feeder = LookaheadFeeder(cache, self._fetch_features, depth=depth, ids_of=self._cache_ids,
                                 num_seeds_of=self._cache_num_seeds, on_fetch=self._labels_ride_along)
        for mb, feat in feeder(items):
            yield self._attach(mb, self._with_local_rows(mb, feat))

    def _cache_ids(self, mb: MiniBatch) -> torch.Tensor:
        """The batch's input ids the cache handles (all, or with co-located parts only the
        remote ones: :mod:`bgl.loader.remote_rows`), on the cache's device."""
        ids = mb.blocks[0].src_ids if self._remote is None else self._remote.cache_ids(mb)
        device = getattr(self._cache, "device", None)  # a user's cache object may not say
        return ids if device is None else ids.to(device)

    def _cache_num_seeds(self, mb: MiniBatch) -> int:
        """How many of :meth:`_cache_ids` are seeds (they lead the input ids)."""
        return mb.blocks[-1].num_dst if self._remote is None else self._remote.num_seeds(mb)

    def _with_local_rows(self, mb: MiniBatch, feat: torch.Tensor) -> torch.Tensor:
        """The cache's rows of ``mb``, completed with its co-located rows when the cache saw only remote ones."""
        return feat if self._remote is None else self._remote.merge(mb, feat)

    def __call__(self, mb: MiniBatch) -> MiniBatch:
        if self._sampler is None:
            self.open()
        feat = None
        if self.feat_keys:
            self._labels_ride_along(mb)
            if self._cache is not None:
                # The seeds' hint lets the FIFO keep hop-1 rows longest: the next
                # proximity-ordered batch most likely reuses those.
                feat = self._with_local_rows(mb, self._cache.fetch(
                    self._cache_ids(mb), self._fetch_features, num_seeds=self._cache_num_seeds(mb)))
            else:
                feat = self._fetch_features(mb.blocks[0].src_ids)
        return self._attach(mb, feat)

    def _attach(self, mb: MiniBatch, feat: Optional[torch.Tensor]) -> MiniBatch:
        """Put ``feat`` (the rows of ``blocks[0].src_ids``) and the seeds' labels on ``mb``."""
        first, last = mb.blocks[0], mb.blocks[-1]
        if self.feat_keys:
            if self._cache is not None:
                mb.cache_stats = dict(self._cache.stats())
            for key in self.feat_keys:
                first.srcdata[key] = feat
        if self.label_keys:
            labels = self._labels if self._labels is not None else self._sampler.fetch_labels(last.dst_ids)
            self._labels = self._label_ids = None
            for key in self.label_keys:
                last.dstdata[key] = labels
        return mb

    def cache_stats(self) -> Optional[dict]:
        """The cache's :meth:`stats` dict, or None without a cache."""
        return dict(self._cache.stats()) if self._cache is not None else None

    def close(self) -> None:
        """Close the feature/label source (releases server sockets)."""
        if self._sampler is not None and hasattr(self._sampler, "close"):
            self._sampler.close()
        self._sampler = None
        self._feat_rows = None


@dataclass
class TransferStage(Stage):
    """Minibatch -> ``(input_nodes, output_nodes, blocks)`` on ``device``; runs in the trainer.

    ``to_dgl`` converts to ``dgl.Block`` through :mod:`bgl.dgl_adapter` (the
    only module allowed to import DGL).  Remembers the latest cache counters
    seen, for :meth:`bgl.DataLoader.cache_stats`.
    """

    device: str = "cpu"
    to_dgl: bool = False
    non_blocking: bool = False
    name: str = "transfer"
    last_cache_stats: Optional[dict] = field(default=None, repr=False)

    def __call__(self, mb: MiniBatch):
        device = torch.device(self.device)
        blocks = [b.to(device, non_blocking=self.non_blocking) for b in mb.blocks]
        if mb.cache_stats is not None:
            self.last_cache_stats = mb.cache_stats
        input_nodes = blocks[0].src_ids
        output_nodes = blocks[-1].dst_ids
        if self.to_dgl:
            from ..dgl_adapter import to_dgl_blocks

            blocks = to_dgl_blocks(blocks)
        return input_nodes, output_nodes, blocks
