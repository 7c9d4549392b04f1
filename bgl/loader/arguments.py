"""Seed ids as ``bgl.DataLoader`` and the seed kinds check them: integer, 1-D, in range, unique where asked.

The graph argument is resolved elsewhere, once, into the loader's description of its graph
(:class:`bgl.loader.graph_info.GraphInfo`); the sampler's options in :mod:`bgl.loader.sampler_options`,
the seeds in :mod:`bgl.loader.seeds.items` (with these checks), the loader's own options in
:mod:`bgl.loader.loader_options`; :mod:`bgl.loader.dataloader` wires the stages from those four
descriptions.
"""
from __future__ import annotations

import numpy as np
import torch

from ._seed_kernels import UNSORTED_WIDE, repeats_by_bits


def as_int_array(values, name: str) -> np.ndarray:
    """An integer tensor/array-like as int64 [n]; TypeError for non-integer dtypes, ValueError if not 1-D."""
    if isinstance(values, dict):
        raise TypeError(f"dict {name} (heterogeneous graphs) are not supported; pass one id tensor")
    if torch.is_tensor(values):
        if values.dtype.is_floating_point or values.dtype.is_complex or values.dtype == torch.bool:
            raise TypeError(f"{name} must be integer ids, got dtype {values.dtype}")
        arr = values.detach().cpu().numpy()
    else:
        arr = np.asarray(values)
        if arr.dtype.kind not in "iu":
            raise TypeError(f"{name} must be integer ids, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {tuple(arr.shape)}")
    return arr.astype(np.int64, copy=False)


def check_ids(values, count: int, kind: str = "node", name: str = "indices", unique: bool = True) -> np.ndarray:
    """Seed ids as contiguous int64 [n]; refuses non-integer, non-1-D, out-of-range (outside
    ``[0, count)``) or (``unique``) duplicate ids, naming the offending id.  Uniqueness is
    :func:`has_repeats`'s pass (9.5M seed edges of an ``arange``: 1.3 s as a sort before)."""
    arr = as_int_array(values, name)
    if arr.size:
        lo, hi = int(arr.min()), int(arr.max())
        if lo < 0 or hi >= count:
            bad = lo if lo < 0 else hi
            raise ValueError(f"{name} contain {kind} id {bad}, outside [0, {count})")
        if unique and has_repeats(arr):  # a pass, not a sort, for the usual seeds (an arange, a split)
            uniq, counts = np.unique(arr, return_counts=True)
            raise ValueError(f"{name} contain duplicate {kind} ids (e.g. {int(uniq[np.argmax(counts > 1)])})")
    return np.ascontiguousarray(arr)


def check_indices(indices, num_nodes: int) -> np.ndarray:
    """Seed node ids (see :func:`check_ids`); repeated ids are accepted, as DGL accepts them
    (see :mod:`bgl.loader.seeds.duplicates`)."""
    return check_ids(indices, num_nodes, unique=False)


def has_repeats(ids: np.ndarray) -> bool:
    """True when some id occurs twice.

    Checked once per loader, so it is on the path to the first batch: a sort of 32k seeds took
    1.2 ms, half a loader's construction.  Increasing ids (a split as stored, an ``arange``) need
    one pass; other ids below ``64 * len(ids)`` or 32M a bit each of their range
    (:func:`~bgl.loader._seed_kernels.repeats_by_bits`: 10k shuffled ids under 1M, 0.04 ms); only
    sparse, unsorted ids over a larger range (or negative ones) are sorted.
    """
    n = ids.shape[0]
    if n < 2:
        return False
    answer = repeats_by_bits(np.ascontiguousarray(ids, dtype=np.int64), max(64 * n, 1 << 25))
    if answer != UNSORTED_WIDE:
        return bool(answer)
    return np.unique(ids).shape[0] != n


def owned_ids(ids) -> torch.Tensor:
    """A copy of seed ids or a mask (seeds are small; a memmap is read-only).  A tensor is cloned:
    ``np.array(tensor)`` warns under numpy 2 with torch's ``__array__``, which takes no ``copy``."""
    if isinstance(ids, torch.Tensor):
        return ids.detach().clone()
    return torch.as_tensor(np.array(ids))
