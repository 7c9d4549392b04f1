"""Array helpers every sampling layer shares (:mod:`.ops`, :mod:`.exclusion`, :mod:`.typed.sampling`).

Kept apart from :mod:`.ops` so that the modules ``ops`` dispatches to can use them without
importing ``ops`` back.
"""
from __future__ import annotations

import numpy as np


def read_only(a: np.ndarray) -> np.ndarray:
    """A read-only view of ``a`` (copies nothing).  numba compiles one kernel variant per
    writeable flag (~1 min each on a loaded 2-core box): arrays of every origin (memmap, zmq
    frame, tensor) reach the kernels as read-only views, so each kernel has one signature."""
    view = np.asarray(a).view(np.ndarray)
    view.flags.writeable = False
    return view


def sample_offsets(counts: np.ndarray, max_edges: int) -> tuple[np.ndarray, int]:
    """(out_indptr int64 [m + 1], total) of per-seed sample counts; ValueError above ``max_edges``."""
    out_indptr = np.zeros(counts.shape[0] + 1, np.int64)
    np.cumsum(counts, out=out_indptr[1:])
    total = int(out_indptr[-1])
    if total > max_edges:
        raise ValueError(f"request would return {total} sampled edges, more than the limit {max_edges}")
    return out_indptr, total
