"""bgl.sampler: numba sampling kernels, wire protocol, graph server and client.

``LocalSampler`` and ``SamplingClient`` load lazily, so ``python -m
bgl.sampler.server`` never imports torch.
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
