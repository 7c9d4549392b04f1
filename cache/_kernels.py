"""numba kernels of the cache package (plain arrays in, plain arrays out).

Tested directly against brute-force Python references in tests/cache/.
"""
from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def bfs_train_order(indptr, indices, node_offset, roots, is_train, num_train, queue, visited):
    """Training nodes in BFS visit order, restarting from the next unvisited root when a BFS ends.

    Parameters
    ----------
    indptr : int64 [n + 1]; indices : int32/int64 [e] CSC (in-neighbours, global ids).
    node_offset : global id of local node 0 (neighbours outside the part are skipped).
    roots : int64 [r] local ids to start from, in order (random training nodes);
        a root already visited is skipped, so every training node reachable
        from some root is emitted once.
    is_train : bool [n]; num_train : number of True entries.
    queue : int [n] scratch; visited : uint8 [n] scratch (zeroed here).

    Returns
    -------
    int64 [<= num_train] local ids of training nodes in visit order; shorter
    than num_train only if some training node is unreachable from every root.
    """
    n = indptr.shape[0] - 1
    visited[:] = 0
    out = np.empty(num_train, np.int64)
    found = 0
    for r in range(roots.shape[0]):
        if found == num_train:
            break
        root = roots[r]
        if visited[root]:
            continue
        visited[root] = 1
        queue[0] = root
        head = 0
        tail = 1
        while head < tail and found < num_train:
            u = queue[head]
            head += 1
            if is_train[u]:
                out[found] = u
                found += 1
            for e in range(indptr[u], indptr[u + 1]):
                v = indices[e] - node_offset
                if v < 0 or v >= n or visited[v]:
                    continue
                visited[v] = 1
                queue[tail] = v
                tail += 1
    return out[:found]


@numba.njit(cache=True, nogil=True)
def interleave_chunks(seqs, chunk, seen):
    """Round-robin over the rows of ``seqs`` ([s, L] ids), ``chunk`` new ids from a row per turn.

    Each turn takes the row's next ``chunk`` ids not emitted yet (ids already
    emitted are skipped without counting), so every id appears once, at its
    first pick.  ``chunk = 1`` mixes the rows element by element; ``chunk =
    batch_size`` makes each batch one contiguous stretch of one row.

    ``seen`` : uint8 [>= max id + 1] scratch (zeroed here).  Returns int64
    [number of distinct ids in seqs].
    """
    s, length = seqs.shape
    seen[:] = 0
    out = np.empty(s * length, np.int64)
    ptr = np.zeros(s, np.int64)
    k = 0
    active = s
    while active > 0:
        active = 0
        for i in range(s):
            taken = 0
            while taken < chunk and ptr[i] < length:
                v = seqs[i, ptr[i]]
                ptr[i] += 1
                if not seen[v]:
                    seen[v] = 1
                    out[k] = v
                    k += 1
                    taken += 1
            if ptr[i] < length:
                active += 1
    return out[:k]


# ---------------------------------------------------------------- lookahead cache
# A binary min-heap over the occupied slots of a LookaheadCache, keyed by slot_key
# (int64, unique among occupied slots): heap[i, 0] is a slot, heap[i, 1] its key (kept beside
# the slot so a comparison reads one array, not key[heap[i]]), heap_pos[slot] its index.
# The root is the slot to evict next.  Updates cost O(log capacity) per changed key,
# so a batch costs O(batch log capacity) instead of a full ranking of the cache.
# Key increases are lazy: the heap is ordered by its stored keys, which may lag below
# slot_key (an announcement that protects a cached row only writes slot_key).  Every true
# key is >= its stored one, so once the root's stored key is its true key (_heap_fresh_root)
# the root is the true minimum: the same victim as an eager heap, without the sift-down of
# each protected row to a leaf.


@numba.njit(cache=True, nogil=True, inline="always")
def _heap_put(heap, heap_pos, i, s, kk):
    heap[i, 0] = s
    heap[i, 1] = kk
    heap_pos[s] = i


