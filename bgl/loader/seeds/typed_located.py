"""A heterogeneous DGLGraph's seed edges located in its fused CSC per batch, not held per seed edge.

Typed link prediction needs, per seed edge, its destination (the node seed), its CSC position (its
source is read there, and ``exclude="self"`` drops it) and, under ``exclude="reverse_types"``, its
partner's position.  Held for the loader's life these were 12 B a seed edge beyond its id and
relation (int32 each): 110 MiB for the 9.6M seed edges of the recommendation benchmark's power-law
graph, alive through the evaluation's full-graph forward, where DGL's loop reaches its peak (issue #57).
Per batch they cost a gather and a few binary searches:

* destination: relation ``r``'s edge ``k`` ends at ``dst_r[k]``, a gather from the graph's own COO in
  edge-id order (DGL's arrays, read in place: nothing copied);
* position: the destination's row holds relation ``r``'s edges as one span in ascending edge id, so
  two binary searches of ``etype`` and one of ``edge_ids``
  (:func:`~._typed_edge_kernels.ids_to_positions`);
* reverse: DGL's reverse of edge ``k`` is edge ``k`` of the partner relation, located the same way.

Measured on that graph (``exclude="reverse_types"``, batch 1024): the batch's seed-edge step (node seeds,
negatives, exclusion) went from 0.25 to 0.75-0.78 ms of CPU in the producer, against a ~180 ms model step;
the kernel's share (0.2 ms, GIL released) is cache misses in hub items' rows.  The loader's construction
is 0.45 s of CPU cheaper: no O(E) pass, no id -> position map (4 B per edge of the graph).  Pickled for a stage
process, the COO views travel as int32 copies where ids fit (4 B per edge of each seeded relation and
its partner).
"""
from __future__ import annotations

from typing import Optional

import numpy as np


class LocatedSeeds:
    """Per relation (seeded, or the partner of one), its destination ids in edge-id order (type-local,
    a read-only view of the graph's COO) and its destination type's global offset.

    ``reverse_types`` int64 [R]: each relation's ``reverse_etypes`` partner (-1: none), or None when
    reverses are not excluded by type.
    """

    def __init__(self, rel_dst: dict, dst_offsets: np.ndarray, reverse_types: Optional[np.ndarray] = None):
        self.rel_dst, self.dst_offsets, self.reverse_types = rel_dst, dst_offsets, reverse_types

    @classmethod
    def of_graph(cls, graph, schema, relations, reverse_types: Optional[np.ndarray] = None) -> "LocatedSeeds":
        """``graph``'s (a DGLGraph's, a ``bgl.dgl`` graph's) COO destinations of ``relations`` and, with
        ``reverse_types``, of their partners; ``schema`` the graph's :class:`~bgl.schema.GraphSchema`."""
        import torch

        wanted = {int(r) for r in relations}
        if reverse_types is not None:
            wanted |= {int(reverse_types[r]) for r in list(wanted) if reverse_types[r] >= 0}
        rel_dst = {}
        for r in sorted(wanted):
            _, dst = graph.edges(etype=schema.canonical_etypes[r], order="eid")
            rel_dst[r] = dst.cpu().numpy() if torch.is_tensor(dst) else np.asarray(dst)
        dst_types = schema.relation_ends()[1]
        offsets = np.asarray(schema.offsets, np.int64)[np.asarray(dst_types, np.int64)]
        return cls(rel_dst, offsets, reverse_types)

    def __getstate__(self) -> dict:
        """Narrow copies for a stage process (a view of the graph's memory does not travel)."""
        from ...schema import id_dtype_for

        narrow = {r: a.astype(id_dtype_for(int(a.max(initial=0)) + 1), copy=False) for r, a in self.rel_dst.items()}
        return {**self.__dict__, "rel_dst": narrow}

    def destinations(self, rel: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """int64 global destination ids of the edges ``ids`` (each of relation ``rel[j]``).

        The batch is grouped by relation with one stable sort, each group gathered once: O(B log B) for
        a batch of B edges however many relations the schema has (a boolean mask per relation present
        was O(R x B), for schemas with hundreds of seeded relations)."""
        out = np.empty(ids.shape[0], np.int64)
        if ids.shape[0] == 0:
            return out
        order = np.argsort(rel, kind="stable")
        grouped = rel[order]
        cuts = np.flatnonzero(grouped[1:] != grouped[:-1]) + 1
        for part in np.split(order, cuts):
            r = int(rel[part[0]])
            rows = self.rel_dst[r][ids[part]].astype(np.int64, copy=False)  # a fresh gather, widened
            rows += int(self.dst_offsets[r])  # in int64: a relation's narrowed ids plus an offset could overflow
            out[part] = rows
        return out

    def positions(self, csc, rel: np.ndarray, ids: np.ndarray, rows: Optional[np.ndarray] = None) -> np.ndarray:
        """int64 CSC positions of the edges ``ids`` of relations ``rel`` in ``csc`` (the sampler's typed
        CSC: ``indptr``, ``etype``, ``edge_ids``); ``rows`` their destinations when known."""
        from ._typed_edge_kernels import ids_to_positions

        rel, ids = rel.astype(np.int64, copy=False), ids.astype(np.int64, copy=False)
        rows = self.destinations(rel, ids) if rows is None else rows
        out = np.empty(ids.shape[0], np.int64)
        ids_to_positions(np.asarray(csc.indptr), np.asarray(csc.etype), np.asarray(csc.edge_ids), rows, rel, ids,
                         out)
        if out.size and int(out.min()) < 0:
            j = int(np.argmax(out < 0))
            raise RuntimeError(f"edge {int(ids[j])} of relation {int(rel[j])} is not in the sampler's CSC: the "
                               "graph's edges changed after the loader was built")
        return out

    def reverse(self, csc, rel: np.ndarray, ids: np.ndarray) -> Optional[np.ndarray]:
        """int64 CSC positions of each edge's ``reverse_etypes`` partner (edge ``ids[j]`` of the partner
        relation; -1 where its relation has none); None when reverses are not excluded by type."""
        if self.reverse_types is None:
            return None
        partner = self.reverse_types[rel.astype(np.int64)]
        out = np.full(ids.shape[0], -1, np.int64)
        has = partner >= 0
        if has.any():
            out[has] = self.positions(csc, partner[has], ids[has])
        return out
