"""A user's callables in link prediction: DGL's callable negative sampler and callable ``exclude``.

DGL's contracts, kept: a negative sampler is called as ``sampler(g, {etype: eids})`` with a batch's
seed edges and returns ``{etype: (src, dst)}`` (type-local ids of the edge type's end types; a
``(src, dst)`` pair when the graph has one edge type); a callable ``exclude`` is called with the same
``{etype: eids}`` and returns the edges to leave out of the batch's blocks, ``{etype: eids}``.  The
keys bgl passes are canonical edge types, those of the batch's seed edges in relation order; the ids
are the loader's edge ids (a heterogeneous DGLGraph's per-relation ids, a typed store's CSC
positions, a typed partition's edge ids).

A graph without edge types is the one-type case (``typed=False``, the schema
:meth:`~bgl.schema.GraphSchema.homogeneous`), called as DGL calls them on a homogeneous graph: with
the batch's seed edge ids as one tensor (``sampler(g, eids)``, ``exclude(eids)``), returning a
``(src, dst)`` pair or an id tensor (a dict keyed by the one edge type is taken too); the ids are the
untyped loader's (a DGLGraph's own, a store's CSC positions, a partition's edge ids), excluded as they are.

Both run in the sample stage (a stage process with ``pipeline="processes"``), once per batch.  A
callable sampler draws under ``torch``'s RNG reseeded from the batch's seed inside
``torch.random.fork_rng``, so its negatives are a function of the batch (the same in every pipeline
mode and reproducible under ``torch.manual_seed``) and the caller's RNG state is left alone; that needs
no other thread drawing meanwhile, so such a loader never runs it in a thread beside the training loop
(:func:`bgl.loader.loader_options.choose_pipeline`).  Each
callable is also called once when the loader is built, on the first seed edge of each edge type, so
that an output of the wrong kind is named before any process starts; every batch's output is checked
again (types, shapes, edge types, id ranges), each problem one error line.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional

import numpy as np
import torch

from ...sampler.ops import MASK64


def picklable(fn, what: str):
    """``fn`` if it pickles (``pipeline="processes"`` sends it to the sample stage's process), else a
    TypeError saying so before the process starts."""
    import pickle

    try:
        pickle.dumps(fn)
    except Exception as e:  # noqa: BLE001 -- pickle raises many kinds (AttributeError, PicklingError, TypeError)
        raise TypeError(f"pipeline='processes' runs the {what} {fn!r} in the sample stage's process, and it does not "
                        f"pickle ({e}); define it at module level (functools.partial binds arguments), or use "
                        "pipeline='thread'") from None
    return fn


def seed_edges_arg(schema, eids_by_rel: Mapping[int, np.ndarray], typed: bool = True):
    """DGL's ``{canonical etype: int64 tensor of edge ids}`` of a batch, relations ascending; on a graph
    without edge types (``typed=False``) the one tensor of ids, as DGL passes them there."""
    if not typed:
        return torch.from_numpy(np.ascontiguousarray(eids_by_rel.get(0, _NO_IDS), np.int64))
    return {schema.canonical_etypes[r]: torch.from_numpy(np.ascontiguousarray(ids, np.int64))
            for r, ids in sorted(eids_by_rel.items())}


_NO_IDS = np.empty(0, np.int64)


def _label(schema, r: int, typed: bool) -> str:
    """How an error names relation ``r``'s part of an output (nothing on a graph without edge types)."""
    return f" of {schema.canonical_etypes[r]}" if typed else ""


def _one_type_output(out, schema, typed: bool, name: str, keyed: str, plain: str, ok) -> dict:
    """``out`` as it is if a Mapping, keyed by the one edge type when the graph has one and ``ok(out)``
    (DGL's un-keyed form, ``plain``); else a TypeError naming ``name`` and the form it must have."""
    if isinstance(out, Mapping):
        return out
    if len(schema.edge_types) == 1 and ok(out):
        return {schema.canonical_etypes[0]: out}
    if typed:
        raise TypeError(f"{name} must return {{etype: {keyed}}} on a graph with edge types "
                        f"{schema.canonical_etypes}, got {type(out).__name__}")
    raise TypeError(f"{name} must return {plain} (or {{etype: {keyed}}}), got {type(out).__name__}")


def _relation(schema, key, what: str) -> int:
    try:
        return schema.etype_id(key)
    except (ValueError, TypeError) as e:
        raise ValueError(f"{what} returned edge type {key!r}: {e}") from None


def _ids(values, what: str, count: int) -> np.ndarray:
    """``values`` as int64 [n] in ``[0, count)``; TypeError / ValueError naming ``what`` and the problem."""
    if torch.is_tensor(values):
        if values.dtype.is_floating_point or values.dtype.is_complex or values.dtype == torch.bool:
            raise TypeError(f"{what} must hold integer ids, got a tensor of dtype {values.dtype}")
        arr = values.detach().cpu().numpy()
    elif isinstance(values, np.ndarray):
        if values.dtype.kind not in "iu":
            raise TypeError(f"{what} must hold integer ids, got an array of dtype {values.dtype}")
        arr = values
    else:
        raise TypeError(f"{what} must be an integer tensor, got {type(values).__name__}")
    if arr.ndim != 1:
        raise ValueError(f"{what} must be 1-D, got shape {tuple(arr.shape)}")
    arr = arr.astype(np.int64, copy=False)
    if arr.size and (int(arr.min()) < 0 or int(arr.max()) >= count):
        bad = int(arr.min()) if int(arr.min()) < 0 else int(arr.max())
        raise ValueError(f"{what} holds id {bad}, outside [0, {count})")
    return arr


class UserNegatives:
    """A user's (or DGL subclass's) negative sampler ``fn(g, {etype: eids}) -> {etype: (src, dst)}``
    (``fn(g, eids) -> (src, dst)`` when ``typed`` is False), called with ``graph`` (the graph the loader
    was given: a DGLGraph, a store, a partition dir)."""

    def __init__(self, fn, graph=None, typed: bool = True):
        self.fn, self.graph, self.typed = fn, graph, typed
        self.k = getattr(fn, "k", None)

    def __getstate__(self) -> dict:
        return {**self.__dict__, "fn": picklable(self.fn, "negative_sampler")}

    def draw(self, schema, eids_by_rel: Mapping[int, np.ndarray], seed: int) -> dict:
        """``{relation id: (src, dst)}`` type-local int64 negatives of a batch, drawn under torch's RNG
        seeded from ``seed`` (the caller's RNG untouched); TypeError / ValueError naming a bad output."""
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(seed) & MASK64)
            out = self.fn(self.graph, seed_edges_arg(schema, eids_by_rel, self.typed))
        return self.check(schema, out)

    def check(self, schema, out) -> dict:
        """The sampler's output as ``{relation id: (src, dst)}``, every id in its end type's range."""
        name = f"negative_sampler {getattr(self.fn, '__name__', type(self.fn).__name__)}"
        out = _one_type_output(out, schema, self.typed, name, "(src, dst)", "a (src, dst) pair of id tensors",
                               lambda o: isinstance(o, (tuple, list)))
        s_t, d_t = schema.relation_ends()
        pairs = {}
        for key, pair in out.items():
            r = _relation(schema, key, name)
            c, of = schema.canonical_etypes[r], _label(schema, r, self.typed)
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                for_c = f" for {c}" if self.typed else ""
                raise TypeError(f"{name} must return a (src, dst) pair of id tensors{for_c}, got {type(pair).__name__}"
                                f"{f' of {len(pair)}' if isinstance(pair, (tuple, list)) else ''}")
            src = _ids(pair[0], f"{name}'s sources{of}", schema.node_types[s_t[r]].count)
            dst = _ids(pair[1], f"{name}'s destinations{of}", schema.node_types[d_t[r]].count)
            if src.shape != dst.shape:
                raise ValueError(f"{name} returned {src.shape[0]} sources and {dst.shape[0]} destinations{of}")
            if r in pairs:
                raise ValueError(f"{name} returned edge type {c} twice (as {key!r})")
            pairs[r] = (src, dst)
        return pairs

    def __repr__(self) -> str:
        return f"UserNegatives({self.fn!r})"


