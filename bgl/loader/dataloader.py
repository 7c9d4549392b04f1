"""``bgl.DataLoader``: DGL 2.1's DataLoader, backed by bgl's pipeline.

Swap ``dgl.dataloading.DataLoader`` for ``bgl.DataLoader`` and a training
script runs unchanged: the loader takes the same arguments and yields the
same ``(input_nodes, output_nodes, blocks)`` triples, with input features in
``blocks[0].srcdata['feat']`` and labels in ``blocks[-1].dstdata['label']``.
With an edge-prediction sampler (``as_edge_prediction_sampler``, bgl's or DGL's)
the indices are seed edge ids and it yields DGL's link-prediction tuples
``(input_nodes, pair_graph, neg_pair_graph, blocks)`` (:mod:`bgl.loader.seeds.edges`).

Underneath, four stages (:mod:`bgl.loader.stages.order`, :mod:`bgl.loader.stages.map`) do
the work: order (random or BGL's proximity order) -> sample (local store or graph servers) -> fetch
(feature cache + miss source) -> transfer (to ``device``, to ``dgl.Block``).
``pipeline="processes"`` runs order/sample/fetch in pinned processes whose
cores come from a short profiling run (:mod:`bgl.loader.pipeline.resources`).

The constructor resolves its arguments once, into four frozen descriptions the stages
read, each from one module, before any process starts: the loader's options
(:mod:`bgl.loader.loader_options`), the sampler's (:mod:`bgl.loader.sampler_options`),
the graph as one description of its kind, counts, types, fields and reader (:mod:`bgl.loader.graph_info`:
graph servers pinged; no later step reads the graph argument again) and
the seeds as one item kind, nodes or edges, typed or not (:mod:`bgl.loader.seeds.items`:
dtype, range, duplicates).  A new seed kind or sampling option is a case in one of those.
"""
from __future__ import annotations

import dataclasses
import functools
import logging
import weakref
from typing import Iterator, Optional

import numpy as np
import torch

from ..threads import Closes
from .graph_info import check_graph_fields, proximity_partition, resolve_graph
from .batch_frontend import batch_frontend
from .cache_choice import asks_for_cache, resolve_cache
from .ddp import ddp_chunk
from .edge_options import check_edge_options
from .edge_prediction import torch_rng_user
from .pipeline.epoch_iterator import EpochIterator
from .loader_options import choose_pipeline, resolve_loader_options
from .state.position import epoch_seed, LoaderState, ResumePoint, fingerprint, generator_seed_from_torch, parse_state
from .stages.order_prefetch import NextOrderGuess
from .stages.order import OrderStage, num_batches
from ..kernel_cache.numba_setup import prepare_numba
from .pipeline.kernel_warmup import load_kernels
from .pipeline.chain import Pipeline, quiet_numba_threads
from .stages.presample import presample_cache_spec
from .pipeline.assembly import assemble_pipeline
from .pipeline.resources import CoreSplit, resolve_stage_cores
from .sampler_options import NeighborSampler, resolve_sampler  # noqa: F401  (public as bgl.NeighborSampler too)
from .seeds.items import resolve_seeds
from .stages.specs import CacheSpec
from .stages.map import FetchStage, SampleStage
from .stages.transfer import TransferStage
from .trainer_wait import TrainerWait
from .typed import check_typed_options, reads_in_place, typed_fanouts

log = logging.getLogger(__name__)

PRESAMPLE_MAX_BATCHES = 32


