"""Typed partitions: what a partition of a typed store (:mod:`bgl.schema`) adds to the untyped one.

The engine partitions all node types together (it sees one graph).  New ids are
the untyped ones, in stable (part, original id) order; a typed store's node
types are contiguous original-id ranges in type order, so inside each part the
new ids come out grouped by type with no extra pass: part ``k``, type ``t`` owns
new ids ``[type_bounds[k*T + t], type_bounds[k*T + t + 1])`` (DistDGL's layout).
A new id's type is one ``searchsorted`` over these ``P*T + 1`` bounds
(``partition.json["type_bounds"]``), and inside one (part, type) block the
original ids are ascending, so an original id's new id is one binary search per
part.  Beyond the untyped partition this costs 1 byte per edge (``etype``) and 8 per node (``key_ids``).

Each part is an ordinary typed store (format version 2) whose schema has the
part's own per-type counts (offsets relative to the part's first id), per-relation
in-edge counts and split sizes: ``etype.npy`` in the part's CSC order (1 byte per
edge, rows keep their relation grouping since rows are copied whole),
``feat/<nt>.npy``, ``label/<nt>.npy`` and ``split/<nt>/<name>_idx.npy`` of the
owned nodes, with split ids PART-type-local (``new id - type_bounds[k*T + t]``), and
``key_ids.npy`` (int64 [part nodes], 8 bytes per node): each owned node's original id, the
stream key its samples draw from (:func:`bgl.sampler.typed.sampling.stream_keys`), so a part samples
exactly the store's edges.

Training balance: the training nodes are the ``train`` splits of every type
that has one (usually one target type, e.g. ``paper``); with several such types,
their union is balanced as one set.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from bgl.schema import GraphSchema

from bgl.sampler.typed.sampling import KEY_IDS

from . import _kernels

CHUNK_ROWS = 1 << 20


def train_mask(store) -> np.ndarray:
    """float64 [n] over global ids: 1 for each node in some type's ``train`` split."""
    is_train = np.zeros(store.num_nodes, np.float64)
    for t in store.schema.node_types:
        ids = store.type_splits.get(t.name, {}).get("train")
        if ids is not None:
            is_train[np.asarray(ids) + t.offset] = 1.0
    return is_train