@numba.njit(cache=True, nogil=True)
def _heap_sift_down(heap, heap_pos, i, s, kk, size):
    """Place slot ``s`` with key ``kk`` at index ``i`` or below (moving smaller children up)."""
    while True:
        left = 2 * i + 1
        if left >= size:
            break
        child = left
        if left + 1 < size and heap[left + 1, 1] < heap[left, 1]:
            child = left + 1
        if heap[child, 1] >= kk:
            break
        _heap_put(heap, heap_pos, i, heap[child, 0], heap[child, 1])
        i = child
    _heap_put(heap, heap_pos, i, s, kk)


@numba.njit(cache=True, nogil=True)
def _heap_fix(heap, heap_pos, i, size):
    """Restore the heap order around index ``i`` after its key ``heap[i, 1]`` changed either way."""
    s = heap[i, 0]
    kk = heap[i, 1]
    while i > 0:
        parent = (i - 1) >> 1
        if kk >= heap[parent, 1]:
            break
        _heap_put(heap, heap_pos, i, heap[parent, 0], heap[parent, 1])
        i = parent
    _heap_sift_down(heap, heap_pos, i, s, kk, size)


@numba.njit(cache=True, nogil=True, inline="always")
def _heap_rekey(heap, heap_pos, slot_key, s, kk, size):
    """Give occupied slot ``s`` the key ``kk``: a decrease moves it up now, an increase waits."""
    slot_key[s] = kk
    i = heap_pos[s]
    if kk < heap[i, 1]:
        heap[i, 1] = kk
        _heap_fix(heap, heap_pos, i, size)


@numba.njit(cache=True, nogil=True)
def _heap_fresh_root(heap, heap_pos, slot_key, size):
    """Sift stale roots down with their true keys until the root's stored key is its own."""
    while size and heap[0, 1] != slot_key[heap[0, 0]]:
        s = heap[0, 0]
        _heap_sift_down(heap, heap_pos, 0, s, slot_key[s], size)


