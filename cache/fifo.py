"""BGL's FIFO feature cache: a ring buffer of feature rows on the GPU (or CPU).

Why FIFO and not LRU: with proximity ordering (see :mod:`bgl.cache.ordering`)
consecutive batches touch overlapping neighbourhoods, so recency of
*insertion* already tracks recency of use, and FIFO needs no per-hit
bookkeeping: a hit is one gather, an insert is a contiguous ring write.
"""
from __future__ import annotations

import numpy as np
import torch

from .base import CacheBase, FetchPlan

#: ``reverse``: a fetch's distinct misses are inserted last-requested first, so the
#: first-requested ones are the newest rows and survive longest; ``request``: in
#: order of first occurrence (the newest rows are the last-requested ones).
INSERT_ORDERS = ("reverse", "request")


def _int32_priority(node_priority, num_nodes: int) -> torch.Tensor:
    """``node_priority`` as int32 [num_nodes] keys in the same order (4 bytes per node, like
    ``slot_of``): integers clipped to +-(2^31 - 1), anything else replaced by its dense rank."""
    prio = np.asarray(node_priority)
    if prio.shape != (num_nodes,) or prio.dtype.kind not in "iuf":
        raise ValueError(f"node_priority must be a real [num_nodes={num_nodes}] array, "
                         f"got shape {prio.shape} {prio.dtype}")
    if prio.dtype.kind in "iu":
        keys = np.clip(prio, -(2**31 - 1), 2**31 - 1).astype(np.int32)
    else:
        keys = np.unique(prio, return_inverse=True)[1].astype(np.int32)
    return torch.from_numpy(keys)


