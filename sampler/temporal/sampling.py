"""Temporal neighbour sampling: no sampled edge or node is newer than its subgraph's seed time.

Times are data of the graph: an int64 per-edge array of the store (``edata/<name>.npy``, e.g.
``timestamp`` from ``bgl ingest --edge-time-column``) and optional int64 node times: over global
ids in process, or named (``node_time_name=``): a store's node array, of which a partition part
keeps each in-edge's source value (:mod:`bgl.node_arrays`), so its server filters alone.
Each seed comes with a time ``t``; at every hop a node's candidates are its
in-edges with edge time <= ``t`` (and, with node times, whose source node's time <= ``t``), ``t``
being the time of the seed its subgraph grew from.  Subgraphs are disjoint (PyG's
``disjoint=True`` layout): a node reached from two seeds is two nodes, one per subgraph, with a
``batch`` entry naming its subgraph.

Per store and time array a :class:`TemporalLayer` reads a per-row time order: the store's own
(edge array ``<name>.order``, written at ingest by :func:`time_order`, int32, 4 B per edge, read in
place after one O(e) check), else one it builds once on first use in O(e log d) (int64, 8 B per
edge), or none when every row is already in time order; so a layer costs O(log d + fanout) per
destination (:mod:`._temporal_kernels`).  With node times the sampler also keeps the per-edge key
``max(edge time, source node time)`` (8 B per edge).

One layer is a function of (destination ids, their times, fanout, strategy, seed), so a local
store, its graph servers (:mod:`.frames`) and co-located reads give the same samples;
:func:`sample_temporal` builds the multi-hop disjoint sample over any of them.
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from .. import _kernels as K
from . import _kernels as TK
from . import _weighted_kernels as WK
from .. import ops

STRATEGIES = {"uniform": TK.UNIFORM, "last": TK.LAST}
DEFAULT_TIME_NAME = "timestamp"
ORDER_SUFFIX = ".order"  # edge array <time name>.order: a stored time order (time_order, at ingest)
log = logging.getLogger(__name__)


def check_strategy(strategy) -> int:
    """The kernel code of ``"uniform"`` / ``"last"``; ValueError naming anything else."""
    if strategy not in STRATEGIES:
        raise ValueError(f"temporal strategy must be one of {sorted(STRATEGIES)}, got {strategy!r}")
    return STRATEGIES[strategy]


def check_times(times, length: int, what: str) -> np.ndarray:
    """``times`` as a contiguous int64 [length] array; TypeError for a non-integer dtype, ValueError
    for another shape (the message names ``what`` and the offending dtype or length)."""
    if times is None:
        raise ValueError(f"{what} are required: temporal sampling needs a time for every seed")
    if hasattr(times, "detach"):  # a torch tensor, without importing torch
        times = times.detach().cpu().numpy()
    arr = np.asarray(times)
    if arr.dtype.kind not in "iu" or arr.dtype == np.uint64:
        raise TypeError(f"{what} must be integers (e.g. unix seconds) of at most int64, got dtype {arr.dtype}")
    if arr.ndim != 1 or arr.shape[0] != length:
        raise ValueError(f"{what} must have shape ({length},), got {arr.shape}")
    return np.ascontiguousarray(arr, dtype=np.int64)


def checked_seeds(layer, dst, times, time_name: str | None, node_time_name: str | None):
    """A temporal layer call's ``(seeds, seed times, node offset, TimeIndex)``: the seeds as int64 ids
    in the layer's part (``layer.store``'s node range, ``layer._indptr``'s rows), one time each, and the
    index of the edge times asked for, the same checks (ValueError/TypeError) for the plain and the
    typed layer."""
    dst = ops.as_ids(dst, "seeds")
    times = check_times(times, dst.shape[0], "seed times")
    off = int(layer.store.node_offset)
    ops.check_range(dst, off, off + layer._indptr.shape[0] - 1, "seeds")
    return dst, times, off, layer.index(time_name, node_time_name)


@dataclass(frozen=True)
class TimeIndex:
    """What a layer reads: ``key`` int64 [e] (eligible when ``key <= t``) and ``order`` int64 [e],
    each row's in-row offsets by ``(key, offset)``, or [0] when every row is already in that order."""
    key: np.ndarray
    order: np.ndarray


