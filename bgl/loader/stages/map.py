"""The map stages of the bgl loader, each a small picklable spec with one job.

GraphBolt-style: ``OrderStage`` (epoch seed order -> batches of seed ids,
in :mod:`bgl.loader.stages.order`), then here ``SampleStage`` (seeds ->
blocks), ``FetchStage`` (blocks -> input features through the cache / miss
source, and labels); ``TransferStage`` (to the training device, and to
``dgl.Block`` when asked) is in :mod:`bgl.loader.stages.transfer`.  :mod:`bgl.loader.pipeline.chain` runs
them inline or one process each; :mod:`bgl.loader.dataloader` only wires them.

Items flowing between stages are :class:`~bgl.loader.stages.minibatch.MiniBatch`
objects; the stages hold :mod:`bgl.loader.stages.specs` rather than live objects.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Optional

import numpy as np
import torch

from ..seeds.duplicates import distinct_seeds, expand_to_seeds
from .minibatch import MiniBatch
from .prefault import prefault_memmap
from .protocol import Stage
from .remote_rows import RemoteRowsOnly
from .row_buffers import RowBuffers, cache_outputs
from .specs import CacheSpec, SamplingSpec, TypedCacheSpec
from ..seeds.edges import negative_seed, negatives_graph


@dataclass
class SampleStage(Stage):
    """Seeds -> blocks (``fanouts`` in DGL order: fanouts[-1] is applied to the seeds).

    With ``edges`` (link prediction) a batch's seeds are positions into the seed-edge
    list: :meth:`~bgl.loader.seeds.edges.EdgeSeeds.batch` turns them into node seeds
    (positive and negative endpoints) and the edges to exclude, which the sampler
    never draws.

    ``prob`` names the edge array (weights or bool mask) to sample by; ``edge_feats`` the
    edge arrays each block carries in ``edata`` (``prefetch_edge_feats``), read with the sample;
    ``labor`` (:class:`~bgl.loader.labor_options.LaborOptions`) samples by LABOR instead.
    """

    source: SamplingSpec
    fanouts: tuple[int, ...]
    replace: bool = False
    repeated_seeds: bool = False  # the loader's ids repeat: batches may hold a seed twice
    typed_fanouts: Optional[tuple] = None  # a typed graph's per-layer int64 [R] relation fanouts
    edges: Optional[Any] = None  # edge seeds (link prediction): items are positions in this list
    name: str = "sample"
    prob: Optional[str] = None
    edge_feats: tuple[str, ...] = ()
    labor: Any = None
    temporal: Any = None  # temporal seeds: items are positions (a bgl.loader.temporal_sampler.TemporalSampling)

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
        if self.temporal is not None:  # node or edge seeds with times
            return self.temporal.sample_batch(self._sampler, mb)
        exclude = None
        if self.edges is not None:
            graph = negatives_graph(self._sampler, self.edges.negative)
            mb.edges, exclude = self.edges.batch(mb.seeds.numpy(), negative_seed(mb.sample_seed), graph=graph)
            mb.seeds = mb.edges.node_ids
        seeds, inverse = mb.seeds, None
        if self.repeated_seeds:
            seeds, inverse = distinct_seeds(mb.seeds)
        mb.blocks = self.sample(self._sampler, seeds, mb.sample_seed, mb.index, exclude)  # CSC positions if typed
        if inverse is not None:
            mb.blocks = expand_to_seeds(mb.blocks, inverse)
        return mb

    def sample(self, sampler, seeds, seed, index: int = 0, exclude=None):
        """``sampler.sample_blocks`` (``sample_typed_blocks`` on a typed graph) with this stage's settings
        (the edge, LABOR and exclusion options only when set)."""
        extra = {} if exclude is None else {"exclude": exclude}
        if self.prob is not None:
            extra["prob"] = self.prob
        if self.edge_feats:
            extra["edge_data"] = tuple(self.edge_feats)
        if self.labor is not None:
            seed, extra["labor"] = self.labor.for_batch(seed, index)
        if self.typed_fanouts is not None:  # per-relation fanouts (bgl/sampler/typed/sampling.py)
            return sampler.sample_typed_blocks(seeds, list(self.typed_fanouts), self.replace, seed, **extra)
        return sampler.sample_blocks(seeds, list(self.fanouts), replace=self.replace, seed=seed, **extra)

    def close(self) -> None:
        """Close the sampler (releases server sockets)."""
        if self._sampler is not None and hasattr(self._sampler, "close"):
            self._sampler.close()
        self._sampler = None


_SPECS = (CacheSpec, TypedCacheSpec)  # caches the fetch stage builds in its own process


def _valid_lookahead(value) -> bool:
    """An int >= 0, ``"auto"``, or a :class:`~bgl.cache.lookahead_feeder.CacheSizedWindow`.  The cache
    package is imported only for the last: a loader without a cache (its lookahead an int) never loads
    ``bgl.cache`` and its kernels (20-30 ms of a process's first loader)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value >= 0
    if isinstance(value, str):
        return value == "auto"
    from ...cache.lookahead_feeder import CacheSizedWindow

    return isinstance(value, CacheSizedWindow)


@dataclass
class FetchStage(Stage):
    """Blocks -> input features (``blocks[0].srcdata``) and labels (``blocks[-1].dstdata``).

    Features go through the feature cache when one is configured: hits are
    one gather, unique misses one call to the miss source (the local store or
    the graph servers).  ``cache`` is a :class:`CacheSpec` or a typed graph's
    :class:`TypedCacheSpec` (one cache per node type; built inside the
    stage's process) or, inline only, a live cache object.  ``lookahead`` is
    how many sampled batches the stage reads ahead of the one it fetches when
    the cache takes announcements (``lookahead`` policy; see :meth:`stream`);
    it holds that many batches' blocks besides the one being fetched.  ``"auto"``, or a
    :class:`~bgl.cache.lookahead_feeder.CacheSizedWindow` with its bounds (the loader's default),
    reads ahead as far as the cache has room for.
    """

    source: SamplingSpec
    feat_keys: tuple[str, ...] = ("feat",)
    label_keys: tuple[str, ...] = ("label",)
    cache: Any = None
    lookahead: Any = 0  # int | "auto" | CacheSizedWindow
    schema: Any = None  # a typed graph's GraphSchema: rows per node type (bgl/loader/typed.py)
    name: str = "fetch"

    def __post_init__(self):
        if not _valid_lookahead(self.lookahead):
            raise ValueError(f"lookahead must be an int >= 0 or 'auto', got {self.lookahead!r}")
        self._sampler = None
        self._feat_rows: Optional[np.ndarray] = None
        self._label_ids: Optional[torch.Tensor] = None  # labels to fetch with the next rows
        self._labels: Optional[torch.Tensor] = None     # labels that came with them
        self._cache = None if isinstance(self.cache, _SPECS) else self.cache
        self._remote: Optional[RemoteRowsOnly] = None  # with co-located parts: what the cache sees
        self._row_buffers: Optional[RowBuffers] = None  # a local store's gathers (set with _feat_rows)
        self._cache_out = None  # recycled out= arrays for a CPU cache this stage built
        self.last_rows_bytes = 0  # the last batch's input rows (a producer thread's one-ahead rule reads it)

    def __getstate__(self) -> dict:
        if self.cache is not None and not isinstance(self.cache, _SPECS):
            raise TypeError("a live cache object cannot move to a stage process; pass a policy name")
        return {**self.__dict__, "_sampler": None, "_cache": None, "_feat_rows": None,
                "_label_ids": None, "_labels": None, "_remote": None, "_row_buffers": None,
                "_cache_out": None}

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

        From a local store this is one ``np.take`` on the memmap, into a recycled array
        (:class:`~bgl.loader.stages.row_buffers.RowBuffers`: no page faults a batch): measured on
        the 2-core VM, 1.4 ms for 24k rows x 128 float32, steady, while the sampler's
        numba gather took 1.2-7 ms (its parallel kernel waits for threads that the other
        jobs on the box hold).  Out-of-range ids raise IndexError.
        """
        if self._feat_rows is not None:
            # ids may sit on the cache's device (a GPU cache asks for its misses there)
            ids_np = ids.detach().cpu().numpy().astype(np.int64, copy=False)
            return torch.from_numpy(self._row_buffers.take(self._feat_rows, ids_np))
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
            self._feat_rows = self._row_buffers = None
            if store is not None:
                # a store with a feature codec serves its encoded rows (bgl/codec; decoded in TransferStage)
                rows = getattr(store, "feat_rows", store.feat)
                for arr in (rows if self.feat_keys else None, store.label if self.label_keys else None):
                    prefault_memmap(arr)
                if rows is not None and store.node_offset == 0:
                    # Plain ndarray view of the memmap (np.take on a memmap subclass would
                    # wrap every result in a file-less memmap object).
                    self._feat_rows = np.asarray(rows)
                    self._row_buffers = RowBuffers()
        if self._cache is None and isinstance(self.cache, _SPECS):
            self._cache = self.cache.build()
            self._cache_out = cache_outputs(self._cache)
        if self._cache is not None and RemoteRowsOnly.applies(self._sampler):
            self._remote = RemoteRowsOnly(self._sampler)

    def reads_ahead(self) -> int:
        """Sampled batches this stage reads ahead of the one it fetches: ``lookahead`` when its
        cache takes announcements (:class:`~bgl.cache.lookahead.LookaheadCache`), else 0.

        Call after :meth:`open` (a cache spec is built there)."""
        if self.feat_keys and hasattr(self._cache, "announce"):
            from ...cache.lookahead_feeder import AUTO, DEFAULT_MAX_DEPTH, CacheSizedWindow

            if isinstance(self.lookahead, CacheSizedWindow):
                return self.lookahead.max_depth
            return DEFAULT_MAX_DEPTH if self.lookahead == AUTO else int(self.lookahead)
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
        from ...cache.lookahead_feeder import LookaheadFeeder

        cache = self._cache
        if self._remote is not None:
            self._remote.forget()
        typed = self.schema is not None
        feeder = LookaheadFeeder(cache, self._fetch_type_rows if typed else self._fetch_features,
                                 depth=depth if isinstance(self.lookahead, int) else self.lookahead, ids_of=self._cache_ids,
                                 num_seeds_of=self._cache_num_seeds, on_fetch=None if typed else self._labels_ride_along,
                                 out_for=self._cache_out)
        for mb, feat in feeder(items):
            yield self._attach_typed(mb, feat) if typed else self._attach(mb, self._with_local_rows(mb, feat))

    def _cache_ids(self, mb: MiniBatch) -> torch.Tensor:
        """The batch's input ids the cache handles (all, or with co-located parts only the
        remote ones: :mod:`bgl.loader.stages.remote_rows`), on the cache's device."""
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
        if self.schema is not None:
            rows = None
            if self._cache is not None and self.feat_keys:
                rows = self._cache.fetch(self._cache_ids(mb), self._fetch_type_rows, num_seeds=self._cache_num_seeds(mb))
            return self._attach_typed(mb, rows)
        feat = None
        if self.feat_keys:
            self._labels_ride_along(mb)
            if self._cache is not None:
                # The seeds' hint lets the FIFO keep hop-1 rows longest: the next
                # proximity-ordered batch most likely reuses those.
                ids = self._cache_ids(mb)
                extra = {} if self._cache_out is None else {"out": self._cache_out(int(ids.shape[0]))}
                feat = self._with_local_rows(mb, self._cache.fetch(
                    ids, self._fetch_features, num_seeds=self._cache_num_seeds(mb), **extra))
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
            self.last_rows_bytes = _rows_bytes(feat)
        if self.label_keys:
            labels = self._labels if self._labels is not None else self._sampler.fetch_labels(last.dst_ids)
            self._labels = self._label_ids = None
            for key in self.label_keys:
                last.dstdata[key] = labels
        return mb

    def _fetch_type_rows(self, ntype: str, local_ids: torch.Tensor) -> torch.Tensor:
        """A typed cache's miss source: rows of ``ntype``'s type-local ids, from the store or their servers."""
        return self._sampler.fetch_type_features(ntype, local_ids.detach().cpu())

    def _attach_typed(self, mb: MiniBatch, rows: Optional[dict]) -> MiniBatch:
        """Put a typed batch's per-type input rows (fetched here when ``rows`` is None) and labels on ``mb``."""
        from ..typed import fetch_typed

        if self._cache is not None and self.feat_keys:
            mb.cache_stats = dict(self._cache.stats())
        fetch_typed(self._sampler, mb.blocks, self.feat_keys, self.label_keys, self.schema, rows)
        if self.feat_keys:
            self.last_rows_bytes = _rows_bytes(mb.blocks[0].srcdata.get(self.feat_keys[0]))  # one dict for every key
        return mb

    def cache_stats(self) -> Optional[dict]:
        """The cache's :meth:`stats` dict, or None without a cache."""
        return dict(self._cache.stats()) if self._cache is not None else None

    def end_epoch(self) -> None:
        """Between epochs, the row buffers a plain allocation would have unmapped go (``release_large``)."""
        if self._row_buffers is not None:
            self._row_buffers.release_large()

    def close(self) -> None:
        """Close the feature/label source (releases server sockets)."""
        if self._sampler is not None and hasattr(self._sampler, "close"):
            self._sampler.close()
        self._sampler = self._feat_rows = self._row_buffers = None


def _rows_bytes(rows) -> int:
    """Bytes of a batch's input rows: one tensor, or a typed batch's ``{node type: tensor}`` (0 for None)."""
    if rows is None:
        return 0
    if isinstance(rows, dict):
        return sum(int(t.nbytes) for t in rows.values())
    return int(rows.nbytes)
