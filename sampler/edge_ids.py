"""A graph's own edge ids at sampled CSC positions (a DGLGraph's, whose CSC order is not its edge-id order).

Kept out of the samplers' Python: numpy's fancy index holds the GIL through a cache-missing read of every
position (1.2 ms a typed layer on a 21M-edge user-item graph), and a producer thread doing it stalls the
trainer's next op that long; the numba gather below releases it.
"""
from __future__ import annotations

import numpy as np

from . import _kernels as K


def ids_at(table: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """``table[positions]`` as int64, gathered without the GIL.  ``positions`` come from the sampling
    kernels (in range), so they are not checked again."""
    out = np.empty(positions.shape[0], np.int64)
    K.gather_1d(table, positions, np.int64(0), out)
    return out
