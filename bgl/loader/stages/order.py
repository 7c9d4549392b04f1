"""The loader's source stage: one epoch's seed order, cut into batches of seed ids.

``OrderStage`` turns ``(epoch, epoch_seed)`` into :class:`~bgl.loader.stages.minibatch.MiniBatch`
es: DGL's random shuffle, or BGL's proximity order from
:mod:`bgl.cache.ordering` (over a local store, or part by part over a
partition dir).  The next epoch's proximity order can be built in a
background thread during the current epoch (:meth:`OrderStage.prefetch`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Optional

import numpy as np
import torch

from ...threads import start_daemon_thread
from .minibatch import MiniBatch
from .protocol import SourceStage
from .specs import SamplingSpec

ORDERS = ("random", "proximity")
# A shuffle of at most this many seeds is built in the trainer's thread when the next epoch's order
# is prefetched: ~0.14 ms for 16k ids, less than starting a thread and handing the GIL back and forth.
INLINE_SHUFFLE_MAX = 1 << 14


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
    ids : [n]
        This rank's seed items (already split and padded for DDP): int64 node ids, or positions into
        the seed edges (:func:`~bgl.loader.seeds.items.positions`, int32 while they fit).
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
    order_nodes : int64 [num items] or None
        For edge seeds (``ids`` are positions into the seed-edge list): the node whose BFS
        position orders each edge in a proximity order (its destination); None for node seeds.
    order_dir : str, optional
        Directory where each epoch's proximity order is saved once computed and read back by a
        loader built the same way (:mod:`bgl.cache.ordering.saved_orders`): a restarted trainer
        resumes its epoch without the BFS.

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
    order_nodes: Optional[np.ndarray] = None
    order_dir: Optional[str] = None
    name: str = "order"

    def __post_init__(self):
        if self.order not in ORDERS:
            raise ValueError(f"order must be one of {ORDERS}, got {self.order!r}")
        self._store = None
        self._part_order = None
        self._prefetched: Optional[_OrderPrefetch] = None
        self._saved = None  # SavedOrders of order_dir, made on first use

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
                from ...cache.ordering.partition_order import PartitionOrder

                # Built once per process; its per-part views are reused every epoch.
                if self.order_nodes is None:
                    nodes = self.ids
                else:  # typed edges hold their nodes narrow (int32)
                    nodes = np.unique(self.order_nodes[self.ids]).astype(np.int64, copy=False)
                self._part_order = PartitionOrder(self.partition_dir, nodes, self.num_sequences)
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
        """Start building the order of ``epoch_seed`` in a background thread.

        A proximity order is a few BFS passes over the whole graph (~1.4 s on
        R-MAT 2^20 with 8 sequences), and a shuffle a permutation of every seed
        (0.45 s for 9.5M typed seed edges, nearly all of the first batch's wait
        and 2.5 % of a 120-batch epoch there); either stalls the first batch of
        every epoch, while built during the previous epoch it overlaps training.
        The BFS kernel and NumPy's shuffle release the GIL.  A shuffle of at most
        ``INLINE_SHUFFLE_MAX`` seeds is built at once, in the caller's thread.  The result is used
        only by an epoch with exactly this seed, so a wrong guess costs CPU
        time, never a different order.  Returns False (nothing started) for an
        unshuffled random order, which costs nothing to build.
        """
        if self.order != "proximity" and not self.shuffle:
            return False
        if self._prefetched is not None and self._prefetched.seed == int(epoch_seed):
            return True
        if self._store is None and self._part_order is None:
            self.open()
        small = self.order != "proximity" and int(np.asarray(self.ids).shape[0]) <= INLINE_SHUFFLE_MAX
        self._prefetched = _OrderPrefetch(int(epoch_seed), self._order_now, in_thread=not small)
        return True

    @property
    def prefetch_hits(self) -> int:
        """Epochs whose proximity order came from :meth:`prefetch` (for tests and benchmarks)."""
        return getattr(self, "_prefetch_hits", 0)

    def epoch_order(self, epoch_seed: int) -> np.ndarray:
        """The seed ids of one epoch in visiting order, [n + pad] (int64 for a proximity order, else in
        the ids' dtype: :meth:`items` widens each batch)."""
        order = self._order(epoch_seed)
        return np.concatenate([order, order[: self.pad]]) if self.pad else order

    def _order(self, epoch_seed: int) -> np.ndarray:
        pending, self._prefetched = self._prefetched, None
        if pending is not None and pending.seed == int(epoch_seed):
            order = pending.result()  # re-raises an error of the background build here
            self._prefetch_hits = self.prefetch_hits + 1
            return order
        if pending is not None and self.order == "proximity":
            # A wrong guess: let it finish first, since a partition order reuses its scratch views.
            pending.wait()
        return self._order_now(epoch_seed)

    def _saved_orders(self):
        """The :class:`~bgl.cache.ordering.saved_orders.SavedOrders` of ``order_dir``, or None (no
        directory, not a proximity order, or a graph without files to name it by)."""
        if self._saved is None and self.order_dir is not None and self.order == "proximity":
            from ...cache.ordering.saved_orders import SavedOrders, graph_identity, order_key

            store_path = self.graph.path if self.graph is not None and self.graph.kind == "store" else None
            graph = graph_identity(self.partition_dir, store_path)
            key = None if graph is None else order_key(graph, self.ids, self.order_nodes, self.num_sequences)
            self._saved = False if key is None else SavedOrders(self.order_dir, key)
        return self._saved or None

    def _order_now(self, epoch_seed: int) -> np.ndarray:
        saved = self._saved_orders()
        order = None if saved is None else saved.load(epoch_seed, int(np.asarray(self.ids).shape[0]))
        if order is None:
            order = self._compute_order(epoch_seed)
            if saved is not None:
                saved.save(epoch_seed, order)
        return order

    def _compute_order(self, epoch_seed: int) -> np.ndarray:
        if self.order == "proximity":
            ids = np.asarray(self.ids, dtype=np.int64)
            from ...cache.ordering.store_order import proximity_order

            if self._store is None and self._part_order is None:
                self.open()
            if self.order_nodes is None:
                if self._part_order is not None:
                    return self._part_order.epoch_order(epoch_seed)
                return np.asarray(proximity_order(self._store, ids, self.num_sequences, epoch_seed), dtype=np.int64)
            # edge seeds: ordered by one endpoint's place in the nodes' proximity order
            from ..seeds.edges import edge_order

            nodes = self.order_nodes[ids].astype(np.int64, copy=False)  # held narrow (int32) for typed edges
            if self._part_order is not None:
                node_order = self._part_order.epoch_order(epoch_seed)
            else:
                node_order = proximity_order(self._store, np.unique(nodes), self.num_sequences, epoch_seed)
            return ids[edge_order(np.asarray(node_order, dtype=np.int64), nodes)]
        # A random order keeps the ids' own dtype (seed positions are held int32; items() widens each
        # batch).  A shuffle is ids[permutation(n)] exactly (one Fisher-Yates over the same draws)
        # without an int64 index array of every seed.
        ids = np.asarray(self.ids)
        return np.random.default_rng(epoch_seed).permutation(ids) if self.shuffle else ids

    def __len__(self) -> int:
        return num_batches(int(np.asarray(self.ids).shape[0]) + self.pad, self.batch_size, self.drop_last)

    def items(self, epoch: Any) -> Iterator[MiniBatch]:
        """Yield the :class:`MiniBatch` es of epoch ``(epoch_num, epoch_seed)`` in order; each gets a
        sampling seed derived from the seed and its index.  ``(epoch_num, epoch_seed, k)`` starts at
        batch ``k``: the batches before it are neither cut nor sampled (a resumed epoch).
        """
        epoch_num, epoch_seed, *start = epoch  # (epoch, seed, first batch): a resumed epoch (state/position.py)
        ids = self.epoch_order(epoch_seed)
        bounds = batch_bounds(ids.shape[0], self.batch_size, self.drop_last)
        for i in range(int(start[0]) if start else 0, bounds.shape[0] - 1):
            seeds = torch.from_numpy(ids[bounds[i]:bounds[i + 1]].astype(np.int64))  # a copy, int64
            # One sampling seed per (epoch, batch): reproducible runs whatever process samples it.
            sample_seed = int((epoch_seed * 1_000_003 + i) % (2**63 - 1))
            yield MiniBatch(epoch=epoch_num, index=i, seeds=seeds, sample_seed=sample_seed)


class _OrderPrefetch:
    """One epoch order being built by a daemon thread; :meth:`result` waits for it.  With
    ``in_thread=False`` it is built now, in the caller's thread (a shuffle of a few seeds)."""

    def __init__(self, seed: int, build, in_thread: bool = True):
        self.seed = seed
        self._order: Optional[np.ndarray] = None
        self._error: Optional[BaseException] = None
        self._thread = None
        if not in_thread:
            self._run(build)
            return
        # started so that the trainer, on its way to a batch, does not wait for the thread (bgl.threads)
        self._thread = start_daemon_thread(self._run, (build,), "bgl-order-prefetch")

    def _run(self, build) -> None:
        try:
            self._order = build(self.seed)
        except BaseException as e:  # handed to the epoch that asks for this order
            self._error = e

    def wait(self) -> None:
        """Block until the thread ends (its result or error is then kept, unused)."""
        if self._thread is not None:
            self._thread.join()

    def result(self) -> np.ndarray:
        """The order; re-raises what the build raised."""
        self.wait()
        if self._error is not None:
            raise self._error
        return self._order
