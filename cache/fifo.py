"""BGL's FIFO feature cache: a ring buffer of feature rows on the GPU (or CPU).

Why FIFO and not LRU: with proximity ordering (see :mod:`bgl.cache.ordering`)
consecutive batches touch overlapping neighbourhoods, so recency of
*insertion* already tracks recency of use, and FIFO needs no per-hit
bookkeeping: a hit is one gather, an insert is a contiguous ring write.
"""
from __future__ import annotations

import torch

from .base import CacheBase, FetchPlan


class FeatureCache(CacheBase):
    """FIFO cache of node feature rows.

    Parameters
    ----------
    capacity : rows held; 0 disables caching (every id is fetched from the source).
    num_nodes : ids are ``[0, num_nodes)``.
    dim : feature width; dtype : float32 / float16 / bfloat16 / float64.
    device : where storage and maps live (``"cuda"`` falls back to CPU when absent).

    State
    -----
    ``storage`` [capacity, dim]; ``slot_of`` int32 [num_nodes] (-1 = absent);
    ``id_in_slot`` int64 [capacity] (-1 = empty); ``head`` next slot to write.

    A fetch gathers hits in one ``index_select``, asks ``miss_source`` once for
    the distinct misses, and writes them at the ring head in order of first
    occurrence in the request, overwriting the oldest rows.  If a fetch misses
    more distinct ids than ``capacity``, only the last ``capacity`` of them stay
    (exactly what inserting them one by one into the ring would leave).
    """

    policy = "fifo"

    def __init__(self, capacity: int, num_nodes: int, dim: int, dtype: torch.dtype = torch.float32,
                 device: str | torch.device = "cpu"):
        super().__init__(capacity, num_nodes, dim, dtype, device)
        self.head = 0

    def _admit(self, plan: FetchPlan, rows: torch.Tensor | None) -> None:
        k = plan.miss_unique.numel()
        cap = self.capacity
        if k == 0 or cap == 0:
            return
        keep = min(k, cap)
        # The i-th distinct miss lands in slot (head + i) % cap; of the last `keep`
        # ones none share a slot, so one scatter replaces k sequential inserts.
        first = k - keep
        slots = (torch.arange(first, k, device=self.device) + self.head) % cap
        self._write(slots, plan.miss_unique[first:], rows[first:])
        self.head = (self.head + k) % cap

    def state(self) -> tuple[torch.Tensor, torch.Tensor, int]:
        """Copies of ``(slot_of, id_in_slot, head)`` (for tests and debugging)."""
        return self.slot_of.clone(), self.id_in_slot.clone(), self.head
