"""Recycled output buffers for the fetch stage's feature gathers.

A batch's input rows are one gather of the feature rows (``torch.index_select`` over a
zero-copy tensor of the array or memmap: :mod:`bgl.sampler.row_gather`) into a new array:
PubMed-sized batches (4.4k rows x 500 float32) are 8.8 MB each, above glibc's
``mmap`` threshold or at the top of its heap, so a gather often lands on pages the
allocator has just given back to the kernel and pays a minor fault per 4 kB page
(measured on the 2-core VM, ``bench/loader/pyg_path.py --datasets pubmed``: 18-22k minor
faults an epoch of 47 batches, 5-10 ms of a 55-65 ms epoch; under 200 with the
buffers recycled).  Which batches fault depends on what else the process allocated
in between (the PyG drop-in allocates a few more arrays a batch), so the cost also
varied from run to run and between two loaders over the same batches.

:class:`RowBuffers` keeps the few most recent output arrays and gathers into one
that nothing outside it references any more (its reference count says so: the
batch, its tensors and any view of them hold the array), so a plain training loop
-- batch ``k`` held by the loop while ``k + 1`` is fetched -- cycles through two
buffers.  A buffer still in use is never written.

Cost: at most ``keep`` buffers of ``1 + 1/8`` times the largest gather seen (the
slack lets the next, slightly larger batch fit); in a plain loop two or three, which
the loop held anyway.  Held across epochs, except buffers of ``RELEASE_BYTES`` or more
(:meth:`RowBuffers.release_large`, at each epoch's end): glibc maps an allocation that
big on its own and unmaps it when freed, so DGL's loop, allocating a batch's rows
afresh, holds none of them between epochs, when scripts evaluate with new loaders.
Kept, they put CiteSeer link prediction's peak (44 MiB batches of 3,703-wide rows, the
training loader's buffers alive through its layer-wise inference) at 1.12x DGL's.
"""
from __future__ import annotations

import inspect
import sys
from typing import Callable, Optional

import numpy as np
import torch

from ...sampler.row_gather import take_rows, tensor_view


def _refs_while_scanned(arrays: list) -> int:
    """``sys.getrefcount`` of an array held by nothing but ``arrays``, read in a scan shaped as
    :meth:`RowBuffers.empty`'s (the list, the loop variable, getrefcount's own argument: 3 on
    CPython 3.11).  Measured rather than written down: an interpreter may borrow some of those
    references (newer CPythons do for some stack references), and a fixed count too high would
    hand out an array still in use."""
    for array in arrays:
        return sys.getrefcount(array)
    raise ValueError("needs one array")


# References to a pooled array that are not a user's.
_POOL_ONLY = _refs_while_scanned([np.empty(0)])
#: glibc's largest dynamic mmap threshold (DEFAULT_MMAP_THRESHOLD_MAX on 64-bit): an allocation this big is
#: always its own mapping, given back to the kernel when freed.
RELEASE_BYTES = 32 << 20


class RowBuffers:
    """``take(rows, ids)``: ``rows[ids]`` into a recycled array, or a new one when all are in use.

    Parameters
    ----------
    keep : most arrays remembered; a gather while ``keep`` are in use allocates a new one
        and forgets the oldest (which its holder keeps alive as long as it needs it)
    """

    def __init__(self, keep: int = 4):
        if keep < 1:
            raise ValueError(f"keep must be >= 1, got {keep}")
        self.keep = int(keep)
        self._arrays: list[np.ndarray] = []
        self._largest = 0  # rows of the largest request so far
        self._view: Optional[tuple[np.ndarray, Optional[torch.Tensor]]] = None  # (rows, tensor over them)
        self.allocations = 0  # arrays made so far (a test and the bench read it)

    def take(self, rows: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """``rows[ids]`` (shape ``[len(ids), *rows.shape[1:]]``), as ``np.take(rows, ids, axis=0)``.

        Raises
        ------
        IndexError : an id outside ``[0, len(rows))`` (negative ids too; nothing is written)
        """
        n = int(ids.shape[0])
        if n and (int(ids.min()) < 0 or int(ids.max()) >= rows.shape[0]):
            bad = ids[(ids < 0) | (ids >= rows.shape[0])][0]
            raise IndexError(f"feature row id {int(bad)} is outside [0, {rows.shape[0]})")
        out = self.empty(n, rows.shape[1:], rows.dtype)
        return take_rows(rows, ids, out, self._tensor_view(rows))

    def _tensor_view(self, rows: np.ndarray) -> Optional[torch.Tensor]:
        """:func:`~bgl.sampler.row_gather.tensor_view` of ``rows``, made once per array (the fetch
        stage gathers from the same one every batch); None where torch cannot wrap it."""
        if self._view is None or self._view[0] is not rows:
            self._view = (rows, tensor_view(rows))
        return self._view[1]

    def release_large(self) -> None:
        """Forget the arrays of ``RELEASE_BYTES`` or more (module doc); one still in use lives on with its user."""
        self._arrays = [a for a in self._arrays if a.nbytes < RELEASE_BYTES]

    def empty(self, n: int, row_shape: tuple, dtype) -> np.ndarray:
        """``n`` rows of ``row_shape`` and ``dtype`` to write into (the cache's output of a batch):
        an unreferenced pooled array's first ``n`` rows, or a new array's.  Contents are arbitrary."""
        for array in self._arrays:
            if (sys.getrefcount(array) == _POOL_ONLY and array.shape[0] >= n
                    and array.shape[1:] == row_shape and array.dtype == dtype):
                return array[:n]
        # sized by the largest request, not the largest array: arrays sized from arrays would
        # grow by 1/8 each time every one is in use (a caller keeping a whole epoch)
        self._largest = rows = max(self._largest, n)
        array = np.empty((rows + rows // 8,) + tuple(row_shape), dtype)
        self.allocations += 1
        self._arrays = [array] + self._arrays[: self.keep - 1]
        return array[:n]


def cache_outputs(cache) -> Optional[Callable[[int], torch.Tensor]]:
    """``f(n)`` -> a recycled ``[n, cache.dim]`` tensor for the ``out=`` of ``cache.fetch``, or None.

    Only for a cache on the CPU whose ``fetch`` takes ``out=`` (the single-type caches of
    :mod:`bgl.cache`) and whose dtype NumPy has: its output was a fresh array per batch, as the
    plain gather's was (measured on the 2-core VM, Cora, ``cache=True`` (lookahead), batch
    256, fanouts 10,10, data path only: 2.5-3.3k minor faults an epoch and 23-26 ms epochs
    before, under 30 faults and 12.7 ms with recycled outputs; PubMed 131-145 -> 122-128 ms).
    """
    device, dim, dtype = getattr(cache, "device", None), getattr(cache, "dim", None), getattr(cache, "dtype", None)
    if not isinstance(device, torch.device) or device.type != "cpu" or not isinstance(dim, int) \
            or not isinstance(dtype, torch.dtype):
        return None
    try:
        if "out" not in inspect.signature(cache.fetch).parameters:
            return None
        np_dtype = torch.empty(0, dtype=dtype).numpy().dtype
    except (TypeError, ValueError):  # no signature, or a dtype NumPy lacks (bfloat16)
        return None
    buffers = RowBuffers()
    return lambda n: torch.from_numpy(buffers.empty(n, (dim,), np_dtype))
