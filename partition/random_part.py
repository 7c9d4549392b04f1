"""Random partitioning: the no-locality baseline (what hash partitioning gives)."""
from __future__ import annotations

import numpy as np


def random_partition(num_nodes: int, num_parts: int, seed: int = 0) -> np.ndarray:
    """Seeded, balanced random assignment.

    Parameters
    ----------
    num_nodes : number of nodes n; num_parts : P (1 <= P <= n); seed : RNG seed

    Returns
    -------
    part_of : int64 [n] in [0, P); part sizes differ by at most one
        (a random permutation taken mod P).
    """
    rng = np.random.default_rng(seed)
    return (rng.permutation(num_nodes) % num_parts).astype(np.int64)