class UserExclude:
    """DGL's callable ``exclude``: ``fn({etype: eids}) -> {etype: eids}``, the edges to leave out of a
    batch's blocks, turned into sorted unique CSC positions (what the typed sampler draws around).

    ``ids``: how the loader numbers edges -- ``"dgl"`` (per-relation ids: positions by one stable sort of
    the graph's (relation, id), 8 bytes per edge, made in the sample stage's process on first use),
    ``"store"`` (CSC positions, checked to be of their edge type), ``"partition"`` (a typed partition's
    edge ids, their types read from ``partition_dir``'s part stores) or ``"untyped"`` (a graph without
    edge types: the loader's edge ids are what its sampler excludes, taken as they are).
    """

    def __init__(self, fn, ids: str, num_edges: int, partition_dir: Optional[str] = None):
        self.fn, self.ids, self.num_edges, self.partition_dir = fn, ids, int(num_edges), partition_dir
        self.typed = ids != "untyped"
        self._lookup: Any = None  # per process: the position map, or the partition's edges

    def __getstate__(self) -> dict:
        return {**self.__dict__, "fn": picklable(self.fn, "exclude"), "_lookup": None}

    def positions(self, schema, eids_by_rel: Mapping[int, np.ndarray], graph=None) -> np.ndarray:
        """Sorted unique int64 CSC positions (partition edge ids over servers) to exclude for a batch whose
        seed edges are ``eids_by_rel``; ``graph`` the sampler's typed CSC (None over servers)."""
        out = self.check(schema, self.fn(seed_edges_arg(schema, eids_by_rel, self.typed)))
        parts = [self._to_positions(schema, r, ids, graph) for r, ids in out.items()]
        return np.unique(np.concatenate(parts)) if parts else np.empty(0, np.int64)

    def check(self, schema, out) -> dict:
        """The callable's output as ``{relation id: int64 ids}``, each id in range."""
        name = f"exclude {getattr(self.fn, '__name__', type(self.fn).__name__)}"
        out = _one_type_output(out, schema, self.typed, name, "edge ids", "a tensor of edge ids",
                               lambda o: torch.is_tensor(o) or isinstance(o, np.ndarray))
        ids = {}
        for key, values in out.items():
            r = _relation(schema, key, name)
            count = schema.edge_types[r].count if self.ids == "dgl" else self.num_edges
            arr = _ids(values, f"{name}'s edge ids{_label(schema, r, self.typed)}", count)
            ids[r] = np.concatenate([ids[r], arr]) if r in ids else arr
        return ids

    def _to_positions(self, schema, r: int, ids: np.ndarray, graph) -> np.ndarray:
        if self.ids == "untyped":
            return ids
        if self.ids == "dgl":
            if self._lookup is None:
                from ..typed_edge_ids import position_map

                self._lookup = position_map(graph, len(schema.edge_types))
            return self._lookup(r, ids)
        if self.ids == "store":
            etype = np.asarray(graph.etype)[ids]
        else:
            if self._lookup is None:
                from ...partition.format import open_partition
                from ..typed_edge_ids import PartitionEdges

                self._lookup = PartitionEdges(open_partition(self.partition_dir))
            etype = self._lookup.etype_of(ids)
        wrong = np.flatnonzero(etype != r)
        if wrong.size:
            got = schema.canonical_etypes[int(etype[wrong[0]])]
            raise ValueError(f"exclude returned edge {int(ids[wrong[0]])} as one of edge type "
                             f"{schema.canonical_etypes[r]}, but it is of edge type {got}")
        return ids

    def __repr__(self) -> str:
        return f"UserExclude({self.fn!r})"