@numba.njit(cache=True, nogil=True)
def heap_build(heap, heap_pos, key, size):
    """Heapify slots ``0..size-1`` by ``key`` (O(size)); used after a bulk key change."""
    for i in range(size):
        _heap_put(heap, heap_pos, i, i, key[i])
    for i in range(size // 2 - 1, -1, -1):  # sift-down only: a sift-up here would break subtrees below
        _heap_sift_down(heap, heap_pos, i, heap[i, 0], heap[i, 1], size)


@numba.njit(cache=True, nogil=True)
def lookahead_announce(ids, num_nodes, seq, pos0, window_lo, last_pos, links, links_base, slot_of, slot_key, prio,
                       seq_key):
    """Record an announced batch: link each id's previous announced occurrence still in the
    window (global position >= ``window_lo``) to batch ``seq``; a cached id with no such
    occurrence gets the needed key ``seq_key + prio[v]`` (a key increase: the heap is not
    touched, see the lazy increases above).

    ids int64 [n]; last_pos int64 [num_nodes] global position of each node's latest
    announcement (set to ``pos0 + i`` here); links int64 flat next-use buffer indexed by
    ``position - links_base``, covering the batch's positions (set to -1 = no next use here).
    An id repeated in the batch links nothing to itself.  Returns :func:`first_bad_id`'s
    answer; with a bad id nothing is touched.
    """
    bad, bad_id = first_bad_id(ids, num_nodes)
    if bad:
        return True, bad_id
    for i in range(ids.shape[0]):
        links[pos0 - links_base + i] = -1
    for i in range(ids.shape[0]):
        v = ids[i]
        prev = last_pos[v]
        if prev >= pos0:
            pass  # repeated within this batch
        elif prev >= window_lo:
            links[prev - links_base] = seq
        else:
            s = slot_of[v]
            if s >= 0:
                slot_key[s] = seq_key + prio[v]  # an increase: the heap catches up lazily
        last_pos[v] = pos0 + i
    return False, 0


@numba.njit(cache=True, nogil=True)
def _request_key(v, nxt, prio, fill_key, needed_base, seq_limit):
    if nxt >= 0:
        return needed_base + ((seq_limit - 1 - nxt) << 31) + prio[v]
    return fill_key + prio[v]


@numba.njit(cache=True, nogil=True)
def lookahead_rekey(ids, hit_pos, hit_slots, miss_pos, miss_inverse, k, links, link_off, fill_key, prio, slot_key,
                    heap, heap_pos, size, owner, needed_base, seq_limit, fix_heap):
    """After a fetch: re-key the hit slots and return the keys int64 [k] of the distinct misses.

    The key of request position ``p`` is "needed by batch ``links[link_off + p]``" when
    that is >= 0 (``link_off < 0``: no links), else ``fill_key + prio``; a repeated id
    takes its best key.  With ``fix_heap`` every changed slot key is fixed in the heap at
    once (fixing several changed keys afterwards would not restore the order); without
    it the caller rebuilds the heap.  ``owner`` is [capacity] scratch, all -1 on entry
    and exit (marks slots already re-keyed by this batch).
    """
    for h in range(hit_slots.shape[0]):
        p = hit_pos[h]
        nxt = links[link_off + p] if link_off >= 0 else -1
        kk = _request_key(ids[p], nxt, prio, fill_key, needed_base, seq_limit)
        s = hit_slots[h]
        if owner[s] == -1 or kk > slot_key[s]:  # first position of s, or a better one of a repeated id
            owner[s] = -3
            if fix_heap:
                _heap_rekey(heap, heap_pos, slot_key, s, kk, size)
            else:
                slot_key[s] = kk
    for h in range(hit_slots.shape[0]):
        owner[hit_slots[h]] = -1
    mkey = np.full(k, -2, np.int64)
    has_inverse = miss_inverse.shape[0] > 0
    for j in range(miss_pos.shape[0]):
        u = miss_inverse[j] if has_inverse else j
        p = miss_pos[j]
        nxt = links[link_off + p] if link_off >= 0 else -1
        kk = _request_key(ids[p], nxt, prio, fill_key, needed_base, seq_limit)
        if kk > mkey[u]:
            mkey[u] = kk
    return mkey


@numba.njit(cache=True, nogil=True)
def lookahead_insert(miss_unique, mkey, slot_key, slot_of, id_in_slot, heap, heap_pos, size, capacity, owner,
                     out_slot):
    """Admit the distinct misses one by one: a miss takes a free slot, else replaces the heap
    root while its key is larger, so the cache ends holding the ``capacity`` largest keys of
    (what it held, the misses).  Updates ``slot_of``/``id_in_slot``/``slot_key``/heap in
    place; ``out_slot[u]`` is the slot miss ``u`` ended in or -1.  ``owner`` as above.
    Returns the new number of occupied slots.
    """
    k = miss_unique.shape[0]
    for u in range(k):
        v = miss_unique[u]
        kk = mkey[u]
        if size < capacity:
            s = size
            slot_key[s] = kk
            _heap_put(heap, heap_pos, size, s, kk)
            size += 1
            _heap_fix(heap, heap_pos, size - 1, size)
        else:
            if capacity == 0:
                out_slot[u] = -1
                continue
            _heap_fresh_root(heap, heap_pos, slot_key, size)
            s = heap[0, 0]
            if kk <= heap[0, 1]:
                out_slot[u] = -1
                continue
            if owner[s] >= 0:
                out_slot[owner[s]] = -1
            slot_of[id_in_slot[s]] = -1
            slot_key[s] = kk
            _heap_sift_down(heap, heap_pos, 0, s, kk, size)
        id_in_slot[s] = v
        slot_of[v] = s
        owner[s] = u
        out_slot[u] = s
    for u in range(k):
        if out_slot[u] >= 0:
            owner[out_slot[u]] = -1
    return size


# The CPU fetch path of a LookaheadCache: one kernel per phase (plan, admit, announce) on
# NumPy views of the cache's tensors, so a batch costs three dispatches and a few Python
# checks whatever its size.  Feature rows travel as uint8 views of their bytes (bit-exact and
# one compiled version for every cache dtype, bfloat16 included).
# Rows of the plan's scratch table (int64 [PLAN_ROWS, >= batch]):
PLAN_HIT_POS, PLAN_HIT_SLOT, PLAN_MISS_POS, PLAN_MISS_UNIQUE, PLAN_MISS_INVERSE = range(5)
PLAN_ROWS = 5


@numba.njit(cache=True, nogil=True)
def first_bad_id(ids, num_nodes):
    """``(True, id)`` for the smallest id when it is < 0, else the largest when it is >= num_nodes
    (the id ``_check_ids`` names); ``(False, 0)`` when all of ``ids`` lie in ``[0, num_nodes)``."""
    if ids.shape[0] == 0:
        return False, 0
    lo = ids[0]
    hi = ids[0]
    for i in range(1, ids.shape[0]):
        v = ids[i]
        if v < lo:
            lo = v
        elif v > hi:
            hi = v
    if lo < 0:
        return True, lo
    if hi >= num_nodes:
        return True, hi
    return False, 0


@numba.njit(cache=True, nogil=True)
def lookahead_plan(ids, num_nodes, slot_of, num_seeds, storage, out, scratch):
    """Look up ``ids``, copy the hit rows into ``out``, dedupe the misses: ``CacheBase._plan`` in one pass.

    ids int64 [n]; slot_of int32 [num_nodes] (-1 = not cached; used as scratch for the
    dedupe, every missed id's entry holds ``-2 - its distinct index`` during the pass and is
    -1 again on return); storage [capacity, w] / out [n, w] uint8 views of the rows' bytes;
    scratch int64 [PLAN_ROWS, >= n] receives hit positions and slots, missed positions, the
    distinct missed ids in first-occurrence order and each missed position's distinct index.

    Returns ``(bad, bad_id, hits, missed positions, distinct misses, seed_misses)``: with
    ``bad`` (an id outside ``[0, num_nodes)``, see :func:`first_bad_id`) nothing is touched;
    ``seed_misses`` = distinct misses first asked among the first ``num_seeds`` positions.
    """
    bad, bad_id = first_bad_id(ids, num_nodes)
    if bad:
        return True, bad_id, 0, 0, 0, 0
    h = 0
    m = 0
    k = 0
    seed_misses = 0
    width = storage.shape[1]
    for i in range(ids.shape[0]):
        v = ids[i]
        s = slot_of[v]
        if s >= 0:
            scratch[PLAN_HIT_POS, h] = i
            scratch[PLAN_HIT_SLOT, h] = s
            h += 1
            for j in range(width):
                out[i, j] = storage[s, j]
            continue
        if s == -1:
            u = k
            slot_of[v] = -2 - k
            scratch[PLAN_MISS_UNIQUE, k] = v
            k += 1
            if i < num_seeds:
                seed_misses = k
        else:
            u = -2 - s
        scratch[PLAN_MISS_POS, m] = i
        scratch[PLAN_MISS_INVERSE, m] = u
        m += 1
    for u in range(k):
        slot_of[scratch[PLAN_MISS_UNIQUE, u]] = -1
    return False, 0, h, m, k, seed_misses


@numba.njit(cache=True, nogil=True)
def scatter_miss_rows(out, scratch, m, rows):
    """``out[miss_pos[j]] = rows[miss_inverse[j]]`` for the ``m`` missed positions of a plan."""
    width = out.shape[1]
    for j in range(m):
        p = scratch[PLAN_MISS_POS, j]
        u = scratch[PLAN_MISS_INVERSE, j]
        for c in range(width):
            out[p, c] = rows[u, c]


@numba.njit(cache=True, nogil=True)
def _rank_in_bulk(miss_unique, mkey, rows, storage, slot_key, slot_of, id_in_slot, capacity):
    """Keep the ``capacity`` largest of (the full cache's slot keys, the misses' keys): one
    selection instead of a heap update per changed key.  Keys are distinct, so the kept set
    is the heap path's; victims (slot order) take the entering misses (miss order)."""
    k = miss_unique.shape[0]
    both = np.empty(capacity + k, np.int64)
    both[:capacity] = slot_key[:capacity]
    both[capacity:] = mkey
    cut = np.partition(both, k - 1)[k - 1]  # the k-th smallest key: it and all below are dropped
    u = 0
    width = storage.shape[1]
    for s in range(capacity):
        if slot_key[s] > cut:
            continue
        while u < k and mkey[u] <= cut:
            u += 1
        if u == k:  # unreachable with distinct keys (prio is unique); guards the writes below
            break
        slot_of[id_in_slot[s]] = -1
        v = miss_unique[u]
        id_in_slot[s] = v
        slot_of[v] = s
        slot_key[s] = mkey[u]
        for c in range(width):
            storage[s, c] = rows[u, c]
        u += 1


@numba.njit(cache=True, nogil=True)
def lookahead_admit(ids, scratch, h, m, k, rows, storage, links, link_off, fill_key, prio, slot_key, slot_of,
                    id_in_slot, heap, heap_pos, size, capacity, owner, needed_base, seq_limit, bulk_fixed_steps,
                    allow_bulk):
    """After a fetch's rows arrived: re-key the hits, admit the distinct misses, write their rows.

    The plan's ``scratch`` (see :func:`lookahead_plan`) gives hits, misses and their distinct
    index.  Keys as in :func:`lookahead_rekey`; admission as :func:`lookahead_insert`, or, once
    the cache is full and the changed keys would cost more heap steps (``changed x
    log2(capacity)``) than ranking everything (``2 (capacity + k) + bulk_fixed_steps``), one
    bulk selection (:func:`_rank_in_bulk`) and an O(capacity) heap rebuild.  Both keep the same
    rows.  ``rows`` [k, w] / ``storage`` [capacity, w] uint8 views of the rows' bytes.

    Returns ``(occupied slots, ranked in bulk)``.
    """
    bits = 0  # capacity.bit_length()
    c = capacity
    while c:
        bits += 1
        c >>= 1
    bulk = allow_bulk and size == capacity and (h + k) * max(bits, 1) > 2 * (capacity + k) + bulk_fixed_steps
    mkey = lookahead_rekey(ids, scratch[PLAN_HIT_POS, :h], scratch[PLAN_HIT_SLOT, :h], scratch[PLAN_MISS_POS, :m],
                           scratch[PLAN_MISS_INVERSE, :m], k, links, link_off, fill_key, prio, slot_key, heap,
                           heap_pos, size, owner, needed_base, seq_limit, not bulk)
    miss_unique = scratch[PLAN_MISS_UNIQUE, :k]
    if bulk:
        if k:
            _rank_in_bulk(miss_unique, mkey, rows, storage, slot_key, slot_of, id_in_slot, capacity)
        heap_build(heap, heap_pos, slot_key, size)
        return size, True
    if k == 0:
        return size, False
    out_slot = np.empty(k, np.int64)
    size = lookahead_insert(miss_unique, mkey, slot_key, slot_of, id_in_slot, heap, heap_pos, size, capacity,
                            owner, out_slot)
    width = storage.shape[1]
    for u in range(k):
        s = out_slot[u]
        if s >= 0:
            for c in range(width):
                storage[s, c] = rows[u, c]
    return size, False
