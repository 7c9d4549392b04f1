"""A loader's construction-time warm-up run (:func:`load_kernels`), and whether it is still needed.

A loader over a local graph runs one seed through sample, fetch and transfer when it is built,
so numba's kernels load then and not in the first batch (1-1.6 s in a fresh process).  Once this
process has done that for one graph and one set of stage settings, another loader built the same
way loads nothing new and the run is pure overhead: ~0.7 ms of a 1.5-2 ms warm construction on a
262k-edge DGLGraph with DGL blocks, paid by every loader an evaluation loop builds, where DGL's
loader costs 0.2 ms to build.

The key is best effort: the graph object's identity, its arrays' dtypes, and each stage's
settings (plain values as they are, arrays by dtype and rank, objects by type and their own
dataclass fields).  A key that wrongly matches only moves kernel loading into the first batch; it
never changes a batch.  At most ``MAX_KEYS`` keys are kept per process.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Optional

import numpy as np
import torch

from ...sampler.jit_pages import release_jit_pages_soon
from ..stages.minibatch import MiniBatch

MAX_KEYS = 256
_DEPTH = 3  # how far into nested dataclasses the settings are read
_warmed: set = set()
_FIELD_NAMES: dict = {}  # class -> its dataclass field names, or None (_field_names)
_SCALARS = frozenset((type(None), bool, int, float, str))  # taken as they are, without the checks below


def load_kernels(ids: np.ndarray, info: Any, sample, fetch, transfer) -> None:
    """Run the first of ``ids`` through ``sample``, ``fetch`` and ``transfer`` (a loader's stages), so
    numba's kernels load now; nothing when there are no ids or this process ran the same kernels.

    Loading the sampler's kernels from numba's on-disk cache costs 1-1.6 s in a fresh process
    (minutes' worth of compiling when there is no cache yet).  Paid by the first batch, it made the
    first epoch of DGL's example on Cora take 1.2-1.8 s against 0.02-0.06 s for the next ones, and
    bgl slower than DGL's loader over a few epochs although each batch is faster.  Here it is paid at
    construction, like the rest of the setup, and LLVM's pages that the loading faulted in start to go
    in the background right after (:mod:`bgl.sampler.jit_pages`).  No RNG is drawn (the seed is fixed)
    and a configured cache is not touched.
    """
    if ids.shape[0] == 0:
        return
    key = warm_key(info.graph, info, (sample, fetch, transfer))
    if not needs_warmup(key):
        return
    try:
        mb = MiniBatch(epoch=-1, index=-1, seeds=torch.from_numpy(ids[:1].copy()), sample_seed=0)
        mb = sample(mb)
        if fetch.cache is None:
            transfer(fetch(mb))
    except BaseException:
        forget(key)
        raise
    release_jit_pages_soon()


def warm_key(graph: Any, info: Any, stages: tuple) -> tuple:
    """What decides which kernels a loader's stages load: see the module docstring."""
    edge_dtypes = tuple(sorted((str(k), str(v)) for k, v in (getattr(info, "edge_dtypes", None) or {}).items()))
    return (id(graph), type(graph).__name__, info.num_nodes, edge_dtypes, str(info.feat_dtype), info.feat_dim,
            tuple(_settings(stage, _DEPTH) for stage in stages))


def needs_warmup(key: tuple) -> bool:
    """True the first time ``key`` is asked about in this process (then it counts as warmed)."""
    if key in _warmed:
        return False
    if len(_warmed) >= MAX_KEYS:
        _warmed.clear()
    _warmed.add(key)
    return True


def forget(key: tuple) -> None:
    """The warm-up of ``key`` failed: the next loader built the same way runs it again."""
    _warmed.discard(key)


def _settings(obj: Any, depth: int) -> tuple:
    names = _field_names(type(obj))
    return (type(obj).__name__,) + tuple([(name, _plain(getattr(obj, name, None), depth - 1)) for name in names or ()])


def _field_names(cls: type) -> Optional[tuple]:
    """``cls``'s dataclass field names (None: not a dataclass), read once per class: the walk runs at
    every loader's construction, and ``dataclasses.fields`` builds its tuple anew at each call."""
    try:
        return _FIELD_NAMES[cls]
    except KeyError:
        names = tuple(f.name for f in dataclasses.fields(cls)) if dataclasses.is_dataclass(cls) else None
        _FIELD_NAMES[cls] = names
        return names


def _plain(value: Any, depth: int) -> Any:
    if type(value) in _SCALARS:
        return value
    if isinstance(value, (bool, int, float, str)):  # their subclasses (an IntEnum, a str subclass)
        return value
    if isinstance(value, (np.ndarray, torch.Tensor)):
        return ("array", str(value.dtype), value.ndim)
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (tuple, list)) and len(value) <= 64:
        return tuple([_plain(v, depth) for v in value])
    if isinstance(value, dict) and len(value) <= 64:
        return tuple(sorted((str(k), repr(_plain(v, depth))) for k, v in value.items()))
    if depth > 0 and not isinstance(value, type) and _field_names(type(value)) is not None:
        return _settings(value, depth)
    return type(value).__name__
