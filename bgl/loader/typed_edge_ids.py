"""A typed graph's edges by the loader's edge ids: relations, endpoints and reverses of a typed store's
CSC positions or a typed partition's edge ids, and a heterogeneous DGLGraph's per-relation ids mapped to
CSC positions (the map: for a callable ``exclude``, in the sample stage, :mod:`bgl.loader.seeds.typed_callables`;
a DGLGraph's seed edges are located per batch instead, :mod:`bgl.loader.seeds.typed_located`).  Read when
typed link prediction's seeds are resolved (:mod:`bgl.loader.seeds.typed_edges`).
"""
from __future__ import annotations

import numpy as np

from .seeds.edges import store_endpoints


def edge_source(info):
    """The edges seed ids name: a local typed store's, or (graph servers) their partition's."""
    if info.store is not None:
        return StoreEdges(info.store)
    if info.partition_dir is None:
        raise ValueError("link prediction over graph servers reads seed-edge endpoints from the partition dir: "
                         "pass it as graph (with BGL_SERVERS set) or set BGL_PARTITION")
    from ..partition.format import open_partition

    return PartitionEdges(open_partition(info.partition_dir))


class StoreEdges:
    """A typed store's (or in-memory arrays') edges by CSC position: relation, endpoints, reverses."""

    kind = "store"

    def __init__(self, store):
        self.store, self.num_edges = store, int(store.num_edges)

    def etype_of(self, pos: np.ndarray) -> np.ndarray:
        return np.asarray(self.store.etype)[pos]

    def endpoints(self, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Global (src, dst) ids of the edges at ``pos``: ``indices[pos]`` and the row holding ``pos``."""
        return store_endpoints(self.store, pos)

    def reverse(self, src: np.ndarray, dst: np.ndarray, rev: np.ndarray) -> np.ndarray:
        """Position of an edge ``dst -> src`` of relation ``rev`` per seed (-1: none; ``rev`` -1: none)."""
        from ..sampler.typed._kernels import reverse_positions

        out = np.full(src.shape[0], -1, np.int64)
        has = rev >= 0
        found = np.empty(int(has.sum()), np.int64)
        s = self.store
        reverse_positions(np.asarray(s.indptr), np.asarray(s.indices), np.asarray(s.etype),
                          src[has] - int(s.node_offset), dst[has], rev[has], found)
        out[has] = found
        return out


class PartitionEdges:
    """A typed partition's edges by partition edge id (part ``k``'s CSC position ``p`` is
    ``edge_bounds[k] + p``, as graph servers number them), node ids the loader's (original) ones."""

    kind = "partition"

    def __init__(self, book):
        self.book, self.num_edges = book, int(book.num_edges)
        self.parts = [StoreEdges(book.part_store(k)) for k in range(book.num_parts)]
        self.node_bounds = np.array([p.store.node_offset for p in self.parts] + [book.num_nodes], np.int64)

    def _by_part(self, ids: np.ndarray, bounds: np.ndarray):
        part = np.searchsorted(bounds, ids, side="right") - 1
        return [(int(k), np.flatnonzero(part == k)) for k in np.unique(part)]

    def etype_of(self, eids: np.ndarray) -> np.ndarray:
        out = np.empty(eids.shape[0], np.int64)
        for k, sel in self._by_part(eids, self.book.edge_bounds):
            out[sel] = self.parts[k].etype_of(eids[sel] - self.book.edge_bounds[k])
        return out

    def endpoints(self, eids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        from .seeds.edges import partition_endpoints

        src, dst = partition_endpoints(self.book, eids)  # the partition's (new) node ids
        orig = np.asarray(self.book.orig_ids)
        return orig[src], orig[dst]

    def reverse(self, src: np.ndarray, dst: np.ndarray, rev: np.ndarray) -> np.ndarray:
        """Partition edge id of each seed's reverse, looked up in the part that owns its source."""
        new_src, new_dst = self.book.to_new_global(src), self.book.to_new_global(dst)
        out = np.full(src.shape[0], -1, np.int64)
        for k, sel in self._by_part(new_src, self.node_bounds):
            found = self.parts[k].reverse(new_src[sel], new_dst[sel], rev[sel])
            out[sel] = np.where(found >= 0, found + self.book.edge_bounds[k], -1)
        return out


def position_map(arrays, num_rel: int):
    """``f(r, ids, dtype=np.int64)``: CSC positions of relation ``r``'s edges ``ids`` (a DGLGraph's
    per-relation ids), from the fused CSC's inverse made in one pass (no sort): 4 bytes per edge while
    positions fit in int32, else 8."""
    from ..sampler._kernels import gather_1d
    from ..sources.typed._csc_kernels import positions_by_relation
    from ..store import id_dtype_for

    etype = np.asarray(arrays.etype)
    starts = np.zeros(num_rel + 1, np.int64)
    np.cumsum(np.bincount(etype, minlength=num_rel), out=starts[1:])
    order = np.empty(etype.shape[0], id_dtype_for(etype.shape[0]))
    positions_by_relation(etype, np.asarray(arrays.edge_ids), starts, order)

    def to_position(r: int, ids: np.ndarray, dtype=np.int64) -> np.ndarray:
        out = np.empty(ids.shape[0], dtype)  # order[starts[r] + ids], no int64 temporary
        gather_1d(order, ids, -starts[r], out)
        return out

    return to_position
