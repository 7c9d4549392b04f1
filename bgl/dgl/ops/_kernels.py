"""numba kernels of :mod:`bgl.dgl.ops` on the CPU: DGL's fused SpMM, its max / min with arg, the
per-edge head dot of a weighted SpMM's backward, the segment softmax, and the layers' dropout mask.

Plain array arguments.  ``indptr`` / ``indices`` are a compressed adjacency (CSC: rows are dst
nodes, indices src nodes; CSR the other way round); ``eids`` maps positions to edge ids, or is
empty when positions are edge ids.  Each call covers rows ``lo:hi``, each row's edges in order
(of tied edges the first or the last wins, as DGL picks it: :mod:`.ties`); :mod:`.cpu_rows` runs disjoint row
ranges on several threads (``nogil``), so no two threads write one output row.  Not
``parallel=True``: its compile took ~20 s a kernel on the 2-core box, a plain one ~1 s.
Nothing is allocated per edge.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from bgl.dgl.ops._prefetch import prefetch_row

AHEAD = 24  # edges between a row's prefetch and its use: 24-64 measured flat at 16-256 features (L2 hint)


@njit(cache=True, nogil=True)
def touch_rows(out, lo, hi):
    """Write a zero into every 4 KiB page of ``out[lo:hi]`` (C-contiguous), in order.

    A kernel's output is fresh memory (hundreds of MiB for an SpMM over millions of nodes), whose
    pages fault on first write.  Faulted one after another here, before the random reads start,
    they cost less than when each fault lands between prefetched rows: one 512 MiB SpMM output at
    1M x 128, 10M edges, measured 0.60-0.65 s against 0.74 s on one thread, 0.34 s against 0.36-0.38 s
    on two (each thread touches its own rows)."""
    flat = out.reshape(out.size)
    step = max(1, 4096 // flat.itemsize)
    for i in range(lo * out.shape[1], hi * out.shape[1], step):
        flat[i] = 0


@njit(cache=True, nogil=True)
def spmm_weighted(lo, hi, indptr, indices, eids, x, w, scale, out):
    """``out[r, f] = scale[r] * sum over row r's edges p of w[eid(p), f // head_dim] * x[indices[p], f]``.

    ``x`` [N, F]; ``w`` [E, H] (H divides F: one weight per head block of F / H features), or
    shape (0, 1) for all-ones weights; ``scale`` [rows] (mean's 1 / in-degree), or empty for
    none; ``out`` [rows, F].  A row is summed in a local buffer (which the compiler knows aliases
    nothing, so the feature loop vectorises), then stored once.  Why it is fast: the x rows are
    cache misses, so the row ``AHEAD`` edges on is prefetched, and edges are taken two at a time
    (their sum added to the buffer: half its loads and stores; measured ~20% at 64 features).
    Weights read through ``eids`` are one random line per edge as well, prefetched the same way.
    """
    feats = x.shape[1]
    weighted = w.shape[0] > 0
    heads = w.shape[1]
    head_dim = feats // heads
    by_position = eids.shape[0] == 0
    last = indptr[hi] - AHEAD - 1  # no prefetch past the range's own edges
    touch_rows(out, lo, hi)
    acc = np.empty(feats, out.dtype)
    for r in range(lo, hi):
        acc[:] = 0
        p, stop = indptr[r], indptr[r + 1]
        while p < stop:
            if p < last:
                prefetch_row(x, indices[p + AHEAD])
                prefetch_row(x, indices[p + AHEAD + 1])
                if weighted and not by_position:  # weights in edge-id order: a random line per edge too
                    prefetch_row(w, eids[p + AHEAD])
                    prefetch_row(w, eids[p + AHEAD + 1])
            pair = p + 1 < stop
            q = p + 1 if pair else p  # a row's odd last edge: its own step, the second term left out
            u, v = indices[p], indices[q]
            if not weighted:
                if pair:
                    for f in range(feats):
                        acc[f] += x[u, f] + x[v, f]
                else:
                    for f in range(feats):
                        acc[f] += x[u, f]
            else:
                e = p if by_position else eids[p]
                e2 = q if by_position else eids[q]
                x_u, x_v = x[u], x[v]
                for h in range(heads):
                    wu, wv = w[e, h], w[e2, h]
                    base = h * head_dim  # loops of (base + k): a range(start, stop) over f did not vectorise
                    if pair:
                        for k in range(head_dim):
                            acc[base + k] += wu * x_u[base + k] + wv * x_v[base + k]
                    else:
                        for k in range(head_dim):
                            acc[base + k] += wu * x_u[base + k]
            p += 2
        if scale.shape[0] > 0:
            c = scale[r]
            for f in range(feats):
                out[r, f] = acc[f] * c
        else:
            for f in range(feats):
                out[r, f] = acc[f]


@njit(inline="always")
def _row_dot(a_row, b_row, base, count):
    """``sum over k < count of a_row[base + k] * b_row[base + k]`` (1-d rows), accumulated in float64.

    Inlined by numba into its caller, whose ``fastmath={"reassoc"}`` lets the adds run in any order, so
    the loop runs in vector lanes.  As a plain ``njit`` function (compiled apart, strict order), or over
    2-d indexing, or as a ``range(start, stop)`` loop, it was a chain of scalar adds, 3.6x slower (a
    10M-edge, 64-wide weighted SpMM's weight gradient: 0.85 s against 0.24 s with the prefetch).
    Nothing else in its callers reduces, so ``reassoc`` changes no other result."""
    acc = 0.0
    for k in range(count):
        acc += a_row[base + k] * b_row[base + k]
    return acc


@njit(cache=True, nogil=True, fastmath={"reassoc"})
def edge_head_dot(lo, hi, indptr, indices, eids, a, b, out):
    """``out[eid(p), h] = sum over head h's features f of a[r, f] * b[indices[p], f]`` for each
    edge p of row r: the gradient of a weighted SpMM's weights (``a`` = output grad, ``b`` = x)."""
    heads = out.shape[1]
    head_dim = a.shape[1] // heads
    by_position = eids.shape[0] == 0
    last = indptr[hi] - AHEAD
    for r in range(lo, hi):
        a_row = a[r]
        for p in range(indptr[r], indptr[r + 1]):
            if p < last:
                prefetch_row(b, indices[p + AHEAD])
                if not by_position:
                    prefetch_row(out, eids[p + AHEAD])
            e = p if by_position else eids[p]
            b_row = b[indices[p]]
            for h in range(heads):
                out[e, h] = _row_dot(a_row, b_row, h * head_dim, head_dim)


@njit(cache=True, nogil=True)
def spmm_extreme(lo, hi, indptr, indices, eids, by_edge, x, take_max, last_wins, out, arg):
    """Max (``take_max``) or min over row r's edges of ``x[indices[p]]`` (``by_edge``: of
    ``x[eid(p)]``) into ``out`` (prefilled with -inf / inf), and the x row it came from into
    ``arg`` (prefilled with -1); of tied edges the last one in the row wins when ``last_wins``
    (DGL's libxsmm kernel), else the first (its plain kernel; :mod:`.ties` says which).

    A row is reduced in local buffers with selects, not branches (the compiler vectorises the
    feature loop; ``last_wins`` enters as a bool in the selects), two edges per step, and stored
    once; x rows are prefetched as in :func:`spmm_weighted`."""
    feats = x.shape[1]
    by_position = eids.shape[0] == 0
    last = indptr[hi] - AHEAD - 1
    best = np.empty(feats, out.dtype)
    best_row = np.empty(feats, arg.dtype)
    for r in range(lo, hi):
        for f in range(feats):
            best[f] = out[r, f]
            best_row[f] = arg[r, f]
        p, stop = indptr[r], indptr[r + 1]
        while p < stop:
            if p < last:
                for k in range(p + AHEAD, p + AHEAD + 2):
                    ahead = k if by_position else eids[k]
                    prefetch_row(x, ahead if by_edge else indices[k])
            q = p + 1 if p + 1 < stop else p  # a row's odd last edge: paired with itself
            e = p if by_position else eids[p]
            e2 = q if by_position else eids[q]
            row = e if by_edge else indices[p]
            row2 = e2 if by_edge else indices[q]
            # the pair's winner first (on a tie the later edge iff last_wins; never a NaN over a number,
            # as one edge at a time would skip the NaN), then against the row's best so far (a tie
            # with the fill, -inf / inf, still records its row)
            if take_max:
                for f in range(feats):
                    a, b = x[row, f], x[row2, f]
                    second = (b > a) | (last_wins & (b == a)) | (a != a)
                    v = b if second else a
                    vr = row2 if second else row
                    wins = (v > best[f]) | ((v == best[f]) & (last_wins | (best_row[f] < 0)))
                    best[f] = v if wins else best[f]
                    best_row[f] = vr if wins else best_row[f]
            else:
                for f in range(feats):
                    a, b = x[row, f], x[row2, f]
                    second = (b < a) | (last_wins & (b == a)) | (a != a)
                    v = b if second else a
                    vr = row2 if second else row
                    wins = (v < best[f]) | ((v == best[f]) & (last_wins | (best_row[f] < 0)))
                    best[f] = v if wins else best[f]
                    best_row[f] = vr if wins else best_row[f]
            p += 2
        for f in range(feats):
            out[r, f] = best[f]
            arg[r, f] = best_row[f]


@njit(cache=True, nogil=True)
def segment_softmax(lo, hi, indptr, eids, logits, out):
    """Softmax of ``logits`` [E, H] over each row's edges (rows: the nodes normalised over),
    written to ``out`` [E, H] at edge-id rows; the row max is subtracted first.  Edges outer,
    heads inner: each edge's H values are read together."""
    heads = logits.shape[1]
    by_position = eids.shape[0] == 0
    peak = np.empty(heads, logits.dtype)
    total = np.empty(heads, np.float64)
    for r in range(lo, hi):
        first, last = indptr[r], indptr[r + 1]
        peak[:] = -np.inf
        total[:] = 0.0
        for p in range(first, last):
            e = p if by_position else eids[p]
            for h in range(heads):
                if logits[e, h] > peak[h]:
                    peak[h] = logits[e, h]
        for p in range(first, last):
            e = p if by_position else eids[p]
            for h in range(heads):
                v = np.exp(logits[e, h] - peak[h])
                out[e, h] = v
                total[h] += v
        for p in range(first, last):
            e = p if by_position else eids[p]
            for h in range(heads):
                out[e, h] = out[e, h] / total[h]


@njit(cache=True, nogil=True)
def segment_softmax_backward(lo, hi, indptr, eids, out, grad, grad_in):
    """``grad_in = out * (grad - sum over the row of out * grad)`` per row and head."""
    heads = out.shape[1]
    by_position = eids.shape[0] == 0
    total = np.empty(heads, np.float64)
    for r in range(lo, hi):
        first, last = indptr[r], indptr[r + 1]
        total[:] = 0.0
        for p in range(first, last):
            e = p if by_position else eids[p]
            for h in range(heads):
                total[h] += out[e, h] * grad[e, h]
        for p in range(first, last):
            e = p if by_position else eids[p]
            for h in range(heads):
                grad_in[e, h] = out[e, h] * (grad[e, h] - total[h])


@njit(cache=True, nogil=True)
def scatter_add_rows(index, rows, out):
    """``out[index[i]] += rows[i]`` for every i, in order (one thread: rows may share a target).

    What ``torch.index_add_`` does, without its per-row dispatch: ~10x faster for the few
    features per edge of attention scores."""
    feats = rows.shape[1]
    for i in range(index.shape[0]):
        t = index[i]
        for f in range(feats):
            out[t, f] += rows[i, f]


@njit(cache=True, nogil=True, fastmath={"reassoc"})
def edge_binary(lo, hi, lidx, ridx, lhs, rhs, op, out):
    """``out[e] = lhs[lidx[e]] <op> rhs[ridx[e]]`` for edges ``lo:hi`` (an empty index array: the
    operand's rows are the edges).  ``op``: 0 add, 1 sub, 2 mul, 3 div, 4 dot (``out`` [E, G],
    each of its G values the dot of a block of ``lhs.shape[1] // G`` features).  ``lhs`` and
    ``rhs`` have one width (no broadcasting here)."""
    feats = lhs.shape[1]
    groups = out.shape[1]
    width = feats // groups
    by_edge_l = lidx.shape[0] == 0
    by_edge_r = ridx.shape[0] == 0
    for e in range(lo, hi):
        u = e if by_edge_l else lidx[e]
        v = e if by_edge_r else ridx[e]
        if op == 0:
            for f in range(feats):
                out[e, f] = lhs[u, f] + rhs[v, f]
        elif op == 1:
            for f in range(feats):
                out[e, f] = lhs[u, f] - rhs[v, f]
        elif op == 2:
            for f in range(feats):
                out[e, f] = lhs[u, f] * rhs[v, f]
        elif op == 3:
            for f in range(feats):
                out[e, f] = lhs[u, f] / rhs[v, f]
        else:
            l_row, r_row = lhs[u], rhs[v]
            for g in range(groups):
                out[e, g] = _row_dot(l_row, r_row, g * width, width)


@njit(cache=True, nogil=True)
def scatter_arg_grad(arg, grad, out):
    """``out[arg[r, f], f] += grad[r, f]`` where ``arg[r, f] >= 0``: a max / min reduction's
    backward, without the index and mask temporaries of a torch scatter."""
    for r in range(arg.shape[0]):
        for f in range(arg.shape[1]):
            a = arg[r, f]
            if a >= 0:
                out[a, f] += grad[r, f]


@njit(cache=True, nogil=True)
def dropout_pairs(lo: int, hi: int, n: int, seed: np.uint64, cut: np.uint64, scale: float, x, out) -> None:
    """``out[i] = x[i] * scale`` where element i of ``n`` is kept, else 0, for the pairs ``lo:hi``
    (:mod:`bgl.dgl.nn.dropout`'s mask, the layers' ``feat_drop`` / ``attn_drop`` on torch >= 2.5).

    Elements 2k and 2k + 1 read the top and the low 24 bits of one splitmix64 hash of (seed, k)."""
    golden = np.uint64(0x9E3779B97F4A7C15)
    m1, m2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
    s30, s27, s31, top = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(64 - 24)
    low = np.uint64((1 << 24) - 1)
    for k in range(lo, hi):
        z = seed + np.uint64(k + 1) * golden
        z = (z ^ (z >> s30)) * m1
        z = (z ^ (z >> s27)) * m2
        z = z ^ (z >> s31)
        i = 2 * k
        out[i] = x[i] * (scale * ((z >> top) >= cut))  # a select, not a branch
        if i + 1 < n:
            out[i + 1] = x[i + 1] * (scale * ((z & low) >= cut))
