"""Validated NumPy-level sampling operations over one CSC slice (no torch, no sockets).

The local sampler, the graph server and the client all go through these
functions, so input checks and error messages are the same everywhere.
Errors are ``ValueError`` naming the offending value; the server turns them
into ERROR replies.
"""
from __future__ import annotations

import threading

import numba
import numpy as np

from . import _kernels as K
from . import _labor_kernels as L
from . import _weighted_kernels as W
from . import exclusion
# ops._read_only and ops._sample_offsets stay importable: kernel_warmup and typed use them
from .sample_arrays import read_only as _read_only, sample_offsets as _sample_offsets  # noqa: F401

MASK64 = (1 << 64) - 1
# Largest fanout a request may ask for (besides -1 = all): with replacement, a guard against absurd memory.
MAX_FANOUT = 1 << 20
# Largest number of sampled edges one request may return.
MAX_SAMPLE_EDGES = 1 << 28
# Below these sizes the serial kernels run instead of the parallel ones: a numba
# parallel region costs a thread wake-up per call, which small layers cannot
# amortise.  Measured on a shared 2-core VM (R-MAT 2^20, one 17k-seed layer with
# fanout 15, 245k edges): serial 0.8 ms; parallel 0.75-3.3 ms with
# OMP_WAIT_POLICY=PASSIVE and 46 ms without it (idle libgomp threads spinning
# against the other jobs).  Since the sampler was split into separate
# span/position/gather passes a whole layer of a 1024-seed batch costs ~1 ms
# serially, so only very large layers go parallel.
PARALLEL_MIN_SEEDS = 1 << 16
PARALLEL_MIN_ELEMENTS = 1 << 20
# Weighted and LABOR rows cost O(degree) each (every edge's weight or source variate is read),
# not O(fanout): layers of this many seeds already amortise a parallel launch
# (bench/results/sampling.md, weighted and LABOR).
WEIGHTED_PARALLEL_MIN_SEEDS = 1 << 12


def _use_parallel(requested: bool, work: int, threshold: int) -> bool:
    return requested and work >= threshold and numba.get_num_threads() > 1


def splitmix64(x: int) -> int:
    """Pure-Python splitmix64 (same mix as the kernels), for deriving per-layer seeds."""
    x = (x + 0x9E3779B97F4A7C15) & MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


def layer_seed(seed: int, layer: int) -> int:
    """Seed of block ``layer`` (0 = input layer) of a multi-layer sample, in [0, 2**64)."""
    return splitmix64((int(seed) & MASK64) ^ splitmix64(int(layer)))


def as_ids(ids, name: str = "ids") -> np.ndarray:
    """Any integer array-like / tensor as a contiguous int64 [n] array (zero-copy when possible)."""
    if hasattr(ids, "detach"):  # torch tensor without importing torch
        ids = ids.detach().cpu().numpy()
    arr = np.asarray(ids)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.size and arr.dtype.kind not in "iu":
        raise ValueError(f"{name} must be integers, got dtype {arr.dtype}")
    return np.ascontiguousarray(arr, dtype=np.int64)


def check_fanout(fanout) -> int:
    """``fanout`` as an int in ``[-1, MAX_FANOUT]`` (-1 = all neighbours); ValueError naming the bad
    value otherwise.
    """
    if isinstance(fanout, bool) or not isinstance(fanout, (int, np.integer)):
        raise ValueError(f"fanout must be an int, got {fanout!r}")
    fanout = int(fanout)
    if fanout < -1:
        raise ValueError(f"fanout must be >= -1 (-1 = all neighbours), got {fanout}")
    if fanout > MAX_FANOUT:
        raise ValueError(f"fanout must be <= {MAX_FANOUT}, got {fanout}")
    return fanout


