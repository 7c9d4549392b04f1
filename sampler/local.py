"""In-process sampler over one graph store (whole graph or one partition part), no sockets."""
from __future__ import annotations

import os
from typing import Sequence

import numpy as np
import torch

from bgl.blocks import Block
from bgl.store import GraphStore

from . import multilayer, ops
from .edge_ids import ids_at
from .exclusion import edge_positions
from .row_gather import take_rows


class LocalSampler:
    """Samples blocks and fetches features straight from a memmapped :class:`GraphStore`.

    Seeds and ids are GLOBAL ids; a part store (``node_offset != 0``) answers
    only for the ids it owns and raises ``ValueError`` for others.  Same API
    as :class:`bgl.sampler.SamplingClient`, and for the same ``seed`` the same
    blocks (edge ids aside, which only a local sampler knows).

    Parameters
    ----------
    store : GraphStore, a store directory, or any object with its read API
        (``indptr``, ``indices``, ``feat``, ``label``, ``node_offset``, ...), such as
        :class:`bgl.loader.graph_arrays.GraphArrays` over a DGLGraph's tensors
    prob : optional float [num_edges] per-edge sampling weights (CSC order) used when a call names
        none; calls name one of the store's edge arrays with ``prob=`` instead (weights or a bool mask)
    node_time : optional int64 [global_num_nodes] node times for :meth:`sample_temporal`
    """

    def __init__(self, store: GraphStore | str, prob: np.ndarray | None = None, node_time=None):
        self.store = GraphStore(store) if isinstance(store, (str, os.PathLike)) else store
        self._node_time = node_time
        self._temporal = None
        self._indptr = np.asarray(self.store.indptr)
        self._indices = self.store.indices
        self.prob = None if prob is None else ops.check_weights(prob, self.store.num_edges, "prob")
        self._weights = ops.EdgeWeights(self.store)
        # Arrays over a DGLGraph know each CSC position's edge id (a store's ids are its positions).
        edge_ids = getattr(self.store, "edge_ids", None)
        self._edge_ids = None if edge_ids is None else np.asarray(edge_ids)
        self._edge_pos = None  # their inverse, built at the first excluding call (O(edges), once)
        # dense relabel markers over the global id space (hash fallback for huge ones)
        self._relabel = ops.Relabeler(self.store.global_num_nodes)

    # ---------------------------------------------------------------- sampling
    def sample_layer(self, dst: np.ndarray, fanout: int, replace: bool, seed: int, prob: str | None = None,
                     edge_data: Sequence[str] = (), labor: tuple[int, float] | None = None, exclude=None):
        """One layer: (counts int64 [m], nbrs [e] global ids, eids int64 [e]: the store's CSC
        positions, or the graph's own edge ids when the store carries ``edge_ids``), plus
        ``{name: rows [e, ...]}`` of the sampled edges when ``edge_data`` names edge arrays.

        ``prob``: name of the edge array (weights or bool mask) to sample by; None = uniform
        (or the constructor's ``prob`` array); ``labor`` = ``(seed2, mix)`` samples by LABOR;
        edges whose id is in ``exclude`` (sorted int64) are never drawn (uniform sampling only)."""
        weights = self.prob if prob is None else self._weights(prob)
        arrays = [self._edge_array(name) for name in edge_data]
        if labor is not None:
            if prob is not None:
                raise ValueError("LABOR with edge weights (prob=) is not supported; use NeighborSampler(prob=)")
            if exclude is not None and len(exclude):
                raise ValueError("LABOR with excluded edges is not supported")
            counts, nbrs, eids = ops.sample_labor(self._indptr, self._indices, dst, self.store.node_offset,
                                                  fanout, seed, labor[0], labor[1])
        else:
            if exclude is not None and len(exclude) and self._edge_ids is not None and self._edge_pos is None:
                self._edge_pos = edge_positions(self._edge_ids)
            counts, nbrs, eids = ops.sample_neighbors(self._indptr, self._indices, dst, self.store.node_offset,
                                                      fanout, replace, seed, prob=weights, exclude=exclude,
                                                      edge_ids=self._edge_ids, edge_pos=self._edge_pos)
        rows = {name: np.take(arr, eids, axis=0) for name, arr in zip(edge_data, arrays)}
        if self._edge_ids is not None:
            eids = ids_at(self._edge_ids, eids)
        return (counts, nbrs, eids, rows) if edge_data else (counts, nbrs, eids)

    def _edge_array(self, name: str) -> np.ndarray:
        try:
            return self.store.edge_array(name)
        except KeyError as e:
            raise ValueError(e.args[0]) from None

    def sample_blocks(self, seeds, fanouts: Sequence[int], replace: bool = False,
                      seed: int | None = None, prob: str | None = None,
                      edge_data: Sequence[str] = (), labor: "multilayer.Labor | None" = None,
                      exclude=None) -> list[Block]:
        """Blocks for ``seeds`` (global ids, unique); ``blocks[-1].dst_ids == seeds``; ``prob`` names
        the edge array to sample by (DGL's ``prob=`` / ``mask=``); each block's ``edata[name]``
        holds the rows of the edge arrays ``edge_data`` names for its sampled edges; ``labor``
        (:class:`~bgl.sampler.multilayer.Labor`) samples by LABOR; no edge whose id is in
        ``exclude`` appears in any block."""
        return multilayer.sample_blocks(seeds, fanouts, replace, seed, self.sample_layer, self._relabel,
                                        prob=prob, edge_data=edge_data, labor=labor, exclude=exclude)

    # ---------------------------------------------------------------- temporal
    def temporal_layer(self, dst, times, fanout: int, strategy: str, seed: int, time_name: str | None = "timestamp",
                       node_time_name: str | None = None, prob_name: str | None = None):
        """One temporal layer (:class:`bgl.sampler.temporal.sampling.TemporalLayer`): ``(counts, nbrs, eids,
        edge_time)``, eids the graph's own edge ids when the store carries ``edge_ids``; ``node_time_name``
        names the store's node array of times (instead of in-process ``node_time``), ``prob_name`` its edge
        array of weights (drawn among the eligible edges by weight)."""
        from .temporal.sampling import TemporalLayer

        if self._temporal is None:
            self._temporal = TemporalLayer(self.store, self._node_time)
        counts, nbrs, eids, etime = self._temporal(dst, times, fanout, strategy, seed, time_name=time_name,
                                                   node_time_name=node_time_name, prob_name=prob_name)
        if self._edge_ids is not None:
            eids = ids_at(self._edge_ids, eids)
        return counts, nbrs, eids, etime

    def sample_temporal(self, seeds, seed_times, fanouts: Sequence[int], strategy: str = "uniform",
                        seed: int | None = None, time_name: str | None = "timestamp", node_time_name: str | None = None):
        """A disjoint multi-hop temporal sample (:func:`bgl.sampler.temporal.sampling.sample_temporal`): no edge
        (and, with ``node_time`` or the store's node array ``node_time_name``, no node) newer than its
        subgraph's seed time; ``time_name`` names the store's int64 edge array of times (None: node times only)."""
        import functools

        from .temporal.sampling import sample_temporal

        layer = functools.partial(self.temporal_layer, node_time_name=node_time_name)
        return sample_temporal(layer, seeds, seed_times, fanouts, strategy, seed, time_name)

    # ---------------------------------------------------------------- typed graphs
    @property
    def schema(self):
        """The store's :class:`bgl.schema.GraphSchema` (one type for a homogeneous store)."""
        return self.store.schema

    def sample_typed_layer(self, dst: np.ndarray, fanouts: np.ndarray, replace: bool, seed: int, exclude=None,
                           prob: str | None = None, edge_data=(), labor=None):
        """One typed layer: (counts, nbrs, eids, etypes), plus ``{name: rows}`` of the sampled edges when
        ``edge_data`` names edge arrays; ``fanouts`` int64 [R], one per relation; ``exclude``: CSC
        positions never drawn (a typed graph's edges are excluded by position, since a DGLGraph's own
        ids repeat across relations); ``prob``: the edge array (weights or bool mask) each relation draws by;
        ``labor`` = ``(seed2, mix)``: LABOR-0 instead."""
        from .typed.sampling import sample_typed_store, stream_keys

        if not hasattr(self, "_keys"):
            self._keys = stream_keys(self.store)
        # a DGLGraph's own edge ids are gathered in the neighbours' pass (sample_typed_store)
        return sample_typed_store(self.store, self._indptr, dst, fanouts, replace, seed, self._keys, exclude=exclude,
                                  prob=self._weights(prob), edge_data=edge_data, labor=labor, edge_ids=self._edge_ids)

    def sample_typed_blocks(self, seeds, fanouts: Sequence[np.ndarray], replace: bool = False,
                            seed: int | None = None, exclude=None, prob: str | None = None,
                            edge_data=(), labor=None) -> list[Block]:
        """Typed blocks for global ``seeds``: ``fanouts[l]`` int64 [R] per relation (DGL order); no
        edge at a CSC position in ``exclude`` (sorted int64) appears in any block; ``prob`` names the
        edge array every relation draws by (DGL's ``prob=`` / ``mask=``; None = uniform); each block's
        ``edata[name]`` holds the sampled edges' rows of the edge arrays ``edge_data`` names; ``labor``
        (:class:`~bgl.sampler.multilayer.Labor`) samples every layer by LABOR-0."""
        return multilayer.sample_typed_blocks(seeds, fanouts, replace, seed, self.sample_typed_layer,
                                              self._relabel, exclude=exclude, prob=prob, edge_data=edge_data,
                                              labor=labor)

    def fetch_type_features(self, ntype: str, local_ids) -> torch.Tensor:
        """Feature rows of type-local ``local_ids`` of node type ``ntype`` (that type's width and dtype; its
        encoded rows when the type has a codec, bgl/codec/typed_rows.py)."""
        from bgl.codec.typed_rows import type_feat_rows

        feat = type_feat_rows(self.store, ntype)
        if feat is None:
            raise ValueError(f"node type {ntype!r} of {self.store.path} has no features")
        # One row gather on this thread's torch threads, as the untyped fetch stage does for a local store:
        # the parallel numba gather competes with the trainer's torch threads inline (row_gather.py).
        return torch.from_numpy(take_rows(np.asarray(feat), _type_local(local_ids, feat.shape[0], ntype)))

    def fetch_type_labels(self, ntype: str, local_ids) -> torch.Tensor:
        """int64 labels of type-local ``local_ids`` of node type ``ntype``."""
        label = self.store.type_label.get(ntype)
        if label is None:
            raise ValueError(f"node type {ntype!r} of {self.store.path} has no labels")
        return torch.from_numpy(np.take(np.asarray(label), _type_local(local_ids, label.shape[0], ntype)))

    # ---------------------------------------------------------------- features
    def fetch_features(self, ids) -> torch.Tensor:
        """Feature rows [n, feat_dim] of global ``ids`` (store dtype); a store with a feature codec
        gives its encoded rows [n, codec.row_width] (:attr:`feat_codec`; bgl/codec)."""
        rows = getattr(self.store, "feat_rows", self.store.feat)  # a DGLGraph's arrays have no codec
        if rows is None:
            raise ValueError(f"store {self.store.path} has no features")
        return torch.from_numpy(ops.gather(rows, ids, self.store.node_offset))

    def fetch_labels(self, ids) -> torch.Tensor:
        """int64 [n] labels of global ``ids`` (-1 = unlabelled)."""
        if self.store.label is None:
            raise ValueError(f"store {self.store.path} has no labels")
        return torch.from_numpy(ops.gather(self.store.label, ids, self.store.node_offset))

    def fetch_features_and_labels(self, feat_ids, label_ids) -> tuple[torch.Tensor, torch.Tensor]:
        """``(fetch_features(feat_ids), fetch_labels(label_ids))``, as SamplingClient's one-round-trip call."""
        return self.fetch_features(feat_ids), self.fetch_labels(label_ids)

    # -------------------------------------------------------------- properties
    @property
    def num_nodes(self) -> int:
        """Global number of nodes (of the whole graph, also for a part store)."""
        return self.store.global_num_nodes

    @property
    def feat_dim(self) -> int:
        """Feature columns (0 when the store has no features)."""
        return self.store.feat_dim

    @property
    def feat_dtype(self) -> torch.dtype | None:
        """torch dtype of the (decoded) feature rows, or None without features."""
        name = getattr(self.store, "feat_dtype_name", None if self.store.feat is None else self.store.feat.dtype.name)
        return None if name is None else torch.from_numpy(np.empty(0, np.dtype(name))).dtype

    @property
    def feat_codec(self):
        """The store's :class:`bgl.codec.RowCodec` (its rows come encoded), or None."""
        return getattr(self.store, "feat_codec", None)

    @property
    def num_classes(self) -> int:
        """Number of label classes of the store."""
        return self.store.num_classes

    def close(self) -> None:
        """Nothing to release (memmaps close with the store); kept for API symmetry."""

    def __enter__(self) -> "LocalSampler":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _type_local(ids, count: int, ntype: str) -> np.ndarray:
    """int64 type-local ids, checked against the type's node count (ValueError naming the type)."""
    ids = ops.as_ids(ids, "ids")
    if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= count):
        raise ValueError(f"ids of node type {ntype!r} outside [0, {count})")
    return ids
