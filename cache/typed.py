"""One feature cache per node type, behind the fetch/announce API of one cache over global ids.

A typed graph's node types carry rows of their own width and dtype (papers 128 float32,
authors 64 float16, words none), so one ``[capacity, dim]`` store cannot hold them.
:class:`TypedFeatureCache` keeps one cache of any policy per featured type, indexed by
type-local ids (``[0, count_t)``), and splits each batch's global input ids by type, so the
fetch stage and :class:`~bgl.cache.lookahead_feeder.LookaheadFeeder` drive it exactly as
they drive one cache: ``announce(ids)`` reaches every type's lookahead cache with that type's
ids of the batch, ``fetch`` returns ``{ntype: rows}`` and asks the miss source once per type
with misses.

Costs: the per-type caches together cost what one cache over all featured nodes would
(4 B per node of a featured type for the slot map, plus the cached rows); the split is one
searchsorted and one stable argsort of the batch's input ids.
"""
from __future__ import annotations

from typing import Callable, Mapping, Sequence

import numpy as np
import torch

#: ``f(ntype, unique missing type-local ids [k]) -> rows [k, dim_t]``: a typed cache's miss source
TypedMissSource = Callable[[str, torch.Tensor], torch.Tensor]

_COUNTERS = ("requests", "hits", "misses", "bytes_from_source")


def type_groups(ids: torch.Tensor, offsets: np.ndarray) -> tuple[torch.Tensor, np.ndarray]:
    """Positions of ``ids`` grouped by node type, each type's in input order, and the group bounds.

    Parameters
    ----------
    ids : int64 tensor [n] of global ids (any device).
    offsets : int64 [T + 1] ascending type offsets (type ``t`` owns ``[offsets[t], offsets[t + 1])``).

    Returns
    -------
    order : int64 tensor [n] (``ids``' device): ``ids[order[bounds[t]:bounds[t + 1]]]`` are type t's.
    bounds : int64 ndarray [T + 1].
    """
    if ids.device.type == "cpu":
        types = np.searchsorted(offsets, ids.numpy(), side="right") - 1
        order = np.argsort(types, kind="stable")
        return torch.from_numpy(order), np.searchsorted(types[order], np.arange(len(offsets)))
    off = torch.from_numpy(np.ascontiguousarray(offsets)).to(ids.device)
    types = torch.searchsorted(off, ids, right=True) - 1
    order = torch.argsort(types, stable=True)
    bounds = torch.searchsorted(types[order], torch.arange(len(offsets), device=ids.device))
    return order, bounds.cpu().numpy()