def check_relation_fanouts(fanouts, canonical_etypes) -> np.ndarray:
    """One typed layer's fanouts as a contiguous int64 [R] array, one per relation of
    ``canonical_etypes`` (each as :func:`check_fanout` takes it); ValueError naming the count or the
    bad value otherwise.  Every typed sampling entry (store, servers, temporal) checks through here."""
    fanouts = np.ascontiguousarray(fanouts, np.int64)
    if fanouts.shape != (len(canonical_etypes),):
        raise ValueError(f"{fanouts.shape[0] if fanouts.ndim == 1 else fanouts.shape} fanouts for a graph of "
                         f"{len(canonical_etypes)} relations {list(canonical_etypes)}")
    for f in fanouts:
        check_fanout(int(f))
    return fanouts


def check_range(ids: np.ndarray, lo: int, hi: int, name: str = "ids") -> None:
    """Raise ValueError naming the first id outside [lo, hi)."""
    if ids.size == 0:
        return
    bad = int(K.count_outside(ids, np.int64(lo), np.int64(hi)))
    if bad >= 0:
        raise ValueError(f"{name}[{bad}] = {int(ids[bad])} is outside the owned id range [{lo}, {hi})")


def weights_form(prob, num_edges: int, name: str = "prob") -> np.ndarray:
    """``prob`` as the array the weighted kernels take (a bool mask as its uint8 view, float16 widened,
    contiguous), its dtype and shape checked but not its values (:func:`check_weights` does both)."""
    if hasattr(prob, "detach"):
        prob = prob.detach().cpu().numpy()
    prob = np.asarray(prob)
    if prob.dtype == np.bool_:
        prob = prob.view(np.uint8)
    elif prob.dtype.kind not in "fiu":
        raise ValueError(f"edge weights {name!r} must be float, integer or a bool mask, got dtype {prob.dtype}")
    if prob.shape != (num_edges,):
        raise ValueError(f"edge weights {name!r} must have shape ({num_edges},) (one per edge), got {prob.shape}")
    if prob.dtype == np.float16:
        prob = prob.astype(np.float32)
    return np.ascontiguousarray(prob)


def check_weights(prob, num_edges: int, name: str = "prob") -> np.ndarray:
    """Per-edge weights (or a bool mask) as an array the weighted kernels take; ValueError naming
    ``name`` and the first bad edge otherwise.

    Accepted: float, integer or bool ``[num_edges]`` (a mask is passed as its uint8 view: True = 1),
    every weight finite and >= 0.  One pass over the array: callers check an array once and keep it.
    """
    prob = weights_form(prob, num_edges, name)
    bad = int(W.first_bad_weight(prob)) if prob.size else -1
    if bad >= 0:
        raise ValueError(f"edge weights {name!r} must be finite and >= 0; edge {bad} has {prob[bad]}")
    return prob


