"""Multi-layer block sampling on top of any one-layer sampling function.

Shared by :class:`~bgl.sampler.local.LocalSampler` (one in-process CSC) and
:class:`~bgl.sampler.client.SamplingClient` (requests to graph servers), so
both produce the same blocks for the same seed.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator, Optional, Sequence

import numpy as np
import torch

from bgl.blocks import Block

from . import labor_ops, ops

# sample_layer(dst_ids int64 [m], fanout, replace, layer_seed[, prob=edge array name][, edge_data=names]
#              [, labor=(seed2, mix)][, exclude=sorted int64 edge ids never drawn])
#   -> (counts int64 [m], nbrs [e], eids int64 [e] | None[, {name: rows [e, ...]}])
LayerFn = Callable[..., tuple[np.ndarray, np.ndarray, "np.ndarray | None"]]
# relabel(dst_ids int64 [m], nbrs int32/int64 [e]) -> (src_ids int64 [s], local int64 [e])
RelabelFn = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class Labor:
    """LABOR sampling across the layers of one batch (DGL's ``LaborSampler`` options).

    ``layer_dependency``: every layer uses the variates of layer 0's seed (fewer distinct
    nodes); ``seed2`` and ``mix`` in [0, 1): the batch's variates blend in those of a second
    seed (``batch_dependency``: consecutive batches move ``mix`` from 0 towards 1); ``mix = -1``:
    no batch dependency.  ``importance_sampling`` = i != 0 (or a ``prob``): LABOR-i, see
    :func:`_labor_importance_layer`.
    """

    layer_dependency: bool = False
    seed2: int = 0
    mix: float = -1.0
    importance_sampling: int = 0


def _labor_importance_layer(sample_layer: LayerFn, relabel: RelabelFn, dst: np.ndarray, fanout: int, seed: int,
                            labor: Labor, labor_args: tuple, prob: str | None, edge_data: tuple, excluded: dict):
    """One LABOR-i (or weighted LABOR) layer: ``(counts, nbrs, eids | None, edata)`` with
    ``edata["edge_weights"]`` (DGL's name) the kept edges' importances.

    The sources' importances ``pi_t`` are a fixed point over every seed of the layer that holds
    ``t``, and graph servers each hold some of the seeds: so the layer's whole neighbourhoods
    (``fanout=-1``, with the ``prob`` rows) come to where they meet, here, and the pick runs on
    them (:func:`bgl.sampler.labor_ops.labor_importance`).  Per layer that moves every in-edge of its
    seeds (4-8 bytes each, plus the weight) instead of the sample; a round of per-source maxima
    between client and servers would move 12 bytes per distinct source per part, each way, per
    round, no less for the fanouts LABOR is used at.  Same input from a store, servers or
    co-located reads, hence the same blocks.
    """
    names = tuple(dict.fromkeys(((prob,) if prob else ()) + edge_data))
    extra = dict(excluded)
    if names:
        extra["edge_data"] = names
    counts, nbrs, eids, *rows = sample_layer(dst, -1, False, seed, **extra)
    rows = dict(rows[0]) if rows else {}
    src, local = relabel(dst, nbrs)
    weights = rows.pop(prob) if prob and prob not in edge_data else rows.get(prob) if prob else None
    keep, importance = labor_ops.labor_importance(counts, src, local, fanout, labor.importance_sampling, seed,
                                            *labor_args, weights=weights, name=prob or "prob")
    row_of = np.repeat(np.arange(counts.shape[0]), counts)
    kept_counts = np.bincount(row_of[keep], minlength=counts.shape[0]).astype(np.int64)
    rows = {name: np.asarray(v)[keep] for name, v in rows.items()}
    rows["edge_weights"] = importance[keep]
    return kept_counts, np.asarray(nbrs)[keep], None if eids is None else np.asarray(eids)[keep], rows


def _typed_labor_importance_layer(sample_layer, dst: np.ndarray, fanouts: np.ndarray, seed: int, labor: Labor,
                                  labor_args: tuple, prob: str | None, edge_data: tuple, excluded: dict):
    """:func:`_labor_importance_layer` on a typed graph: ``(counts, nbrs, eids | None, etypes, edata)``.

    Each relation is its own LABOR-i problem over its edges of the layer (DGL samples a heterograph
    relation by relation, each with its fanout and its own importances ``pi_t``); the variates stay
    one per source node, shared by every relation, as typed LABOR-0 keeps them.  The whole layer's
    in-edges of the relations with a nonzero fanout come here once (``fanout=-1`` for those, 0 for
    the others), then one :func:`~bgl.sampler.labor_ops.labor_importance` per relation: a NumPy
    pass per relation over its edges, R passes a layer (R is the handful of edge types)."""
    names = tuple(dict.fromkeys(((prob,) if prob else ()) + edge_data))
    extra = dict(excluded)
    if names:
        extra["edge_data"] = names
    full = np.where(fanouts != 0, -1, 0).astype(np.int64)
    counts, nbrs, eids, etypes, *rows = sample_layer(dst, full, False, seed, **extra)
    rows = dict(rows[0]) if rows else {}
    weights = rows.pop(prob) if prob and prob not in edge_data else rows.get(prob) if prob else None
    etypes, nbrs = np.asarray(etypes, np.int64), np.asarray(nbrs, np.int64)
    row_of = np.repeat(np.arange(counts.shape[0]), counts)
    keep, importance = np.zeros(nbrs.shape[0], bool), np.zeros(nbrs.shape[0], np.float32)
    for r in np.unique(etypes):
        sel = np.flatnonzero(etypes == r)  # the relation's edges, rows in order
        src, local = np.unique(nbrs[sel], return_inverse=True)
        keep[sel], importance[sel] = labor_ops.labor_importance(
            np.bincount(row_of[sel], minlength=counts.shape[0]), src, local, int(fanouts[r]),
            labor.importance_sampling, seed, *labor_args, weights=None if weights is None else weights[sel],
            name=prob or "prob")
    kept_counts = np.bincount(row_of[keep], minlength=counts.shape[0]).astype(np.int64)
    rows = {name: np.asarray(v)[keep] for name, v in rows.items()}
    rows["edge_weights"] = importance[keep]
    return kept_counts, nbrs[keep], None if eids is None else np.asarray(eids)[keep], etypes[keep], rows


_drawing = threading.local()  # .generator: the generator this thread's draws come from (None: torch's default)


def draw_seed() -> int:
    """A fresh 63-bit seed from torch's RNG, so ``torch.manual_seed`` makes runs reproducible: the default
    generator, or the one :func:`drawing_from` set for this thread."""
    return int(torch.randint(0, 2**63 - 1, (1,), generator=thread_generator()).item())


def thread_generator() -> Optional[torch.Generator]:
    """The generator :func:`drawing_from` set for the calling thread; None (torch's default) elsewhere."""
    return getattr(_drawing, "generator", None)


@contextmanager
def drawing_from(generator: torch.Generator) -> Iterator[None]:
    """Inside the block, this thread's sampling draws (:func:`draw_seed`, and ``bgl.dgl``'s samplers) come from
    ``generator``: a sampler run in a producer thread then draws a sequence of its own, the same every run,
    and leaves the trainer's generator (dropout, shuffles) as it would be without it."""
    before = thread_generator()
    _drawing.generator = generator
    try:
        yield
    finally:
        _drawing.generator = before


def check_fanouts(fanouts: Sequence[int]) -> list[int]:
    """Validated fanouts as a list of ints; ValueError naming the bad value (empty, non-int, < -1, too
    large).
    """
    if isinstance(fanouts, (int, np.integer)) or not len(fanouts):
        raise ValueError(f"fanouts must be a non-empty sequence of ints, got {fanouts!r}")
    return [ops.check_fanout(f) for f in fanouts]


def sample_blocks(seeds, fanouts: Sequence[int], replace: bool, seed: int | None,
                  sample_layer: LayerFn, relabel: RelabelFn = ops.relabel, prob: str | None = None,
                  edge_data: Sequence[str] = (), labor: Labor | None = None, exclude=None) -> list[Block]:
    """Sample ``len(fanouts)`` layers outward from ``seeds``.

    ``blocks[-1]`` is sampled first from the seeds with ``fanouts[-1]``;
    each earlier block's dst nodes are the next block's src nodes (DGL convention).
    Layer ``i`` uses seed ``ops.layer_seed(seed, i)``.  ``relabel`` is
    :func:`ops.relabel` or a faster :class:`ops.Relabeler` (same results).  ``exclude``
    (edge ids, link prediction's seed edges and their reverses) is never drawn in any layer.
    ``prob`` names the edge array every layer samples by (None = uniform); ``edge_data``
    the edge arrays whose rows of the sampled edges land in each block's ``edata``
    (``sample_layer`` then returns them as a fourth item).  These are passed to
    ``sample_layer`` only when given, so uniform sampling calls stay as they were.
    ``labor`` samples every layer by LABOR: ``sample_layer`` gets ``labor=(seed2, mix)``
    with per-layer seeds (layer 0's for all layers under ``layer_dependency``).
    """
    fanouts = check_fanouts(fanouts)
    excluded = {} if exclude is None else {"exclude": ops.check_exclude(exclude)}
    dst = ops.as_ids(seeds, "seeds")
    seed = draw_seed() if seed is None else int(seed)
    blocks = []
    for layer in range(len(fanouts) - 1, -1, -1):
        extra = dict(excluded)
        if prob is not None:
            extra["prob"] = prob
        if edge_data:
            extra["edge_data"] = tuple(edge_data)
        key = layer
        if labor is not None:
            key = 0 if labor.layer_dependency else layer
            extra["labor"] = (ops.layer_seed(labor.seed2, key), float(labor.mix))
        if labor is not None and (labor.importance_sampling != 0 or prob is not None):
            counts, nbrs, eids, *rows = _labor_importance_layer(
                sample_layer, relabel, dst, fanouts[layer], ops.layer_seed(seed, key), labor, extra["labor"],
                prob, tuple(edge_data), excluded)
        else:
            counts, nbrs, eids, *rows = sample_layer(dst, fanouts[layer], bool(replace),
                                                     ops.layer_seed(seed, key), **extra)
        src, local = relabel(dst, nbrs)
        indptr = np.zeros(dst.shape[0] + 1, np.int64)
        np.cumsum(counts, out=indptr[1:])
        edata = {name: torch.from_numpy(np.ascontiguousarray(v)) for name, v in (rows[0] if rows else {}).items()}
        blocks.append(Block(torch.from_numpy(src), int(dst.shape[0]), torch.from_numpy(indptr),
                            torch.from_numpy(local), None if eids is None else torch.from_numpy(eids), edata=edata))
        dst = src
    blocks.reverse()
    return blocks


# sample_typed_layer(dst int64 [m], fanouts int64 [R], replace, layer_seed) -> (counts, nbrs, eids, etypes)
TypedLayerFn = Callable[[np.ndarray, np.ndarray, bool, int], tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]


def sample_typed_blocks(seeds, fanouts: Sequence[np.ndarray], replace: bool, seed: int | None,
                        sample_layer: TypedLayerFn, relabel: RelabelFn = ops.relabel, exclude=None,
                        prob: str | None = None, edge_data=(), labor: Labor | None = None) -> list[Block]:
    """:func:`sample_blocks` for a typed graph: ``fanouts[l]`` is int64 [R], one per relation;
    ``exclude`` (CSC positions, link prediction's seed edges) reaches every layer's draw, ``prob``
    (the edge array to draw by) and ``edge_data`` (arrays whose sampled rows each block carries in
    ``edata``, aligned with its edges as ``etypes`` is) every layer's ``sample_layer``; ``labor``
    samples every layer by LABOR as :func:`sample_blocks` does (LABOR-i and weighted LABOR relation by
    relation, :func:`_typed_labor_importance_layer`).

    Blocks are over global ids as untyped ones are, with ``etypes`` per edge; layer
    seeds are the untyped ones, so the streams differ only by relation (:mod:`bgl.sampler.typed.sampling`).
    """
    dst = ops.as_ids(seeds, "seeds")
    seed = draw_seed() if seed is None else int(seed)
    blocks = []
    for layer in range(len(fanouts) - 1, -1, -1):
        extra = {} if exclude is None else {"exclude": exclude}
        if prob is not None:
            extra["prob"] = prob
        if edge_data:
            extra["edge_data"] = tuple(edge_data)
        key = layer
        if labor is not None:  # as sample_blocks: layer 0's seeds for every layer under layer_dependency
            key = 0 if labor.layer_dependency else layer
            extra["labor"] = (ops.layer_seed(labor.seed2, key), float(labor.mix))
        if labor is not None and (labor.importance_sampling != 0 or prob is not None):
            counts, nbrs, eids, etypes, *rows = _typed_labor_importance_layer(
                sample_layer, dst, np.asarray(fanouts[layer], np.int64), ops.layer_seed(seed, key), labor,
                extra["labor"], prob, tuple(edge_data), {} if exclude is None else {"exclude": exclude})
        else:
            counts, nbrs, eids, etypes, *rows = sample_layer(dst, np.asarray(fanouts[layer], np.int64),
                                                             bool(replace), ops.layer_seed(seed, key), **extra)
        src, local = relabel(dst, nbrs)
        indptr = np.zeros(dst.shape[0] + 1, np.int64)
        np.cumsum(counts, out=indptr[1:])
        blocks.append(Block(torch.from_numpy(src), int(dst.shape[0]), torch.from_numpy(indptr),
                            torch.from_numpy(local), None if eids is None else torch.from_numpy(eids),
                            etypes=torch.from_numpy(etypes.astype(np.int64, copy=False)),
                            edata={k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in rows[0].items()} if rows else {}))
        dst = src
    blocks.reverse()
    return blocks
