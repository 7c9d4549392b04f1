"""A FIFO cache split over several devices by ``id % num_shards``.

Shard ``s`` holds nodes ``{v : v % S == s}`` under local id ``v // S``, so each
shard is a plain :class:`FeatureCache` over ``ceil((num_nodes - s) / S)``
ids.  Modulo sharding spreads hot nodes evenly whatever the id order (a
partitioner's contiguous ranges would put a whole hot region on one GPU).
On NVLink machines each GPU reads its peers' shards directly; here the
gathered rows are copied to the output device.
"""
from __future__ import annotations

from typing import Sequence

import torch

from .base import MissSource, resolve_device
from .fifo import FeatureCache


class ShardedFeatureCache:
    """FIFO cache over ``len(devices)`` shards; same ``fetch``/``stats`` API as :class:`FeatureCache`.

    Parameters
    ----------
    capacity : total rows over all shards (split as evenly as possible).
    num_nodes, dim, dtype : as for :class:`FeatureCache`.
    devices : one device per shard (repeat a device for several shards on it).
    out_device : device of the rows ``fetch`` returns and of the ids it takes
        (default: the first shard's device).
    insert_order : each shard's FIFO insertion order (see :class:`FeatureCache`).
    """

    policy = "fifo-sharded"

    def __init__(self, capacity: int, num_nodes: int, dim: int, devices: Sequence[str | torch.device],
                 dtype: torch.dtype = torch.float32, out_device: str | torch.device | None = None,
                 insert_order: str = "reverse"):
        devices = list(devices)
        if not devices:
            raise ValueError("devices must name at least one device, got []")
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 0:
            raise ValueError(f"capacity must be an int >= 0, got {capacity!r}")
        if isinstance(num_nodes, bool) or not isinstance(num_nodes, int) or num_nodes < 0:
            raise ValueError(f"num_nodes must be an int >= 0, got {num_nodes!r}")
        s_count = len(devices)
        self.num_shards = s_count
        self.num_nodes = num_nodes
        self.dim = dim
        self.dtype = dtype
        self.shards = [
            FeatureCache(capacity // s_count + (1 if s < capacity % s_count else 0),
                         max(0, -(-(num_nodes - s) // s_count)), dim, dtype, dev, insert_order=insert_order)
            for s, dev in enumerate(devices)
        ]
        self.device = resolve_device(out_device) if out_device is not None else self.shards[0].device
        self.capacity = sum(sh.capacity for sh in self.shards)

    def fetch(self, ids: torch.Tensor, miss_source: MissSource, num_seeds: int = 0) -> torch.Tensor:
        """Rows of ``ids`` in order; one ``miss_source`` call (global ids) for all shards' misses.

        Errors as :meth:`FeatureCache.fetch`; on error no shard changes.
        """
        if not isinstance(ids, torch.Tensor):
            raise TypeError(f"ids must be a torch tensor, got {type(ids).__name__}")
        if ids.dtype not in (torch.int64, torch.int32):
            raise TypeError(f"ids must be int64 or int32, got {ids.dtype}")
        if ids.dim() != 1:
            raise ValueError(f"ids must be 1-D, got shape {tuple(ids.shape)}")
        if ids.device != self.device:
            raise ValueError(f"ids are on {ids.device}, the cache returns rows on {self.device}")
        if ids.numel():
            lo, hi = (int(x) for x in torch.aminmax(ids))
            if lo < 0 or hi >= self.num_nodes:
                raise ValueError(f"node id {lo if lo < 0 else hi} outside [0, {self.num_nodes})")
        ids = ids.long()
        if isinstance(num_seeds, bool) or not isinstance(num_seeds, int) or not 0 <= num_seeds <= ids.numel():
            raise ValueError(f"num_seeds must be an int in [0, {ids.numel()}], got {num_seeds!r}")
        s_count = self.num_shards
        shard_of = ids % s_count
        # Phase 1 on every shard: look up and dedupe (reads only).
        positions, plans = [], []
        for s, shard in enumerate(self.shards):
            pos = (shard_of == s).nonzero().squeeze(1)
            local = (ids.index_select(0, pos) // s_count).to(shard.device)
            positions.append(pos)
            # a shard's request keeps the global order, so its seeds are its leading ids
            shard_seeds = int((pos < num_seeds).sum()) if num_seeds else 0
            plans.append(shard._plan(local, None, shard_seeds))
        # Phase 2: one source call for every shard's distinct misses, in global ids.
        counts = [p.miss_unique.numel() for p in plans]
        rows_per_shard: list[torch.Tensor | None] = [None] * s_count
        total = sum(counts)
        if total:
            global_missing = torch.cat([
                p.miss_unique.to(self.device) * s_count + s for s, p in enumerate(plans)
            ])
            rows = self.shards[0]._checked_rows(miss_source(global_missing), total)
            for s, part in enumerate(torch.split(rows, counts)):
                if counts[s]:
                    rows_per_shard[s] = part.to(self.shards[s].device, non_blocking=True)
        # Phase 3: commit and reassemble in request order.
        out = torch.empty(ids.numel(), self.dim, dtype=self.dtype, device=self.device)
        for s, shard in enumerate(self.shards):
            shard._commit(plans[s], rows_per_shard[s])
            if positions[s].numel():
                out[positions[s]] = plans[s].out.to(self.device, non_blocking=True)
        return out

    def stats(self) -> dict:
        """Counters summed over shards (same keys as :meth:`FeatureCache.stats`)."""
        total = {"requests": 0, "hits": 0, "misses": 0, "bytes_from_source": 0}
        for shard in self.shards:
            st = shard.stats()
            for key in total:
                total[key] += st[key]
        total["hit_rate"] = total["hits"] / total["requests"] if total["requests"] else 0.0
        return total

    def reset_stats(self) -> None:
        """Zero every shard's counters."""
        for shard in self.shards:
            shard.reset_stats()

    def __repr__(self) -> str:
        return (f"ShardedFeatureCache(capacity={self.capacity}, num_nodes={self.num_nodes}, dim={self.dim}, "
                f"shards={[str(sh.device) for sh in self.shards]})")
