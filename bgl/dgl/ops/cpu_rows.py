"""Running a :mod:`._kernels` kernel over a compressed adjacency's rows on the CPU threads.

Rows are split into one range per torch thread with about equal edge counts (a search in
``indptr``), each range a ``nogil`` kernel call on its own thread; a small adjacency (under
``SPLIT_EDGES`` edges) runs in the caller's thread.  The pool is made on first use in each
process (a forked child gets its own) and lives with it, sized by ``torch.get_num_threads()``.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

SPLIT_EDGES = 1 << 16
USE_KERNELS = True  # numba kernels for CPU tensors; False: the torch path a GPU takes (tests flip it)
_pools: dict = {}  # {process id: pool}: a forked child makes its own (the parent's threads are not in it)


def kernels_for(t: torch.Tensor) -> bool:
    """Whether the numba kernels take ``t`` (CPU float32 / float64; half types go the torch way)."""
    return USE_KERNELS and t.device.type == "cpu" and t.dtype in (torch.float32, torch.float64)


def adjacency_arrays(adj) -> tuple:
    """(indptr, indices, eids or an empty array) of a CPU :class:`~bgl.dgl.relation.Compressed`
    as NumPy views, what the kernels take."""
    indices = adj.indices.numpy()
    eids = np.empty(0, indices.dtype) if adj.eids is None else adj.eids.numpy()
    return adj.indptr.numpy(), indices, eids


def _pool() -> ThreadPoolExecutor:
    """This process's kernel pool (a fork gets its own).  It lives as long as the process, like torch's own
    thread pool, so its threads are not named ``bgl-*``: that prefix marks the threads a loader starts and
    must stop (its producer, order prefetch), which the loader tests count."""
    pool = _pools.get(os.getpid())
    if pool is None:
        pool = _pools[os.getpid()] = ThreadPoolExecutor(max(2, torch.get_num_threads()),
                                                        thread_name_prefix="bgl.dgl.ops")
    return pool


def run_rows(kernel, indptr: np.ndarray, *args) -> None:
    """``kernel(lo, hi, indptr, *args)`` over every row, split across the CPU threads."""
    rows = indptr.shape[0] - 1
    edges = int(indptr[-1]) if rows >= 0 else 0
    parts = max(1, min(torch.get_num_threads(), edges // SPLIT_EDGES))
    if parts == 1 or rows < 2:
        kernel(0, rows, indptr, *args)
        return
    bounds = np.searchsorted(indptr, np.linspace(0, edges, parts + 1)).clip(0, rows)
    bounds[0], bounds[-1] = 0, rows
    jobs = [_pool().submit(kernel, int(lo), int(hi), indptr, *args)
            for lo, hi in zip(bounds[:-1], bounds[1:]) if hi > lo]
    for job in jobs:
        job.result()


def run_edges(kernel, num_edges: int, *args) -> None:
    """``kernel(lo, hi, *args)`` over edges ``0:num_edges`` in equal ranges across the threads."""
    parts = max(1, min(torch.get_num_threads(), num_edges // SPLIT_EDGES))
    bounds = np.linspace(0, num_edges, parts + 1).astype(np.int64)
    if parts == 1:
        kernel(0, num_edges, *args)
        return
    jobs = [_pool().submit(kernel, int(lo), int(hi), *args) for lo, hi in zip(bounds[:-1], bounds[1:]) if hi > lo]
    for job in jobs:
        job.result()

