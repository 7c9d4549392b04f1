"""Vertex weights for the distributed engines: a part's in-edges (and training nodes) balanced, not only its nodes.

ParHIP balances one weight per vertex, and PT-Scotch's ParMETIS API as bgl calls it takes one too
(``ncon = 1``).  With unit weights they balance node counts only: on R-MAT 18/20, 4 parts, ParHIP's
largest part held 3.0-3.2x the average in-edges (bench/results/partition.md, 2026-12-04), i.e. ~80 %
of the graph's edges on one host -- the opposite of what a partition of a graph too big for one
machine is for, and a graph server doing most of the sampling.  One-machine ``--method bgl`` keeps
edges within 1.5x and training nodes within 1.1x.

So each vertex weighs ``d + in-degree`` (``--balance nodes+edges``), ``d`` the graph's mean
in-degree rounded (at least 1): a part's weight is ``d * N_k + E_k``, the total ``~2E``, nodes and
edges counting alike.  Holding it within ``1 + imbalance`` of the mean bounds
``N_k / mean N + E_k / mean E <= 2 (1 + imbalance)``: neither can pass ~2x, and a part heavy in one
must be light in the other.  ``nodes+edges+train`` adds ``t = round(E / T)`` per training node, a
third term of the same total.  ``nodes`` is the engines' own unit weights.  The weights are computed
from each rank's own rows (one all-reduce of three counts): 8 B per local node while the engine runs.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

BALANCES = ("nodes+edges", "nodes", "nodes+edges+train")
DEFAULT_BALANCE = BALANCES[0]


def check_balance(balance: str) -> str:
    """``balance`` if it is one of :data:`BALANCES`; ValueError naming them otherwise."""
    if balance not in BALANCES:
        raise ValueError(f"balance must be one of {', '.join(BALANCES)}, got {balance!r}")
    return balance


def vertex_weights(balance: str, in_degree: np.ndarray, train: Optional[np.ndarray], ex) -> Optional[np.ndarray]:
    """int64 [local n] weights >= 1 for the engine (collective over ``ex``), or None for ``"nodes"``.

    ``in_degree`` : this rank's nodes' in-edge counts (what their parts will store); ``train`` :
    their training flags (any integer/bool array) or None; ``ex`` : the ranks'
    :class:`~.exchange.Exchange`.
    """
    check_balance(balance)
    if balance == "nodes":
        return None
    degree = np.asarray(in_degree, np.int64)
    flags = None if train is None else np.asarray(train).astype(bool)
    local = np.array([degree.size, int(degree.sum()), 0 if flags is None else int(flags.sum())], np.int64)
    n, e, t = (int(x) for x in ex.allreduce_sum(local))
    weights = degree + max(1, round(e / max(n, 1)))
    if balance == "nodes+edges+train" and flags is not None and t > 0:
        weights += flags * max(1, round(e / t))
    return weights
