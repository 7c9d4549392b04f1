"""Temporal sampling over graph servers: the client side (mixed into :class:`~bgl.sampler.client.SamplingClient`).

A layer sends one temporal SAMPLE (:mod:`.frames`) per owning server, seeds and their
times side by side; co-located parts are read here by the same :class:`~bgl.sampler.temporal.sampling.TemporalLayer`
the servers run, so a layer equals the local store's edge for edge (a row's draw depends on
its global id, its time and the seed only).  Edge ids come back as each part's CSC positions
and are numbered globally by :attr:`SamplingClient.edge_bounds`.
"""
from __future__ import annotations

import functools
from typing import Sequence

import numpy as np

from bgl.errors import ProtocolError

from .. import _kernels as K
from .. import ops
from .. import protocol as P
from . import sampling as T
from .frames import temporal_request


class TemporalClient:
    """Temporal sampling across the servers, mixed into SamplingClient (uses its ``addresses``,
    ``edge_bounds``, ``_split``, ``_answer``, ``_local`` and ``_ids``)."""

    def temporal_layer(self, dst, times, fanout, strategy: str, seed: int,
                       time_name: str | None = T.DEFAULT_TIME_NAME, node_time_name: str | None = None,
                       prob_name: str | None = None):
        """One temporal layer: ``(counts int64 [m], nbrs int64 [e], eids int64 [e] global edge ids,
        edge_time int64 [e])`` in ``dst`` order, as :class:`~bgl.sampler.temporal.sampling.TemporalLayer`;
        ``time_name`` names the servers' int64 edge array of times, ``node_time_name`` their node array
        of times (each part filters by its copy of its in-edges' source times), ``prob_name`` their edge
        array of weights (untyped servers: drawn by weight among the eligible edges).
        On typed servers ``fanout`` is an int64 [R] array, one per relation, and ``etypes`` int64 [e]
        follows (:class:`~bgl.sampler.temporal.typed.TypedTemporalLayer`'s result)."""
        from bgl.schema import check_edge_name

        typed = isinstance(fanout, np.ndarray)
        if typed:
            fanout = ops.check_relation_fanouts(fanout, self._typed().canonical_etypes)
        else:
            fanout = ops.check_fanout(fanout)
        T.check_strategy(strategy)
        dst = ops.as_ids(dst, "seeds")
        times = T.check_times(times, dst.shape[0], "seed times")
        if time_name is None and node_time_name is None:
            raise ValueError("temporal sampling over graph servers needs an edge time array (time_name=) or a "
                             "node time array (node_time_name=) of theirs")
        for name in (time_name, node_time_name, prob_name):
            if name is not None:
                check_edge_name(name)
        order, groups = self._split(dst)
        ids, ts = dst[order], times[order]
        args = (fanout, strategy, seed, time_name, node_time_name, prob_name)
        jobs = [(s, functools.partial(self._temporal_request, ids[a:b], ts[a:b], *args),
                 functools.partial(self._temporal_local, s, ids[a:b], ts[a:b], *args)) for s, a, b in groups]
        replies = self._answer(jobs, P.Op.SAMPLE)
        counts, nbrs, eids, etimes, rels = [], [], [], [], []
        rows = ["eid", "etype", "time"] if typed else ["eid", "time"]
        for (s, a, b), reply in zip(groups, replies):
            if reply[0].shape[0] != b - a or len(reply) < 3 or sorted(reply[2]) != rows:
                raise ProtocolError(f"{self.addresses[s]} sent a malformed temporal SAMPLE reply "
                                    f"({reply[0].shape[0]} counts for {b - a} seeds)")
            counts.append(reply[0])
            nbrs.append(reply[1].astype(np.int64, copy=False))
            eids.append(reply[2]["eid"].astype(np.int64) + self.edge_bounds[s])
            etimes.append(reply[2]["time"])
            rels.append(reply[2].get("etype", np.zeros(0, np.int64)))
        cat = (lambda xs, dt: np.concatenate(xs).astype(dt, copy=False) if xs else np.zeros(0, dt))
        s_counts, s_nbrs = cat(counts, np.int64), cat(nbrs, np.int64)
        sorted_edges = [cat(eids, np.int64), cat(etimes, np.int64)] + ([cat(rels, np.int64)] if typed else [])
        s_indptr = np.zeros(order.shape[0] + 1, np.int64)
        np.cumsum(s_counts, out=s_indptr[1:])
        if s_indptr[-1] != s_nbrs.shape[0]:
            raise ProtocolError(f"servers returned {s_nbrs.shape[0]} neighbours for counts summing to {s_indptr[-1]}")
        if np.array_equal(order, np.arange(order.shape[0])):
            return (s_counts, s_nbrs, *sorted_edges)
        inv = np.empty_like(order)  # dst position i sits at sorted position inv[i]
        inv[order] = np.arange(order.shape[0])
        out_counts = s_counts[inv]
        out_indptr = np.zeros(order.shape[0] + 1, np.int64)
        np.cumsum(out_counts, out=out_indptr[1:])
        perm = np.empty(s_nbrs.shape[0], np.int64)  # sorted position of each output edge
        K.permute_segments(s_indptr, np.arange(s_nbrs.shape[0], dtype=np.int64), inv, out_indptr, perm)
        return (out_counts, s_nbrs[perm], *(a[perm] for a in sorted_edges))

    def _temporal_request(self, ids, times, fanout, strategy, seed, time_name, node_time_name, prob_name) -> list:
        return temporal_request(next(self._ids), ids, times, fanout, strategy, seed, time_name, node_time_name,
                                prob_name)

    def _temporal_local(self, srv: int, ids, times, fanout, strategy, seed, time_name, node_time_name,
                        prob_name) -> list:
        """A co-located part's reply arrays, drawn here by the layer its server runs."""
        from .frames import layer_for

        layers = self.__dict__.setdefault("_temporal_layers", {})
        if srv not in layers:
            layers[srv] = layer_for(self._local.stores[srv], parallel=True)
        weights = {} if prob_name is None else {"prob_name": prob_name}
        counts, nbrs, eids, etimes, *rel = layers[srv](ids, times, fanout, strategy, seed, time_name=time_name,
                                                       node_time_name=node_time_name, **weights)
        rows = {"eid": eids, "time": etimes}
        if rel:
            rows["etype"] = rel[0]
        return [counts, nbrs, rows]

    def sample_temporal(self, seeds, seed_times, fanouts: Sequence[int], strategy: str = "uniform",
                        seed: int | None = None, time_name: str | None = T.DEFAULT_TIME_NAME,
                        node_time_name: str | None = None) -> T.TemporalSample:
        """A disjoint multi-hop temporal sample over the servers (:func:`bgl.sampler.temporal.sampling.sample_temporal`),
        with the servers' node times ``node_time_name`` too when given."""
        layer = functools.partial(self.temporal_layer, node_time_name=node_time_name)
        return T.sample_temporal(layer, seeds, seed_times, fanouts, strategy, seed, time_name)
