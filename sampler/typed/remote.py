"""Typed graphs over graph servers: the client side (mixed into :class:`~bgl.sampler.client.SamplingClient`).

Each server serves one part of a typed partition (``partition/typed_parts.py``): its
INFO carries the part's schema (per-type counts, offsets relative to the part's
first id).  From the servers' INFO replies the client builds

* ``schema``: the whole graph's :class:`~bgl.schema.GraphSchema` (counts summed over
  the parts), whose TYPE-LOCAL ids are DistDGL's per-type new ids: type ``t``'s ids
  run part by part, ``[cum[t, k], cum[t, k + 1])`` for part ``k``;
* ``type_bounds``: int64 [P*T + 1], part ``k``'s type ``t`` owns global ids
  ``[type_bounds[k*T + t], type_bounds[k*T + t + 1])`` (the partition's table).

A type-local id maps to its global id and back with one ``searchsorted`` each
(``O(P*T)`` memory, nothing per node).  Typed SAMPLE goes to the owner of each seed
with the layer's int64 [R] fanouts; co-located parts are read from their files by
the same function the servers run (:func:`bgl.sampler.typed.sampling.sample_typed_store`), so
the blocks are equal whichever way a part is read.
"""
from __future__ import annotations

import functools
from typing import Sequence

import numpy as np
import torch

from bgl.errors import ProtocolError
from bgl.schema import GraphSchema, NodeType

from .. import _kernels as K
from .. import multilayer, ops
from .. import protocol as P


def typed_sample_request(req_id: int, seeds: np.ndarray, fanouts: np.ndarray, replace: bool, seed: int,
                         exclude: np.ndarray | None = None, prob: str | None = None, edge_data=(),
                         labor: tuple[int, float] | None = None) -> list:
    """Frames of a typed SAMPLE request (:mod:`.frames`): ``seeds`` int32/int64 [m], ``fanouts`` int64 [R],
    the edge names frame when ``prob`` names the edge array to draw by or ``edge_data`` the arrays whose
    rows the reply carries, and ``exclude`` (sorted unique int64 CSC positions of the server's part)
    when it holds any, then the LABOR frame when ``labor`` = ``(seed2, mix)``."""
    seeds = np.ascontiguousarray(seeds)
    n_excl = 0 if exclude is None else int(exclude.shape[0])
    names = bool(prob or edge_data)
    flags = (P.FLAG_TYPED | (P.FLAG_REPLACE if replace else 0) | (P.FLAG_EDGE_NAMES if names else 0)
             | (P.FLAG_LABOR if labor is not None else 0))
    h = P.Header(P.Op.SAMPLE, req_id, flags, 0, P.dtype_code(seeds.dtype),
                 P.EXCLUDE_CODE if n_excl else 0, 0, int(seed) & ((1 << 64) - 1), seeds.shape[0], n_excl, 1)
    frames = [h.pack(), seeds, np.ascontiguousarray(fanouts, dtype="<i8")]
    if names:
        frames.append(P.encode_edge_names(prob, edge_data))
    if n_excl:
        frames.append(np.ascontiguousarray(exclude, dtype="<i8"))
    if labor is not None:
        frames.append(P.LABOR_FRAME.pack(int(labor[0]) & ((1 << 64) - 1), float(labor[1])))
    return frames


