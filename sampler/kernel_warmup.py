"""Load every request kind's numba kernels in a graph server before it reports ready.

The first request of a new kind loads (or, on a cold cache such as a fresh clone's, compiles:
up to a minute on a loaded 2-core box) its kernels: time a client waiting on its reply deadline
must not pay.  So a server answers one request of each kind to itself first: a plain, a LABOR
and an edge-excluding SAMPLE, a weighted one per 1-D edge array, a typed one (plain,
edge-excluding, LABOR and weighted per 1-D edge array) on a typed store, a temporal one of each
strategy on a store with edge times (a ``timestamp`` array, else its first int64 one:
:func:`_time_names`; this also builds that array's time order, :mod:`.temporal.sampling`, before the first
request) and a weighted temporal one per dtype of edge weights on an untyped store,
and the FEATURES/label reads.  numba compiles a variant per dtype and writeable flag: the
protocol's parser hands every request's ids over as read-only int64 (whatever the frame's
dtype and alignment), so the seeds here are read-only int64 too.
"""
from __future__ import annotations

import numpy as np

from . import ops
from .ops import _read_only
from .temporal.sampling import DEFAULT_TIME_NAME, ORDER_SUFFIX


def load_request_kernels(store, indptr: np.ndarray, num_relations: int | None, keys=None, temporal=None) -> None:
    """Run each kind of request the server at ``store`` (CSC ``indptr``) answers, on one seed;
    ``temporal``: the server's temporal layer (:func:`~bgl.sampler.temporal.frames.layer_for`)."""
    if store.num_nodes == 0:
        return
    lo = store.node_offset
    seeds, exclude = _read_only(np.array([lo], np.int64)), _read_only(np.array([0], np.int64))
    for array in (store.feat_rows, store.label):
        if array is not None:
            ops.gather(array, seeds, lo, parallel=False)
    if store.num_edges == 0:
        return
    ops.sample_neighbors(indptr, store.indices, seeds, lo, 2, False, 0, parallel=False)
    ops.sample_labor(indptr, store.indices, seeds, lo, 2, 0, 0, -1.0, parallel=False)
    ops.sample_neighbors(indptr, store.indices, seeds, lo, 2, False, 0, parallel=False, exclude=exclude)
    _load_weighted_kernels(store, seeds)
    # edge and/or node times: the kernels loaded and the time orders built before ready
    edge_time, node_time = _time_names(store)
    names = [(edge_time, None)] if edge_time is not None else []
    if node_time is not None:
        names.append((edge_time, node_time))
    for time_name, node_time_name in names if temporal is not None else ():
        times = _read_only(np.zeros(1, np.int64))
        try:
            fanout = 2 if num_relations is None else np.full(num_relations, 2, np.int64)
            for strategy in ("uniform", "last"):
                temporal(seeds, times, fanout, strategy, 0, time_name=time_name, node_time_name=node_time_name)
            if num_relations is None:  # weighted temporal draws: one edge array of weights per dtype
                for name in _weight_names(store):
                    temporal(seeds, times, fanout, "uniform", 0, time_name=time_name, node_time_name=node_time_name,
                             prob_name=name)
        except (TypeError, ValueError):
            pass  # not int64 times: a request naming it is refused with the reason
    if num_relations is not None:
        from .typed.sampling import sample_typed_store

        sample_typed_store(store, indptr, seeds, np.full(num_relations, 2, np.int64), False, 0, keys)
        sample_typed_store(store, indptr, seeds, np.full(num_relations, 2, np.int64), False, 0, keys, exclude=exclude)
        sample_typed_store(store, indptr, seeds, np.full(num_relations, 2, np.int64), False, 0, keys, labor=(0, -1.0))
        for prob in _weights_of(store):
            _load_typed_weighted_kernels(store, seeds, num_relations, keys, prob)


def _load_weighted_kernels(store, seeds: np.ndarray) -> None:
    """The weighted draw's kernels for each 1-D edge array's dtype, on a one-edge CSC cut from the
    store's own arrays (their dtypes and flags, without the O(edges) check a real request makes)."""
    indptr = _read_only(np.array([0, 1], np.int64))
    for prob in _weights_of(store):
        ops.sample_neighbors(indptr, store.indices[:1], seeds, store.node_offset, 2, False, 0, parallel=False,
                             prob=prob)


def _time_names(store) -> tuple:
    """``(edge time name, node time name)`` a temporal request will most likely name, None where the store
    has none: ``timestamp`` where it is there, else the first 1-D int64 array of its kind (a part's
    per-edge copy of its sources' node arrays, for node times).  The kernels are one per dtype whatever
    the name, so warming these serves a custom time name too, where a first request would otherwise
    compile for longer than a client waits for a reply; the edge array's time order is built now."""
    def pick(arrays: dict, is_int64_1d) -> str | None:
        if DEFAULT_TIME_NAME in arrays:
            return DEFAULT_TIME_NAME
        return next((name for name, a in arrays.items() if not name.endswith(ORDER_SUFFIX) and is_int64_1d(a)),
                    None)

    edge = pick(store.meta.edata, lambda spec: len(spec.get("shape", ())) == 1 and spec.get("dtype") == "int64")
    node = pick(getattr(store, "ndata_source", None) or {},
                lambda a: getattr(a, "ndim", 0) == 1 and getattr(a, "dtype", None) == np.int64)
    return edge, node


def _weight_names(store):
    """The first 1-D edge array of each dtype usable as weights (times and time orders left out), by name:
    what a weighted temporal request may name (the layer checks and keeps it once, one O(e) pass)."""
    seen = set()
    for name, spec in store.meta.edata.items():
        dtype = spec.get("dtype")
        if len(spec.get("shape", ())) != 1 or dtype in seen or name == DEFAULT_TIME_NAME or name.endswith(".order"):
            continue
        try:
            ops.check_weights(store.edge_array(name)[:1], 1, name)
        except ValueError:
            continue
        seen.add(dtype)
        yield name


def _weights_of(store):
    """The first weight of each 1-D edge array usable as weights (its dtype and flags), checked."""
    for name in store.meta.edata:
        values = store.edge_array(name)
        if values.ndim != 1:
            continue
        try:
            yield ops.check_weights(values[:1], 1, name)
        except ValueError:
            continue  # not weights: a request naming it is refused with the reason


def _load_typed_weighted_kernels(store, seeds: np.ndarray, num_relations: int, keys, prob: np.ndarray) -> None:
    """The typed weighted draw's kernels on a one-edge CSC cut from the typed store's own arrays."""
    from .typed.sampling import sample_typed_layer

    indptr = _read_only(np.array([0, 1], np.int64))
    schema = store.schema
    for replace in (False, True):
        sample_typed_layer(indptr, store.indices[:1], store.etype[:1], seeds, store.node_offset,
                           np.full(num_relations, 2, np.int64), replace, 0, schema.relation_ends()[1],
                           schema.offsets + store.node_offset, keys=None if keys is None else keys[:1], prob=prob)
