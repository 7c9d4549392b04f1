"""Temporal sampling of a typed graph: per relation fanouts, no edge newer than its subgraph's seed time.

A typed store's rows hold their in-edges grouped by relation; each (row, relation) run is sampled as
an untyped row is (:mod:`.sampling`): ``min(fanouts[r], eligible)`` of the run's edges with key <= the
destination's time, uniformly or the latest (:mod:`._typed_temporal_kernels`).  The time order is
per run: the run boundaries (8 B per run, one O(e) pass) stand in for ``indptr`` when the order is
built (8 B per edge, O(e log d) once per store and time array, in memory; with node times the
per-edge key costs 8 B per edge more), so a layer costs O(R log d + fanout) per destination.

Layers are functions of (destinations, their times, fanouts, strategy, seed), like the untyped
ones, and return the relation of every edge besides: ``(counts, nbrs, eids, edge_time, etypes)``
with each destination's edges grouped by relation, ascending, as the typed block sampler's.
"""
from __future__ import annotations

import threading

import numpy as np

from .. import _kernels as K
from . import _typed_kernels as TTK
from .. import ops
from ..edge_ids import ids_at
from .sampling import (DEFAULT_TIME_NAME, TimeIndex, build_index, check_strategy, check_times, checked_seeds,
                       source_times)
from ..typed.sampling import relation_seed


class TypedTemporalLayer:
    """One temporal layer over a typed store (whole graph; global ids).

    ``layer(dst, times, fanouts, strategy, seed, time_name)`` with ``fanouts`` int64 [R] (one per
    relation of the store's schema, -1 = every eligible edge, 0 = none) ->
    ``(counts int64 [m], nbrs [e], eids int64 [e], edge_time int64 [e], etypes int64 [e])``, ``eids`` the
    store's CSC positions, or each relation's own edge ids when the store carries ``edge_ids`` (a
    heterogeneous DGLGraph's arrays), as :meth:`~bgl.sampler.local.LocalSampler.sample_typed_layer`.

    Parameters
    ----------
    store : a typed GraphStore (``etype``, ``schema``), or anything with its read API
    node_time : optional int64 [num_nodes] node times over global ids (a source is eligible at ``t``
        when its time is <= ``t``); or a call names the store's node array (``node_time_name=``)
    parallel : allow the numba-parallel order build
    """

    def __init__(self, store, node_time=None, parallel: bool = True):
        from ..typed.sampling import stream_keys

        etype = getattr(store, "etype", None)
        if etype is None:
            raise ValueError(f"{getattr(store, 'path', 'graph')} has no edge types; sample it with TemporalLayer")
        self.store = store
        self.schema = store.schema
        self._indptr = np.asarray(store.indptr)
        self._indices = store.indices
        self._etype = np.asarray(etype)
        edge_ids = getattr(store, "edge_ids", None)
        self._edge_ids = None if edge_ids is None else np.asarray(edge_ids)
        self.node_time = None if node_time is None else check_times(node_time, int(store.global_num_nodes),
                                                                     "node times")
        self.parallel = parallel
        self._runs = None
        self._index: dict = {}
        self._lock = threading.Lock()
        _, self._dst_type_of_rel = self.schema.relation_ends()
        self._type_offsets = np.asarray(self.schema.offsets, np.int64) + int(store.node_offset)
        self._keys = stream_keys(store)  # a typed part's original ids: draws equal the whole store's (typed.py)

    def runs(self) -> np.ndarray:
        """int64 [runs + 1]: where each (row, relation) run starts, then ``num_edges``."""
        if self._runs is None:
            out = np.empty(self._indices.shape[0] + 1, np.int64)
            self._runs = out[:TTK.relation_runs(self._indptr, self._etype, out)].copy()
        return self._runs

    def index(self, time_name: str | None, node_time_name: str | None = None) -> TimeIndex:
        """The per-run time index of edge array ``time_name`` (None: node times only) and, with
        ``node_time_name``, the store's node times of that name (:func:`.temporal.source_times`), built on
        first use."""
        with self._lock:
            if (time_name, node_time_name) not in self._index:
                source = None if node_time_name is None else source_times(self.store, node_time_name, self.node_time)
                edge_time = None
                if time_name is not None:
                    try:
                        edge_time = check_times(self.store.edge_array(time_name), int(self.store.num_edges),
                                                f"edge time array {time_name!r}")
                    except KeyError as e:
                        raise ValueError(e.args[0]) from None
                elif self.node_time is None and source is None:
                    raise ValueError("temporal sampling needs edge times (time_name) or node times")
                self._index[time_name, node_time_name] = build_index(self.runs(), np.asarray(self._indices),
                                                                     edge_time, self.node_time, self.parallel, source)
            return self._index[time_name, node_time_name]

    def __call__(self, dst, times, fanouts, strategy: str, seed: int, time_name: str | None = DEFAULT_TIME_NAME,
                 node_time_name: str | None = None):
        from ..typed._kernels import typed_spans

        code = check_strategy(strategy)
        fanouts = ops.check_relation_fanouts(fanouts, self.schema.canonical_etypes)
        num_rel = fanouts.shape[0]
        dst, times, off, idx = checked_seeds(self, dst, times, time_name, node_time_name)
        m = dst.shape[0]
        starts, degs, active = (np.zeros((m, num_rel), np.int64) for _ in range(3))
        typed_spans(self._indptr, self._etype, dst, np.int64(off),
                    np.searchsorted(self._type_offsets, dst, side="right") - 1,
                    np.asarray(self._dst_type_of_rel, np.int64), fanouts, False, starts, degs, active,
                    np.empty(m, np.int64))
        flat_starts, elig, flat_degs, counts = (np.empty(m * num_rel, np.int64) for _ in range(4))
        row_counts = np.empty(m, np.int64)
        TTK.typed_temporal_counts(starts, degs, active, idx.key, idx.order, times, fanouts, flat_starts, elig,
                                  flat_degs, counts, row_counts)
        out_indptr, total = ops._sample_offsets(counts, ops.MAX_SAMPLE_EDGES)
        eids, etypes = np.empty(total, np.int64), np.empty(total, np.int64)
        rel_seeds = np.array([relation_seed(seed, r) & ops.MASK64 for r in range(num_rel)], np.uint64)
        stream = dst if self._keys is None else np.ascontiguousarray(self._keys[dst - off], np.int64)
        TTK.typed_temporal_positions(flat_starts, elig, flat_degs, idx.order, np.repeat(stream, num_rel), fanouts,
                                     np.int64(code), rel_seeds, out_indptr, eids, etypes)
        nbrs = np.empty(total, self._indices.dtype)
        K.gather_nbrs_serial(self._indices, eids, nbrs)
        etime = idx.key[eids]
        if self._edge_ids is not None:  # a heterograph's arrays: each relation's own edge ids, as DGL's
            eids = ids_at(self._edge_ids, eids)
        return row_counts, nbrs, eids, etime, etypes