def checked_callables(schema, eids: np.ndarray, rel: np.ndarray, exclude, negative, info,
                      typed: bool = True) -> tuple:
    """``(exclude, negative)`` for :class:`~bgl.loader.seeds.typed_edges.TypedEdgeSeeds` (``typed``) or
    :class:`~bgl.loader.seeds.edges.EdgeSeeds` (``schema`` the homogeneous one, ``rel`` all 0): a callable
    ``exclude`` as a :class:`UserExclude`, a :class:`UserNegatives` bound to the user's graph (``info.graph``); each
    called once on the first seed edge of every edge type, its output checked, so that a wrong output
    is named before any process starts (an excluded edge of another edge type too)."""
    probe = {int(r): eids[np.flatnonzero(rel == r)[:1]] for r in np.unique(rel)}
    if callable(exclude):
        if not typed:
            exclude = UserExclude(exclude, "untyped", schema.edge_types[0].count)
        elif info.from_dgl:
            exclude = UserExclude(exclude, "dgl", int(info.store.num_edges))
        elif info.store is not None:
            exclude = UserExclude(exclude, "store", int(info.store.num_edges))
        else:
            from ...partition.format import open_partition

            book = open_partition(info.partition_dir)
            exclude = UserExclude(exclude, "partition", int(book.num_edges), str(info.partition_dir))
        exclude.positions(schema, probe, info.store)  # the store's (a DGLGraph's arrays') CSC; None: servers
    if isinstance(negative, UserNegatives):
        negative = UserNegatives(negative.fn, info.graph, typed)
        negative.draw(schema, probe, 0)
    return exclude, negative
