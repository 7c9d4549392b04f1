"""Lookahead cache: keep what the already-sampled batches need, fill the rest by a static score.

BGL co-schedules the cache with the sampling order; this policy takes that to
its end.  The sampler runs ahead of the feature fetch, so when batch ``t`` is
fetched the next ``k`` batches are already sampled and their input ids are
known.  After each fetch the cache keeps, among the rows *at hand* (what it
held plus this batch's misses; nothing is fetched speculatively):

1. rows that an announced batch needs, soonest next use first;
2. then rows by ``fill``: ``"counts"`` = a static score (GNNLab's presample
   access counts, or in-degrees when no presample pass was run), ``"recency"``
   = last batch that used the row (LRU-like), ``"none"`` = lower id first.

Protocol: ``announce(ids)`` each sampled batch as soon as it exists (in order),
then ``fetch(ids, source)`` the batches in the same order; a fetch consumes
the oldest announced batch.  Fetching without any batch announced is allowed
(no lookahead: only the fill rule decides).  ``k`` is simply how far
announcements run ahead of fetches; :class:`bgl.cache.lookahead_feeder.LookaheadFeeder`
keeps that distance for an iterator of sampled batches.

With every batch of a stream announced up front and ``fill="none"`` this is
Belady's furthest-next-use rule for batch (set) requests: the offline optimum
for the stream and capacity (:class:`BeladyBound`), a bound, not a runnable policy.

On CUDA (``backend="torch"``) every step is a handful of vectorised torch ops; on the CPU
(``"numba"``) every phase (announce; a fetch's plan and admission) is one numba kernel over
NumPy views of the same tensors, so a batch pays three dispatches and no torch op.

Costs
-----
Per node: ``slot_of`` int32 (4 B, every policy) + ``prio`` int32 (4 B) +
``last_pos`` int64 (8 B, where the node was last announced) = 16 B.
Per slot: one row + ``id_in_slot`` int64 + ``slot_key`` int64 (+ 32 B on the numba backend: heap slot,
heap key, heap position, admission scratch).
Per announced, not yet fetched id: 16 B (its id and its next-use link).
Per batch on the numba backend (CPU): O(announced ids) for ``announce``, O(batch log
capacity) for the admission; on the torch backend (any device) ``fetch`` adds one
``topk`` over ``capacity + misses`` keys once the cache is full.
"""
from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import torch

from . import _kernels
from .base import _INT32_MAX, CacheBase, FetchPlan, MissSource

FILLS = ("counts", "recency", "none")

# Slot/candidate keys are int64, larger = keep.  A node's ``prio`` (< 2^31, unique)
# breaks every tie, so the kept set is always well defined.
#   needed by announced batch s:  NEEDED + ((SEQ_LIMIT - 1 - s) << 31) + prio
#   recency fill, last used in t: (t << 31) + prio          (< 2^60 < NEEDED)
#   counts / none fill:           prio
#   empty slot:                   -1
_PRIO_BITS = 31
SEQ_LIMIT = 1 << 29  # batches a cache can see (announce + fetch) before it refuses more
_NEEDED = 1 << 61
_NO_NEXT = -1
# heap steps the numba backend's bulk ranking costs besides its O(capacity + misses) work (see
# _kernels.lookahead_admit; the ranking is one selection and a heap rebuild inside the kernel)
BULK_FIXED_STEPS = 1 << 13


def _row_bytes(rows: torch.Tensor) -> np.ndarray:
    """Contiguous ``[r, dim]`` CPU rows as a uint8 ``[r, row bytes]`` NumPy view: the kernels copy
    rows as bytes, so one compiled version serves every cache dtype (bfloat16 included)."""
    return rows.view(torch.uint8).numpy()


@dataclass
class _Announced:
    """One announced, not yet fetched batch; its next-use links live in the cache's flat buffer."""

    seq: int           # batch sequence number
    start: int         # global position of its first id (positions count announced ids)
    ids: torch.Tensor  # int64 [n]


