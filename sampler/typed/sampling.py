"""Per-relation neighbour sampling over a typed store's fused CSC (see :mod:`bgl.schema`).

DGL's heterogeneous ``NeighborSampler([{etype: n, ...}, ...])`` draws, for each
destination node and each relation into its type, up to ``n`` in-edges of that
relation.  Here a layer's fanouts are one int per relation id (``-1`` all, ``0``
none); each destination row gets the span of every relation into its type
(:func:`~bgl.sampler.typed._kernels.typed_spans`), the homogeneous sampler's
per-row draw runs over those spans (:func:`~bgl.sampler.typed._kernels.typed_positions`)
and one gather pass reads the neighbours.

Randomness: relation ``r`` of a layer draws from the layer seed mixed with
``r`` (relation 0 uses the layer seed itself), so a sample is a pure function of
(seed, global id, relation) -- the same on a store and on graph servers -- and a
one-relation typed store samples exactly as the homogeneous store does.  The
"global id" is the node's stream key: its id in the store, and in a typed partition's
part its ORIGINAL id (``key_ids.npy``, :func:`stream_keys`), so a typed partition
samples exactly the store's edges for any fanout (rows keep their order through
partitioning, and draws are positions in the row).

Weights (``prob``: one edge array over the fused CSC, a bool mask as its uint8 view): each
relation's span draws by weight as an untyped row does
(:func:`~bgl.sampler._weighted_kernels.weighted_span`, Efraimidis-Spirakis keys), from the same
per-relation stream, so a weighted sample is equally a pure function of (seed, stream key,
relation, weights); a span takes ``min(fanout, its positive-weight edges)`` and never an edge
of weight 0 (DGL's ``sample_neighbors(g, seeds, {etype: n}, prob=...)``).

LABOR-0 (DGL's ``LaborSampler`` on a heterograph; ``labor`` = ``(seed2, mix)``): each relation's
span of a row keeps edge ``t -> s`` iff the source's variate ``r_t`` (:mod:`._labor_kernels`,
keyed by the layer seed and ``t``'s global id, the same for every relation) is at most
``fanout_r / deg``: each edge kept with the uniform draw's probability, and rows sharing a source,
through any relation, keep it together.  Importance sampling (LABOR-i) and LABOR with ``prob`` solve one
problem per relation over the layer's in-edges, in :func:`bgl.sampler.multilayer._typed_labor_importance_layer`.

Output rows list each destination's sampled edges grouped by relation, ascending,
as the store does; ``etypes`` gives each sampled edge's relation id.

Why the passes are shaped so (a link-prediction batch of the power-law recommendation graph draws
~240k edges of a 19M-edge CSC): every pass over the sampled edges that reads a graph-sized array
waits on a cache miss per edge, so each array is read in one pass: a DGLGraph's own edge ids come
in the neighbours' gather (``edge_ids=``, :func:`~bgl.sampler.typed._kernels.gather_nbrs_ids`), not in
a second gather over the positions; the rows' ``indptr`` bounds are loaded in a tight loop of their
own; excluded seed edges are found through a bucket index (:func:`bucket_shift`), not one
mispredicting binary search per row.  The random draw stays a pass without graph reads, apart from
the gathers (see :func:`~bgl.sampler._kernels.gather_nbrs_serial`).
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from .. import _kernels as K
from .. import ops
from ..edge_ids import ids_at
from ._kernels import (exclude_from_spans, exclusion_buckets, gather_nbrs_ids, labor_span_counts,
                       labor_span_positions, typed_positions, typed_spans, weighted_span_counts,
                       weighted_span_positions)

MASK64 = (1 << 64) - 1
_NO_EDGES = ops._read_only(np.empty(0, np.int64))  # no excluded positions: the variant a request's uses
_NO_BUCKETS = np.zeros(1, np.int64)  # their (never read) index, typed as exclusion_buckets' own


def relation_seed(layer_seed: int, rel: int) -> int:
    """The stream seed of relation ``rel`` in a layer (relation 0: the layer seed, as untyped)."""
    return int(layer_seed) if rel == 0 else ops.splitmix64((int(layer_seed) ^ (0x9E3779B97F4A7C15 * rel)) & MASK64)


def relation_fanouts(layer, canonical_etypes: Sequence[tuple[str, str, str]]) -> np.ndarray:
    """int64 [R] fanouts of one layer from an int (every relation) or a dict naming EVERY relation.

    Dict keys may be canonical ``(src, rel, dst)`` tuples or relation names that are unique.
    As DGL: a dict must give every edge type a fanout (0 samples none, -1 all).
    """
    num_rel = len(canonical_etypes)
    if not isinstance(layer, Mapping):
        return np.full(num_rel, ops.check_fanout(layer), np.int64)
    out = np.full(num_rel, -2, np.int64)
    names = [c[1] for c in canonical_etypes]
    for key, value in layer.items():
        if isinstance(key, (tuple, list)) and len(key) == 3 and tuple(key) in canonical_etypes:
            r = canonical_etypes.index(tuple(key))
        elif isinstance(key, str) and names.count(key) == 1:
            r = names.index(key)
        else:
            raise ValueError(f"fanout names edge type {key!r}, which the graph does not have (or names "
                             f"ambiguously); its edge types are {list(canonical_etypes)}")
        out[r] = ops.check_fanout(value)
    missing = [canonical_etypes[r] for r in np.flatnonzero(out == -2)]
    if missing:
        raise ValueError(f"a fanout dict must give every edge type a fanout (as DGL requires); missing {missing}")
    return out


def sample_typed_layer(indptr: np.ndarray, indices: np.ndarray, etype: np.ndarray, dst: np.ndarray,
                       node_offset: int, fanouts: np.ndarray, replace: bool, layer_seed: int,
                       dst_type_of_rel: np.ndarray, type_offsets: np.ndarray,
                       max_edges: int = ops.MAX_SAMPLE_EDGES, keys: np.ndarray | None = None,
                       exclude: np.ndarray | None = None, prob: np.ndarray | None = None,
                       labor: tuple[int, float] | None = None,
                       edge_ids: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One typed layer for destination global ids ``dst`` (int64 [m], owned by this CSC slice).

    ``type_offsets`` : int64 [T + 1] global id where each node type of this slice starts (a part
    store's own type offsets plus its ``node_offset``); ValueError when the sample would hold more
    than ``max_edges`` edges; ``keys`` : int64 [rows of the slice], each row's stream key (None: its
    global id); ``exclude`` : sorted unique int64 CSC positions (of this slice) never drawn, each
    relation drawing uniformly among its remaining edges (link prediction's seed edges); ``prob``:
    [e] weights of the slice's edges (CSC order, checked by :func:`~bgl.sampler.ops.check_weights`),
    each relation drawing proportionally to them among its positive-weight edges (DGL's ``prob=`` /
    ``mask=`` on a heterograph), as an untyped weighted row draws; ``labor`` = ``(seed2, mix)``: LABOR-0
    instead (each relation's span keeps edges by their sources' variates under ``layer_seed``, one
    variate per source node shared by every relation, as the untyped LABOR kernels keep a row's);
    ``edge_ids``: [e] the graph's own id of each CSC position (a DGLGraph's), returned instead of the
    positions, gathered in the neighbours' pass.

    Returns
    -------
    counts : int64 [m]; nbrs : global ids [sum]; eids : int64 [sum] CSC positions (or their ``edge_ids``);
    etypes : int64 [sum] relation ids -- each row's edges grouped by relation, ascending
    """
    m, num_rel = dst.shape[0], fanouts.shape[0]
    dst_type = np.searchsorted(type_offsets, dst, side="right") - 1
    starts = np.empty((m, num_rel), np.int64)
    degs = np.empty((m, num_rel), np.int64)
    counts_rel = np.empty((m, num_rel), np.int64)
    counts = np.empty(m, np.int64)
    typed_spans(indptr, etype, dst, np.int64(node_offset), dst_type, np.asarray(dst_type_of_rel, np.int64),
                fanouts, bool(replace), starts, degs, counts_rel, counts)
    stream = dst if keys is None else np.ascontiguousarray(keys[dst - node_offset], np.int64)
    rel_seeds = np.array([relation_seed(layer_seed, r) & MASK64 for r in range(num_rel)], np.uint64)
    if labor is not None:
        return _labor_layer(indices, starts, degs, counts_rel, counts, fanouts, layer_seed, labor, max_edges,
                            prob, exclude, edge_ids)
    if prob is not None:
        return _weighted_layer(indices, starts, degs, counts_rel, counts, prob, stream, fanouts, replace,
                               rel_seeds, max_edges, exclude, edge_ids)
    nexcl = np.zeros((m, num_rel), np.int64)  # excluded edges per span (8 B per row and relation)
    if exclude is not None and exclude.shape[0]:
        shift = np.int64(bucket_shift(exclude))
        first = exclusion_buckets(exclude, shift)
        exclude_from_spans(starts, degs, counts_rel, counts, fanouts, bool(replace), exclude, first, shift, nexcl)
    else:
        exclude, first, shift = _NO_EDGES, _NO_BUCKETS, np.int64(0)
    return _layer_output(indices, counts, max_edges, lambda *out: typed_positions(
        starts, degs, counts_rel, nexcl, stream, fanouts, bool(replace), rel_seeds, exclude, first, shift, *out),
        edge_ids)