def sample_neighbors(indptr: np.ndarray, indices: np.ndarray, seeds: np.ndarray, node_offset: int,
                     fanout: int, replace: bool, seed: int, *, parallel: bool = True,
                     prob: np.ndarray | None = None, exclude: np.ndarray | None = None,
                     edge_ids: np.ndarray | None = None, edge_pos: np.ndarray | None = None,
                     max_edges: int = MAX_SAMPLE_EDGES) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sample in-neighbours of ``seeds`` (global ids owned by this CSC slice).

    Parameters
    ----------
    indptr : int64 [n + 1]; indices : int32/int64 [e] global ids
    seeds : int64 [m] global ids in [node_offset, node_offset + n) (checked)
    fanout : neighbours per seed, -1 = all
    replace : sample with replacement
    seed : RNG seed; the sample of each row depends only on (seed, its global id)
    parallel : allow the numba-parallel kernels (used only for >= PARALLEL_MIN_SEEDS
        seeds; False inside server worker threads)
    prob : optional [e] per-edge weights already checked by :func:`check_weights`: edges are drawn
        proportionally to them (DGL's ``prob=``), zero-weight edges never
    exclude : optional int64 [x] edge ids never to sample (link prediction's seed edges and
        their reverses; see :func:`check_exclude`): a row draws from its other edges only
    edge_ids : optional int [e] edge id of each CSC position (default: the position is the id)
    edge_pos : optional int64 [e] the inverse of ``edge_ids`` (:func:`.exclusion.edge_positions`),
        which maps ``exclude`` to positions; computed per call (O(e)) when ``exclude`` is given
        without it, so a sampler over a graph with its own edge ids computes it once

    Returns
    -------
    counts : int64 [m]; nbrs : indices.dtype [sum(counts)] global ids;
    eids : int64 [sum(counts)] CSC positions of the sampled edges in this slice
    """
    fanout = check_fanout(fanout)
    # read-only views (no copy): one kernel variant whoever calls -- a graph server (its request's ids
    # are read-only), a trainer's co-located store or the partitioner's metrics -- instead of one per
    # writeable flag, each a compile of seconds on a cold install (bench/results/launch.md)
    seeds, indptr = _read_only(as_ids(seeds, "seeds")), _read_only(indptr)
    n = indptr.shape[0] - 1
    check_range(seeds, node_offset, node_offset + n, "seeds")
    off, fo, rep, sd = np.int64(node_offset), np.int64(fanout), bool(replace), np.uint64(int(seed) & MASK64)
    m = seeds.shape[0]
    parallel_asked = parallel
    parallel = _use_parallel(parallel, m, PARALLEL_MIN_SEEDS)
    if exclude is not None and len(exclude):
        if prob is not None:
            raise ValueError("weighted sampling with excluded edges is not supported")
        return exclusion.sample_excluding(indptr, indices, seeds, off, fo, rep, sd, check_exclude(exclude),
                                          edge_ids, edge_pos, max_edges)
    counts = np.empty(m, np.int64)
    if prob is not None:
        if prob.shape[0] != indices.shape[0]:
            raise ValueError(f"prob has {prob.shape[0]} weights for {indices.shape[0]} edges")
        rep = rep and fanout >= 0  # fanout -1 takes every positive edge, with or without replacement
        parallel = _use_parallel(parallel_asked, m, WEIGHTED_PARALLEL_MIN_SEEDS)
        positive = np.empty(m, np.int64)
        widest = (W.weighted_counts_par if parallel else W.weighted_counts_serial)(
            indptr, prob, seeds, off, fo, rep, counts, positive)
    else:
        starts = np.empty(m, np.int64)
        degs = np.empty(m, np.int64)
        (K.row_spans_par if parallel else K.row_spans_serial)(indptr, seeds, off, fo, rep, starts, degs, counts)
    out_indptr, total = _sample_offsets(counts, max_edges)
    nbrs = np.empty(total, indices.dtype)
    eids = np.empty(total, np.int64)
    if prob is not None:
        (W.sample_weighted_par if parallel else W.sample_weighted_serial)(
            indptr, prob, seeds, off, fo, rep, sd, np.int64(widest), positive, out_indptr, eids)
        (K.gather_nbrs_par if parallel else K.gather_nbrs_serial)(indices, eids, nbrs)
        return counts, nbrs, eids
    # Three passes (row spans, positions, gather) rather than one fused loop: each pass
    # is either pure arithmetic or independent loads, which keeps memory busy.
    (K.sample_positions_par if parallel else K.sample_positions_serial)(
        starts, degs, seeds, fo, rep, sd, out_indptr, eids)
    (K.gather_nbrs_par if parallel else K.gather_nbrs_serial)(indices, eids, nbrs)
    return counts, nbrs, eids


def check_exclude(exclude) -> np.ndarray:
    """Excluded edge ids as a sorted, unique int64 array (what :mod:`.exclusion` takes)."""
    exclude = as_ids(exclude, "exclude")
    if exclude.size and int(exclude.min()) < 0:
        raise ValueError(f"excluded edge ids must be >= 0, got {int(exclude.min())}")
    if exclude.size > 1 and not bool(np.all(exclude[1:] > exclude[:-1])):
        exclude = np.unique(exclude)
    return exclude


def sample_labor(indptr: np.ndarray, indices: np.ndarray, seeds, node_offset: int, fanout: int, seed: int,
                 seed2: int = 0, mix: float = -1.0, *, parallel: bool = True,
                 max_edges: int = MAX_SAMPLE_EDGES) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """LABOR-0 sample of the in-edges of ``seeds`` (see :mod:`._labor_kernels`): ``(counts, nbrs, eids)``
    as :func:`sample_neighbors`.

    ``seed`` keys the per-source variates; ``mix`` in [0, 1) blends in those of ``seed2``
    (``batch_dependency``), ``mix = -1``: none.  Each edge into a seed of degree ``d`` is kept with probability
    ``min(1, fanout / d)``, with one shared variate per source node.
    """
    fanout = check_fanout(fanout)
    mix = float(mix)
    if not (0.0 <= mix < 1.0 or mix == -1.0):
        raise ValueError(f"LABOR mix (batch_dependency position) must be -1 or in [0, 1), got {mix}")
    seeds, indptr = _read_only(as_ids(seeds, "seeds")), _read_only(indptr)  # one variant (sample_neighbors)
    check_range(seeds, node_offset, node_offset + indptr.shape[0] - 1, "seeds")
    # a LABOR row reads every edge's source variate, as a weighted row reads every weight
    parallel = _use_parallel(parallel, seeds.shape[0], WEIGHTED_PARALLEL_MIN_SEEDS)
    args = (np.int64(node_offset), np.int64(fanout), np.uint64(int(seed) & MASK64),
            np.uint64(int(seed2) & MASK64), np.float64(mix))
    counts = np.empty(seeds.shape[0], np.int64)
    (L.labor_counts_par if parallel else L.labor_counts_serial)(indptr, indices, seeds, *args, counts)
    out_indptr = np.zeros(seeds.shape[0] + 1, np.int64)
    np.cumsum(counts, out=out_indptr[1:])
    total = int(out_indptr[-1])
    if total > max_edges:
        raise ValueError(f"request would return {total} sampled edges, more than the limit {max_edges}")
    eids = np.empty(total, np.int64)
    (L.labor_positions_par if parallel else L.labor_positions_serial)(indptr, indices, seeds, *args, out_indptr, eids)
    nbrs = np.empty(total, indices.dtype)
    (K.gather_nbrs_par if parallel else K.gather_nbrs_serial)(indices, eids, nbrs)
    return counts, nbrs, eids


def sample_with_edge_data(indptr: np.ndarray, store, seeds, fanout: int, replace: bool, seed: int,
                          prob: np.ndarray | None, edge_data=(), labor=None, parallel: bool = False,
                          exclude: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, dict | None]:
    """What a graph server (and a co-located read) answers a SAMPLE with: ``(counts, nbrs, rows)``,
    ``rows`` = ``{name: store.edge_array(name)[sampled positions]}`` for ``edge_data`` (None when empty).
    ``labor`` = ``(seed2, mix)`` samples by LABOR (:func:`sample_labor`) instead; ``exclude`` (CSC
    positions of ``store``, checked by the caller) are never drawn (uniform sampling only).

    Serial kernels (one request per server thread).  ValueError names an edge array the store lacks.
    """
    arrays = edge_arrays_of(store, edge_data)
    if labor is not None:
        if prob is not None:
            raise ValueError("LABOR with edge weights (prob=) is not supported; use NeighborSampler(prob=)")
        if exclude is not None and len(exclude):
            raise ValueError("LABOR with excluded edges is not supported")
        counts, nbrs, eids = sample_labor(indptr, store.indices, seeds, store.node_offset, fanout, seed,
                                          labor[0], labor[1], parallel=parallel)
    else:
        counts, nbrs, eids = sample_neighbors(indptr, store.indices, seeds, store.node_offset, fanout, replace,
                                              seed, parallel=parallel, prob=prob, exclude=exclude)
    if not edge_data:
        return counts, nbrs, None
    return counts, nbrs, {name: np.take(arr, eids, axis=0) for name, arr in zip(edge_data, arrays)}


def edge_arrays_of(store, names) -> list:
    """The edge arrays ``names`` of ``store`` (before any sampling); ValueError naming one it lacks."""
    arrays = []
    for name in names:
        try:
            arrays.append(store.edge_array(name))
        except KeyError as e:
            raise ValueError(e.args[0]) from None
    return arrays


def rows_in_dst_order(parts: list, names, sorted_indptr: np.ndarray, inv: np.ndarray,
                      out_indptr: np.ndarray) -> dict:
    """``{name: rows}`` of the servers' replies (``parts``, one ``{name: rows}`` each, in sorted-seed
    order) moved to dst order as their edges are (:func:`~bgl.sampler._kernels.permute_segments`)."""
    perm = np.empty(int(sorted_indptr[-1]), np.int64)  # reply position of each output edge
    K.permute_segments(sorted_indptr, np.arange(perm.shape[0], dtype=np.int64), inv, out_indptr, perm)
    return {name: np.take(np.concatenate([p[name] for p in parts]), perm, axis=0) for name in names}


def gather(array: np.ndarray, ids: np.ndarray, node_offset: int, *, parallel: bool = True) -> np.ndarray:
    """Rows ``array[ids - node_offset]`` of a 1-D or 2-D (memmapped) array; ids are checked."""
    ids = as_ids(ids)
    check_range(ids, node_offset, node_offset + array.shape[0])
    out = np.empty((ids.shape[0],) + array.shape[1:], array.dtype)
    off = np.int64(node_offset)
    parallel = _use_parallel(parallel, out.size, PARALLEL_MIN_ELEMENTS)
    if array.ndim == 1:
        K.gather_1d(array, ids, off, out)
    elif parallel:
        K.gather_rows_par(array, ids, off, out)
    else:
        K.gather_rows_serial(array, ids, off, out)
    return out


def gather_into(array: np.ndarray, ids: np.ndarray, node_offset: int, out: np.ndarray, pos: np.ndarray) -> None:
    """``out[pos[i]] = array[ids[i] - node_offset]`` for a 2-D array: one copy, no temporary.

    For a batch whose rows come from several places (co-located part files and
    a cache), each source writes its rows into the batch directly.
    """
    ids, pos = as_ids(ids), as_ids(pos, "pos")
    check_range(ids, node_offset, node_offset + array.shape[0])
    check_range(pos, 0, out.shape[0], "pos")
    if ids.shape != pos.shape or array.ndim != 2 or out.shape[1:] != array.shape[1:] or out.dtype != array.dtype:
        raise ValueError(f"gather_into: {ids.shape[0]} ids, {pos.shape[0]} positions, rows {array.shape[1:]} "
                         f"{array.dtype} into {out.shape[1:]} {out.dtype}")
    K.gather_rows_at(array, ids, np.int64(node_offset), out, pos)


def _as_nbrs(nbrs) -> np.ndarray:
    """Neighbour ids as a contiguous int32/int64 array; int32 stays int32 (the kernels take both)."""
    if isinstance(nbrs, np.ndarray) and nbrs.ndim == 1 and nbrs.dtype in (np.int32, np.int64):
        return np.ascontiguousarray(nbrs)
    return as_ids(nbrs, "nbrs")


def _dup_error(dst_ids: np.ndarray, pos: int) -> ValueError:
    return ValueError(f"seeds must be unique; id {int(dst_ids[pos])} repeats at position {int(pos)}")


def relabel(dst_ids: np.ndarray, nbrs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(src_ids, local nbrs) with ``src_ids[:len(dst_ids)] == dst_ids``; see ``_kernels.relabel``.

    Hash-table version for any id space; :class:`Relabeler` is faster when the
    global id space is small enough for a dense marker array.
    Raises ValueError if ``dst_ids`` repeats an id (DGL blocks need unique dst nodes).
    """
    dst_ids = as_ids(dst_ids, "dst_ids")
    # Serial on purpose: a hash-partitioned parallel version we tried cost 3-8x the CPU
    # time (each thread rescans every edge) and the serial pass is ~4 ms for 200k edges.
    src, local, dup = K.relabel(dst_ids, _as_nbrs(nbrs))
    if dup >= 0:
        raise _dup_error(dst_ids, dup)
    return src, local


