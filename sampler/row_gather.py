"""Feature-row gathers at the memory's speed: ``torch.index_select`` over a zero-copy tensor of the rows.

``np.take(rows, ids, axis=0)`` copies element by element; ``torch.index_select`` copies whole rows.
The wider the rows, the more that counts: 8,000 rows of 767 float32 took 5.7 ms with
``np.take(..., out=)`` and 2.3 ms with ``index_select(..., out=)`` on one thread (issue #57;
``bench/loader/gather.py`` measures every path: in-memory and memory-mapped rows, float16, bgl.codec's
encoded rows).  Both give the rows bit for bit.  ``index_select`` runs on the calling thread's
torch threads: one in the thread pipeline's producer and in a stage process pinned to one core.

An array torch cannot wrap (a dtype torch lacks, a byte-swapped or non-contiguous array) is
gathered by ``np.take``.  A read-only array (a store's memmap) is wrapped without copying; torch
only reads it here.
"""
from __future__ import annotations

import warnings
from typing import Optional

import numpy as np
import torch


def tensor_view(rows: np.ndarray) -> Optional[torch.Tensor]:
    """A tensor sharing ``rows``' memory, or None where torch cannot wrap the array."""
    if rows.ndim < 1 or not rows.flags.c_contiguous or not rows.dtype.isnative:
        return None
    try:
        with warnings.catch_warnings():  # "not writable": a read-only memmap, only read here
            warnings.simplefilter("ignore", UserWarning)
            return torch.from_numpy(rows)
    except TypeError:  # a dtype torch has no tensor for
        return None


def take_rows(rows: np.ndarray, ids: np.ndarray, out: Optional[np.ndarray] = None,
              view: Optional[torch.Tensor] = None) -> np.ndarray:
    """``rows[ids]`` (``np.take(rows, ids, axis=0)``), into ``out`` when given.

    ``ids`` must already be in ``[0, len(rows))`` (callers check and name the bad one);
    ``view``: :func:`tensor_view` of ``rows`` when the caller keeps one (saves making it).
    """
    if out is None:
        out = np.empty((ids.shape[0],) + rows.shape[1:], rows.dtype)
    if view is None:
        view = tensor_view(rows)
    if view is None or not ids.shape[0]:
        # mode="clip" writes straight into ``out`` (mode="raise" would gather into a temporary)
        np.take(rows, ids, axis=0, out=out, mode="clip")
    else:
        torch.index_select(view, 0, torch.from_numpy(ids.astype(np.int64, copy=False)), out=torch.from_numpy(out))
    return out