def _priority(scores, num_nodes: int) -> torch.Tensor:
    """int32 [num_nodes] unique ranks, higher = more worth keeping: score descending, then lower id."""
    if scores is None:
        return torch.arange(num_nodes, 0, -1, dtype=torch.int32)
    scores = np.asarray(scores)
    if scores.shape != (num_nodes,) or scores.dtype.kind not in "iuf":
        raise ValueError(f"scores must be a real [num_nodes={num_nodes}] array, got shape {scores.shape} "
                         f"{scores.dtype}")
    if scores.dtype.kind == "f" and not np.isfinite(scores).all():
        raise ValueError("scores must be finite")
    order = np.argsort(-scores.astype(np.float64), kind="stable")  # O(n log n) once, at build time
    prio = np.empty(num_nodes, np.int32)
    prio[order] = np.arange(num_nodes, 0, -1, dtype=np.int32)
    return torch.from_numpy(prio)


class LookaheadCache(CacheBase):
    """Keep the rows announced batches need (soonest first), fill the rest by ``fill``.

    Parameters
    ----------
    capacity, num_nodes, dim, dtype, device : as for :class:`~bgl.cache.base.CacheBase`.
    scores : optional real [num_nodes] array for ``fill="counts"`` (presample counts, or
        in-degrees); higher is kept first, ties by lower id.  None = lower id first.
    fill : one of :data:`FILLS`: how rows no announced batch needs compete for the slots.
        ``counts`` (default) moved the fewest rows from the source on the runs of
        bench/results/cache.md.
    backend : ``"auto"`` (numba heap on CPU, torch elsewhere), ``"numba"`` (CPU only) or
        ``"torch"``.  Both keep exactly the same rows.  ``torch`` is a few vectorised ops
        plus one ``topk`` over ``capacity + misses`` keys per fetch once full (any device);
        ``numba`` keeps a min-heap of the slots, O(log capacity) per changed key, one
        kernel per phase (:meth:`_fetch_cpu`).

    Raises
    ------
    ValueError
        for a bad ``fill``, ``scores`` or ``backend``; ``announce``/``fetch`` raise on bad
        ids and leave the cache unchanged.
    """

    policy = "lookahead"

    def __init__(self, capacity: int, num_nodes: int, dim: int, dtype: torch.dtype = torch.float32,
                 device: str | torch.device = "cpu", *, scores=None, fill: str = "counts",
                 backend: str = "auto"):
        if fill not in FILLS:
            raise ValueError(f"fill must be one of {FILLS}, got {fill!r}")
        if backend not in ("auto", "numba", "torch"):
            raise ValueError(f"backend must be 'auto', 'numba' or 'torch', got {backend!r}")
        super().__init__(capacity, num_nodes, dim, dtype, device)
        if backend == "auto":
            backend = "numba" if self.device.type == "cpu" else "torch"
        if backend == "numba" and self.device.type != "cpu":
            raise ValueError(f"backend 'numba' needs a CPU cache, this one is on {self.device}")
        self.backend = backend
        self.fill = fill
        self.prio = _priority(scores if fill == "counts" else None, num_nodes).to(self.device)
        self.slot_key = torch.full((self.capacity,), -1, dtype=torch.int64, device=self.device)
        # global position of each node's latest announcement (-1 = never): finds the
        # announced occurrence whose next-use link a new announcement must set
        self.last_pos = torch.full((num_nodes,), -1, dtype=torch.int64, device=self.device)
        # next-use links of announced ids: links[p - links_base] = seq of the batch that
        # next uses the id announced at global position p (-1 = none announced yet)
        self.links = torch.empty(0, dtype=torch.int64, device=self.device)
        self.links_base = 0
        self.filled = 0      # slots [0, filled) are occupied; slots never empty once filled
        self.next_seq = 0    # sequence number of the next batch announced (or fetched unannounced)
        self.next_pos = 0    # global position of the next announced id
        self._window: deque[_Announced] = deque()
        if backend == "numba":
            self.heap = np.zeros((self.capacity, 2), np.int64)  # slots and their keys, see _kernels
            self.heap_pos = np.zeros(self.capacity, np.int64)
            self._owner = np.full(self.capacity, -1, np.int64)
            self._allow_bulk = True  # tests switch it off to drive the heap path alone
            self.bulk_rankings = 0   # fetches whose admission ranked the whole cache at once

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state.pop("_np", None)  # a pickled copy of a view would no longer share its tensor's memory
        return state

    def _views(self) -> SimpleNamespace:
        """NumPy views of the tensors the CPU kernels read and write (CPU tensors share memory
        with ``.numpy()``), taken once and again only after ``links`` grows, plus the grow-only
        plan scratch (int64 [PLAN_ROWS, >= batch])."""
        v = self.__dict__.get("_np")
        if v is None:
            v = self._np = SimpleNamespace(
                storage=_row_bytes(self.storage), slot_of=self.slot_of.numpy(),
                id_in_slot=self.id_in_slot.numpy(), slot_key=self.slot_key.numpy(), prio=self.prio.numpy(),
                last_pos=self.last_pos.numpy(), links=self.links.numpy(),
                no_rows=_row_bytes(torch.empty(0, self.dim, dtype=self.dtype)),
                scratch=np.empty((_kernels.PLAN_ROWS, 1024), np.int64))
        return v

    # ------------------------------------------------------------- announce
    @property
    def pending(self) -> int:
        """Batches announced and not fetched yet (the lookahead depth + 1 while one is in flight)."""
        return len(self._window)

    def protected_rows(self) -> int:
        """Cached rows an announced, unfetched batch needs (they compete by next use, not by
        ``fill``).  O(capacity): one comparison per slot (numpy on CPU: ~35 us at 8k slots)."""
        keys = self.slot_key[: self.filled]
        if keys.device.type == "cpu":
            return int(np.count_nonzero(keys.numpy() >= _NEEDED))
        return int((keys >= _NEEDED).sum())

    def announce(self, ids: torch.Tensor) -> None:
        """Declare the input ids of the next sampled batch (call in sampling order).

        Parameters
        ----------
        ids : int64/int32 tensor [n] on the cache device, values in ``[0, num_nodes)``;
            the exact tensor a later :meth:`fetch` will ask for (duplicates allowed).

        Raises
        ------
        TypeError / ValueError
            for bad ids; RuntimeError past :data:`SEQ_LIMIT` batches.  The cache is then unchanged.
        """
        t, c = time.perf_counter(), time.thread_time()
        try:
            self._announce(ids)
        finally:
            self.policy_seconds += time.perf_counter() - t
            self.policy_cpu_seconds += time.thread_time() - c

    def _announce(self, ids) -> None:
        cpu = self.backend == "numba"
        if cpu:  # the kernel checks the range before it touches anything
            self._check_id_tensor(ids)
            ids = ids.long().contiguous()
        else:
            ids = self._check_ids(ids)
        if self.next_seq >= SEQ_LIMIT - 1:
            raise RuntimeError(f"a lookahead cache sees at most {SEQ_LIMIT - 1} batches; build a new one")
        seq, n, pos0 = self.next_seq, ids.numel(), self.next_pos
        window_lo = self._window[0].start if self._window else pos0
        self._reserve_links(window_lo, pos0 + n)
        if cpu:
            v = self._views()
            bad, bad_id = _kernels.lookahead_announce(
                ids.numpy(), self.num_nodes, seq, pos0, window_lo, v.last_pos, v.links, self.links_base, v.slot_of,
                v.slot_key, v.prio, _NEEDED + ((SEQ_LIMIT - 1 - seq) << _PRIO_BITS))
            if bad:
                raise ValueError(f"node id {bad_id} outside [0, {self.num_nodes})")
        else:
            self.links[pos0 - self.links_base: pos0 - self.links_base + n] = _NO_NEXT
            prev = self.last_pos.index_select(0, ids)
            in_window = prev >= window_lo
            if bool(in_window.any()):  # link each id's previous announced occurrence to this batch
                self.links.index_fill_(0, prev[in_window] - self.links_base, seq)
            # cached rows no announced batch needed so far are needed now, by this batch
            slots = self.slot_of.index_select(0, ids)
            newly = (slots >= 0) & ~in_window
            if bool(newly.any()):
                self.slot_key.index_copy_(0, slots[newly].long(), self._needed_key(seq, ids[newly]))
            self.last_pos.index_copy_(0, ids, torch.arange(pos0, pos0 + n, device=self.device))
        self._window.append(_Announced(seq, pos0, ids))
        self.next_seq += 1
        self.next_pos += n

    def _reserve_links(self, live_lo: int, hi: int) -> None:
        """Make ``links`` cover positions ``[live_lo, hi)``: the live part slides to the buffer's front while
        that fits, else a buffer twice the need (a fresh one each time a long window reached the end faulted
        in its pages, dropped the kernels' views and scratch: ~0.25 ms a fetch at PubMed batch 256)."""
        if hi - self.links_base <= self.links.numel():
            return
        start, n = live_lo - self.links_base, self.next_pos - live_lo
        if hi - live_lo <= self.links.numel():
            if self.device.type == "cpu":  # numpy copies overlapping ranges as memmove does
                self._views().links[:n] = self._views().links[start:start + n]
            else:
                self.links[:n] = self.links[start:start + n].clone()
            self.links_base = live_lo
            return
        grown = torch.empty(max(2 * (hi - live_lo), 1024), dtype=torch.int64, device=self.device)
        grown[:n] = self.links[start:start + n]
        self.links, self.links_base = grown, live_lo
        self.__dict__.pop("_np", None)  # its links view is the old buffer's

    def forget_announced(self) -> None:
        """Drop every announced, unfetched batch (an abandoned epoch); rows they protected
        compete by ``fill`` again."""
        if not self._window:
            return
        self._window.clear()
        self.last_pos.fill_(-1)  # O(num_nodes), once per abandoned epoch
        needed = (self.slot_key >= _NEEDED).nonzero().squeeze(1)
        if needed.numel():
            ids = self.id_in_slot.index_select(0, needed)
            self.slot_key.index_copy_(0, needed, self._fill_key(ids, self.next_seq - 1))
            if self.backend == "numba":
                _kernels.heap_build(self.heap, self.heap_pos, self.slot_key.numpy(), self.filled)

    # ---------------------------------------------------------------- fetch
    def fetch(self, ids: torch.Tensor, miss_source: MissSource, out: torch.Tensor | None = None,
              num_seeds: int = 0) -> torch.Tensor:
        """Rows of ``ids`` (see :meth:`CacheBase.fetch`); consumes the oldest announced batch.

        Raises
        ------
        ValueError
            also when batches were announced and ``ids`` is not the oldest of them.
        """
        if self.backend == "numba":
            return self._fetch_cpu(ids, miss_source, out, num_seeds)
        checked = self._check_ids(ids)
        self._check_order(checked)
        return super().fetch(ids, miss_source, out, num_seeds)

    def _check_order(self, ids: torch.Tensor) -> None:
        """Refuse a fetch that is not of the oldest announced batch (or one past :data:`SEQ_LIMIT`)."""
        if self._window:
            head = self._window[0].ids
            if not (ids is head or (ids.numel() == head.numel() and torch.equal(ids, head))):
                if self.backend == "numba":  # name a bad id first, as _check_ids does
                    bad, bad_id = _kernels.first_bad_id(ids.numpy(), self.num_nodes)
                    if bad:
                        raise ValueError(f"node id {bad_id} outside [0, {self.num_nodes})")
                raise ValueError(f"fetch ids ({ids.numel()} ids) are not the oldest announced batch "
                                 f"(seq {self._window[0].seq}, {head.numel()} ids); fetch batches in the "
                                 f"order they were announced")
        elif self.next_seq >= SEQ_LIMIT - 1:
            raise RuntimeError(f"a lookahead cache sees at most {SEQ_LIMIT - 1} batches; build a new one")

    def _fetch_cpu(self, ids, miss_source: MissSource, out, num_seeds: int) -> torch.Tensor:
        """:meth:`fetch` on the numba backend: the same phases as ``CacheBase.fetch`` (plan, miss
        source, admission; a failure before the admission leaves the cache unchanged), each one
        kernel on NumPy views (:mod:`bgl.cache._kernels`: ``lookahead_plan``, ``scatter_miss_rows``,
        ``lookahead_admit``).  Fixed cost per fetch: three dispatches and a few checks."""
        self._check_id_tensor(ids)
        ids = ids.long().contiguous()
        self._check_order(ids)
        n = ids.numel()
        if isinstance(num_seeds, bool) or not isinstance(num_seeds, (int, np.integer)) or not 0 <= num_seeds <= n:
            raise ValueError(f"num_seeds must be an int in [0, {n}] (the request's length), got {num_seeds!r}")
        if n >= _INT32_MAX:
            raise ValueError(f"a fetch may ask for at most {_INT32_MAX - 1} ids, got {n}")
        out = self._check_out(out, n)
        v = self._views()
        if v.scratch.shape[1] < n:  # grow by 1.5x, as CacheBase._scratch_rows
            v.scratch = np.empty((_kernels.PLAN_ROWS, max(n, int(1.5 * v.scratch.shape[1]))), np.int64)
        target = out if out.is_contiguous() else torch.empty(n, self.dim, dtype=self.dtype)
        ids_np, out_np = ids.numpy(), _row_bytes(target)
        bad, bad_id, h, m, k, _ = _kernels.lookahead_plan(ids_np, self.num_nodes, v.slot_of, int(num_seeds),
                                                          v.storage, out_np, v.scratch)
        if bad:
            raise ValueError(f"node id {bad_id} outside [0, {self.num_nodes})")
        rows_np = v.no_rows
        if k:  # the source gets its own copy of the ids (the scratch is reused next fetch)
            missing = torch.from_numpy(v.scratch[_kernels.PLAN_MISS_UNIQUE, :k].copy())
            rows_np = _row_bytes(self._checked_rows(miss_source(missing), k).contiguous())
            _kernels.scatter_miss_rows(out_np, v.scratch, m, rows_np)
        if target is not out:
            out.copy_(target)
        t, c = time.perf_counter(), time.thread_time()
        seq, link_off = self._consume_window()
        if self.capacity:
            fill_key = (max(seq, 0) << _PRIO_BITS) if self.fill == "recency" else 0
            self.filled, bulk = _kernels.lookahead_admit(
                ids_np, v.scratch, h, m, k, rows_np, v.storage, v.links, link_off, fill_key, v.prio, v.slot_key,
                v.slot_of, v.id_in_slot, self.heap, self.heap_pos, self.filled, self.capacity, self._owner, _NEEDED,
                SEQ_LIMIT, BULK_FIXED_STEPS, self._allow_bulk)
            self.bulk_rankings += bulk
        self.policy_seconds += time.perf_counter() - t
        self.policy_cpu_seconds += time.thread_time() - c
        self._count_fetch(n, h, k)
        return out

    def _consume_window(self) -> tuple[int, int]:
        """Pop the fetched batch: ``(its seq, offset of its links in the buffer or -1 if unannounced)``."""
        if self._window:
            cur = self._window.popleft()
            return cur.seq, cur.start - self.links_base
        self.next_seq += 1  # unannounced fetch: a batch with no lookahead
        return self.next_seq - 1, -1

    def _admit(self, plan: FetchPlan, rows: torch.Tensor | None) -> None:
        """The torch backend's admission (any device); the numba backend's is in :meth:`_fetch_cpu`."""
        seq, link_off = self._consume_window()
        if self.capacity == 0:
            return
        ids, dev = plan.ids, self.device
        nxt = None if link_off < 0 else self.links[link_off: link_off + ids.numel()]
        if plan.hit_pos.numel():
            hit_ids = ids.index_select(0, plan.hit_pos)
            hit_next = None if nxt is None else nxt.index_select(0, plan.hit_pos)
            # a repeated id takes the best key over its positions (only one holds its link)
            self.slot_key.scatter_reduce_(0, plan.hit_slots, self._key(hit_ids, hit_next, seq), "amax",
                                          include_self=False)
        k = plan.miss_unique.numel()
        if k == 0:
            return
        miss_ids = ids.index_select(0, plan.miss_pos)
        miss_next = None if nxt is None else nxt.index_select(0, plan.miss_pos)
        pos_key = self._key(miss_ids, miss_next, seq)
        if plan.miss_inverse is None:
            miss_key = pos_key
        else:
            miss_key = torch.full((k,), -1, dtype=torch.int64, device=dev)
            miss_key.scatter_reduce_(0, plan.miss_inverse, pos_key, "amax", include_self=False)
        if k <= self.capacity - self.filled:  # still filling: every miss moves in, no ranking needed
            slots = torch.arange(self.filled, self.filled + k, device=dev)
            self._write(slots, plan.miss_unique, rows)
            self.slot_key.index_copy_(0, slots, miss_key)
            self.filled += k
            return
        # misses outnumber the empty slots, whose key (-1) is below every miss's: one topk fills them all
        self._keep_largest(plan, rows, self.slot_key, miss_key)
        self.filled = self.capacity

    # ----------------------------------------------------------------- keys
    def _needed_key(self, seq: int, ids: torch.Tensor) -> torch.Tensor:
        return _NEEDED + ((SEQ_LIMIT - 1 - seq) << _PRIO_BITS) + self.prio.index_select(0, ids).long()

    def _fill_key(self, ids: torch.Tensor, seq: int) -> torch.Tensor:
        prio = self.prio.index_select(0, ids).long()
        if self.fill == "recency":
            return prio + (max(seq, 0) << _PRIO_BITS)
        return prio

    def _key(self, ids: torch.Tensor, next_seq: torch.Tensor | None, seq: int) -> torch.Tensor:
        """Keys of ``ids`` just used by batch ``seq`` whose next announced use is ``next_seq`` (-1 none)."""
        fill = self._fill_key(ids, seq)
        if next_seq is None:
            return fill
        needed = _NEEDED + ((SEQ_LIMIT - 1 - next_seq) << _PRIO_BITS) + self.prio.index_select(0, ids).long()
        return torch.where(next_seq >= 0, needed, fill)

    def state(self) -> dict:
        """Copies of the policy's state (for tests and debugging)."""
        lo = (self._window[0].start if self._window else self.next_pos) - self.links_base
        return {"slot_of": self.slot_of.clone(), "id_in_slot": self.id_in_slot.clone(),
                "slot_key": self.slot_key.clone(), "last_pos": self.last_pos.clone(),
                "links": self.links[lo: self.next_pos - self.links_base].clone(),
                "filled": self.filled, "next_seq": self.next_seq, "next_pos": self.next_pos,
                "window": [(w.seq, w.start, w.ids.clone()) for w in self._window]}


class BeladyBound(LookaheadCache):
    """Belady's offline optimum for a recorded stream: a bound, not a policy a loader can run.

    After each batch it keeps the rows at hand whose next use in the *whole*
    stream comes soonest (rows never used again go first): furthest-next-use
    eviction per row, with bypass, for batch requests.  No cache of the same
    capacity that fetches only what a batch misses moves fewer rows from the
    source on that stream (checked against exhaustive search in
    tests/cache/test_lookahead.py).
    """

    policy = "belady"

    def __init__(self, capacity: int, num_nodes: int, dim: int, dtype: torch.dtype = torch.float32,
                 device: str | torch.device = "cpu", backend: str = "auto"):
        super().__init__(capacity, num_nodes, dim, dtype, device, fill="none", backend=backend)

    def replay(self, batches, miss_source: MissSource) -> None:
        """Announce every batch (ids tensors) of ``batches``, then fetch them in order."""
        batches = list(batches)
        for ids in batches:
            self.announce(ids)
        for ids in batches:
            self.fetch(ids, miss_source)