def source_time_keys(indices, node_time, edge_time=None) -> np.ndarray:
    """int64 [e]: per edge (global source ids ``indices``), the time from which the edge and its source
    both exist, ``max(edge_time, node_time[source])`` (``node_time`` int64 over global ids).

    What node times filter by.  8 B per edge.  (Graph servers read a part's stored source times
    instead, :func:`source_times`.)
    """
    indices = np.asarray(indices)
    node_time = check_times(node_time, np.asarray(node_time).shape[0] if node_time is not None else 0, "node times")
    if indices.size and int(indices.max()) >= node_time.shape[0]:
        raise ValueError(f"node times cover {node_time.shape[0]} nodes, an edge's source is {int(indices.max())}")
    etime = np.zeros(0, np.int64) if edge_time is None else check_times(edge_time, indices.shape[0], "edge times")
    key = np.empty(indices.shape[0], np.int64)
    TK.edge_keys(indices, etime, node_time, edge_time is not None, key)
    return key


def build_index(indptr: np.ndarray, indices: np.ndarray, edge_time: np.ndarray | None,
                node_time: np.ndarray | None = None, parallel: bool = True,
                source_time: np.ndarray | None = None) -> TimeIndex:
    """The :class:`TimeIndex` of a CSC from its edge times and/or node times: ``node_time`` over global
    ids, or ``source_time`` int64 [e], each edge's source's time already gathered (a part's stored copy,
    :meth:`bgl.store.GraphStore.source_values`); ``parallel`` False in server worker threads (no numba
    parallel region there)."""
    if source_time is not None:
        key = np.array(source_time, np.int64) if edge_time is None else np.maximum(edge_time, source_time)
    elif node_time is None:
        key = np.ascontiguousarray(edge_time)
    else:
        key = source_time_keys(indices, node_time, edge_time)
    if TK.rows_sorted(indptr, key):
        return TimeIndex(key, np.zeros(0, np.int64))
    order = np.empty(key.shape[0], np.int64)
    (TK.row_time_order_par if parallel else TK.row_time_order_serial)(indptr, key, order)
    return TimeIndex(key, order)


def source_times(store, name: str, node_time=None) -> np.ndarray:
    """int64 [e]: the time of each in-edge's source from ``store``'s node array ``name`` (a part's stored
    copy, or gathered over a whole store: :meth:`bgl.store.GraphStore.source_values`); ValueError naming
    the node arrays the store has, or the dtype, and for a layer that already has in-process node times."""
    if node_time is not None:
        raise ValueError(f"node times given twice: in process and as the store's node array {name!r}; give one")
    if not hasattr(store, "source_values"):
        raise ValueError(f"{getattr(store, 'path', 'this graph')} keeps no node arrays: node times by name "
                         f"({name!r}) come from a graph store (bgl ingest --node-time)")
    try:
        values = store.source_values(name)
    except KeyError as e:
        raise ValueError(e.args[0]) from None
    return check_times(values, int(store.num_edges), f"node time array {name!r}")


def time_order(indptr: np.ndarray, edge_time: np.ndarray, alloc=np.empty) -> np.ndarray | None:
    """The time order to store beside an edge time array (edge array ``<name>.order``): each row's
    in-row offsets by (time, offset), int32 while every row has fewer than 2^31 edges (4 B per edge,
    else int64), or None when every row is already in time order (nothing to store).  In-row
    offsets stay valid in a partition's parts, whose rows keep their edges' order.  ``alloc(shape,
    dtype)`` gives the output (a writer's memmap: the order is never in RAM)."""
    if TK.rows_sorted(indptr, edge_time):
        return None
    widest = int(np.diff(indptr).max()) if indptr.shape[0] > 1 else 0
    order = alloc((edge_time.shape[0],), np.int32 if widest < 2**31 else np.int64)
    TK.row_time_order_par(indptr, edge_time, order)
    return order


