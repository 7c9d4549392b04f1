"""numba kernel for the R-MAT edge generator (counter-based, so any chunk can be regenerated).

Edge ``i`` draws its random numbers from ``splitmix64(seed, i, level)``
instead of a stateful generator: chunks come out identical on every pass
and in any order, and the kernel parallelises over edges with no shared state.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_LOW32 = np.uint64(0xFFFFFFFF)
_INV32 = 1.0 / 4294967296.0


@njit(cache=True, nogil=True, inline="always")
def splitmix64(x):
    """SplitMix64 finaliser: a well-mixed uint64 hash of uint64 ``x`` (counter-based RNG, so any edge
    index can be drawn independently).
    """
    z = x + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


@njit(cache=True, nogil=True, inline="always")
def _rmat_pair(key, scale, a, ab, abc):
    """The (row, column) one R-MAT edge with hash ``key`` lands on in a ``2**scale`` square matrix:
    at each level one quadrant with probabilities ``a, b, c, d`` (``ab = a+b``, ``abc = a+b+c``);
    one 64-bit hash supplies two levels' 32-bit uniforms."""
    u = 0
    v = 0
    h = np.uint64(0)
    for level in range(scale):
        if level % 2 == 0:
            h = splitmix64(key + np.uint64(level))
            r = np.float64(h & _LOW32) * _INV32
        else:
            r = np.float64(h >> np.uint64(32)) * _INV32
        bit = 1 << (scale - 1 - level)
        if r < a:
            pass
        elif r < ab:
            v |= bit
        elif r < abc:
            u |= bit
        else:
            u |= bit
            v |= bit
    return u, v


@njit(cache=True, nogil=True, parallel=True)
def rmat_edges(start, count, scale, a, ab, abc, seed, perm, src, dst):
    """Fill ``src``/``dst`` (int64 [count]) with R-MAT edges ``start .. start+count-1``.

    At each of ``scale`` levels an edge picks one quadrant of the adjacency
    matrix with probabilities ``a, b, c, d`` (``ab = a+b``, ``abc = a+b+c``
    cumulative); ``perm`` (int64 [2**scale]) relabels the nodes so the
    heavy nodes are not all clustered at small ids (as Graph500 does).
    """
    base = splitmix64(np.uint64(seed))
    for t in prange(count):
        i = np.uint64(start + t)
        u, v = _rmat_pair(splitmix64(base ^ (i * _GOLDEN)), scale, a, ab, abc)
        src[t] = perm[u]
        dst[t] = perm[v]


@njit(cache=True, nogil=True, parallel=True)
def rmat_typed_edges(start, count, scale, src_shift, dst_shift, a, ab, abc, seed, perm_src, perm_dst, src, dst):
    """R-MAT edges ``start .. start+count-1`` of one relation between two node types.

    The edge is drawn in a ``2**scale`` square (``scale`` = the larger type's log2 count) as
    :func:`rmat_edges` does; the smaller type keeps the top ``scale - shift`` levels of its
    coordinate (``>> shift``), so both ends stay R-MAT skewed at their own size.  ``perm_src``
    / ``perm_dst`` (int64 [2**(scale - shift)]) relabel each type's TYPE-LOCAL ids.
    """
    base = splitmix64(np.uint64(seed))
    for t in prange(count):
        i = np.uint64(start + t)
        u, v = _rmat_pair(splitmix64(base ^ (i * _GOLDEN)), scale, a, ab, abc)
        src[t] = perm_src[u >> src_shift]
        dst[t] = perm_dst[v >> dst_shift]
