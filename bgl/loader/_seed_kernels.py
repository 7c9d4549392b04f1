"""Numba kernel behind :func:`bgl.loader.arguments.has_repeats`: whether seed ids repeat, in one or two passes.

Every loader asks this once at construction, so it is on the path to the first batch of every
loader an evaluation loop builds.  In NumPy it took five calls and two temporaries (an increasing
check, the maximum, a byte per id of the range, a scatter, a count): 0.15-0.30 ms for 10k shuffled
seeds with the caches a previous loader's batches left cold, most of it the page faults of a fresh
byte array of up to 4 MiB.  Here one pass finds the range and whether the ids increase, and a
second marks one *bit* per id of the range (an eighth of the memory, 128 KiB for a million nodes),
stopping at the first repeat: 0.04 ms in the same conditions.
"""
from __future__ import annotations

import numpy as np
from numba import njit

UNSORTED_WIDE = -1  # repeats_by_bits' answer for ids it leaves to a sort (see there)


@njit(nogil=True, cache=True)
def repeats_by_bits(ids, max_span):
    """1 when some id of ``ids`` (int64 [n], n >= 2) occurs twice, 0 when none does, or
    :data:`UNSORTED_WIDE` when the ids neither increase nor lie in ``[0, max_span)`` (a negative id,
    or a range whose bit array the caller does not want to allocate): the caller then sorts."""
    n = ids.shape[0]
    low = ids[0]
    top = ids[0]
    increasing = True
    for i in range(1, n):
        v = ids[i]
        if v <= ids[i - 1]:
            increasing = False
        if v > top:
            top = v
        if v < low:
            low = v
    if increasing:
        return 0
    if low < 0 or top >= max_span:
        return UNSORTED_WIDE
    bits = np.zeros((top >> 3) + 1, np.uint8)
    for i in range(n):
        v = ids[i]
        mark = np.uint8(1 << (v & 7))
        if bits[v >> 3] & mark:
            return 1
        bits[v >> 3] |= mark
    return 0
