"""``_kernels.spmm_extreme`` (two edges per step) equals one edge at a time, DGL's CPU order: of tied
edges the later wins (``last_wins``, DGL's libxsmm kernel) or the first (its plain kernel), a NaN
never wins, rows of odd and even length, max and min."""
from __future__ import annotations

import numpy as np

from bgl.dgl.ops._kernels import spmm_extreme


def _one_at_a_time(indptr, indices, x, take_max, last_wins):
    rows, feats = indptr.shape[0] - 1, x.shape[1]
    out = np.full((rows, feats), -np.inf if take_max else np.inf, x.dtype)
    arg = np.full((rows, feats), -1, np.int32)
    for r in range(rows):
        for p in range(indptr[r], indptr[r + 1]):
            for f in range(feats):
                v = x[indices[p], f]
                better = (v > out[r, f]) if take_max else (v < out[r, f])
                if better or (v == out[r, f] and (last_wins or arg[r, f] < 0)):
                    out[r, f], arg[r, f] = v, indices[p]
    return out, arg


def test_pairs_equal_one_edge_at_a_time_with_ties_and_nan():
    rng = np.random.default_rng(3)
    x = rng.integers(-2, 3, (12, 4)).astype(np.float32)  # few values: many ties
    x[rng.random(x.shape) < 0.2] = np.nan
    degrees = np.array([0, 1, 2, 3, 4, 5, 7, 8, 13])
    indptr = np.concatenate([[0], np.cumsum(degrees)]).astype(np.int32)
    indices = rng.integers(0, 12, int(indptr[-1])).astype(np.int32)
    for take_max, last_wins in ((True, True), (False, True), (True, False), (False, False)):
        want_out, want_arg = _one_at_a_time(indptr, indices, x, take_max, last_wins)
        out = np.full(want_out.shape, -np.inf if take_max else np.inf, np.float32)
        arg = np.full(want_arg.shape, -1, np.int32)
        spmm_extreme(0, degrees.shape[0], indptr, indices, np.empty(0, np.int32), False, x, take_max, last_wins,
                     out, arg)
        np.testing.assert_array_equal(out, want_out)
        np.testing.assert_array_equal(arg, want_arg, err_msg=f"take_max={take_max} last_wins={last_wins}")
