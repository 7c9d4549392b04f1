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