class TemporalLayer:
    """One temporal layer over a store (whole graph or part; global ids, ``node_offset``).

    ``layer(dst, times, fanout, strategy, seed, time_name)`` -> ``(counts int64 [m], nbrs [e]
    global ids, eids int64 [e] CSC positions, edge_time int64 [e])``: for destination ``dst[i]`` at
    time ``times[i]``, ``counts[i]`` of its in-edges with key <= ``times[i]`` (``edge_time`` is that
    key: the edge's time, or with node times the later of it and its source's time).

    Parameters
    ----------
    store : a GraphStore or anything with its read API (``indptr``, ``indices``, ``node_offset``,
        ``num_edges``, ``edge_array(name)``)
    node_time : optional int64 [global_num_nodes] node times; a source is eligible at ``t`` when
        its time is <= ``t``.  A call may instead name the store's node array (``node_time_name=``):
        a part store reads its stored copy of each in-edge's source time (graph servers do)
    parallel : allow the numba-parallel kernels (False in server worker threads)
    """

    def __init__(self, store, node_time=None, parallel: bool = True):
        self.store = store
        self._indptr = np.asarray(store.indptr)
        self._indices = store.indices
        self.node_time = None if node_time is None else check_times(
            node_time, int(store.global_num_nodes), "node times")
        self.parallel = parallel
        self._index: dict[tuple, TimeIndex] = {}  # by (edge time name, node time name)
        self._weights: dict[str, np.ndarray] = {}  # edge weights by name, checked once
        self._lock = threading.Lock()  # server worker threads share one layer

    def index(self, time_name: str | None, node_time_name: str | None = None) -> TimeIndex:
        """The time index of edge array ``time_name`` (None: node times only) and, with ``node_time_name``,
        the store's node times of that name, built on first use."""
        with self._lock:
            if (time_name, node_time_name) not in self._index:
                edge_time = None if time_name is None else self.edge_times(time_name)
                source = None if node_time_name is None else source_times(self.store, node_time_name, self.node_time)
                if edge_time is None and self.node_time is None and source is None:
                    raise ValueError("temporal sampling needs edge times (time_name) or node times")
                self._index[time_name, node_time_name] = (
                    None if source is not None else self._stored_index(time_name, edge_time)) or build_index(
                    self._indptr, np.asarray(self._indices), edge_time, self.node_time, self.parallel, source)
            return self._index[time_name, node_time_name]

    def _stored_index(self, time_name: str | None, edge_time) -> TimeIndex | None:
        """The store's own time order of ``time_name`` (edge array ``<name>.order``, written at ingest),
        read in place after one O(e) check, or None (none stored, node times, or it fails the check:
        then the layer builds its own, and says so)."""
        name = None if time_name is None else time_name + ORDER_SUFFIX
        if self.node_time is not None or name is None or name not in getattr(self.store, "edata", {}):
            return None
        order = np.asarray(self.store.edge_array(name))
        if order.ndim == 1 and order.shape[0] == edge_time.shape[0] and order.dtype in (np.int32, np.int64) \
                and TK.order_valid(self._indptr, edge_time, order):
            return TimeIndex(edge_time, order)
        log.warning("%s: edge array %r is not a time order of %r; building one in memory",
                    getattr(self.store, "path", "graph"), name, time_name)
        return None

    def edge_times(self, name: str) -> np.ndarray:
        """The store's edge array ``name`` checked as int64 [num_edges] times (ValueError/TypeError)."""
        try:
            arr = self.store.edge_array(name)
        except KeyError as e:
            raise ValueError(e.args[0]) from None
        return check_times(arr, int(self.store.num_edges), f"edge time array {name!r}")

    def weights(self, name: str) -> np.ndarray:
        """The store's edge array ``name`` checked once as edge weights (:func:`ops.check_weights`)."""
        with self._lock:
            if name not in self._weights:
                try:
                    values = self.store.edge_array(name)
                except KeyError as e:
                    raise ValueError(e.args[0]) from None
                self._weights[name] = ops.check_weights(values, int(self.store.num_edges), name)
            return self._weights[name]

    def __call__(self, dst, times, fanout: int, strategy: str, seed: int,
                 time_name: str | None = DEFAULT_TIME_NAME, node_time_name: str | None = None,
                 prob_name: str | None = None):
        if getattr(self.store, "is_typed", False):
            raise ValueError(f"temporal sampling of a typed store ({getattr(self.store, 'path', 'graph')}) is not "
                             "supported yet: it would mix relations under one fanout")
        fanout = ops.check_fanout(fanout)
        code = check_strategy(strategy)
        dst, times, off, idx = checked_seeds(self, dst, times, time_name, node_time_name)
        m = dst.shape[0]
        par = ops._use_parallel(self.parallel, m, ops.PARALLEL_MIN_SEEDS)
        starts, elig, degs, counts = (np.empty(m, np.int64) for _ in range(4))
        (TK.temporal_spans_par if par else TK.temporal_spans_serial)(
            self._indptr, idx.key, idx.order, dst, times, np.int64(off), np.int64(fanout), starts, elig, degs, counts)
        prob = None if prob_name is None else self._weighted_counts(prob_name, code, idx, starts, elig, degs,
                                                                    fanout, counts, par)
        out_indptr, total = ops._sample_offsets(counts, ops.MAX_SAMPLE_EDGES)
        eids = np.empty(total, np.int64)
        if prob is not None:
            (WK.weighted_positions_par if par else WK.weighted_positions_serial)(
                prob[0], starts, elig, degs, idx.order, dst, prob[1], np.int64(fanout), np.int64(prob[2]),
                np.uint64(int(seed) & ops.MASK64), out_indptr, eids)
        else:
            (TK.temporal_positions_par if par else TK.temporal_positions_serial)(
                starts, elig, degs, idx.order, dst, np.int64(fanout), np.int64(code),
                np.uint64(int(seed) & ops.MASK64), out_indptr, eids)
        nbrs = np.empty(total, self._indices.dtype)
        (K.gather_nbrs_par if par else K.gather_nbrs_serial)(self._indices, eids, nbrs)
        return counts, nbrs, eids, idx.key[eids]


    def _weighted_counts(self, name: str, code: int, idx: TimeIndex, starts, elig, degs, fanout: int, counts, par):
        """``(weights, positive counts, scratch width)`` of a weighted layer; ``counts`` become the
        eligible edges of positive weight, at most ``fanout`` (:mod:`._weighted_temporal_kernels`)."""
        if code != TK.UNIFORM:
            raise ValueError(f"prob_name={name!r} weighs a uniform draw; strategy='last' takes the most recent "
                             "eligible edges whatever their weight: use strategy='uniform' or drop the weights")
        prob = self.weights(name)
        positive = np.empty(starts.shape[0], np.int64)
        (WK.weighted_counts_par if par else WK.weighted_counts_serial)(prob, idx.order, starts, elig,
                                                                       np.int64(fanout), positive, counts)
        partial = (elig != degs) & (counts > 0)  # rows drawn from a scratch copy of their eligible weights
        widest = int(elig[partial].max()) if idx.order.shape[0] and partial.any() else 0
        return prob, positive, widest


