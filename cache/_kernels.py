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


@numba.njit(cache=True, nogil=True)
def _sample_layer(indptr, indices, frontier, fanout, seed, mark, stamp, out):
    """Append to ``out`` (after the frontier itself) the new nodes among up to ``fanout``
    uniformly sampled in-neighbours (without replacement) of each frontier node.

    ``mark[v] == stamp`` means v is already in ``out``.  Returns the new length.
    """
    np.random.seed(seed)
    k = 0
    for i in range(frontier.shape[0]):
        v = frontier[i]
        if mark[v] != stamp:
            mark[v] = stamp
            out[k] = v
            k += 1
    for i in range(frontier.shape[0]):
        v = frontier[i]
        start = indptr[v]
        deg = indptr[v + 1] - start
        if fanout < 0 or deg <= fanout:
            for e in range(start, start + deg):
                u = indices[e]
                if mark[u] != stamp:
                    mark[u] = stamp
                    out[k] = u
                    k += 1
        else:
            # Floyd's algorithm: fanout distinct offsets in [0, deg) without a deg-sized buffer
            picked = np.empty(fanout, np.int64)
            for j in range(fanout):
                t = deg - fanout + j
                r = np.random.randint(0, t + 1)
                dup = False
                for q in range(j):
                    if picked[q] == r:
                        dup = True
                        break
                picked[j] = t if dup else r
            for j in range(fanout):
                u = indices[start + picked[j]]
                if mark[u] != stamp:
                    mark[u] = stamp
                    out[k] = u
                    k += 1
    return k


def sample_input_nodes(store, seeds: np.ndarray, fanouts, seed: int) -> np.ndarray:
    """Input node ids of a multi-layer uniform neighbour sample (fallback when
    ``bgl.sampler.LocalSampler`` is unavailable).  Seeds come first, then the
    new nodes of each hop; every id once.  ``fanouts`` in DGL order (the last
    one is applied to the seeds first).
    """
    n = store.num_nodes
    mark = np.zeros(n, np.int64)
    frontier = np.asarray(seeds, dtype=np.int64)
    for hop, fanout in enumerate(reversed(list(fanouts))):
        per = n if fanout < 0 else int(fanout)
        out = np.empty(min(n, frontier.shape[0] * (1 + per)), np.int64)
        k = _sample_layer(store.indptr, store.indices, frontier, int(fanout),
                          (int(seed) * 7919 + hop) % (2**31), mark, hop + 1, out)
        frontier = out[:k]
    return frontier
