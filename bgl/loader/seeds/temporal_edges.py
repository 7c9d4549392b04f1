"""Temporal link prediction: seed edges with times, each endpoint its own subgraph at its edge's time.

GraphBolt's and PyG's rule, kept: a batch's positive sources, positive destinations, negative
sources and negative destinations are each one seed node, in that order, each at the time of the
seed edge it belongs to (a negative at its positive's time), and no seed is merged with another
(PyG's ``disjoint=True``; GraphBolt's ``compact_temporal_nodes``).  So the batch's
:class:`~bgl.loader.seeds.edges.EdgeBatch` numbers its endpoints ``0 .. 2b + 2q - 1`` and
``blocks[-1].dst_ids`` are those endpoints, as the pair graphs expect.

No edge is excluded by id: the time rule excludes instead.  With PyG's ``<=`` an edge at exactly
the seed's time is eligible, so the seed edge itself can be drawn unless the seed time is set
before it (PyG's examples pass ``edge_label_time = time - 1``; GraphBolt's ``<`` does this itself).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .edges import EdgeBatch, negative_seed
from ..temporal_sampler import TemporalSampling


@dataclass(kw_only=True)
class TemporalEdgeSeeds(TemporalSampling):
    """A temporal link-prediction loader's seeds: ``edges`` (:class:`~bgl.loader.seeds.edges.EdgeSeeds`)
    and ``times`` int64 [num seed edges]; items are positions into both."""

    times: np.ndarray
    edges: object

    def sample_batch(self, sampler, mb):
        """Seed-edge positions -> the batch's endpoint seeds at their edges' times, blocks and ``mb.edges``."""
        pos = mb.seeds.numpy()
        graph = getattr(sampler, "store", None)
        batch, _ = self.edges.batch(pos, negative_seed(mb.sample_seed), graph=graph)
        nodes, times, batch = endpoint_seeds(batch, self.times[pos])
        mb.edges = batch
        mb.seeds, mb.blocks = self.sample(sampler, nodes, times, mb.sample_seed)
        return mb


def endpoint_seeds(batch: EdgeBatch, times: np.ndarray) -> tuple[np.ndarray, np.ndarray, EdgeBatch]:
    """``(nodes, times, batch)``: every endpoint of ``batch`` as its own seed (positive sources, positive
    destinations, negative sources, negative destinations), each at its seed edge's time, and ``batch``
    renumbered over them."""
    ids = batch.node_ids.numpy()
    b = int(batch.pos_src.shape[0])
    groups = [batch.pos_src.numpy(), batch.pos_dst.numpy()]
    group_times = [times, times]
    if batch.neg_src is not None:
        q = int(batch.neg_src.shape[0])
        if b == 0 or q % b:
            raise ValueError(f"temporal link prediction needs k negatives per positive edge (got {q} for {b}), "
                             "so that each negative takes its positive's time")
        neg_times = np.repeat(times, q // b)
        groups += [batch.neg_src.numpy(), batch.neg_dst.numpy()]
        group_times += [neg_times, neg_times]
    nodes = np.concatenate([ids[g] for g in groups])
    starts = np.cumsum([0] + [g.shape[0] for g in groups])
    local = [torch.arange(int(starts[i]), int(starts[i + 1]), dtype=torch.int64) for i in range(len(groups))]
    renumbered = EdgeBatch(batch.eids, torch.from_numpy(nodes), *local)
    return nodes, np.concatenate(group_times).astype(np.int64, copy=False), renumbered


@dataclass(kw_only=True)
class TemporalTypedEdgeSeeds(TemporalSampling):
    """Typed seed edges with times: ``edges`` a :class:`~bgl.loader.seeds.typed_edges.TypedEdgeSeeds` that
    merges no endpoint (``node_order="disjoint"``), ``times`` int64 [num seed edges] in its order."""

    times: np.ndarray
    edges: object

    def sample_batch(self, sampler, mb):
        """Seed-edge positions -> every endpoint a seed at its edge's time, typed blocks and ``mb.edges``."""
        sel = mb.seeds.numpy()
        batch, _ = self.edges.batch(sel, negative_seed(mb.sample_seed), getattr(sampler, "store", None))
        mb.edges = batch
        nodes = batch.node_ids.numpy()
        mb.seeds, mb.blocks = self.sample(sampler, nodes, typed_endpoint_times(self.edges, sel, self.times[sel], batch),
                                          mb.sample_seed)
        return mb


def typed_endpoint_times(edges, sel: np.ndarray, times: np.ndarray, batch) -> np.ndarray:
    """The time of each of ``batch.node_ids`` (a disjoint typed batch): its seed edge's, in the order
    :meth:`~bgl.loader.seeds.typed_edges.TypedEdgeSeeds.batch` lays the endpoints out (per relation
    ascending, sources then destinations; then the negatives likewise, each at its positive's time)."""
    rel = edges.rel[sel]
    by_rel = [(r, times[rel == r]) for r in np.unique(rel).tolist()]
    out = [t for _, t in by_rel for t in (t, t)]
    if batch.neg is not None:
        for r, t in by_rel:
            k = int(batch.neg[r][0].shape[0]) // max(1, t.shape[0])
            out += [np.repeat(t, k)] * 2
    return np.concatenate(out).astype(np.int64, copy=False) if out else np.zeros(0, np.int64)


@dataclass(kw_only=True)
class LaidOutSeeds(TemporalSampling):
    """Seed items whose node seeds and times a caller lays out per batch, in the sample stage.

    ``layout(positions, seed) -> (nodes int64 [S], times int64 [S], payload)`` (picklable: it runs in
    the sample stage's process): PyG's temporal link loader lays out each batch's pairs and negatives
    as PyG does (:class:`~bgl.pyg.temporal.PygLinkLayout`), where bgl's own temporal link
    prediction follows GraphBolt's order.  ``payload`` (with ``to(device)`` and ``fields``) is the
    batch's ``mb.edges`` and reaches the caller in place of the pair graphs.
    """

    layout: Any

    def sample_batch(self, sampler, mb):
        nodes, times, mb.edges = self.layout(mb.seeds.numpy(), negative_seed(mb.sample_seed))
        mb.seeds, mb.blocks = self.sample(sampler, nodes, times, mb.sample_seed)
        return mb
