"""write_hop_edges against a brute-force reference."""
from __future__ import annotations

import numpy as np
import pytest

from bgl.pyg._kernels import write_hop_edges


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_write_hop_edges_matches_a_python_loop(dtype):
    rng = np.random.default_rng(1)
    indptr = np.concatenate([[0], np.cumsum(rng.integers(0, 5, 30))]).astype(dtype)
    indices = rng.integers(0, 50, int(indptr[-1])).astype(dtype)
    edge_ids = rng.permutation(1000)[: indices.size].astype(dtype)
    lo, hi, pos = 4, 21, 3
    n = int(indptr[hi] - indptr[lo])
    edge_index = np.full((2, pos + n + 2), -1, np.int64)
    e_id = np.full(pos + n + 2, -1, np.int64)
    assert write_hop_edges(indptr, indices, edge_ids, lo, hi, edge_index, e_id, pos) == pos + n
    want = [(int(indices[j]), v, int(edge_ids[j])) for v in range(lo, hi) for j in range(indptr[v], indptr[v + 1])]
    got = list(zip(edge_index[0, pos:pos + n].tolist(), edge_index[1, pos:pos + n].tolist(), e_id[pos:pos + n].tolist()))
    assert got == want
    assert (edge_index[:, :pos] == -1).all() and (edge_index[:, pos + n:] == -1).all() and (e_id[pos + n:] == -1).all()
    no_ids = np.full(pos + n, -1, np.int64)  # an empty edge_ids array writes no ids
    write_hop_edges(indptr, indices, np.empty(0, dtype), lo, hi, edge_index, no_ids, pos)
    assert (no_ids == -1).all()
