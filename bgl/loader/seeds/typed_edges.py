"""Typed edge seeds: link prediction on a heterogeneous graph, the same seed kind through the same stages.

DGL's heterogeneous link-prediction loop passes seed edges as ``{etype: eids}`` and gets
``(input_nodes, pair_graph, neg_pair_graph, blocks)`` whose pair graphs carry every edge type of
the graph (empty where a batch has none).  Here such seeds are one more item kind
(:mod:`bgl.loader.seeds.items`): the order stage cuts positions into the seed list, mixing edge types
as DGL shuffles them; :meth:`TypedEdgeSeeds.batch` turns a batch into its node seeds (endpoints of
positives and of the negatives drawn per edge type, compacted over one node set in DGL's
``compact_graphs`` order) and the CSC positions to exclude, and the typed sampler draws around them
(:func:`bgl.sampler.typed._kernels.typed_positions`, at the cost of the fanout).

Edge ids, as the untyped loader numbers them: a heterogeneous DGLGraph's own per-relation ids; a
typed store's CSC positions (what its blocks' ``EID`` hold), each checked to be of its edge type.
Exclusion works on CSC positions, since a DGLGraph's ids repeat across relations.

Cost: on a typed store or partition 13 bytes per seed edge while ids fit in int32 (id, position and
destination 4 B each, relation 1 B; over graph servers the source too, 8 B) and 4 more for its reverse's
position when reverses are excluded, looked up once before anything starts.  On a DGLGraph 5 bytes
(id and relation): destinations, positions and ``reverse_types`` partners are found per batch from the
graph's COO and the fused CSC (:mod:`.typed_located`, issue #57: 110 MiB less for the 9.6M seed edges
of a 10.6M-edge user-item graph); ``reverse_id`` partners are still held (4 B).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional

import numpy as np
import torch

from ...sampler.typed.sampling import relation_seed
from .._typed_block_kernels import type_positions
from .edges import compact, sorted_compact
from ..typed_edge_ids import StoreEdges, edge_source
from .typed_located import LocatedSeeds

TYPED_EXCLUDES = (None, "self", "reverse_id", "reverse_types")
# GlobalUniform per edge type: rounds of candidates while short, DGL's three trials per candidate (a small
# user-item relation is dense enough that one round of 1.3x candidates often comes back short)
GLOBAL_UNIFORM_TRIALS = 3


@dataclass
class TypedEdgeBatch:
    """One batch of typed seed edges after sampling.

    ``node_ids`` int64 [u]: global node seeds in DGL's compact order (= ``blocks[-1].dst_ids``);
    ``pos`` / ``neg`` : ``{relation id: (src, dst)}`` per-type local indices into the pair graphs'
    node sets (relations without edges left out); ``eids`` : ``{relation id: edge ids}``.
    """

    node_ids: torch.Tensor
    pos: dict
    eids: dict
    neg: Optional[dict] = None

    def to(self, device, non_blocking: bool = False) -> "TypedEdgeBatch":
        def mv(d):
            return None if d is None else {r: tuple(t.to(device, non_blocking=non_blocking) for t in v)
                                           if isinstance(v, tuple) else v.to(device, non_blocking=non_blocking)
                                           for r, v in d.items()}

        return TypedEdgeBatch(self.node_ids.to(device, non_blocking=non_blocking), mv(self.pos), mv(self.eids),
                              mv(self.neg))


@dataclass(frozen=True, eq=False)
class TypedEdgeSeeds:
    """A typed loader's seed edges (picklable: stage processes).

    ``eids`` the user's ids, ``positions`` their CSC positions, ``src`` / ``dst`` global endpoint ids
    ([n] each, int64 or int32 while they fit: widened per batch; ``src`` None on a local graph, read
    from its CSC per batch); ``rel`` their relation ids ([n] in the schema's etype dtype, 1 B each);
    ``reverse`` [n] each seed's reverse edge's position (-1: none; int32 while positions fit) when
    reverses are excluded; ``located`` (a DGLGraph's seeds): a :class:`~.typed_located.LocatedSeeds`
    that finds positions, destinations and ``reverse_types`` partners per batch, those arrays then None;
    ``schema`` the graph's
    :class:`~bgl.schema.GraphSchema`; ``negative`` a bgl negative sampler drawn per edge type, or a
    user's callable (:class:`~bgl.loader.seeds.typed_callables.UserNegatives`); ``exclude`` a DGL mode or
    a :class:`~bgl.loader.seeds.typed_callables.UserExclude`.
    """

    eids: np.ndarray
    positions: Optional[np.ndarray]
    rel: np.ndarray
    src: Optional[np.ndarray]
    dst: Optional[np.ndarray]
    schema: Any
    exclude: Any = None  # None | "self" | "reverse_id" | "reverse_types" | UserExclude
    reverse: Optional[np.ndarray] = None
    negative: Any = None
    node_order: str = "first"  # DGL's compact_graphs order, PyG's sorted unique ("sorted"), or none ("disjoint")
    located: Optional[LocatedSeeds] = None

    @property
    def order_nodes(self) -> np.ndarray:
        """Each seed edge's destination (what proximity order places it by); made here when not held."""
        if self.dst is None:
            return _narrowed(self.located.destinations(self.rel, _wide(self.eids)))
        return self.dst

    def _destinations(self, sel: np.ndarray) -> np.ndarray:
        if self.dst is None:
            return self.located.destinations(self.rel[sel], _wide(self.eids[sel]))
        return _wide(self.dst[sel])

    def _positions(self, sel: np.ndarray, graph, dst: Optional[np.ndarray] = None) -> np.ndarray:
        """int64 CSC positions of seed edges ``sel`` (``graph``: the sampler's typed CSC)."""
        if self.positions is not None:
            return _wide(self.positions[sel])
        _needs_csc(graph)
        return self.located.positions(graph, self.rel[sel].astype(np.int64), _wide(self.eids[sel]), dst)

    def excluded(self, sel: np.ndarray, graph=None, pos: Optional[np.ndarray] = None) -> Optional[np.ndarray]:
        """Sorted unique CSC positions the batch's blocks must not contain (None: nothing excluded);
        a callable ``exclude`` is asked with the batch's seed edges (``graph``: the sampler's typed CSC;
        ``pos``: the batch's positions when already found)."""
        if self.exclude is None:
            return None
        if not isinstance(self.exclude, str):
            eids, rel = _wide(self.eids[sel]), self.rel[sel]
            return self.exclude.positions(self.schema, {int(r): eids[rel == r] for r in np.unique(rel)}, graph)
        pos = self._positions(sel, graph) if pos is None else pos
        rev = self.reverse[sel] if self.reverse is not None else \
            None if self.located is None else self.located.reverse(graph, self.rel[sel], _wide(self.eids[sel]))
        if rev is not None:
            pos = np.concatenate([pos, rev[rev >= 0]])
        return np.unique(pos)

    def _sources(self, pos: np.ndarray, graph) -> np.ndarray:
        """Global source ids of a local graph's seed edges at CSC positions ``pos``: its fused CSC's
        ``indices`` there (``graph``: the sampler's typed CSC, what the sample stage passes)."""
        _needs_csc(graph)
        return np.asarray(graph.indices[pos], np.int64)

    def _negatives(self, r: int, src: np.ndarray, dst: np.ndarray, seed: int,
                   graph=None) -> tuple[np.ndarray, np.ndarray]:
        """Negative (src, dst) global ids of relation ``r``'s positives, drawn over its end types' ids from
        stream ``relation_seed(seed, r)``: a sampler with ``sample_typed_pairs`` (PyG's binary pairs, both
        ends random; ``GlobalUniform``, which also avoids ``graph``'s edges of relation ``r``) gets both
        types' counts, DGL's per-source samplers the destination type's."""
        offsets, types = self.schema.offsets, self.schema.node_types
        s_t, d_t = (int(a[r]) for a in self.schema.relation_ends())
        src, dst, stream = src - offsets[s_t], dst - offsets[d_t], relation_seed(seed, r)
        extra = {}
        if getattr(self.negative, "needs_graph", False):
            from ...sampler.edge_check import RelationEdges

            edges = None if graph is None else RelationEdges(graph, r, offsets[s_t], offsets[d_t])
            extra = {"graph": edges, "same_type": s_t == d_t, "trials": GLOBAL_UNIFORM_TRIALS}
        if hasattr(self.negative, "sample_typed_pairs"):
            ns, nd = self.negative.sample_typed_pairs(src, dst, int(types[s_t].count), int(types[d_t].count), stream,
                                                      **extra)
        else:
            ns, nd = self.negative.sample_pairs(src, dst, int(types[d_t].count), stream)
        return ns + offsets[s_t], nd + offsets[d_t]

    def batch(self, sel: np.ndarray, seed: int, graph=None) -> tuple[TypedEdgeBatch, Optional[np.ndarray]]:
        """The :class:`TypedEdgeBatch` of seed positions ``sel`` and the positions to exclude.
        Negatives of relation ``r`` come from stream ``relation_seed(seed, r)``, each destination
        uniform over its edge type's destination node type (DGL's per-type ``Uniform``), or both ends
        uniform over the pairs of its end types that are not edges of ``r`` in ``graph`` (``GlobalUniform``:
        a typed CSC, or servers as a :class:`~bgl.sampler.edge_check.ServerEdgeCheck`)."""
        dst, rel, seed_eids, seed_pos = self._destinations(sel), self.rel[sel], _wide(self.eids[sel]), None
        if self.src is not None:
            src = _wide(self.src[sel])
        else:
            seed_pos = self._positions(sel, graph, dst)
            src = self._sources(seed_pos, graph)
        rels = np.unique(rel)
        by_rel = [np.flatnonzero(rel == r) for r in rels]
        arrays = [a for idx in by_rel for a in (src[idx], dst[idx])]
        neg_rels = rels.tolist()
        if getattr(self.negative, "draw", None) is not None:  # a user's callable: every edge type at once
            drawn = self.negative.draw(self.schema, {r: seed_eids[idx] for r, idx in zip(neg_rels, by_rel)}, seed)
            neg_rels, offsets, (s_t, d_t) = sorted(drawn), self.schema.offsets, self.schema.relation_ends()
            arrays += [a for r in neg_rels for a in (drawn[r][0] + offsets[s_t[r]], drawn[r][1] + offsets[d_t[r]])]
        elif self.negative is not None:
            arrays += [a for r, idx in zip(neg_rels, by_rel)
                       for a in self._negatives(r, src[idx], dst[idx], seed, graph)]
        if self.node_order == "disjoint":  # temporal: every endpoint its own seed (bgl/loader/seeds/temporal_edges.py)
            nodes, local = np.concatenate(arrays), list(_runs(arrays))
        else:
            nodes, local = (compact if self.node_order == "first" else sorted_compact)(*arrays)
        _, type_local, *_ = type_positions(nodes, 0, self.schema.offsets)  # index among its type's nodes
        pos, eids, neg = {}, {}, ({} if self.negative is not None else None)
        for j, (r, idx) in enumerate(zip(rels.tolist(), by_rel)):
            pos[r] = (torch.from_numpy(type_local[local[2 * j]]), torch.from_numpy(type_local[local[2 * j + 1]]))
            eids[r] = torch.from_numpy(seed_eids[idx])
        for j, r in enumerate(neg_rels if neg is not None else ()):
            k = 2 * len(by_rel) + 2 * j
            neg[r] = (torch.from_numpy(type_local[local[k]]), torch.from_numpy(type_local[local[k + 1]]))
        return TypedEdgeBatch(torch.from_numpy(nodes), pos, eids, neg), self.excluded(sel, graph, seed_pos)


def _runs(arrays):
    """Each array's positions in their concatenation (no node merged: ``node_order="disjoint"``)."""
    start = 0
    for a in arrays:
        yield np.arange(start, start + a.shape[0], dtype=np.int64)
        start += a.shape[0]


def _relation_of(schema, etype) -> int:
    try:
        return schema.etype_id(etype)
    except ValueError as e:
        raise ValueError(f"seed edges: {e}") from None


def check_reverse_etypes(schema, reverse_etypes) -> np.ndarray:
    """int64 [R] reverse relation of each relation (-1: none) from DGL's ``reverse_etypes`` dict;
    ValueError when it names an edge type the graph lacks, is not a bijection, or pairs edge types
    whose edge counts differ (DGL's reverse of edge ``k`` of one type is edge ``k`` of the other)."""
    if not isinstance(reverse_etypes, Mapping) or not reverse_etypes:
        raise ValueError(f"exclude='reverse_types' needs reverse_etypes, a dict {{etype: reverse etype}}, got "
                         f"{reverse_etypes!r}")
    rev = np.full(len(schema.edge_types), -1, np.int64)
    for a, b in reverse_etypes.items():
        ra, rb = _relation_of(schema, a), _relation_of(schema, b)
        if rev[ra] not in (-1, rb):
            raise ValueError(f"reverse_etypes maps {schema.canonical_etypes[ra]} twice")
        rev[ra] = rb
        ea, eb = schema.edge_types[ra], schema.edge_types[rb]
        if (ea.src, ea.dst) != (eb.dst, eb.src) or ea.count != eb.count:
            raise ValueError(f"reverse_etypes pairs {ea.canonical} ({ea.count} edges) with {eb.canonical} "
                             f"({eb.count} edges): a reverse edge type must swap the node types and have as many edges")
    mapped = rev[rev >= 0]
    if np.unique(mapped).shape[0] != mapped.shape[0]:
        raise ValueError(f"reverse_etypes is not a bijection: two edge types have the same reverse ({reverse_etypes})")
    return rev


def resolve_typed_edge_seeds(indices, info, settings) -> TypedEdgeSeeds:
    """The :class:`TypedEdgeSeeds` of ``{etype: eids}`` over a typed graph ``info`` (a heterogeneous
    DGLGraph read in place, a local typed store, or graph servers with their partition dir), every
    argument checked before anything starts (a user's callables called once: :mod:`.typed_callables`;
    a callable negative sampler is called with ``info.graph``, the graph as the user gave it)."""
    from ..arguments import check_ids

    schema = info.schema
    if not callable(settings.exclude) and settings.exclude not in TYPED_EXCLUDES:
        raise ValueError(f"exclude must be one of {TYPED_EXCLUDES} or a callable on a typed graph, got "
                         f"{settings.exclude!r}")
    negative = settings.negative
    if settings.pairs is not None:  # PyG: given node pairs of one edge type, nothing to look up or exclude
        return _pair_seeds(indices, schema, settings)
    if not isinstance(indices, Mapping):
        if len(schema.edge_types) != 1:
            raise TypeError(f"a graph with edge types {schema.canonical_etypes} takes seed edges as {{etype: eids}}")
        indices = {schema.canonical_etypes[0]: indices}
    from_dgl = info.from_dgl
    edges = None if from_dgl else edge_source(info)
    reverse_types = None
    if settings.exclude == "reverse_types":
        reverse_types = check_reverse_etypes(schema, settings.reverse_etypes)
    parts = []
    for key, ids in indices.items():
        r = _relation_of(schema, key)
        count = schema.edge_types[r].count if from_dgl else edges.num_edges
        try:
            eids = check_ids(ids, count, kind="edge")
        except ValueError as e:
            raise ValueError(f"seed edges of edge type {schema.canonical_etypes[r]}: {e}") from None
        if from_dgl:  # positions, destinations and reverses are found per batch (LocatedSeeds)
            part = (eids, None, np.full(eids.shape[0], r, schema.etype_dtype()))
        else:
            wrong = np.flatnonzero(edges.etype_of(eids) != r)
            if wrong.size:
                raise ValueError(f"seed edge {int(eids[wrong[0]])} is not of edge type {schema.canonical_etypes[r]} "
                                 f"(the edge ids of a typed {edges.kind} are its CSC positions)")
            part = (eids, eids, np.full(eids.shape[0], r, schema.etype_dtype()))
        parts.append(part)
    eids = _joined([p[0] for p in parts], np.int64)
    # relation ids in the schema's smallest dtype (1 B a seed edge, not 8: held for the loader's life)
    rel = _joined([p[2] for p in parts], schema.etype_dtype())
    local = from_dgl or isinstance(edges, StoreEdges)
    reverse, exclude, located, to_position = None, settings.exclude, None, None
    if from_dgl:  # a local graph's sources are read from its CSC per batch
        pos, src, dst = None, None, None
        located = LocatedSeeds.of_graph(info.graph, schema, [_relation_of(schema, k) for k in indices], reverse_types)

        def to_position(r: int, ids: np.ndarray) -> np.ndarray:  # reverse_id: its partners held
            return located.positions(info.store, np.full(ids.shape[0], r, np.int64), ids.astype(np.int64))
    else:
        pos = _joined([p[1] for p in parts], np.int64)
        src, dst = edges.endpoints(pos)
    if exclude == "reverse_id" or (exclude == "reverse_types" and not from_dgl):
        reverse = _reverse_positions(settings, schema, edges, eids, pos, rel, src, dst, to_position, reverse_types)
    if reverse is not None:
        reverse = _narrowed(reverse)  # -1: none
    if callable(exclude) or getattr(negative, "draw", None) is not None:
        from .typed_callables import checked_callables

        exclude, negative = checked_callables(schema, eids, rel, exclude, negative, info)
    # held for the loader's life: ids, positions and destinations in int32 while they fit (12 B a seed edge
    # saved; widened per batch); a local graph's sources are read from its CSC per batch, not held (8 B)
    eids, pos, dst = _narrowed(eids), _narrowed(pos), _narrowed(dst)
    if not eids.flags.owndata:  # one part left wide: still the caller's tensor's memory
        eids = eids.copy()
    return TypedEdgeSeeds(eids=eids, positions=pos, rel=rel, src=None if local else src, dst=dst, schema=schema,
                          exclude=exclude, reverse=reverse, negative=negative, located=located)


def _joined(arrays: list, dtype) -> np.ndarray:
    """The parts' arrays end to end (the one part itself, uncopied, when there is one)."""
    if not arrays:
        return np.empty(0, dtype)
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)


def _needs_csc(graph) -> None:
    if graph is None or not hasattr(graph, "indices"):
        raise RuntimeError("seed edges of a local typed graph are read from its CSC; TypedEdgeSeeds.batch needs graph=")


def _wide(a: np.ndarray) -> np.ndarray:
    """A batch's slice of a held seed array as int64 (what DGL's ``EID`` and the kernels take)."""
    return a.astype(np.int64, copy=False)


def _narrowed(a: Optional[np.ndarray]) -> Optional[np.ndarray]:
    """``a`` (ids >= -1) as int32 while its largest fits, else as it is (4 B a seed edge saved)."""
    if a is None:
        return None
    return a.astype(np.int32 if int(a.max(initial=0)) + 1 < np.iinfo(np.int32).max else np.int64, copy=False)


def _pair_seeds(indices, schema, settings) -> TypedEdgeSeeds:
    """TypedEdgeSeeds over PyG's ``edge_label_index=(edge_type, pairs)``: type-local pairs made global."""
    from ..arguments import check_ids

    r = _relation_of(schema, settings.pair_etype)
    s_t, d_t = (int(a[r]) for a in schema.relation_ends())
    pairs = np.asarray(settings.pairs, dtype=np.int64)
    positions = check_ids(indices, pairs.shape[1], kind="edge")
    return TypedEdgeSeeds(eids=positions, positions=positions, rel=np.full(positions.shape[0], r, schema.etype_dtype()),
                          src=pairs[0][positions] + schema.offsets[s_t], dst=pairs[1][positions] + schema.offsets[d_t],
                          schema=schema, negative=settings.negative, node_order=settings.node_order)


def _reverse_positions(settings, schema, edges, eids, pos, rel, src, dst, to_position, reverse_types) -> np.ndarray:
    """int64 [n]: the position (edge id) of each seed edge's reverse (-1: none), DGL's two ways.

    ``"reverse_types"`` (``reverse_types``: :func:`check_reverse_etypes`' array) on a typed store or partition
    (ids are positions): the reverse is found by its endpoints
    (:func:`~bgl.sampler.typed._kernels.reverse_positions`); a DGLGraph's are found per batch
    (:meth:`~.typed_located.LocatedSeeds.reverse`).  ``"reverse_id"``: ``reverse_eids`` maps
    each edge type's ids to the same type's reverse ids (``{etype: ids}``; one array when the graph
    has one edge type), or on a store or partition its edge ids to edge ids (int64 [num_edges]).
    """
    from ..arguments import as_int_array

    if settings.exclude == "reverse_types":
        return edges.reverse(src, dst, reverse_types[rel])
    reverse_eids = settings.reverse_eids
    if to_position is None:
        from ..edge_prediction import check_reverse_eids

        return check_reverse_eids(reverse_eids, edges.num_edges)[pos]
    if not isinstance(reverse_eids, Mapping):
        if len(schema.edge_types) != 1:
            raise ValueError("exclude='reverse_id' on a graph with edge types takes reverse_eids as {etype: ids}")
        reverse_eids = {schema.canonical_etypes[0]: reverse_eids}
    given = {_relation_of(schema, k): v for k, v in reverse_eids.items()}
    out = np.full(eids.shape[0], -1, np.int64)
    for r in np.unique(rel):
        sel = rel == r
        if int(r) not in given:
            raise ValueError(f"reverse_eids has no entry for edge type {schema.canonical_etypes[r]}")
        count = schema.edge_types[r].count
        ids = as_int_array(given[int(r)], "reverse_eids")
        if ids.shape[0] != count or (ids.size and (int(ids.min()) < 0 or int(ids.max()) >= count)):
            raise ValueError(f"reverse_eids of {schema.canonical_etypes[r]} must map its {count} edges to ids in "
                             f"[0, {count})")
        out[sel] = to_position(int(r), ids[eids[sel]])
    return out


class TypedPairGraph:
    """bgl's typed pair graph, without DGL: the batch's positive (or negative) edges per edge type over
    per-type node sets.  What a scorer reads of DGL's: ``canonical_etypes``, ``edges(etype=)``,
    ``num_nodes(ntype)``, ``num_edges(etype)``, ``ndata["_ID"]`` ``{ntype: type-local ids}`` and, for
    positive pairs, ``edata["_ID"]`` ``{canonical etype: edge ids}``."""

    def __init__(self, schema, edges: dict, node_ids: dict, edge_ids: Optional[dict] = None):
        self.canonical_etypes = list(schema.canonical_etypes)
        self._schema, self._edges = schema, edges
        self.ndata = {"_ID": node_ids}
        self.edata = {} if edge_ids is None else {"_ID": edge_ids}

    def edges(self, etype=None) -> tuple[torch.Tensor, torch.Tensor]:
        return self._edges[self.canonical_etypes[_relation_of(self._schema, etype)]]

    def num_nodes(self, ntype=None) -> int:
        return int(self.ndata["_ID"][ntype].shape[0])

    def num_edges(self, etype=None) -> int:
        return int(self.edges(etype)[0].shape[0])


def typed_pair_graphs(batch: TypedEdgeBatch, schema, frontend=None, graph=None) -> tuple:
    """``(pair_graph,)`` or ``(pair_graph, neg_pair_graph)`` of a typed batch, as DGL makes them: every
    edge type of the graph (empty where the batch has none), every node type's compacted nodes
    (``NID`` type-local ids, shared by both graphs), ``EID`` per edge type on the positive one.
    ``frontend`` (:class:`bgl.loader.batch_frontend.BatchFrontend`) builds its own graphs, the positive
    one with ``graph``'s other fields (the graph read in place, or None); None: bgl's."""
    from ..typed import by_type

    node_ids = by_type(batch.node_ids, schema)
    device = batch.node_ids.device
    empty = torch.empty(0, dtype=torch.int64, device=device)

    def per_etype(d):
        return {c: d.get(r, (empty, empty)) for r, c in enumerate(schema.canonical_etypes)}

    eids = {c: batch.eids.get(r, empty) for r, c in enumerate(schema.canonical_etypes)}
    graphs = [(per_etype(batch.pos), eids)] + ([] if batch.neg is None else [(per_etype(batch.neg), None)])
    if frontend is not None:
        return tuple(frontend.typed_pair_graph(edges, node_ids, e, graph if e is not None else None)
                     for edges, e in graphs)
    return tuple(TypedPairGraph(schema, edges, node_ids, e) for edges, e in graphs)
