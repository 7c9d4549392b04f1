"""The four stages of the bgl loader, each a small picklable spec with one job.

GraphBolt-style: ``OrderStage`` (epoch seed order -> batches of seed ids),
``SampleStage`` (seeds -> blocks), ``FetchStage`` (blocks -> input features
through the cache / miss source, and labels) and ``TransferStage`` (to the
training device, and to ``dgl.Block`` when asked).  :mod:`bgl.loader.pipeline` runs
them inline or one process each; :mod:`bgl.loader.dataloader` only wires them.

Items flowing between stages are :class:`MiniBatch` objects.  When a
minibatch crosses a process boundary its blocks' integer arrays are packed
into ONE int64 tensor, so torch's queue reduction moves one shared-memory
segment (plus one for features and one for labels) per batch instead of
three or four per layer.
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional, Sequence

import numpy as np
import torch

from .pipeline import SourceStage, Stage

log = logging.getLogger(__name__)

ORDERS = ("random", "proximity")


# ------------------------------------------------------------------ sources
@dataclass(frozen=True)
class SamplingSpec:
    """Where samples and features come from, as picklable facts.

    ``kind="store"``: a graph store directory sampled in-process by
    :class:`bgl.sampler.LocalSampler`.  ``kind="servers"``: graph servers
    reached by :class:`bgl.sampler.SamplingClient` (one address per part, in
    part order).
    """

    kind: str
    path: Optional[str] = None
    addresses: tuple[str, ...] = ()
    timeout: float = 5.0

    def open(self):
        """A live sampler (``sample_blocks`` / ``fetch_features`` / ``fetch_labels``)."""
        if self.kind == "store":
            from ..sampler import LocalSampler
            from ..store import GraphStore

            return LocalSampler(GraphStore(self.path, validate="none"))
        if self.kind == "servers":
            from ..sampler import SamplingClient

            return SamplingClient(list(self.addresses), timeout=self.timeout)
        raise ValueError(f"sampling spec kind must be 'store' or 'servers', got {self.kind!r}")

    def open_store(self):
        """The local graph store (for proximity ordering and degree-based caches), or None for servers."""
        if self.kind != "store":
            return None
        from ..store import GraphStore

        return GraphStore(self.path, validate="none")


@dataclass(frozen=True, eq=False)
class CacheSpec:
    """A feature cache to build inside the fetch stage's process.

    ``capacity`` is in rows.  ``degrees``/``presample_counts`` feed the
    ``static-degree`` / ``presample`` policies (int64 [num_nodes]).
    """

    policy: str
    capacity: int
    num_nodes: int
    dim: int
    dtype: str = "float32"
    device: str = "cpu"
    degrees: Optional[np.ndarray] = None
    presample_counts: Optional[np.ndarray] = None

    def build(self):
        """Build the cache this spec describes with :func:`bgl.cache.make_cache` (in the calling process)."""
        from ..cache import make_cache

        return make_cache(self.policy, self.capacity, self.num_nodes, self.dim,
                          dtype=getattr(torch, self.dtype), device=self.device,
                          degrees=self.degrees, presample_counts=self.presample_counts)


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


# ----------------------------------------------------------------- minibatch
@dataclass
class MiniBatch:
    """One batch as it moves through the stages.

    ``seeds`` int64 [batch] output node ids; ``blocks`` bgl blocks (DGL
    order: blocks[0] is the input layer); ``sample_seed`` the RNG seed of this
    batch's sampling (reproducible per epoch and index); ``cache_stats`` the
    fetch stage's cumulative cache counters after this batch.
    """

    epoch: int
    index: int
    seeds: torch.Tensor
    sample_seed: int
    blocks: Optional[list] = None
    cache_stats: Optional[dict] = None

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        if self.blocks is not None:
            state["blocks"] = _pack_blocks(self.blocks)
            state["seeds"] = None  # == blocks[-1].dst_ids; one shared segment fewer per message
        return state

    def __setstate__(self, state: dict) -> None:
        if state.get("blocks") is not None:
            state["blocks"] = _unpack_blocks(state["blocks"])
            state["seeds"] = state["blocks"][-1].dst_ids
        self.__dict__.update(state)


def _pack_blocks(blocks: Sequence[Any]) -> dict:
    """All int64 arrays of all blocks (ids, CSC, int64 node data such as labels) in one tensor.

    Each shared-memory tensor costs a file-descriptor hand-over between the
    processes, so one int64 segment per batch (plus one per float feature
    array) keeps the per-message cost flat however many layers there are.
    """
    parts, layout, data = [], [], []
    for b in blocks:
        has_eids = b.edge_ids is not None
        parts += [b.src_ids, b.indptr, b.indices] + ([b.edge_ids] if has_eids else [])
        layout.append((int(b.src_ids.shape[0]), int(b.num_dst), int(b.indices.shape[0]), has_eids))
        packed_data = []
        for side, d in (("src", b.srcdata), ("dst", b.dstdata)):
            kept = {}
            for key, value in d.items():
                if value.dtype == torch.int64 and value.dim() == 1 and value.device.type == "cpu":
                    parts.append(value)
                    packed_data.append((side, key, int(value.shape[0])))
                else:
                    kept[key] = value
            packed_data.append((side, None, kept))
        data.append(packed_data)
    ints = torch.cat([p.to(torch.int64) for p in parts]) if parts else torch.empty(0, dtype=torch.int64)
    return {"ints": ints, "layout": layout, "data": data}


def _unpack_blocks(packed: dict) -> list:
    from ..blocks import Block

    ints, pos, out = packed["ints"], 0, []

    def take(n: int) -> torch.Tensor:
        nonlocal pos
        view = ints[pos:pos + n]  # views into the one shared segment: no copy
        pos += n
        return view

    for (num_src, num_dst, num_edges, has_eids), packed_data in zip(packed["layout"], packed["data"]):
        src_ids, indptr, indices = take(num_src), take(num_dst + 1), take(num_edges)
        edge_ids = take(num_edges) if has_eids else None
        node_data = {"src": {}, "dst": {}}
        for side, key, value in packed_data:
            if key is None:
                node_data[side].update(value)
            else:
                node_data[side][key] = take(value)
        out.append(Block(src_ids=src_ids, num_dst=num_dst, indptr=indptr, indices=indices,
                         edge_ids=edge_ids, srcdata=node_data["src"], dstdata=node_data["dst"]))
    return out


# -------------------------------------------------------------------- stages
def batch_bounds(num_ids: int, batch_size: int, drop_last: bool) -> np.ndarray:
    """Start offsets of each batch plus the end, int64 [num_batches + 1]."""
    n_full = num_ids // batch_size
    ends = [n_full * batch_size] if (drop_last or num_ids % batch_size == 0) else [n_full * batch_size, num_ids]
    return np.unique(np.concatenate([np.arange(0, n_full * batch_size, batch_size), ends])).astype(np.int64)


def num_batches(num_ids: int, batch_size: int, drop_last: bool) -> int:
    """Number of batches of ``batch_size`` over ``num_ids`` ids (the partial last one dropped when
    ``drop_last``).
    """
    return num_ids // batch_size if drop_last else -(-num_ids // batch_size)


@dataclass
class OrderStage(SourceStage):
    """Epoch seed order -> batches of seed ids.

    Parameters
    ----------
    ids : int64 [n]
        This rank's seed ids (already split and padded for DDP).
    order : ``"random"`` (a permutation when ``shuffle``) or ``"proximity"``
        (BGL's BFS-sequence order via :func:`bgl.cache.ordering.store_order.proximity_order`,
        so consecutive batches share neighbours and the feature cache hits).
    graph : SamplingSpec
        Graph for proximity ordering (a local store).
    partition_dir : str, optional
        Partition dir for proximity ordering when sampling from graph
        servers: the order is built part by part on local views
        (:class:`bgl.cache.ordering.partition_order.PartitionOrder`), never the whole graph.
    num_sequences : int
        BFS sequences interleaved by proximity ordering.
    pad : int
        Seeds repeated from the head of each epoch's order so every DDP rank
        has the same number of batches (DGL's padding without ``drop_last``).

    ``items((epoch, epoch_seed))`` yields :class:`MiniBatch` es whose
    ``sample_seed`` derives from ``epoch_seed`` and the batch index.
    """

    ids: np.ndarray
    batch_size: int
    drop_last: bool = False
    shuffle: bool = False
    order: str = "random"
    graph: Optional[SamplingSpec] = None
    num_sequences: int = 8
    pad: int = 0
    partition_dir: Optional[str] = None
    name: str = "order"

    def __post_init__(self):
        if self.order not in ORDERS:
            raise ValueError(f"order must be one of {ORDERS}, got {self.order!r}")
        self._store = None
        self._part_order = None
        self._prefetched: Optional[_OrderPrefetch] = None

    def open(self) -> None:
        """Open what proximity ordering needs (the local store or the partition's views); no-op for
        random order.
        """
        if self.order != "proximity":
            return
        if self.graph is not None and self.graph.kind == "store":
            if self._store is None:
                self._store = self.graph.open_store()
        elif self.partition_dir is not None:
            if self._part_order is None:
                from ..cache.ordering.partition_order import PartitionOrder

                # Built once per process; its per-part views are reused every epoch.
                self._part_order = PartitionOrder(self.partition_dir, self.ids, self.num_sequences)
        else:
            raise ValueError("order='proximity' needs a local graph store or, with graph servers, "
                             "the partition dir (graph=PARTITION_DIR or env BGL_PARTITION)")

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_store"] = None  # reopened by open() in the stage process
        state["_part_order"] = None  # its local views are rebuilt there rather than pickled
        state["_prefetched"] = None  # a thread does not travel; the stage process computes its own
        return state

    def prefetch(self, epoch_seed: int) -> bool:
        """Start building the proximity order of ``epoch_seed`` in a background thread.

        A proximity order is a few BFS passes over the whole graph (~1.4 s on
        R-MAT 2^20 with 8 sequences), which stalls the first batch of every
        epoch; built during the previous epoch it overlaps training instead.
        The BFS kernel releases the GIL.  The result is used only by an epoch
        with exactly this seed, so a wrong guess costs CPU time, never a
        different order.  Returns False (nothing started) for random order.
        """
        if self.order != "proximity":
            return False
        if self._prefetched is not None and self._prefetched.seed == int(epoch_seed):
            return True
        if self._store is None and self._part_order is None:
            self.open()
        self._prefetched = _OrderPrefetch(int(epoch_seed), self._order_now)
        return True

    @property
    def prefetch_hits(self) -> int:
        """Epochs whose proximity order came from :meth:`prefetch` (for tests and benchmarks)."""
        return getattr(self, "_prefetch_hits", 0)

    def epoch_order(self, epoch_seed: int) -> np.ndarray:
        """The seed ids of one epoch in visiting order, int64 [n + pad]."""
        order = self._order(epoch_seed)
        return np.concatenate([order, order[: self.pad]]) if self.pad else order

    def _order(self, epoch_seed: int) -> np.ndarray:
        pending, self._prefetched = self._prefetched, None
        if pending is not None and pending.seed == int(epoch_seed):
            order = pending.result()  # re-raises an error of the background build here
            self._prefetch_hits = self.prefetch_hits + 1
            return order
        if pending is not None:
            # A wrong guess: let it finish first, since a partition order reuses its scratch views.
            pending.wait()
        return self._order_now(epoch_seed)

    def _order_now(self, epoch_seed: int) -> np.ndarray:
        ids = np.asarray(self.ids, dtype=np.int64)
        if self.order == "proximity":
            from ..cache.ordering.store_order import proximity_order

            if self._store is None and self._part_order is None:
                self.open()
            if self._part_order is not None:
                return self._part_order.epoch_order(epoch_seed)
            return np.asarray(proximity_order(self._store, ids, self.num_sequences, epoch_seed), dtype=np.int64)
        if self.shuffle:
            return ids[np.random.default_rng(epoch_seed).permutation(ids.shape[0])]
        return ids

    def __len__(self) -> int:
        return num_batches(int(np.asarray(self.ids).shape[0]) + self.pad, self.batch_size, self.drop_last)

    def items(self, epoch: Any) -> Iterator[MiniBatch]:
        """Yield the :class:`MiniBatch` es of epoch ``(epoch_num, epoch_seed)`` in order; each gets a
        sampling seed derived from the seed and its index.
        """
        epoch_num, epoch_seed = epoch
        ids = self.epoch_order(epoch_seed)
        bounds = batch_bounds(ids.shape[0], self.batch_size, self.drop_last)
        for i in range(bounds.shape[0] - 1):
            seeds = torch.from_numpy(np.array(ids[bounds[i]:bounds[i + 1]]))
            # One sampling seed per (epoch, batch): reproducible runs whatever process samples it.
            sample_seed = int((epoch_seed * 1_000_003 + i) % (2**63 - 1))
            yield MiniBatch(epoch=epoch_num, index=i, seeds=seeds, sample_seed=sample_seed)


class _OrderPrefetch:
    """One epoch order being built by a daemon thread; :meth:`result` waits for it."""

    def __init__(self, seed: int, build):
        self.seed = seed
        self._order: Optional[np.ndarray] = None
        self._error: Optional[BaseException] = None
        self._thread = threading.Thread(target=self._run, args=(build,), name="bgl-order-prefetch", daemon=True)
        self._thread.start()

    def _run(self, build) -> None:
        try:
            self._order = build(self.seed)
        except BaseException as e:  # handed to the epoch that asks for this order
            self._error = e

    def wait(self) -> None:
        """Block until the thread ends (its result or error is then kept, unused)."""
        self._thread.join()

    def result(self) -> np.ndarray:
        """The order; re-raises what the build raised."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._order


@dataclass
class SampleStage(Stage):
    """Seeds -> blocks (``fanouts`` in DGL order: fanouts[-1] is applied to the seeds)."""

    source: SamplingSpec
    fanouts: tuple[int, ...]
    replace: bool = False
    name: str = "sample"

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
        mb.blocks = self._sampler.sample_blocks(mb.seeds, list(self.fanouts), replace=self.replace,
                                                seed=mb.sample_seed)
        return mb

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
    stage's process) or, inline only, a live cache object.
    """

    source: SamplingSpec
    feat_keys: tuple[str, ...] = ("feat",)
    label_keys: tuple[str, ...] = ("label",)
    cache: Any = None
    name: str = "fetch"

    def __post_init__(self):
        self._sampler = None
        self._feat_rows: Optional[np.ndarray] = None
        self._cache = None if isinstance(self.cache, CacheSpec) else self.cache

    def __getstate__(self) -> dict:
        if self.cache is not None and not isinstance(self.cache, CacheSpec):
            raise TypeError("a live cache object cannot move to a stage process; pass a policy name")
        return {**self.__dict__, "_sampler": None, "_cache": None, "_feat_rows": None}

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

    def __call__(self, mb: MiniBatch) -> MiniBatch:
        if self._sampler is None:
            self.open()
        first, last = mb.blocks[0], mb.blocks[-1]
        if self.feat_keys:
            ids = first.src_ids
            if self._cache is not None:
                # The seeds' hint lets the FIFO keep hop-1 rows longest: the next
                # proximity-ordered batch most likely reuses those.
                feat = self._cache.fetch(ids, self._fetch_features, num_seeds=last.num_dst)
                mb.cache_stats = dict(self._cache.stats())
            else:
                feat = self._fetch_features(ids)
            for key in self.feat_keys:
                first.srcdata[key] = feat
        if self.label_keys:
            labels = self._sampler.fetch_labels(last.dst_ids)
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