LayerFn = Callable[..., tuple]


@dataclass(frozen=True)
class TemporalSample:
    """A multi-hop disjoint temporal sample (PyG's disjoint layout).

    ``node`` int64 [N] global ids, seeds first (``node[:m] == seeds``); ``batch`` int64 [N] the
    subgraph (seed index) of each node; ``node_time`` int64 [N] its subgraph's seed time;
    ``src``/``dst`` int64 [E] local indices into ``node`` of each sampled edge (messages flow
    ``src -> dst``; PyG's ``row``/``col`` of a CSC sampler); ``eid`` int64 [E] edge ids (a store's
    CSC positions; over servers the client's global edge ids); ``edge_time`` int64 [E] each edge's
    key (its time; with node times the later of it and its source's); ``num_sampled_nodes`` /
    ``num_sampled_edges`` per hop, PyG's fields (hop 0's nodes are the seeds).
    """
    node: np.ndarray
    batch: np.ndarray
    node_time: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    eid: np.ndarray
    edge_time: np.ndarray
    num_sampled_nodes: tuple[int, ...]
    num_sampled_edges: tuple[int, ...]
    etype: np.ndarray | None = None  # int64 [E] relation ids, from a typed layer (typed.py)


def sample_temporal(layer: LayerFn, seeds, seed_times, fanouts: Sequence[int], strategy: str = "uniform",
                    seed: int | None = None, time_name: str | None = DEFAULT_TIME_NAME) -> TemporalSample:
    """Sample ``len(fanouts)`` hops outward from ``seeds``, each subgraph at its seed's time.

    ``fanouts[0]`` is the first hop from the seeds (PyG's ``num_neighbors`` order); hop ``h`` draws
    with ``ops.layer_seed(seed, len(fanouts) - 1 - h)``, the seed the block sampler gives the same
    layer (so with every edge eligible a row draws what :func:`multilayer.sample_blocks` draws).
    Only the nodes new to their subgraph at one hop are expanded at the next (as PyG).  Seeds may
    repeat (one subgraph each, e.g. the two ends of link-prediction seed edges at their times).
    ``layer`` is a :class:`TemporalLayer` or anything with its call signature (graph servers:
    :class:`~bgl.sampler.temporal.remote.TemporalClient`), or a typed one
    (:class:`~bgl.sampler.temporal.typed.TypedTemporalLayer`: each of ``fanouts`` an int64 [R] array,
    one per relation; the sample's ``etype`` then holds each edge's relation).
    """
    from .. import multilayer  # torch: not in a graph server, which imports this module

    typed = len(fanouts) > 0 and isinstance(fanouts[0], np.ndarray)
    fanouts = list(fanouts) if typed else multilayer.check_fanouts(fanouts)
    check_strategy(strategy)
    seeds = ops.as_ids(seeds, "seeds")
    times = check_times(seed_times, seeds.shape[0], "seed times")
    seed = multilayer.draw_seed() if seed is None else int(seed)
    m = seeds.shape[0]
    if m == 0:
        raise ValueError("seeds must not be empty")
    known = _Known(seeds, np.arange(m, dtype=np.int64))  # seeds differ by batch: ids 0..m-1
    frontier = np.arange(m, dtype=np.int64)
    srcs, dsts, eids, etimes, rels = [], [], [], [], []
    n_nodes, n_edges = [m], []
    total = m
    for hop, fanout in enumerate(fanouts):
        counts, nbrs, eid, etime, *rel = layer(known.node[frontier], times[known.batch[frontier]], fanout, strategy,
                                               ops.layer_seed(seed, len(fanouts) - 1 - hop), time_name=time_name)
        rels.extend(rel)
        nbrs = np.asarray(nbrs, np.int64)
        dst_local = np.repeat(frontier, counts)
        src_local, new = known.add(nbrs, known.batch[dst_local])
        srcs.append(src_local)
        dsts.append(dst_local)
        eids.append(np.asarray(eid, np.int64))
        etimes.append(np.asarray(etime, np.int64))
        n_nodes.append(int(new.shape[0]))
        n_edges.append(int(nbrs.shape[0]))
        frontier = np.arange(total, total + new.shape[0], dtype=np.int64)
        total += new.shape[0]
    cat = (lambda xs: np.concatenate(xs) if xs else np.zeros(0, np.int64))
    return TemporalSample(known.node, known.batch, times[known.batch], cat(srcs), cat(dsts), cat(eids),
                          cat(etimes), tuple(n_nodes), tuple(n_edges), cat(rels) if typed else None)