class FeatureCache(CacheBase):
    """FIFO cache of node feature rows.

    Parameters
    ----------
    capacity : rows held; 0 disables caching (every id is fetched from the source).
    num_nodes : ids are ``[0, num_nodes)``.
    dim : feature width; dtype : float32 / float16 / bfloat16 / float64 (int16 / uint8: encoded rows, bgl/codec).
    device : where storage and maps live (``"cuda"`` falls back to CPU when absent).
    insert_order : ``"reverse"`` (default) or ``"request"``, see :data:`INSERT_ORDERS`.
        A sampled batch's input ids (``blocks[0].src_ids``) list the seeds first,
        then each hop's new nodes outward.  The next batch of a proximity order
        reuses the inner hops far more than the outermost one, so ``reverse``
        keeps the seeds and inner hops longest; when one batch misses more
        distinct ids than ``capacity`` it keeps the inner ones instead of the
        outermost hop.  ``fetch(..., num_seeds=blocks[-1].num_dst)`` also marks the
        seeds, which ``reverse`` then inserts first (evicted first): a proximity
        order never picks them as seeds again in the epoch, and measured hit rates
        rose when hop-1 nodes, not seeds, were kept longest (bench/results/cache.md).
        Rows come back in the order asked either way.
    node_priority : optional ``[num_nodes]`` real array (e.g. in-degrees; kept as int32 keys).  Each fetch's
        distinct misses are then inserted by ascending priority (ties in the
        ``insert_order`` sequence), so when they overflow the ring the highest
        ones stay: on power-law graphs a batch needs several times the cache,
        and keeping its hubs, which the next batches reuse most, measured close
        to a static top-degree cache (bench/results/cache.md).  Eviction across
        fetches stays FIFO.

    State
    -----
    ``storage`` [capacity, dim]; ``slot_of`` int32 [num_nodes] (-1 = absent);
    ``id_in_slot`` int64 [capacity] (-1 = empty); ``head`` ring position.

    A fetch gathers hits in one ``index_select``, asks ``miss_source`` once for
    the distinct misses and writes them as one contiguous run of the ring
    (at most two slices when it wraps), overwriting the oldest rows.  Inserting
    the distinct misses one by one into a FIFO leaves exactly the same ids:
    with ``request`` the head moves up and the last ``capacity`` misses stay;
    with ``reverse`` the head moves down, so the misses still sit in request
    order in the ring (non-seeds, then seeds) and the first ``capacity`` stay.
    """

    policy = "fifo"

    def __init__(self, capacity: int, num_nodes: int, dim: int, dtype: torch.dtype = torch.float32,
                 device: str | torch.device = "cpu", insert_order: str = "reverse", node_priority=None):
        if insert_order not in INSERT_ORDERS:
            raise ValueError(f"insert_order must be one of {INSERT_ORDERS}, got {insert_order!r}")
        super().__init__(capacity, num_nodes, dim, dtype, device)
        self.insert_order = insert_order
        self.head = 0
        self.node_priority = None
        if node_priority is not None:
            self.node_priority = _int32_priority(node_priority, num_nodes).to(self.device)

    def _admit(self, plan: FetchPlan, rows: torch.Tensor | None) -> None:
        k = plan.miss_unique.numel()
        cap = self.capacity
        if k == 0 or cap == 0:
            return
        keep = min(k, cap)
        if self.node_priority is not None:
            self._admit_by_priority(plan, rows, keep)
            return
        if self.insert_order == "request":
            # distinct miss i goes to slot (head + i) % cap; the last `keep` survive
            first, start = k - keep, (self.head + k - keep) % cap
            self.head = (self.head + k) % cap
            self._write_run(start, plan.miss_unique[first:first + keep], rows[first:first + keep])
            return
        # reverse: the seeds' misses are inserted first (oldest), then the rest last-requested
        # first, with the head moving down.  The ring then holds, from slot (head - k) up,
        # the non-seed misses in request order followed by the seed misses in request
        # order, and the lowest `keep` of those k slots are the survivors.
        start = (self.head - k) % cap
        self.head = start
        ns = plan.seed_misses
        rest = min(k - ns, keep)
        uniq = plan.miss_unique
        if rest:
            self._write_run(start, uniq[ns:ns + rest], rows[ns:ns + rest])
        if keep > rest:
            self._write_run((start + rest) % cap, uniq[: keep - rest], rows[: keep - rest])

    def _admit_by_priority(self, plan: FetchPlan, rows: torch.Tensor, keep: int) -> None:
        """Insert the distinct misses by ascending ``node_priority`` (ties: the insert order's
        sequence), so that when they overflow the ring the highest-priority ones stay."""
        k = plan.miss_unique.numel()
        cap = self.capacity
        dev = self.device
        ns = plan.seed_misses if self.insert_order == "reverse" else 0
        # `layout`: the misses in the ascending slot order the ring gives them without
        # priorities (see _admit); ranking it stably keeps that order among equal priorities
        layout = torch.cat([torch.arange(ns, k, device=dev), torch.arange(ns, device=dev)])
        prio = self.node_priority.index_select(0, plan.miss_unique.index_select(0, layout))
        # ascending stable sort of int32 keys (a radix sort on CPU: ~15x faster than a
        # float or descending sort); `reverse` ranks by descending priority, so negate
        if self.insert_order == "request":
            ranked = layout.index_select(0, torch.sort(prio, stable=True).indices)
            sel, start = ranked[k - keep:], (self.head + k - keep) % cap
            self.head = (self.head + k) % cap
        else:
            ranked = layout.index_select(0, torch.sort(prio.neg(), stable=True).indices)
            sel, start = ranked[:keep], (self.head - k) % cap
            self.head = start
        self._write_run(start, plan.miss_unique.index_select(0, sel), rows, sel)

    def _write_run(self, start: int, new_ids: torch.Tensor, new_rows: torch.Tensor,
                   row_index: torch.Tensor | None = None) -> None:
        """Write ``len(new_ids)`` (<= capacity, none cached now) into slots ``start, start+1, ...``
        modulo capacity: contiguous slice copies, about twice as fast as a scattered write.
        With ``row_index`` the rows are ``new_rows[row_index]``, gathered straight into the ring."""
        cap = self.capacity
        count = new_ids.numel()
        old = self._ring_slice(self.id_in_slot, start, count)
        old = old[old >= 0]
        if old.numel():
            self.slot_of.index_fill_(0, old, -1)
        slots = (torch.arange(count, device=self.device) + start) % cap
        self.slot_of.index_copy_(0, new_ids, slots.to(torch.int32))
        split = min(count, cap - start)
        for lo, hi, slot in ((0, split, start), (split, count, 0)):
            if hi <= lo:
                continue
            self.id_in_slot[slot:slot + hi - lo].copy_(new_ids[lo:hi])
            dst = self.storage[slot:slot + hi - lo]
            if row_index is None:
                dst.copy_(new_rows[lo:hi])
            else:
                torch.index_select(new_rows, 0, row_index[lo:hi], out=dst)

    @staticmethod
    def _ring_slice(t: torch.Tensor, start: int, count: int) -> torch.Tensor:
        end = start + count
        if end <= t.shape[0]:
            return t[start:end]
        return torch.cat([t[start:], t[: end - t.shape[0]]])

    def state(self) -> tuple[torch.Tensor, torch.Tensor, int]:
        """Copies of ``(slot_of, id_in_slot, head)`` (for tests and debugging)."""
        return self.slot_of.clone(), self.id_in_slot.clone(), self.head
