"""numba kernels of the feature-row codecs (plain array arguments; :mod:`bgl.codec.rows` validates).

Every kernel encodes a chunk of rows into a preallocated output and returns the first row
it could not encode (a NaN or infinite value, or one that overflows the format), or -1.
"""
from __future__ import annotations

import numba as nb
import numpy as np

INT8_LEVELS = 255  # codes 0..255: x' = offset + scale * code


@nb.njit(cache=True, nogil=True)
def bf16_encode(x, out):
    """float32 [n, d] -> bfloat16 bit patterns int16 [n, d], round to nearest, ties to even.

    Returns the first row holding a non-finite value or one that rounds past bfloat16's
    largest finite value (3.3895e38), or -1.
    """
    n, d = x.shape
    bits = x.view(np.uint32)
    for i in range(n):
        for j in range(d):
            b = bits[i, j]
            if (b & np.uint32(0x7F800000)) == np.uint32(0x7F800000):
                return i
            r = (b + np.uint32(0x7FFF) + ((b >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
            if (r & np.uint32(0x7F80)) == np.uint32(0x7F80):
                return i
            out[i, j] = np.int16(np.uint16(r))
    return -1


@nb.njit(cache=True, nogil=True)
def _int8_params(x, i, lo, hi):
    """(offset, scale) as float32 for x[i, lo:hi], so that every value lies in
    [offset, offset + 255 * scale] exactly (offset rounded down, scale up); (nan, nan) if a
    value is not finite."""
    mn = np.inf
    mx = -np.inf
    for j in range(lo, hi):
        v = np.float64(x[i, j])
        if not np.isfinite(v):
            return np.float32(np.nan), np.float32(np.nan)
        mn = min(mn, v)
        mx = max(mx, v)
    off = np.float32(mn)
    if np.float64(off) > mn:
        off = np.nextafter(off, np.float32(-np.inf))
    scale = np.float32((mx - np.float64(off)) / INT8_LEVELS)
    while np.float64(off) + INT8_LEVELS * np.float64(scale) < mx:
        scale = np.nextafter(scale, np.float32(np.inf))
    return off, scale


@nb.njit(cache=True, nogil=True)
def int8_encode(x, block, out):
    """float [n, d] -> packed uint8 rows [n, d + 8 * nblocks]: d codes, then per column block
    (``block`` columns, the last one shorter) float32 scale and float32 offset.

    ``x' = offset + scale * code`` with ``code = round((x - offset) / scale)`` in 0..255,
    so ``|x - x'| <= scale / 2`` before float32 rounding.  Returns the first row with a
    non-finite value or a range float32 cannot hold, or -1.
    """
    n, d = x.shape
    nblocks = (d + block - 1) // block
    params = np.empty(2, np.float32)
    pbytes = params.view(np.uint8)
    for i in range(n):
        for k in range(nblocks):
            lo = k * block
            hi = min(d, lo + block)
            off, scale = _int8_params(x, i, lo, hi)
            if not (np.isfinite(off) and np.isfinite(scale)):
                return i
            s = np.float64(scale)
            o = np.float64(off)
            for j in range(lo, hi):
                q = 0.0 if s == 0.0 else np.rint((np.float64(x[i, j]) - o) / s)
                q = min(max(q, 0.0), 255.0)
                out[i, j] = np.uint8(q)
            params[0] = scale
            params[1] = off
            base = d + 8 * k
            for b in range(8):
                out[i, base + b] = pbytes[b]
    return -1


# ---------------------------------------------------------------- decode (CPU)
# Measured on the 2-core VM, 8,000 CiteSeer-wide rows (3,703 columns), one thread: torch 2.2's
# float16 -> float32 cast 100-167 ms, these 13-20 ms (a table lookup / a shift per value).


@nb.njit(cache=True, nogil=True)
def f16_decode(bits, table, out):
    """float16 bit patterns uint16 [n, d] -> float32 [n, d] through ``table`` (float32 [65536]:
    the value of every pattern), exact."""
    n, d = bits.shape
    for i in range(n):
        for j in range(d):
            out[i, j] = table[bits[i, j]]


@nb.njit(cache=True, nogil=True)
def bf16_decode(bits, out):
    """bfloat16 bit patterns int16 [n, d] -> float32 [n, d] (the patterns are float32's top half), exact."""
    n, d = bits.shape
    o = out.view(np.uint32)
    for i in range(n):
        for j in range(d):
            o[i, j] = np.uint32(np.uint16(bits[i, j])) << np.uint32(16)


@nb.njit(cache=True, nogil=True)
def int8_decode_rows(rows, d, params, out):
    """Packed int8 rows uint8 [n, d + 8] with one scale/offset per row (``params`` float32 [n, 1, 2],
    the rows' tails) -> float32 [n, d]: ``code * scale + offset``, one float32 multiply then one
    float32 add per value (the torch decode's two roundings).  The inner loop runs from 0 so LLVM
    vectorizes it: 0.37 ms for 25,000 x 64 values, where a loop over ``range(lo, hi)`` took 1.5-2.9 ms."""
    n = out.shape[0]
    for i in range(n):
        scale = params[i, 0, 0]
        off = params[i, 0, 1]
        for j in range(d):
            out[i, j] = np.float32(rows[i, j]) * scale + off


@nb.njit(cache=True, nogil=True)
def int8_decode_blocks(rows, d, block, params, out):
    """:func:`int8_decode_rows` with one scale/offset per ``block`` columns (``params`` [n, nblocks, 2])."""
    n = out.shape[0]
    nblocks = params.shape[1]
    for i in range(n):
        for k in range(nblocks):
            scale = params[i, k, 0]
            off = params[i, k, 1]
            lo = k * block
            for jj in range(min(d - lo, block)):
                out[i, lo + jj] = np.float32(rows[i, lo + jj]) * scale + off