class DataLoader(Closes):
    """Minibatches of sampled blocks for node classification; DGL 2.1's signature and behaviour.

    Parameters
    ----------
    graph : DGLGraph | bgl.dgl graph | GraphStore | str/Path (store dir or partition dir) | list of server addresses
        A DGLGraph is read in place, zero-copy (its exact edges, CSC as DGL
        caches it, ``ndata['feat']``/``ndata['label']``; see
        :mod:`bgl.loader.graph_arrays`); so is a ``bgl.dgl`` graph, whose batches are then
        ``bgl.dgl`` blocks and graphs (:mod:`bgl.dgl.in_place`).  A partition dir needs the
        graph servers in env ``BGL_SERVERS`` (set by ``bgl launch``); with a
        list of addresses, env ``BGL_PARTITION`` names the partition dir that
        ``order="proximity"`` reads.
    indices : int tensor/array [n]
        Seed (output) node ids, unique, in ``[0, num_nodes)``; with an edge-prediction sampler,
        seed edge ids in ``[0, num_edges)`` (a store's CSC positions; a DGLGraph's own ids, and
        in-memory arrays' ``edge_ids`` values).
    graph_sampler : bgl.NeighborSampler | dgl.dataloading.NeighborSampler, or either wrapped by
        ``bgl.as_edge_prediction_sampler`` / ``dgl.dataloading.as_edge_prediction_sampler``
    device : output device of blocks and ids (default CPU).
    batch_size : as in DGL.
    shuffle : as in DGL.  Each epoch's order and sampling come from the loader's own generator, seeded
        from torch's RNG when the loader is built (torch's RNG left as it was) and kept in
        :meth:`state_dict`: a resumed run's epochs are the first run's.
    drop_last : as in DGL.
    num_workers : DGL's worker count; > 0 selects ``pipeline="processes"`` unless given.
    use_ddp : split seeds across ``torch.distributed`` ranks like DGL (contiguous chunks; without
        ``drop_last`` short ranks repeat their first seeds so every rank has the same number of batches).
    ddp_seed : seeds each rank's shuffle under ``use_ddp`` (with the epoch and the rank), as in DGL.

    Other Parameters
    ----------------
    cache : None | True | fraction of nodes (float) | policy name (``"lookahead"``, ``"fifo"``,
        ``"lru"``, ``"static-degree"``, ``"presample"``, ``"none"``) | cache object (inline only).
        ``True``, a fraction, or ``cache_ratio``/``cache_bytes`` without a policy name choose
        ``"lookahead"`` (keeps the rows the already-sampled batches need; BGL's ``"fifo"`` stays
        selectable).  The policy used is ``loader.cache_policy``.
    cache_ratio : float, fraction of nodes the cache holds (default 0.1)
    cache_bytes : int, cache size in bytes (instead of ``cache_ratio``)
    cache_lookahead : ``"auto"`` (default) | int, sampled batches the fetch stage reads ahead for
        a lookahead cache.  ``"auto"``: as many as the cache has room to keep rows for, within a
        budget of 64 MiB of blocks in flight and 1024 batches, and with ``pipeline="processes"``
        half the open-file limit in shared-memory segments held (8 a batch: 64 batches at a
        1024-file limit) (:func:`bgl.loader.cache_choice.sized_window`; 1.00x Belady's rows at
        batch 32 on PubMed and Slashdot where 4 batches move 1.37x / 1.28x).  An int reads that
        many batches ahead, each costing one batch's blocks in memory.
    order : ``"random"`` | ``"proximity"`` (BGL's BFS order; from a local store, or with graph
        servers from the partition dir, part by part: see :mod:`bgl.cache.ordering.partition_order`)
    pipeline : ``"inline"`` | ``"thread"`` | ``"processes"``; default ``"processes"`` with
        ``num_workers > 0``, else ``"thread"`` with graph servers, or with a local graph on a CPU
        device and >= 2 usable cores (the next batches are built while the model runs;
        :mod:`bgl.loader.pipeline.background`), and ``"inline"`` otherwise or with a callable negative
        sampler (:func:`~bgl.loader.loader_options.choose_pipeline`); stage
        processes start at construction, in the background (``Pipeline.start_in_background``)
    stage_cores : {"sample": [0], "fetch": [1]} or counts; default from profiling
    blocks : ``"dgl"`` | ``"bgl"`` | None (dgl when the graph or sampler came from DGL)
    server_timeout : seconds to wait for a graph server (default 5)
    num_sequences : BFS sequences for proximity order (default 8)
    order_dir : directory where each epoch's proximity order is saved (8 bytes per seed, the newest
        3 kept) and read back by a loader built the same way, e.g. beside the training checkpoints:
        a restarted trainer then resumes its epoch without the BFS (:mod:`bgl.cache.ordering.saved_orders`)
    queue_size : minibatches in flight between two stages (default 4; 2 with ``pipeline="thread"`` on a
        CPU device, where each waiting batch holds its finished DGL blocks: ~45 MiB a batch on a 10.6M-edge
        user-item graph, where 2 ran as fast as 4 with 1.05x DGL's peak RSS against 1.06x); a thread's
        batches with input rows of 32 MiB or more are made one ahead whatever it says (docs/trainer-wait.md)
    feat_dtype : torch float dtype of the input features (default: the graph's; encoded rows: float32)

    Raises
    ------
    TypeError, ValueError, ServerUnavailable
        for bad indices, unsupported samplers or unreachable servers, before
        any process starts.
    """

    def __init__(self, graph, indices, graph_sampler, device=None, batch_size: int = 1,
                 shuffle: bool = False, drop_last: bool = False, num_workers: int = 0,
                 use_ddp: bool = False, ddp_seed: int = 0, **kwargs):
        opts = resolve_loader_options(batch_size, num_workers, kwargs)
        sampler = resolve_sampler(graph_sampler)
        self.graph_sampler = graph_sampler
        self.batch_size, self.shuffle, self.drop_last = opts.batch_size, bool(shuffle), bool(drop_last)
        self.num_workers, self.use_ddp, self.ddp_seed = opts.num_workers, bool(use_ddp), int(ddp_seed)
        self.device = torch.device(device) if device is not None else torch.device("cpu")
        self.order = opts.order
        self._pipeline: Optional[Pipeline] = None
        self._active: Optional[weakref.ref] = None  # the running EpochIterator (it holds us, not we it)
        self._fetch: Optional[FetchStage] = None
        self._transfer: Optional[TransferStage] = None
        self.core_split: Optional[CoreSplit] = None
        self._epoch, self._epoch_set = 0, False
        self._current: tuple[int, int] = (0, 0)  # (epoch, seed) of the last epoch started
        self._resume = ResumePoint()  # a loaded state_dict, applied by the next iter()
        # The loader's own generator (state/position.py): read once from torch's RNG, so torch.manual_seed
        # before building decides every epoch's order, and nothing the script draws afterwards does.
        self._generator_seed = None if self.use_ddp else generator_seed_from_torch()
        self._next_order = NextOrderGuess()  # build the next epoch's order (BFS, shuffle) during this one
        self._wait = TrainerWait.before_any_epoch()  # the latest epoch's trainer wait (stats())

        # The graph, resolved once into its description (GraphInfo), with the first feature / label name it
        # serves; nothing below reads the graph argument again.
        self._resolve_args = (sampler.feat_keys[0] if sampler.feat_keys else None,
                              sampler.label_keys[0] if sampler.label_keys else None,
                              opts.server_timeout, opts.pipeline == "processes")
        info = resolve_graph(graph, *self._resolve_args)
        del graph
        self._info = info
        # DGL's objects or bgl's: the edge's choice (bgl/dgl/frontend_choice.py), made once, here
        frontend = batch_frontend(info.graph, opts.blocks, info.from_dgl or sampler.from_dgl)
        want_dgl = frontend is not None
        typed = info.typed or isinstance(indices, dict)
        lazy_rows, live_graph = reads_in_place(info, sampler, want_dgl, opts.cache) if typed else (False, False)
        schema = check_typed_options(info, sampler, opts.cache, lazy_rows) if typed else None
        if schema is None and any(isinstance(f, dict) for f in sampler.fanouts):
            raise ValueError("per-relation fanout dicts need a graph with edge types; this graph has one")
        check_edge_options(sampler.edge, info, sampler.labor, typed)
        extra_feats, edge_feats = ((), ()) if typed else check_graph_fields(info, sampler.feat_keys, sampler.edge_keys)
        # Edge features: a DGLGraph's are read in place by edge id (typed: into DGL blocks), a store's come with the sample.
        store_edge_feats = () if info.from_dgl and (live_graph or not typed) else tuple(sampler.edge_keys)
        # A DGLGraph is read in place: the loader watches its fields for changes between epochs.
        self._watches_graph = info.from_dgl and not typed
        pipeline = choose_pipeline(opts.pipeline, info.spec.kind, self.device.type, torch_rng_user(sampler.link))
        self.pipeline_mode = pipeline

        # The seeds, as one item kind (SeedItems): node ids, or positions into the seed edges.
        seeds = resolve_seeds(indices, info, sampler, schema, opts.order, opts.seed_time, opts.seed_layout)
        self._edges = seeds.edges
        ids = seeds.ids
        order_partition = None
        if opts.order == "proximity" and info.spec.kind != "store":
            order_partition = proximity_partition(info)
            # Sorted new ids make each DDP rank's contiguous share a run of whole
            # parts, so a rank orders (and reads) only its own parts' edges.
            ids = np.sort(ids)

        self._rank, self._world = 0, 1
        pad = 0
        if self.use_ddp:
            ids, pad, self._rank, self._world = ddp_chunk(ids, self.drop_last)  # DGL's DDPTensorizedDataset cut
        self._num_real_ids = int(ids.shape[0])
        self._pad = pad

        # The first feature name is served by the fetch stage (and its cache), under that name; names the
        # sampler left to their defaults only where a cache or a dtype asks for the rows, or the batches are
        # bgl's own Blocks (a frontend's blocks of a graph read in place carry its other fields, read on use);
        # a pair graph's nodes carry no node-classification labels.
        feats, labels = sampler.gathered_keys(self._watches_graph and want_dgl and opts.feat_dtype is None
                                              and not asks_for_cache(*opts.cache_args[:3]))
        self._wanted_keys = (feats, () if seeds.is_edges else labels)
        has_feat = info.feat_dim > 0 or (typed and any(t.feat_dim > 0 for t in schema.node_types))
        feat_keys = self._wanted_keys[0] if has_feat and not lazy_rows else ()
        label_keys = self._wanted_keys[1] if info.has_label else ()
        self._cache_args = opts.cache_args
        self._order_stage = OrderStage(ids=ids, batch_size=self.batch_size, drop_last=self.drop_last,
                                       shuffle=self.shuffle, order=opts.order, graph=info.spec,
                                       num_sequences=opts.num_sequences, pad=pad,
                                       partition_dir=order_partition, order_nodes=seeds.order_nodes,
                                       order_dir=opts.order_dir)
        self._sample_stage = SampleStage(source=info.spec, fanouts=() if typed else sampler.fanouts,
                                         replace=sampler.replace, repeated_seeds=seeds.repeated, edges=self._edges,
                                         typed_fanouts=typed_fanouts(sampler.fanouts, schema) if typed else None,
                                         prob=sampler.edge.prob, edge_feats=store_edge_feats, labor=sampler.labor,
                                         temporal=seeds.temporal)
        self._fetch = self._make_fetch(info, feat_keys, label_keys)
        if typed:
            self._fetch = dataclasses.replace(self._fetch, schema=schema)
        self._transfer = TransferStage(device=str(self.device), frontend=frontend, schema=schema,
                                       graph=info.graph if live_graph or self._watches_graph else None,
                                       node_feats=extra_feats, edge_feats=edge_feats,
                                       type_names=info.type_names if self._watches_graph else ("_N", "_E"),
                                       feat_codec=info.feat_codec, feat_dtype=opts.feat_dtype, feat_keys=feat_keys,
                                       build_csr=pipeline == "thread" and self.device.type == "cpu")
        self._stage_cores = opts.stage_cores
        if opts.stage_cores is not None:
            # Validate now, before any process starts.
            self.core_split = resolve_stage_cores(opts.stage_cores, ["order", "sample", "fetch"])
        self._queue_size = opts.queue_size
        if pipeline != "processes":
            quiet_numba_threads()  # sampler kernels share this process with the model's torch ops
            if info.spec.kind == "store":  # numba's kernels load now, not in the first batch (kernel_warmup says why)
                load_kernels(ids, self._info, self._sample_stage, self._fetch, self._transfer)
            else:  # no local graph to run a seed on: at least numba's one-time set-up is paid here
                prepare_numba()
        else:  # stage processes start now, in the background (Pipeline.start_in_background says why)
            self._pipeline = self._build_pipeline()
            self._pipeline.start_in_background()

    def _make_fetch(self, info, feat_keys: tuple[str, ...], label_keys: tuple[str, ...]) -> FetchStage:
        """The fetch stage over ``info``'s graph, with the cache the loader's arguments ask for."""
        cache_choice = resolve_cache(*self._cache_args, info, self.pipeline_mode, self.device)
        cache_spec = cache_choice.spec
        self.cache_policy: Optional[str] = cache_choice.policy  # None without a cache
        if cache_spec is not None and cache_spec.policy == "presample":
            cache_spec = self._with_presample_counts(cache_spec)
        return FetchStage(source=info.spec, feat_keys=feat_keys, label_keys=label_keys,
                          cache=cache_spec if cache_spec is not None else cache_choice.live,
                          lookahead=cache_choice.lookahead)

    # ------------------------------------------------------------ a DGLGraph read in place
    def _refresh_graph_fields(self) -> None:
        """Re-read the DGLGraph's feature/label tensors (and its edges) when they changed since the last epoch.

        DGL's loader reads ``g.ndata`` as the epoch runs.  bgl's stages hold views of it
        (copies in stage processes) and a cache of its rows, so a replaced or edited
        tensor would be missed; here, at the start of each epoch, the views, copies and the
        cache are rebuilt when, and only when, a tensor changed.  A change in the middle of
        an epoch is seen from the next epoch on.
        """
        if not self._watches_graph:  # a typed graph's structure is read once, at construction
            if self._info.from_dgl and self._info.structure_changed():
                raise ValueError("the typed graph's nodes or edges were edited in place since this loader was built; "
                                 "build a new loader")
            return
        if not self._info.changed():
            return
        if self._edges is not None and self._info.structure_changed():
            raise ValueError("the graph's edges were edited in place since this loader was built (its seeds are "
                             "ids of the old edges); build a new loader")
        info = resolve_graph(self._info.graph, *self._resolve_args)
        if info.num_nodes != self._info.num_nodes:
            raise ValueError(f"the DGLGraph now has {info.num_nodes} nodes, the loader was built for "
                             f"{self._info.num_nodes}; build a new loader")
        self.close()  # stage processes hold the old copies; inline stages the old views and cache
        self._info = info
        want_feats, want_labels = self._wanted_keys
        feat_keys = want_feats if info.feat_dim > 0 else ()
        label_keys = want_labels if info.has_label else ()
        self._order_stage = dataclasses.replace(self._order_stage, graph=info.spec)
        self._sample_stage = dataclasses.replace(self._sample_stage, source=info.spec)
        self._fetch = self._make_fetch(info, feat_keys, label_keys)
        log.info("the DGLGraph's features or labels changed; the loader re-read them for this epoch")

    def _with_presample_counts(self, spec: CacheSpec) -> CacheSpec:
        """GNNLab's presampling: count input-node accesses over a presampled (capped) epoch."""
        return presample_cache_spec(spec, self._info, self._order_stage, self._sample_stage, PRESAMPLE_MAX_BATCHES,
                                    edges=self._edges)

    # ------------------------------------------------------------ iteration
    def __len__(self) -> int:
        return num_batches(self._num_real_ids + self._pad, self.batch_size, self.drop_last)

    def set_epoch(self, epoch: int) -> None:
        """Set the epoch number (changes the seed order; with DDP every rank should call it)."""
        self._epoch = int(epoch)
        self._epoch_set = True

    def _epoch_seed(self, epoch: Optional[int] = None) -> int:
        """Epoch ``epoch``'s (default: the current one's) seed (:func:`~bgl.loader.state.position.epoch_seed`)."""
        return epoch_seed(self._epoch if epoch is None else int(epoch), self._generator_seed,
                          (self.ddp_seed, self._rank) if self.use_ddp else None)

    def _build_pipeline(self) -> Pipeline:
        """The stages in the chosen mode (:func:`~bgl.loader.pipeline.assembly.assemble_pipeline`)."""
        pipeline, self.core_split = assemble_pipeline(self.pipeline_mode, self._order_stage, self._sample_stage,
                                                      self._fetch, self._transfer, self._queue_size, self.core_split,
                                                      servers=self._info.spec.kind == "servers")
        return pipeline

    def __iter__(self) -> Iterator[tuple]:
        """This epoch's batches, as an :class:`~bgl.loader.pipeline.epoch_iterator.EpochIterator`.

        The iterator keeps the loader alive, so ``for b in DataLoader(...)`` and
        ``next(iter(DataLoader(...)))`` work as with DGL; a new ``iter()`` abandons
        an unfinished epoch, as DGL's does.
        """
        self._close_active()
        self._refresh_graph_fields()
        if self._pipeline is None:
            self._pipeline = self._build_pipeline()
        epoch = self._epoch
        seed, start = self._resume.take(epoch) or (self._epoch_seed(), 0)
        if not self._epoch_set:
            self._epoch += 1
        self._epoch_set = False
        self._current = (epoch, seed)
        after_first = None
        if (self.order == "proximity" or self.shuffle) and self.pipeline_mode != "processes":
            self._next_order.begin(seed)
            after_first = self._next_order.after_first(lambda: self._start_next_order(epoch))
        gen = self._pipeline.run_epoch((epoch, seed, start) if start else (epoch, seed), after_first=after_first,
                                       num_items=len(self) - start)
        self._wait = TrainerWait(epoch)
        it = EpochIterator(self, gen, start, self._wait, on_end=self._end_epoch)
        self._active = weakref.ref(it)
        return it

    def _end_epoch(self) -> None:
        """The epoch's stages have stopped: the fetch stage gives its largest row buffers back (row_buffers)."""
        if self._fetch is not None:
            self._fetch.end_epoch()

    def _close_active(self) -> None:
        """Close the running epoch, if any (its iterator may already be gone)."""
        it = self._active() if self._active is not None else None
        self._active = None
        if it is not None:
            it.close()

    def _start_next_order(self, epoch: int) -> int:
        """Start building the order of the epoch after ``epoch`` (background thread); its seed."""
        seed = self._next_epoch_seed(epoch)
        self._order_stage.prefetch(seed)
        return seed

    def _next_epoch_seed(self, epoch: int) -> int:
        """The seed of the epoch after ``epoch`` (unless ``set_epoch`` jumps elsewhere)."""
        return self._epoch_seed(epoch + 1)

    # ------------------------------------------------------------ checkpoints (state/position.py)
    def state_dict(self) -> dict:
        """Where the loader is, as plain data (torchdata's ``StatefulDataLoader.state_dict``): a loader
        built the same way resumes from it with :meth:`load_state_dict`, yielding exactly the batches
        this one had not yet yielded.  One state per DDP rank."""
        it = self._active() if self._active is not None else None
        if it is not None and it.running and it.position < len(self):
            state = LoaderState(self._current[0], self._current[1], it.position, True, self._fingerprint,
                                self._generator_seed)
        else:
            state = LoaderState(self._epoch, 0, 0, False, self._fingerprint, self._generator_seed)
        return state.to_dict()

    def load_state_dict(self, state: dict) -> None:
        """Resume from :meth:`state_dict`'s output: the next ``iter()`` (of the saved epoch, if
        ``set_epoch`` is called) continues where the saved loader stopped.  ValueError naming what
        differs when the state belongs to another loader (seeds, batch size, order, world size)."""
        parsed = parse_state(state, self._fingerprint)
        self._close_active()
        self._epoch, self._epoch_set = parsed.epoch, False
        if parsed.generator_seed is not None:  # the saved loader's epoch orders, whatever torch's RNG is now
            self._generator_seed = parsed.generator_seed
        self._resume = ResumePoint(parsed)

    @functools.cached_property
    def _fingerprint(self) -> dict:
        """What a state must agree on (state/position.py); the seeds never change: one O(n) CRC a loader."""
        return fingerprint(self._order_stage.ids, self.batch_size, self.drop_last, self.shuffle, self.order,
                           self._world, self._rank, len(self))

    # ------------------------------------------------------------ inspection
    def cache_stats(self) -> Optional[dict]:
        """Cumulative cache counters (requests, hits, misses, bytes_from_source) or None without cache.

        In ``processes`` mode these are the counters the fetch process sent with
        its latest batch; a restarted pipeline (after ``break``) starts a new cache.
        """
        if self.pipeline_mode != "processes" and self._fetch is not None:
            return self._fetch.cache_stats()
        return None if self._transfer is None else self._transfer.last_cache_stats

    def stats(self) -> dict:
        """The trainer's wait in the latest epoch (the running one, or the last one that ran).

        How long the training loop was blocked in ``next()`` on the epoch's iterator: ``batches``,
        ``wait_s`` (total, seconds), ``wait_mean_s``, ``wait_max_s``, ``epoch_s`` (wall time since
        ``iter()``; up to now while ``running``) and ``wait_share`` (``wait_s / epoch_s``): near 1
        the loader is the bottleneck, near 0 the model.  Reset by each ``iter()``; zeros before the
        first.  See docs/trainer-wait.md (:mod:`bgl.loader.trainer_wait`).
        """
        return {**self._wait.as_dict(), "pipeline": self.pipeline_mode}

    def stage_pids(self) -> dict[str, int]:
        """{stage: pid} of live stage processes (empty inline)."""
        return {} if self._pipeline is None else self._pipeline.stage_pids()

    def close(self) -> None:
        """Stop stage processes; the loader may be iterated again."""
        self._close_active()
        if self._pipeline is not None:
            self._pipeline.close()
            self._pipeline = None

