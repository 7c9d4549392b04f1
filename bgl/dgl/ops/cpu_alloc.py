"""Output tensors of the CPU kernels, backed by transparent huge pages where Linux offers them.

A kernel's output is often hundreds of MiB (an SpMM's input gradient is [num_src, F]; an SDDMM's
result [E, H]), freshly allocated each call.  With 4 KiB pages its first touch costs one page fault
per 4 KiB, which measured ~0.1 s per 256 MiB on the 2-core box: as much as the kernel's own work.
``madvise(MADV_HUGEPAGE)`` on the new block before it is touched makes that one fault per 2 MiB
(what NumPy does for its own large arrays).  The tensors are ordinary torch tensors; elsewhere, or
where the kernel refuses the advice, nothing changes.

Off unless ``BGL_HUGE_PAGES=1`` (read at import): on the quiet 2-core box (THP ``defrag=madvise``, so an
advised fault compacts memory synchronously) ``bench/dgl/message_passing.py`` at 10M edges measured
``copy_u`` + ``sum`` forward+backward 0.68 s with the advice against 0.41 s without (DGL 0.33-0.35 s);
only a kernel configuration whose THP defrag does not stall should turn it on.
"""
from __future__ import annotations

import ctypes
import os
import sys

import torch

HUGE_PAGE_BYTES = 2 << 20
_MADV_HUGEPAGE = 14  # Linux's value on every architecture
_MIN_BYTES = 2 * HUGE_PAGE_BYTES  # smaller blocks come from malloc's heap and span at most one huge page


def _madvise():
    if not sys.platform.startswith("linux") or os.environ.get("BGL_HUGE_PAGES") != "1":
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    fn.restype = ctypes.c_int
    return fn


_MADVISE = _madvise()


def advise_huge_pages(t: torch.Tensor) -> torch.Tensor:
    """Ask for huge pages under the whole 2 MiB pages of ``t``'s (untouched) memory; returns ``t``."""
    nbytes = t.numel() * t.element_size()
    if _MADVISE is None or nbytes < _MIN_BYTES or t.device.type != "cpu":
        return t
    start = t.data_ptr()
    first = -(-start // HUGE_PAGE_BYTES) * HUGE_PAGE_BYTES
    stop = (start + nbytes) // HUGE_PAGE_BYTES * HUGE_PAGE_BYTES
    if stop > first:
        _MADVISE(first, stop - first, _MADV_HUGEPAGE)  # a refusal (THP off) leaves ordinary pages: ignored
    return t


def empty(shape, dtype: torch.dtype, device="cpu") -> torch.Tensor:
    """``torch.empty(shape, dtype=dtype, device=device)``, huge pages advised on the CPU."""
    return advise_huge_pages(torch.empty(shape, dtype=dtype, device=device))


def full(shape, value, dtype: torch.dtype, device="cpu") -> torch.Tensor:
    """``torch.full(shape, value, ...)``, huge pages advised before the fill."""
    return empty(shape, dtype, device).fill_(value)


def zeros(shape, dtype: torch.dtype, device="cpu") -> torch.Tensor:
    """``torch.zeros(shape, ...)``, huge pages advised before the fill."""
    return empty(shape, dtype, device).zero_()
