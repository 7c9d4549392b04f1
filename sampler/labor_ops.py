"""LABOR-i's validated entry point: importance sampling over one layer's full neighbourhoods.

Apart from :mod:`.ops` (per-CSC-slice operations a server runs): this one runs where a layer's
neighbourhoods meet, the sampling client or a local sampler (:mod:`.multilayer`).
"""
from __future__ import annotations

import numpy as np

from . import _labor_kernels as L
from .ops import MASK64, check_fanout, check_range, check_weights


def labor_importance(counts: np.ndarray, src_ids: np.ndarray, local: np.ndarray, fanout: int, rounds: int,
                     seed: int, seed2: int = 0, mix: float = -1.0, weights: np.ndarray | None = None,
                     name: str = "prob", with_probabilities: bool = False):
    """LABOR-``rounds`` (DGL's ``importance_sampling``) over one layer's full neighbourhoods:
    ``(keep bool [e], edge_weights float32 [e])``, plus each edge's inclusion probability
    (float64 [e]) with ``with_probabilities`` (see :func:`._labor_kernels.labor_probabilities`).

    ``counts`` int64 [m]: edges per seed, in row order; ``local`` int64 [e]: each edge's source as
    a position in ``src_ids`` (int64 [s], global ids: they key the variates); ``weights``
    [e]: the edges' ``prob`` (checked finite and >= 0, ``name`` in the error), None = unweighted.
    The importances ``pi_t`` couple every seed of the layer that shares a source, so this runs
    where the whole layer's in-edges meet (the sampling client, or the local sampler): a
    function of (seed, ids, neighbourhoods), the same from a store, servers or co-located reads.
    """
    fanout = check_fanout(fanout)
    if isinstance(rounds, bool) or not isinstance(rounds, (int, np.integer)):
        raise ValueError(f"importance_sampling must be an int, got {rounds!r}")
    mix = float(mix)
    if not (0.0 <= mix < 1.0 or mix == -1.0):
        raise ValueError(f"LABOR mix (batch_dependency position) must be -1 or in [0, 1), got {mix}")
    counts = np.ascontiguousarray(counts, dtype=np.int64)
    local = np.ascontiguousarray(local, dtype=np.int64)
    src_ids = np.ascontiguousarray(src_ids, dtype=np.int64)
    indptr = np.zeros(counts.shape[0] + 1, np.int64)
    np.cumsum(counts, out=indptr[1:])
    if int(indptr[-1]) != local.shape[0]:
        raise ValueError(f"counts sum to {int(indptr[-1])} for {local.shape[0]} edges")
    check_range(local, 0, src_ids.shape[0], "local source positions")
    w = np.empty(0, np.float64)
    if weights is not None:
        w = check_weights(weights, local.shape[0], name).astype(np.float64)
    prob = np.empty(local.shape[0], np.float64)
    L.labor_probabilities(indptr, local, np.int64(src_ids.shape[0]), w, np.int64(fanout), np.int64(rounds), prob)
    keep = np.empty(local.shape[0], np.bool_)
    importance = np.empty(local.shape[0], np.float32)
    L.labor_pick(indptr, local, src_ids, w, prob, np.uint64(int(seed) & MASK64), np.uint64(int(seed2) & MASK64),
                 np.float64(mix), keep, importance)
    return (keep, importance, prob) if with_probabilities else (keep, importance)