# Largest global id space that gets a dense marker array (8 bytes per node, <= 256 MiB).
# np.zeros maps it lazily, so only pages of ids that are actually sampled cost memory.
DENSE_RELABEL_MAX_NODES = 1 << 25
_MAX_STAMP = (1 << 31) - 1


class Relabeler:
    """Reusable relabel for one global id space ``[0, num_nodes)``; same results as :func:`relabel`.

    Keeps an int64 marker array of ``num_nodes`` entries across calls (made at the first one: each
    loader's fetch stage opens a sampler that never relabels, and 8 MiB at 1M nodes cost a 0.3 ms memset),
    tagged with a per-call stamp, so relabelling is one array load per edge with no hashing and nothing to
    clear.  Falls back to :func:`relabel` (hash table) when the id space exceeds ``max_nodes``, when the
    output could not fit the 32-bit local-id field, or while another thread holds the markers.

    Parameters
    ----------
    num_nodes : size of the global id space; ids outside it raise ValueError
    max_nodes : largest ``num_nodes`` for which the dense array is used
    """

    def __init__(self, num_nodes: int, max_nodes: int = DENSE_RELABEL_MAX_NODES):
        self.num_nodes = int(num_nodes)
        self.dense = 0 < self.num_nodes <= max_nodes
        self._mark: np.ndarray | None = None  # made at the first dense call
        self._stamp = 0
        self._lock = threading.Lock()

    def __call__(self, dst_ids, nbrs) -> tuple[np.ndarray, np.ndarray]:
        dst_ids = as_ids(dst_ids, "dst_ids")
        nbrs = _as_nbrs(nbrs)
        if not self.dense or dst_ids.shape[0] + nbrs.shape[0] >= K.MAX_DENSE_LOCAL \
                or not self._lock.acquire(blocking=False):
            check_range(dst_ids, 0, self.num_nodes, "dst_ids")
            check_range(nbrs, 0, self.num_nodes, "nbrs")
            return relabel(dst_ids, nbrs)
        try:
            if self._mark is None:
                self._mark = np.zeros(self.num_nodes, np.int64)
            self._stamp += 1
            if self._stamp > _MAX_STAMP:  # stamps wrapped: forget every old tag once
                self._mark[:] = 0
                self._stamp = 1
            src, local, status = K.relabel_dense(dst_ids, nbrs, self._mark, np.int64(self._stamp))
        finally:
            self._lock.release()
        if status >= 0:
            raise _dup_error(dst_ids, status)
        if status < -1:
            j = int(-2 - status)
            name, arr = ("dst_ids", dst_ids) if j < dst_ids.shape[0] else ("nbrs", nbrs)
            pos = j if j < dst_ids.shape[0] else j - dst_ids.shape[0]
            raise ValueError(f"{name}[{pos}] = {int(arr[pos])} is outside the id range [0, {self.num_nodes})")
        return src, local


