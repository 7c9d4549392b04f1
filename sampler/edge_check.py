"""Edge existence over graph servers, for ``GlobalUniform`` negatives (DGL's semantics: a negative
pair is never an edge of the graph; on a typed graph, never an edge of its edge type: :class:`RelationEdges`).

A pair ``u -> v`` is an edge iff ``u`` is in the CSC row of ``v``, and that row lives on the
server owning ``v``.  :class:`ServerEdgeCheck` asks for the candidates' distinct destination rows
whole (an ordinary SAMPLE with ``fanout=-1``, so co-located parts are read in place and nothing
new crosses the wire protocol) and scans them (:func:`._edge_kernels.has_edges`), giving the
answers the whole store's CSC gives: negatives from servers equal a store's, bit for bit.

Cost per batch: the in-degrees of the distinct candidate destinations, 4-8 bytes each (about
``1.3 k b`` rows of average in-degree for ``k`` negatives per positive over ``b`` positives, uniform
destinations having the mean degree); a dedicated existence op would move ~17 bytes per
candidate instead, worth it only where those rows are far longer than 2-4 entries on average.
"""
from __future__ import annotations

import numpy as np

from . import _edge_kernels as EK


class ServerEdgeCheck:
    """``edges_exist(src, dst)`` over any sampler with ``sample_layer`` (a
    :class:`~bgl.sampler.client.SamplingClient`, or a local sampler)."""

    def __init__(self, sampler):
        self.sampler = sampler

    def edges_exist(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """int8 [n]: 1 where ``src[j] -> dst[j]`` is an edge (global ids, int64 [n] each)."""
        src = np.ascontiguousarray(src, dtype=np.int64)
        dst = np.ascontiguousarray(dst, dtype=np.int64)
        if src.shape != dst.shape:
            raise ValueError(f"edges_exist: {src.shape[0]} sources for {dst.shape[0]} destinations")
        out = np.zeros(src.shape[0], np.int8)
        if not src.size:
            return out
        rows = np.unique(dst)
        counts, nbrs, *_ = self.sampler.sample_layer(rows, -1, False, 0)
        indptr = np.zeros(rows.shape[0] + 1, np.int64)
        np.cumsum(counts, out=indptr[1:])
        EK.has_edges(indptr, np.ascontiguousarray(nbrs, dtype=np.int64), src, np.searchsorted(rows, dst), out)
        return out


class RelationEdges:
    """``edges_exist(src, dst)`` among the edges of one relation of a typed graph, in its end types'
    TYPE-LOCAL ids: what ``GlobalUniform`` avoids per edge type on a typed graph (DGL's
    ``global_uniform_negative_sampling(etype=)`` tests only that edge type's edges).

    ``graph`` is a typed CSC with ``indptr`` / ``indices`` / ``etype`` (a typed store, a DGLGraph's
    arrays; the relation's span of a row found by binary search,
    :func:`~bgl.sampler.typed._kernels.reverse_positions`), or a typed server sampler
    (:class:`~bgl.sampler.typed.remote.TypedServerSampler`): the candidates' distinct destination
    rows are asked of their servers with fanout -1 for this relation and 0 for the others, and
    scanned, so the answers (and the negatives) are the store's.
    """

    def __init__(self, graph, rel: int, src_offset: int, dst_offset: int):
        self.graph, self.rel = graph, int(rel)
        self.src_offset, self.dst_offset = int(src_offset), int(dst_offset)

    def edges_exist(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """int8 [n]: 1 where ``src[j] -> dst[j]`` (type-local ids, int64 [n] each) is an edge of the relation."""
        src = np.ascontiguousarray(src, dtype=np.int64) + self.src_offset
        dst = np.ascontiguousarray(dst, dtype=np.int64) + self.dst_offset
        out = np.zeros(src.shape[0], np.int8)
        if not src.size:
            return out
        g = self.graph
        if hasattr(g, "indptr"):
            from .typed._kernels import reverse_positions

            found = np.empty(src.shape[0], np.int64)
            # the position of an edge src -> dst is the "reverse" of dst -> src: the same row scan
            reverse_positions(np.asarray(g.indptr), np.asarray(g.indices), np.asarray(g.etype),
                              dst - int(getattr(g, "node_offset", 0)), src,
                              np.full(src.shape[0], self.rel, np.int64), found)
            return (found >= 0).astype(np.int8)
        g = getattr(g, "sampler", g)  # the loader's sample stage hands servers over as a ServerEdgeCheck
        rows = np.unique(dst)
        fanouts = np.zeros(len(g.schema.edge_types), np.int64)
        fanouts[self.rel] = -1
        counts, nbrs, *_ = g.client.sample_typed_layer(g.to_server(rows), fanouts, False, 0)
        indptr = np.zeros(rows.shape[0] + 1, np.int64)
        np.cumsum(counts, out=indptr[1:])
        EK.has_edges(indptr, np.ascontiguousarray(nbrs, dtype=np.int64), g.to_server(src),
                     np.searchsorted(rows, dst), out)
        return out