class TypedFeatureCache:
    """Per-node-type feature caches over one global id space (see the module docstring).

    Parameters
    ----------
    caches : ``{ntype: cache}`` for the featured types, each over that type's local ids
        (``num_nodes`` = the type's count); every cache on the same device.
    ntypes : all node type names, in type-id order.
    offsets : int64 [T + 1] type offsets of the global id space.
    """

    policy = "typed"

    def __init__(self, caches: Mapping[str, object], ntypes: Sequence[str], offsets: np.ndarray):
        ntypes = tuple(ntypes)
        offsets = np.asarray(offsets, dtype=np.int64)
        if offsets.shape != (len(ntypes) + 1,):
            raise ValueError(f"offsets must have {len(ntypes) + 1} entries (one per type + 1), got {offsets.shape}")
        unknown = [nt for nt in caches if nt not in ntypes]
        if unknown:
            raise ValueError(f"caches name unknown node types {unknown}; the types are {list(ntypes)}")
        if not caches:
            raise ValueError("a typed cache needs at least one node type with features")
        devices = {str(c.device) for c in caches.values()}
        if len(devices) > 1:
            raise ValueError(f"every type's cache must sit on one device, got {sorted(devices)}")
        self.caches = dict(caches)
        self.ntypes, self.offsets = ntypes, offsets
        self.device = next(iter(self.caches.values())).device
        self._policy_of = next(iter(self.caches.values())).policy

    # ------------------------------------------------------------- the one-cache API
    @property
    def capacity(self) -> int:
        """Rows all types' caches hold together."""
        return sum(c.capacity for c in self.caches.values())

    def stats(self) -> dict:
        """The counters of one cache, summed over the types (``bytes_from_source`` in each type's
        own row bytes), and ``by_type``: each type's own counters."""
        per = {nt: dict(c.stats()) for nt, c in self.caches.items()}
        out = {k: sum(s[k] for s in per.values()) for k in _COUNTERS}
        out["hit_rate"] = out["hits"] / out["requests"] if out["requests"] else 0.0
        out["by_type"] = per
        return out

    def reset_stats(self) -> None:
        for c in self.caches.values():
            c.reset_stats()

    @property
    def policy_seconds(self) -> float:
        return sum(getattr(c, "policy_seconds", 0.0) for c in self.caches.values())

    def _split(self, ids: torch.Tensor):
        """``(ntype, positions, type-local ids)`` of ``ids`` for each featured type with ids here."""
        order, bounds = type_groups(ids, self.offsets)
        for t, nt in enumerate(self.ntypes):
            if nt in self.caches:
                pos = order[int(bounds[t]):int(bounds[t + 1])]
                yield nt, pos, ids[pos] - int(self.offsets[t])

    def fetch(self, ids: torch.Tensor, miss_source: TypedMissSource, num_seeds: int = 0) -> dict[str, torch.Tensor]:
        """``{ntype: rows of that type's ids, in input order}`` for every featured type (types with
        no id in the batch get ``[0, dim_t]``); one ``miss_source(ntype, misses)`` call per type
        with misses.  The first ``num_seeds`` ids are the seeds; each type's lead its group."""
        ids = torch.as_tensor(ids).to(self.device)
        out = {}
        for nt, pos, local in self._split(ids):
            seeds = int((pos < num_seeds).sum()) if num_seeds else 0
            out[nt] = self.caches[nt].fetch(local, lambda miss, nt=nt: miss_source(nt, miss), num_seeds=seeds)
        return out

    def __repr__(self) -> str:
        inner = ", ".join(f"{nt}: {c.capacity} x {c.dim} {c.dtype}" for nt, c in self.caches.items())
        return f"TypedFeatureCache(policy={self._policy_of!r}, {inner})"


class TypedLookaheadCache(TypedFeatureCache):
    """:class:`TypedFeatureCache` over :class:`~bgl.cache.lookahead.LookaheadCache` s: it takes
    announcements, so the fetch stage reads sampled batches ahead for it as for one cache."""

    def __init__(self, caches: Mapping[str, object], ntypes: Sequence[str], offsets: np.ndarray):
        super().__init__(caches, ntypes, offsets)
        plain = [nt for nt, c in self.caches.items() if not hasattr(c, "announce")]
        if plain:
            raise TypeError(f"the caches of node types {plain} take no announcements; use TypedFeatureCache")

    def announce(self, ids: torch.Tensor) -> None:
        """Announce a coming batch's global input ids: every type's cache hears one batch per
        call (empty when the batch has none of its ids), so each stays in step with its fetches."""
        ids = torch.as_tensor(ids).to(self.device)
        for nt, _, local in self._split(ids):
            self.caches[nt].announce(local)

    @property
    def pending(self) -> int:
        """Batches announced and not yet fetched (every type's cache has the same count)."""
        return max(c.pending for c in self.caches.values())

    def protected_rows(self) -> int:
        """Rows the announced batches keep, over all types (for the cache-sized window)."""
        return sum(c.protected_rows() for c in self.caches.values())

    def forget_announced(self) -> None:
        for c in self.caches.values():
            c.forget_announced()


def typed_cache(caches: Mapping[str, object], ntypes: Sequence[str], offsets: np.ndarray) -> TypedFeatureCache:
    """The typed cache over ``caches``: a :class:`TypedLookaheadCache` when they all take
    announcements, else a :class:`TypedFeatureCache`."""
    if caches and all(hasattr(c, "announce") for c in caches.values()):
        return TypedLookaheadCache(caches, ntypes, offsets)
    return TypedFeatureCache(caches, ntypes, offsets)
