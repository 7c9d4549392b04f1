"""Picklable facts a stage process needs to open its own sampler and cache.

A stage object crosses into a ``spawn`` process by pickling, so it holds
these specs (paths, addresses, numbers), never live stores, sockets or
caches; ``open()`` / ``build()`` create those inside the process that runs
the stage.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np
import torch


@dataclass(frozen=True)
class SamplingSpec:
    """Where samples and features come from, as picklable facts.

    ``kind="store"``: a graph store directory (``path``) or an in-memory
    :class:`~bgl.loader.graph_arrays.GraphArrays` (``arrays``, a DGLGraph's own
    tensors) sampled in-process by :class:`bgl.sampler.LocalSampler`.
    ``kind="servers"``: graph servers reached by :class:`bgl.sampler.SamplingClient`
    (one address per part, in part order); ``partition`` names the partition dir whose
    original ids a typed graph's loader speaks (:class:`bgl.sampler.typed.remote.TypedServerSampler`).
    """

    kind: str
    path: Optional[str] = None
    addresses: tuple[str, ...] = ()
    timeout: float = 5.0
    arrays: Any = field(default=None, compare=False)
    partition: Optional[str] = None

    def open(self):
        """A live sampler (``sample_blocks`` / ``fetch_features`` / ``fetch_labels``)."""
        if self.kind == "store":
            from ...sampler import LocalSampler

            if self.arrays is not None:
                return LocalSampler(self.arrays)
            from ...store import GraphStore

            return LocalSampler(GraphStore(self.path, validate="none"))
        if self.kind == "servers":
            from ...sampler import SamplingClient

            client = SamplingClient(list(self.addresses), timeout=self.timeout)
            if client.schema is None:
                return client
            from ...sampler.typed.remote import TypedServerSampler

            try:
                return TypedServerSampler(client, self.partition)
            except BaseException:
                client.close()
                raise
        raise ValueError(f"sampling spec kind must be 'store' or 'servers', got {self.kind!r}")

    def open_store(self):
        """The local graph store (for proximity ordering and degree-based caches), or None for servers."""
        if self.kind != "store":
            return None
        if self.arrays is not None:
            return self.arrays
        from ...store import GraphStore

        return GraphStore(self.path, validate="none")


@dataclass(frozen=True, eq=False)
class CacheSpec:
    """A feature cache to build inside the fetch stage's process.

    ``capacity`` is in rows.  ``degrees``/``presample_counts`` feed the
    ``static-degree`` / ``presample`` policies (int64 [num_nodes]).
    """

    policy: str
    capacity: int
    num_nodes: int
    dim: int
    dtype: str = "float32"
    device: str = "cpu"
    degrees: Optional[np.ndarray] = None
    presample_counts: Optional[np.ndarray] = None

    def build(self):
        """Build the cache this spec describes with :func:`bgl.cache.make_cache` (in the calling process)."""
        from ...cache import make_cache

        return make_cache(self.policy, self.capacity, self.num_nodes, self.dim,
                          dtype=getattr(torch, self.dtype), device=self.device,
                          degrees=self.degrees, presample_counts=self.presample_counts)


@dataclass(frozen=True, eq=False)
class TypedCacheSpec:
    """Per-node-type feature caches to build in the fetch stage's process: one :class:`CacheSpec`
    per featured type (over that type's local ids), behind one :class:`bgl.cache.typed.TypedFeatureCache`."""

    specs: dict  # {ntype: CacheSpec}
    ntypes: tuple
    offsets: np.ndarray  # int64 [T + 1]

    @property
    def policy(self) -> str:
        return next(iter(self.specs.values())).policy

    @property
    def capacity(self) -> int:
        return sum(s.capacity for s in self.specs.values())

    def build(self):
        """Build every type's cache and the typed cache over them (in the calling process)."""
        from ...cache.typed import typed_cache

        return typed_cache({nt: s.build() for nt, s in self.specs.items()}, self.ntypes, self.offsets)