def merged_schema(infos: Sequence[dict], addresses: Sequence[str]):
    """``(schema, type_bounds, cum)`` of the servers' parts, or ``(None, None, None)`` when untyped.

    ``cum`` int64 [T, P + 1]: type ``t``'s type-local ids of part ``k`` are ``[cum[t, k], cum[t, k + 1])``.
    ProtocolError when some servers are typed and others not, or their types differ.
    """
    raw = [info.get("schema") for info in infos]
    if all(r is None for r in raw):
        return None, None, None
    parts = []
    for addr, r in zip(addresses, raw):
        if r is None:
            raise ProtocolError(f"server {addr} serves an untyped part, {addresses[0]} a typed one")
        parts.append(GraphSchema.from_dict(r, f"INFO of {addr}"))
    first = parts[0]
    for addr, s in zip(addresses, parts):
        if s.ntypes != first.ntypes or s.canonical_etypes != first.canonical_etypes:
            raise ProtocolError(f"server {addr} serves types {s.ntypes} {s.canonical_etypes}, "
                                f"{addresses[0]} {first.ntypes} {first.canonical_etypes}")
    T, num_parts = len(first.node_types), len(parts)
    counts = np.array([[s.node_types[t].count for s in parts] for t in range(T)], np.int64)
    cum = np.zeros((T, num_parts + 1), np.int64)
    np.cumsum(counts, axis=1, out=cum[:, 1:])
    bounds = np.empty(num_parts * T + 1, np.int64)
    for k, (info, s) in enumerate(zip(infos, parts)):
        bounds[k * T:(k + 1) * T] = int(info["node_offset"]) + s.offsets[:-1]
    bounds[-1] = int(infos[-1]["node_offset"]) + int(infos[-1]["num_nodes"])
    nts, offset = [], 0
    for t, nt in enumerate(first.node_types):
        names = dict.fromkeys(name for s in parts for name in s.node_types[t].splits)
        splits = {name: sum(s.node_types[t].splits.get(name, 0) for s in parts) for name in names}
        nts.append(NodeType(nt.name, offset, int(cum[t, -1]), nt.feat_dim, nt.feat_dtype, nt.has_label,
                            max(s.node_types[t].num_classes for s in parts), splits))
        offset += int(cum[t, -1])
    edge_counts = [sum(s.edge_types[r].count for s in parts) for r in range(len(first.edge_types))]
    schema = GraphSchema(tuple(nts), first.edge_types).with_counts(edge_counts=edge_counts)
    return schema, bounds, cum