class _Known:
    """The (subgraph, node) pairs sampled so far and their local indices, in a hash table
    (:func:`._temporal_kernels.pair_ids`): O(1) expected per sampled edge, 24 B per table slot, the
    table at most half full (rebuilt twice as large when it would be fuller)."""

    def __init__(self, node: np.ndarray, batch: np.ndarray):
        self.node, self.batch = np.zeros(0, np.int64), np.zeros(0, np.int64)
        self._table(2 * node.shape[0])
        self.add(node, batch)

    def _table(self, need: int) -> None:
        size = 1 << max(4, int(need - 1).bit_length())
        self.tb, self.tn, self.tv = np.full(size, -1, np.int64), np.empty(size, np.int64), np.empty(size, np.int64)
        if self.node.size:  # re-inserted in id order, so every pair keeps its id
            n = self.node.shape[0]
            TK.pair_ids(self.tb, self.tn, self.tv, self.batch, self.node, np.empty(n, np.int64),
                        np.empty(n, np.int64), np.empty(n, np.int64), 0)

    def add(self, nbrs: np.ndarray, nbr_batch: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Local index of each ``(nbr_batch[j], nbrs[j])``, appending the pairs not seen before (in
        first-appearance order); returns ``(locals, new local indices)``."""
        base, e = self.node.shape[0], nbrs.shape[0]
        if 2 * (base + e) > self.tb.shape[0]:
            self._table(2 * (base + e))
        out, new_b, new_n = np.empty(e, np.int64), np.empty(e, np.int64), np.empty(e, np.int64)
        end = TK.pair_ids(self.tb, self.tn, self.tv, np.ascontiguousarray(nbr_batch, np.int64),
                          np.ascontiguousarray(nbrs, np.int64), out, new_b, new_n, base)
        self.node = np.concatenate([self.node, new_n[:end - base]])
        self.batch = np.concatenate([self.batch, new_b[:end - base]])
        return out, np.arange(base, end, dtype=np.int64)
