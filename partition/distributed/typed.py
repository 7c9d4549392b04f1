"""Typed stores through ``bgl partition --distributed``: what the ranks add to the untyped path so that
each part is the typed part store the one-machine writer makes (:mod:`bgl.partition.typed_parts`).

The engine partitions the one graph, all node types together, and new ids are numbered as for an
untyped store (stable by part, then original id).  A typed store's node types are contiguous
original-id ranges, so rank r's range ``[lo, hi)`` holds consecutive pieces of a few types, and
inside each part the new ids come out grouped by type: the ``P*T + 1`` type bounds are the running
sum of the nodes of each (part, type), counted on each rank and summed over ranks (no per-node
array is gathered).

Beyond the untyped rows (:mod:`.write`) each rank sends:

- with each in-edge its relation id (``etype``, 1 byte), which arrives in the part's CSC order with
  the rest of the edge's row (rows travel whole, so each keeps its relation grouping);
- per node type, the rows of its nodes of that type: new id, feature row (float and/or encoded
  under the type's codec), label, and membership of each of the type's splits.  One exchange per
  type, since widths and dtypes differ between types.

The writer of part k stores ``etype``, ``feat/<nt>``, ``label/<nt>``, ``split/<nt>/<name>_idx``
(part-type-local ids), ``key_ids`` (each owned node's original id, its sampling stream key) and
the part's schema with its per-type and per-relation counts.

Memory per rank, on top of the untyped path: 1 byte per local in-edge, and the per-type rows of its
own nodes (to send) and of its parts' nodes (received): a share of the graph, as for the untyped
features.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .exchange import Exchange
from .graph import Slice
from .write import Rows, membership, writer_of
from ..typed_parts import save_part_schema

ETYPE = "typed/etype"  # the edge column of the shipped rows (write.py ships every column it is given)


class TypedRows:
    """One rank's typed rows of a typed store, and (after :meth:`ship`) those of the parts it writes.

    ``pieces`` : ``{type index: (a, b)}`` the global original ids ``[a, b)`` of each type in this
    rank's range (``a == b`` for none); ``splits`` : ``{type index: (names, flags uint8 [b-a, S])}``
    their split membership.
    """

    def __init__(self, store, sl: Slice):
        from bgl.codec.typed_rows import type_codecs

        self.store, self.schema, self.codecs = store, store.schema, type_codecs(store)
        self.lo, self.hi = sl.lo, sl.hi
        self.pieces: dict[int, tuple[int, int]] = {}
        self.splits: dict[int, tuple[list[str], np.ndarray]] = {}
        for t, nt in enumerate(self.schema.node_types):
            a, b = max(sl.lo, nt.offset), min(sl.hi, nt.offset + nt.count)
            a, b = (a, b) if a < b else (nt.offset, nt.offset)  # none here: it still joins the exchanges
            self.pieces[t] = (a, b)
            self.splits[t] = membership(store.type_splits.get(nt.name, {}), a - nt.offset, b - nt.offset)
        self.type_bounds: np.ndarray | None = None
        self.received: dict[int, dict[str, np.ndarray]] = {}

    def _own(self, t: int) -> slice:
        """Positions of type ``t``'s piece among this rank's nodes."""
        a, b = self.pieces[t]
        return slice(a - self.lo, b - self.lo) if b > a else slice(0, 0)

    def train_flags(self) -> np.ndarray:
        """float64 [hi-lo]: 1 for this rank's nodes in some type's ``train`` split (what the training
        balance counts, as :func:`bgl.partition.typed_parts.train_mask` on one machine)."""
        out = np.zeros(self.hi - self.lo, np.float64)
        for t, (names, flags) in self.splits.items():
            if "train" in names:
                out[self._own(t)] = flags[:, names.index("train")]
        return out

    def add_etype(self, rows: Rows, sl: Slice) -> None:
        """Add each local in-edge's relation id to the edge columns ``rows`` ships."""
        rows.edges[ETYPE] = np.asarray(self.store.etype[sl.edge_start:sl.edge_start + sl.src.size])

    def ship(self, part: np.ndarray, rel, ex: Exchange) -> None:
        """Compute the type bounds and send each node's typed rows to the writer of its part
        (collective; ``part`` int64 [hi-lo] this rank's assignment, ``rel`` its :class:`~.graph.Relabel`)."""
        T, P = len(self.schema.node_types), rel.bounds.size - 1
        counts = np.zeros(P * T, np.int64)
        for t in self.pieces:
            counts += np.bincount(part[self._own(t)] * T + t, minlength=P * T).astype(np.int64)
        self.type_bounds = np.zeros(P * T + 1, np.int64)
        np.cumsum(ex.allreduce_sum(counts), out=self.type_bounds[1:])
        for t, nt in enumerate(self.schema.node_types):
            cols = self._columns(t, *self.pieces[t], rel.new_ids[self._own(t)])
            names = list(cols)
            got, _ = ex.route([cols[k] for k in names], writer_of(part[self._own(t)], ex.size))
            order = np.argsort(got[0], kind="stable")  # by new id: each part's type block is a run
            self.received[t] = {k: v[order] for k, v in zip(names, got)}

    def _columns(self, t: int, a: int, b: int, new_ids: np.ndarray) -> dict[str, np.ndarray]:
        """The typed columns of global ids ``[a, b)`` of type ``t`` (every rank the same keys, dtypes, widths)."""
        nt, store = self.schema.node_types[t], self.store
        lo, hi = a - nt.offset, b - nt.offset
        cols = {"new_id": np.asarray(new_ids, np.int64)}
        if nt.name in store.type_feat:
            cols["feat"] = np.asarray(store.type_feat[nt.name][lo:hi])
        if nt.name in self.codecs:
            cols["encoded"] = np.asarray(store.type_feat_encoded[nt.name][lo:hi])
        if nt.name in store.type_label:
            cols["label"] = np.asarray(store.type_label[nt.name][lo:hi], np.int64)
        if self.splits[t][0]:
            cols["splits"] = self.splits[t][1]
        return cols

    def write_part(self, w, k: int, part: Rows) -> int:
        """Write part ``k``'s typed arrays and schema into its :class:`~bgl.store.StoreWriter` ``w``
        (``part`` : its rows in new-id order, as :func:`.write.write_parts` holds them);
        returns the part's training-node count."""
        T = len(self.schema.node_types)
        etype = part.edges[ETYPE]
        w.save_typed("etype", etype)
        num_train, types, counts = 0, [], np.zeros(T, np.int64)
        for t, nt in enumerate(self.schema.node_types):
            lo, hi = int(self.type_bounds[k * T + t]), int(self.type_bounds[k * T + t + 1])
            got = self.received[t]
            s, e = np.searchsorted(got["new_id"], [lo, hi])
            if not np.array_equal(got["new_id"][s:e], np.arange(lo, hi, dtype=np.int64)):
                raise RuntimeError(f"part {k}: received {nt.name!r} rows do not cover new ids [{lo}, {hi})")
            counts[t] = hi - lo
            if "feat" in got:
                w.save_typed(f"feat/{nt.name}", got["feat"][s:e])
            if "encoded" in got:
                w.save_typed(f"feat/{nt.name}.{self.codecs[nt.name].name}", got["encoded"][s:e])
            if "label" in got:
                w.save_typed(f"label/{nt.name}", got["label"][s:e])
            names, sizes = self.splits[t][0], {}
            for j, name in enumerate(names):
                ids = np.flatnonzero(got["splits"][s:e, j]).astype(np.int64)  # part-type-local ids
                w.save_typed(f"split/{nt.name}/{name}_idx", ids)
                sizes[name] = int(ids.size)
                num_train += int(ids.size) if name == "train" else 0
            types.append(dataclasses.replace(nt, splits=sizes))
        save_part_schema(w, self.schema, types, counts, etype, part.nodes["orig_id"], self.codecs,
                         self.store.meta.feat_float32)
        return num_train

    def partition_meta(self) -> dict:
        """What ``partition.json`` of a typed partition adds (:mod:`bgl.partition.format`, version 2)."""
        from ..format import TYPED_FORMAT_VERSION

        return {"version": TYPED_FORMAT_VERSION, "schema": self.schema.to_dict(),
                "type_bounds": self.type_bounds.tolist()}