class TypedClient:
    """Typed sampling and per-type fetch over the servers, mixed into SamplingClient (uses its
    ``infos``, ``addresses``, ``_split``, ``_answer``, ``_local``, ``_ids``, ``_relabel``).

    ``schema`` / ``type_bounds`` (see the module docstring) are None for untyped servers.
    """

    @functools.cached_property
    def _types(self):
        return merged_schema(self.infos, self.addresses)

    @property
    def schema(self) -> GraphSchema | None:
        return self._types[0]

    @property
    def type_bounds(self) -> np.ndarray | None:
        return self._types[1]

    @property
    def _cum(self) -> np.ndarray | None:
        return self._types[2]

    def _typed(self) -> GraphSchema:
        if self.schema is None:
            raise ValueError(f"the servers {self.addresses} serve an untyped graph; sample it with int fanouts")
        return self.schema

    # -------------------------------------------------------------- ids
    def to_global(self, ntype: str, local_ids) -> np.ndarray:
        """Global ids of type-local ids of ``ntype``; ValueError naming the type and a bad id."""
        schema = self._typed()
        t = schema.ntype_id(ntype)
        ids = ops.as_ids(local_ids, f"ids of node type {ntype!r}")
        count = schema.node_types[t].count
        if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= count):
            bad = int(ids.min()) if int(ids.min()) < 0 else int(ids.max())
            raise ValueError(f"id {bad} of node type {ntype!r} outside [0, {count})")
        cum = self._cum[t]
        k = np.searchsorted(cum, ids, side="right") - 1
        return self.type_bounds[k * len(schema.node_types) + t] + ids - cum[k]

    def to_typed(self, gids) -> tuple[np.ndarray, np.ndarray]:
        """``(type index, type-local id)`` of global ids, int64 each."""
        schema = self._typed()
        gids = ops.as_ids(gids)
        ops.check_range(gids, 0, int(self.type_bounds[-1]))
        T = len(schema.node_types)
        block = np.searchsorted(self.type_bounds, gids, side="right") - 1
        types = block % T
        return types, self._cum[types, block // T] + gids - self.type_bounds[block]

    # -------------------------------------------------------------- sampling
    def sample_typed_layer(self, dst: np.ndarray, fanouts: np.ndarray, replace: bool, seed: int, exclude=None,
                           prob: str | None = None, edge_data: Sequence[str] = (), labor=None):
        """One typed layer across servers: (counts int64 [m], nbrs int64 [e], None, etypes [e]) in dst order,
        plus ``{name: rows [e, ...]}`` of the sampled edges when ``edge_data`` names edge arrays;
        ``exclude``: sorted global edge ids (:attr:`edge_bounds` numbering) never drawn, each server sent
        its own part's share as CSC positions; ``prob``: the servers' edge array every relation draws by;
        ``labor`` = ``(seed2, mix)``: LABOR-0 instead."""
        schema = self._typed()
        fanouts = ops.check_relation_fanouts(fanouts, schema.canonical_etypes)
        dst = ops.as_ids(dst, "seeds")
        order, groups = self._split(dst)
        sorted_ids = dst[order]
        if exclude is not None:
            ops.check_range(exclude, 0, int(self.edge_bounds[-1]), "excluded edges")
        edge_data = tuple(edge_data)
        args = (fanouts, replace, seed)
        jobs = [(s, functools.partial(self._typed_request, sorted_ids[a:b], *args, self._part_exclude(exclude, s),
                                      prob, edge_data, labor),
                 functools.partial(self._local.sample_typed, s, sorted_ids[a:b], *args, self._part_exclude(exclude, s),
                                   prob, edge_data, labor))
                for s, a, b in groups]
        replies = self._answer(jobs, P.Op.SAMPLE)
        for (s, a, b), reply in zip(groups, replies):
            if len(reply) != 3 + bool(edge_data) or reply[0].shape[0] != b - a or \
                    (edge_data and sorted(reply[3]) != sorted(edge_data)):
                raise ProtocolError(f"{self.addresses[s]} did not answer the typed SAMPLE for {b - a} seeds"
                                    f"{f' with edge data {list(edge_data)}' if edge_data else ''}")
        sorted_counts = np.concatenate([r[0] for r in replies]).astype(np.int64, copy=False)
        sorted_nbrs = np.concatenate([r[1].astype(np.int64, copy=False) for r in replies])
        sorted_etypes = np.concatenate([r[2].astype(np.int64, copy=False) for r in replies])
        sorted_indptr = np.zeros(order.shape[0] + 1, np.int64)
        np.cumsum(sorted_counts, out=sorted_indptr[1:])
        if sorted_indptr[-1] != sorted_nbrs.shape[0]:
            raise ProtocolError(f"servers returned {sorted_nbrs.shape[0]} neighbours for counts summing to "
                                f"{sorted_indptr[-1]}")
        inv = np.empty_like(order)
        inv[order] = np.arange(order.shape[0])
        counts = sorted_counts[inv]
        out_indptr = np.zeros(order.shape[0] + 1, np.int64)
        np.cumsum(counts, out=out_indptr[1:])
        nbrs = np.empty_like(sorted_nbrs)
        etypes = np.empty_like(sorted_etypes)
        K.permute_segments(sorted_indptr, sorted_nbrs, inv, out_indptr, nbrs)
        K.permute_segments(sorted_indptr, sorted_etypes, inv, out_indptr, etypes)
        if not edge_data:
            return counts, nbrs, None, etypes
        return counts, nbrs, None, etypes, ops.rows_in_dst_order([r[3] for r in replies], edge_data, sorted_indptr,
                                                                 inv, out_indptr)

    def _typed_request(self, ids, fanouts, replace: bool, seed: int, exclude=None, prob=None, edge_data=(),
                       labor=None) -> list:
        return typed_sample_request(next(self._ids), ids, fanouts, replace, seed, exclude, prob, edge_data, labor)

    def sample_typed_blocks(self, seeds, fanouts: Sequence[np.ndarray], replace: bool = False,
                            seed: int | None = None, exclude=None, prob: str | None = None, edge_data=(),
                            labor=None):
        """Typed blocks for global ``seeds``: ``fanouts[l]`` int64 [R] per relation (DGL order); the
        same blocks as :meth:`bgl.sampler.LocalSampler.sample_typed_blocks` on the same part stores
        (``exclude``: partition edge ids never drawn; ``prob``: the edge array to draw by; ``edge_data``:
        the edge arrays whose sampled rows each block carries in ``edata``; ``labor``: LABOR-0)."""
        return multilayer.sample_typed_blocks(seeds, fanouts, replace, seed, self.sample_typed_layer,
                                              self._relabel, exclude=exclude, prob=prob, edge_data=edge_data,
                                              labor=labor)

    # -------------------------------------------------------------- rows
    def _typed_fetch(self, ntype: str, local_ids, label: bool) -> torch.Tensor:
        t = self._typed().ntype_id(ntype)
        return self.fetch_typed_rows(t, self.to_global(ntype, local_ids), label)

    def fetch_typed_rows(self, t: int, gids: np.ndarray, label: bool = False) -> torch.Tensor:
        """Feature (``label``: label) rows of global ids ``gids`` of node type index ``t``, each from the
        server owning it (or this host's files for a co-located part); that type's width and dtype."""
        nt = self._typed().node_types[t]
        if not (nt.has_label if label else nt.feat_dim):
            raise ValueError(f"node type {nt.name!r} of the served graph has no {'labels' if label else 'features'}")
        field = P.FIELD_LABEL if label else P.FIELD_FEAT
        order, groups = self._split(gids)
        sorted_ids = gids[order]
        jobs = [(s, functools.partial(self._typed_features_request, sorted_ids[a:b], field, t),
                 functools.partial(self._local.gather_typed, s, sorted_ids[a:b], t, label)) for s, a, b in groups]
        codec = (self.feat_codec or {}).get(nt.name) if isinstance(self.feat_codec, dict) else None
        width, dtype = (nt.feat_dim, np.dtype(nt.feat_dtype)) if codec is None else (codec.row_width, codec.row_dtype)
        shape = (gids.shape[0],) if label else (gids.shape[0], width)  # a type's encoded rows stay encoded
        out = np.empty(shape, np.int64 if label else dtype)
        for (s, a, b), (rows,) in zip(groups, self._answer(jobs, P.Op.FEATURES)):
            if rows.size != (b - a) * (1 if label else width) or rows.dtype != out.dtype:
                raise ProtocolError(f"{self.addresses[s]} returned {rows.size} {rows.dtype} values for {b - a} "
                                    f"rows of node type {nt.name!r}")
            out[order[a:b]] = rows.reshape((b - a,) + shape[1:])
        return torch.from_numpy(out)

    def _typed_features_request(self, ids, field: int, ntype: int) -> list:
        return P.features_request(next(self._ids), ids, field, ntype)

    def fetch_type_features(self, ntype: str, local_ids) -> torch.Tensor:
        """Feature rows of type-local ``local_ids`` of ``ntype`` (that type's width and dtype), each
        from the server owning it (or this host's files for a co-located part)."""
        return self._typed_fetch(ntype, local_ids, False)

    def fetch_type_labels(self, ntype: str, local_ids) -> torch.Tensor:
        """int64 labels of type-local ``local_ids`` of ``ntype``."""
        return self._typed_fetch(ntype, local_ids, True)


class TypedServerSampler:
    """What the loader samples a typed graph on graph servers with: :class:`~bgl.sampler.SamplingClient`'s
    typed calls, with ids in the LOADER's id space, where node type ``t`` owns ``[offset_t, offset_t +
    count_t)`` of ``schema`` as in a typed store, so seeds, blocks, per-type fetch and DGL heterograph
    blocks are built as from a store.

    With the partition dir (``partition_dir``, e.g. ``$BGL_PARTITION``), ``schema`` is the original
    store's and type-local ids are the ORIGINAL ones (DGL's per-type ids of the graph the user
    ingested): blocks equal the store's after nothing but the partition's own relabelling; the map
    reads the partition's ``orig_ids`` memmap (8 bytes per node, page cache shared with the
    servers) and searches one (part, type) block per part.  Without it, type-local ids are
    DistDGL's per-type new ids (:class:`TypedClient`), computed from ``O(P*T)`` bounds.
    """

    def __init__(self, client, partition_dir=None):
        self.client = client
        self.book = None
        if partition_dir is not None:
            from bgl.partition.format import open_partition  # lazy: the sampler runs without partitions

            self.book = open_partition(partition_dir)
            if self.book.schema is None or not np.array_equal(self.book.type_bounds, client.type_bounds):
                raise ProtocolError(f"partition dir {partition_dir} is not the typed partition the servers "
                                    f"{client.addresses} serve (type bounds differ)")
        self.schema = client.schema if self.book is None else self.book.schema

    # -------------------------------------------------------------- id maps
    def to_server(self, gids) -> np.ndarray:
        """The servers' global ids of loader global ids (int64, same order)."""
        gids = ops.as_ids(gids)
        ops.check_range(gids, 0, self.schema.num_nodes, "node ids")
        if self.book is not None:
            return self.book.to_new_global(gids)
        types = self.schema.type_of(gids)
        out = np.empty_like(gids)
        for t, nt in enumerate(self.schema.node_types):
            sel = types == t
            if sel.any():
                out[sel] = self.client.to_global(nt.name, gids[sel] - nt.offset)
        return out

    def to_loader(self, gids) -> np.ndarray:
        """Loader global ids of the servers' global ids."""
        gids = ops.as_ids(gids)
        if self.book is not None:
            return np.asarray(self.book.orig_ids)[gids]
        types, local = self.client.to_typed(gids)
        return self.schema.offsets[types] + local

    # -------------------------------------------------------------- loader calls
    def sample_typed_blocks(self, seeds, fanouts: Sequence[np.ndarray], replace: bool = False,
                            seed: int | None = None, exclude=None, prob: str | None = None, edge_data=(),
                            labor=None):
        """Typed blocks for loader global ``seeds``, node ids in the loader's id space; ``exclude``:
        partition edge ids never drawn (edge ids are the partition's in both id spaces); ``prob``: the
        edge array every relation draws by; ``edge_data``: the edge arrays each block carries; ``labor``:
        LABOR-0, its variates keyed by the SERVERS' ids (a partition's new ids: not the store's blocks)."""
        import dataclasses

        blocks = self.client.sample_typed_blocks(self.to_server(seeds), fanouts, replace, seed, exclude=exclude,
                                                 prob=prob, edge_data=edge_data, labor=labor)
        return [dataclasses.replace(b, src_ids=torch.from_numpy(self.to_loader(b.src_ids.numpy())))
                for b in blocks]

    def fetch_type_features(self, ntype: str, local_ids) -> torch.Tensor:
        """Feature rows of loader type-local ids of ``ntype``."""
        t = self.schema.ntype_id(ntype)
        return self.client.fetch_typed_rows(t, self._server_ids(t, local_ids), False)

    def fetch_type_labels(self, ntype: str, local_ids) -> torch.Tensor:
        """Labels of loader type-local ids of ``ntype``."""
        t = self.schema.ntype_id(ntype)
        return self.client.fetch_typed_rows(t, self._server_ids(t, local_ids), True)

    def _server_ids(self, t: int, local_ids) -> np.ndarray:
        local = ops.as_ids(local_ids)
        return self.to_server(local + self.schema.node_types[t].offset)

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> "TypedServerSampler":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