def bucket_shift(exclude: np.ndarray) -> int:
    """log2 of the positions per bucket of :func:`~bgl.sampler.typed._kernels.exclusion_buckets`: about
    8 buckets per excluded position (8 B each: 128 KiB for 2048 seed edges and reverses, in L2)."""
    span = int(exclude[-1]) + 1
    return max(0, (span // (8 * exclude.shape[0])).bit_length() - 1)


def _layer_output(indices, counts: np.ndarray, max_edges: int, fill, edge_ids=None) -> tuple:
    """``(counts, nbrs, eids, etypes)`` of a layer of ``counts`` edges per row: ``fill(out_indptr,
    eids, etypes)`` (a span kernel) writes each row's positions and relations, one gather the neighbours
    (and, given ``edge_ids``, the edge ids at those positions in the same pass, in place of them)."""
    indptr_out, total = ops._sample_offsets(counts, max_edges)
    all_eids = np.empty(total, np.int64)
    etypes = np.empty(total, np.int64)
    fill(indptr_out, all_eids, etypes)
    nbrs = np.empty(total, indices.dtype)
    if edge_ids is None:
        K.gather_nbrs_serial(indices, all_eids, nbrs)
    else:
        gather_nbrs_ids(indices, edge_ids, all_eids, nbrs)
    return counts, nbrs, all_eids, etypes


def _weighted_layer(indices, starts, degs, counts_rel, counts, prob, stream, fanouts, replace, rel_seeds,
                    max_edges, exclude, edge_ids):
    """:func:`sample_typed_layer`'s weighted draw over the spans :func:`typed_spans` found."""
    if exclude is not None and exclude.shape[0]:
        raise ValueError("weighted sampling with excluded edges is not supported")  # as untyped (ops.py)
    if prob.shape[0] != indices.shape[0]:
        raise ValueError(f"prob has {prob.shape[0]} weights for {indices.shape[0]} edges")
    positive = np.empty_like(starts)
    widest = weighted_span_counts(starts, degs, counts_rel, counts, prob, fanouts, bool(replace), positive)
    return _layer_output(indices, counts, max_edges, lambda *out: weighted_span_positions(
        starts, degs, counts_rel, positive, prob, stream, fanouts, bool(replace), rel_seeds, np.int64(widest), *out),
        edge_ids)


def _labor_layer(indices, starts, degs, counts_rel, counts, fanouts, layer_seed, labor, max_edges, prob, exclude,
                 edge_ids):
    """:func:`sample_typed_layer`'s LABOR-0 keep over the spans :func:`typed_spans` found."""
    if prob is not None:  # as untyped (ops.sample_with_edge_data)
        raise ValueError("LABOR with edge weights (prob=) is not supported; use NeighborSampler(prob=)")
    if exclude is not None and exclude.shape[0]:
        raise ValueError("LABOR with excluded edges is not supported")
    seed2, mix = int(labor[0]), float(labor[1])
    if not (0.0 <= mix < 1.0 or mix == -1.0):
        raise ValueError(f"LABOR mix (batch_dependency position) must be -1 or in [0, 1), got {mix}")
    args = (np.uint64(int(layer_seed) & MASK64), np.uint64(seed2 & MASK64), np.float64(mix))
    labor_span_counts(starts, degs, counts_rel, counts, indices, fanouts, *args)
    return _layer_output(indices, counts, max_edges,
                         lambda *out: labor_span_positions(starts, degs, counts_rel, indices, fanouts, *args, *out),
                         edge_ids)


KEY_IDS = "key_ids"  # a typed part store's int64 [num_nodes]: each owned node's original id


def stream_keys(store) -> np.ndarray | None:
    """The stream key of each row of a typed (part) store: its ``key_ids.npy`` memmap when the
    schema says it has one (8 bytes per node; partitions write it), else None (keys = global ids)."""
    meta = getattr(store, "meta", None)
    if meta is None or not (meta.schema or {}).get(KEY_IDS):
        return None
    from bgl.errors import StoreFormatError

    path = store.path / f"{KEY_IDS}.npy"
    try:
        keys = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError) as e:
        raise StoreFormatError(f"{path}: missing or unreadable: {e}") from None
    if keys.shape != (store.num_nodes,) or keys.dtype != np.int64:
        raise StoreFormatError(f"{path}: expected int64 [{store.num_nodes}], got {keys.dtype} {list(keys.shape)}")
    return keys


def sample_typed_store(store, indptr: np.ndarray, dst: np.ndarray, fanouts: np.ndarray, replace: bool,
                       seed: int, keys: np.ndarray | None = None, exclude: np.ndarray | None = None,
                       prob: np.ndarray | None = None, edge_data=(), labor=None, edge_ids=None) -> tuple:
    """:func:`sample_typed_layer` over a (part) store's own fused CSC, after checking that ``dst``
    are ids it owns and ``fanouts`` (int64 [R], one per relation of its schema) are valid fanouts:
    what a graph server, a co-located read and :class:`~bgl.sampler.local.LocalSampler` all run
    (``keys``: the store's :func:`stream_keys`; ``prob``: its checked weights, :class:`~bgl.sampler.ops.EdgeWeights`;
    ``labor``: ``(seed2, mix)`` for LABOR-0; ``edge_ids``: the graph's own id of each CSC position,
    returned in place of the positions).

    Returns :func:`sample_typed_layer`'s four arrays, and when ``edge_data`` names edge arrays a fifth,
    ``{name: rows of the sampled edges}`` (ValueError naming one the store lacks, before sampling)."""
    etype = getattr(store, "etype", None)
    if etype is None:
        raise ValueError(f"{store.path} has no edge types; sample it with per-layer int fanouts")
    schema = store.schema
    fanouts = ops.check_relation_fanouts(fanouts, schema.canonical_etypes)
    dst = ops.as_ids(dst, "seeds")
    ops.check_range(dst, store.node_offset, store.node_offset + store.num_nodes, "seeds")
    if exclude is not None:  # read-only: one kernel variant whichever way the ids came (kernel_warmup)
        exclude = ops._read_only(np.ascontiguousarray(ops.check_exclude(exclude), np.int64))
    arrays = ops.edge_arrays_of(store, edge_data)
    out = sample_typed_layer(indptr, store.indices, etype, dst, store.node_offset, fanouts, replace, seed,
                             schema.relation_ends()[1], schema.offsets + store.node_offset, keys=keys,
                             exclude=exclude, prob=prob, labor=labor, edge_ids=None if edge_data else edge_ids)
    if not edge_data:
        return out
    rows = {name: np.take(a, out[2], axis=0) for name, a in zip(edge_data, arrays)}  # rows at the positions
    if edge_ids is not None:
        out = (out[0], out[1], ids_at(edge_ids, out[2]), out[3])
    return (*out, rows)


def typed_rows(store, gids: np.ndarray, ntype: int, label: bool) -> np.ndarray:
    """Feature (or label) rows of global ids ``gids`` of node type index ``ntype`` of a (part) store,
    which must own them; ValueError naming the type otherwise (a graph server's typed FEATURES)."""
    schema = store.schema
    if not 0 <= ntype < len(schema.node_types):
        raise ValueError(f"node type index {ntype} outside [0, {len(schema.node_types)}) of {schema.ntypes}")
    nt = schema.node_types[ntype]
    from bgl.codec.typed_rows import type_feat_rows  # a type's encoded rows when it has a codec

    array = store.type_label.get(nt.name) if label else type_feat_rows(store, nt.name)
    if array is None:
        raise ValueError(f"node type {nt.name!r} of {store.meta.name or store.path} has no "
                         f"{'labels' if label else 'features'}")
    lo = store.node_offset + nt.offset
    gids = ops.as_ids(gids)
    ops.check_range(gids, lo, lo + nt.count, f"ids of node type {nt.name!r}")
    return np.take(np.asarray(array), gids - lo, axis=0)  # any dtype (numba has no float16), as LocalSampler