def type_bounds(schema: GraphSchema, orig_ids: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """int64 [P*T + 1]: part ``k``, type ``t`` owns new ids ``[tb[k*T + t], tb[k*T + t + 1])``."""
    num_parts, offsets = bounds.shape[0] - 1, schema.offsets
    out = np.empty(num_parts * len(schema.node_types) + 1, np.int64)
    for k in range(num_parts):
        block = orig_ids[bounds[k]:bounds[k + 1]]  # ascending original ids, so grouped by type
        out[k * len(schema.node_types):(k + 1) * len(schema.node_types)] = \
            bounds[k] + np.searchsorted(block, offsets[:-1])
    out[-1] = bounds[-1]
    return out


def write_part_types(store, w, rows: np.ndarray, indptr: np.ndarray, new_of: np.ndarray,
                     node_start: int) -> int:
    """Write part ``rows``' typed arrays (etype, per-type features/labels/splits) and schema into
    the part's :class:`~bgl.store.StoreWriter` ``w``; returns the part's training-node count.

    ``rows`` : sorted original ids of the part; ``indptr`` : the part's CSC row pointers;
    ``new_of`` : int64 [n] original -> new id; ``node_start`` : the part's first new id.
    """
    from bgl.codec.typed_rows import type_codecs

    schema, codecs = store.schema, type_codecs(store)
    src_ptr = np.asarray(store.indptr)
    etype = np.empty(int(indptr[-1]), store.etype.dtype)
    for a in range(0, rows.size, CHUNK_ROWS):
        b = min(rows.size, a + CHUNK_ROWS)
        pos = np.empty(int(indptr[b] - indptr[a]), np.int64)
        _kernels.row_positions(src_ptr, rows[a:b], pos)
        etype[indptr[a]:indptr[b]] = store.etype[pos]
    w.save_typed("etype", etype)
    starts = np.searchsorted(rows, schema.offsets)  # type t's rows are rows[starts[t]:starts[t+1]]
    num_train, types = 0, []
    for i, t in enumerate(schema.node_types):
        local = rows[starts[i]:starts[i + 1]] - t.offset  # original type-local ids, ascending
        if t.name in store.type_feat:
            w.save_typed(f"feat/{t.name}", _take_rows(store.type_feat[t.name], local))
        if t.name in codecs:
            w.save_typed(f"feat/{t.name}.{codecs[t.name].name}", _take_rows(store.type_feat_encoded[t.name], local))
        if t.name in store.type_label:
            w.save_typed(f"label/{t.name}", np.asarray(store.type_label[t.name])[local].astype(np.int64))
        lo = node_start + int(starts[i])
        hi = node_start + int(starts[i + 1])
        sizes = {}
        for name, ids in store.type_splits.get(t.name, {}).items():
            new = new_of[np.asarray(ids, np.int64) + t.offset]
            mine = np.sort(new[(new >= lo) & (new < hi)]) - lo
            w.save_typed(f"split/{t.name}/{name}_idx", mine)
            sizes[name] = int(mine.size)
            num_train += int(mine.size) if name == "train" else 0
        types.append(dataclasses.replace(t, splits=sizes))
    save_part_schema(w, schema, types, np.diff(starts), etype, rows, codecs, store.meta.feat_float32)
    return num_train


def save_part_schema(w, schema: GraphSchema, types: list, counts: np.ndarray, etype: np.ndarray,
                     key_ids: np.ndarray, codecs: dict, float32: bool) -> None:
    """The end of a typed part store: its ``key_ids`` and its schema (``types`` with the part's split
    sizes, ``counts`` int [T] its nodes per type, relation counts from its ``etype``), and the store's
    per-type codecs when it has any; shared by the one-machine and the distributed writer."""
    from bgl.codec.typed_rows import TypeCodecs

    edge_counts = np.bincount(etype.astype(np.int64), minlength=len(schema.edge_types))
    part = GraphSchema(tuple(types), schema.edge_types).with_counts(counts, edge_counts)
    w.save_typed(KEY_IDS, np.asarray(key_ids, np.int64))  # stream keys: samples as the store's (sampler/typed/sampling.py)
    w.set_schema({**part.to_dict(), KEY_IDS: True})
    if codecs:  # each part keeps its types' encoded rows, under the store's codecs (version 3)
        w.set_feat_codec(TypeCodecs(codecs), float32=float32)


def _take_rows(array, local: np.ndarray) -> np.ndarray:
    """``array[local]`` (2-D rows) read in chunks, so a part never maps a whole type's features at once."""
    out = np.empty((local.size,) + array.shape[1:], array.dtype)
    for a in range(0, local.size, CHUNK_ROWS):
        out[a:a + CHUNK_ROWS] = array[local[a:a + CHUNK_ROWS]]
    return out


class TypedBook:
    """The typed views of a :class:`~bgl.partition.format.PartitionBook` (mixed in).

    ``schema`` is the whole graph's :class:`~bgl.schema.GraphSchema` (None for an untyped
    partition) and ``type_bounds`` its int64 [P*T + 1] table (see the module docstring).
    """

    schema: GraphSchema | None
    type_bounds: np.ndarray | None
    orig_ids: np.ndarray
    num_parts: int

    def _typed(self) -> GraphSchema:
        if self.schema is None:
            raise ValueError(f"{self.path} is an untyped partition (no node types)")
        return self.schema

    def type_of(self, new_ids) -> np.ndarray:
        """Node type index (int64) of each new id."""
        schema = self._typed()
        self.owner(new_ids)  # range check, ValueError naming a bad id
        block = np.searchsorted(self.type_bounds, np.asarray(new_ids, np.int64), side="right") - 1
        return block % len(schema.node_types)

    def to_new(self, ntype: str, local_ids) -> np.ndarray:
        """New global ids of original type-local ids ``local_ids`` of ``ntype`` (DGL's per-type ids);
        ValueError naming the type and the id for one outside the type's range."""
        schema = self._typed()
        t = schema.ntype_id(ntype)
        nt = schema.node_types[t]
        ids = np.asarray(local_ids, np.int64)
        if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= nt.count):
            bad = int(ids.min()) if int(ids.min()) < 0 else int(ids.max())
            raise ValueError(f"id {bad} of node type {ntype!r} outside [0, {nt.count})")
        orig = ids + nt.offset
        out = np.full(ids.shape, -1, np.int64)
        T = len(schema.node_types)
        for k in range(self.num_parts):
            lo, hi = int(self.type_bounds[k * T + t]), int(self.type_bounds[k * T + t + 1])
            block = np.asarray(self.orig_ids[lo:hi])
            pos = np.minimum(np.searchsorted(block, orig), max(hi - lo - 1, 0))
            hit = (block[pos] == orig) if hi > lo else np.zeros(orig.shape, bool)
            out[hit] = lo + pos[hit]
        return out

    def to_new_global(self, orig_gids) -> np.ndarray:
        """New ids of original GLOBAL ids (a type's offset + its per-type id): :meth:`to_new` per type."""
        schema = self._typed()
        gids = np.asarray(orig_gids, np.int64)
        types = schema.type_of(gids)
        out = np.empty_like(gids)
        for t, nt in enumerate(schema.node_types):  # a loop over types, not nodes
            sel = types == t
            if sel.any():
                out[sel] = self.to_new(nt.name, gids[sel] - nt.offset)
        return out

    def to_orig(self, new_ids) -> tuple[np.ndarray, np.ndarray]:
        """``(type index, original type-local id)`` of each new id, int64 each."""
        schema = self._typed()
        types = self.type_of(new_ids)
        return types, np.asarray(self.orig_ids)[np.asarray(new_ids, np.int64)] - schema.offsets[types]

    def type_split(self, ntype: str, name: str) -> np.ndarray:
        """New global ids of one split of ``ntype`` over all parts, ascending: int64 [m]."""
        t = self._typed().ntype_id(ntype)
        T = len(self.schema.node_types)
        out = []
        for k in range(self.num_parts):
            ids = self.part_store(k).type_splits.get(ntype, {}).get(name)
            if ids is not None:
                out.append(np.asarray(ids) + self.type_bounds[k * T + t])
        return np.concatenate(out) if out else np.empty(0, np.int64)
