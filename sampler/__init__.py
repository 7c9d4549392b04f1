"""bgl.sampler: numba sampling kernels, wire protocol, graph server and client.

``LocalSampler`` and ``SamplingClient`` load lazily, so ``python -m
bgl.sampler.server`` never imports torch.

Module by module:

| file | role |
|---|---|
| `sampler/_kernels.py` | numba kernels: uniform sampling with/without replacement, relabel, row gathers |
| `sampler/_weighted_kernels.py` | numba kernels: weighted / masked sampling (DGL's `prob=` / `mask=`) |
| `sampler/_labor_kernels.py` | numba kernels: LABOR-0 (DGL's `LaborSampler`), LABOR-i's importance fixed point and pick |
| `sampler/labor_ops.py` | `labor_importance`: LABOR-i / weighted LABOR over one layer's full neighbourhoods (validated) |
| `sampler/ops.py` | validated NumPy-level operations over one CSC slice, shared by local sampler, server and client |
| `sampler/multilayer.py` | multi-layer blocks on top of any one-layer sampling function |
| `sampler/local.py` | `LocalSampler`: the same API over one store, no sockets |
| `sampler/row_gather.py` | `take_rows` / `tensor_view`: feature rows gathered by `torch.index_select` over a zero-copy tensor of the array or memmap (whole-row copies, the calling thread's torch threads), `np.take` where torch cannot wrap the array; the fetch stage's `RowBuffers` and the typed local fetch use it |
| `sampler/jit_pages.py` | `release_jit_pages`: once a stage's or an epoch's first batch has loaded its kernels, `madvise(MADV_PAGEOUT)` on LLVM's library mappings, whose ~65 MB of clean file pages numba's kernel loading faulted in and nothing runs again (the inline chain after each stage's first item, the epoch iterator, each stage process, the zygote and a graph server after its warm-up call it; a call is a `len()` of numba's JIT-engine symbols, and releases only when that grew, i.e. when a kernel was compiled or loaded since the last release: memory-mapped feature pages no longer trigger a `/proc/self/maps` walk every epoch; `/proc/self/statm` growth of 8 MB is the fallback where numba's internals differ); `BGL_KEEP_JIT_PAGES=1` turns it off; `release_jit_pages_soon` (a loader's paths: after construction's kernel loading, an epoch's first batch) runs the walk and `madvise` in a short-lived daemon thread, off the trainer's first batch |
| `sampler/_edge_kernels.py` | link prediction's kernels: sampling around excluded edges, counter-based uniform draws, edge-existence tests |
| `sampler/typed/sampling.py`, `sampler/typed/_kernels.py` | per-relation sampling over a (part) store's fused CSC, shared by `LocalSampler`, servers and co-located reads |
| `sampler/typed/frames.py`, `sampler/typed/remote.py` | typed wire frames (a leaf module the protocol imports); the client's typed view and the loader's id maps |
| `sampler/temporal/` | temporal sampling (no edge newer than its seed's time): one layer, per relation, its wire frames, the client side, and their kernels |
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

_LAZY = {"LocalSampler": "bgl.sampler.local", "SamplingClient": "bgl.sampler.client"}
if TYPE_CHECKING:  # the lazy names, spelled out for type checkers and the API reference (griffe)
    from .client import SamplingClient
    from .local import LocalSampler


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'bgl.sampler' has no attribute {name!r}")


__all__ = list(_LAZY)