class EdgeWeights:
    """The checked weight arrays of one graph, by edge-array name, each checked once (one pass).

    ``graph`` is anything with ``edge_array(name)`` (:class:`~bgl.store.GraphStore`,
    :class:`~bgl.loader.graph_arrays.GraphArrays`).  Costs nothing per edge beyond the
    arrays themselves (memory-mapped stores stay mapped; a bool mask is viewed, not copied).
    """

    def __init__(self, graph):
        self.graph = graph
        self._checked: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    def __call__(self, name: str | None) -> np.ndarray | None:
        """The weights named ``name`` (None -> None); KeyError / ValueError name a missing or bad array."""
        if name is None:
            return None
        prob = self._checked.get(name)
        if prob is None:
            if not isinstance(name, str):
                raise ValueError(f"edge weights must be named by a string (an edge array), got {name!r}")
            # a graph that keeps its verdicts (a DGLGraph's arrays: bgl/loader/graph_derivations.py)
            checked = getattr(self.graph, "checked_weights", None)
            try:
                values = self.graph.edge_array(name) if checked is None else checked(name)
            except KeyError as e:
                raise ValueError(e.args[0]) from None
            if checked is None:
                values = check_weights(values, self.graph.num_edges, name)
            prob = values
            with self._lock:
                self._checked[name] = prob
        return prob
