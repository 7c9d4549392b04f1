"""Partitioning carries edge arrays: each part keeps the rows of its own in-edges."""
from __future__ import annotations

import numpy as np

from bgl.partition.format import write_partition
from bgl.store import write_store


def test_each_part_keeps_its_in_edges_data(tmp_path):
    rng = np.random.default_rng(0)
    n = 300
    deg = rng.integers(0, 8, n)
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(deg, out=indptr[1:])
    indices = rng.integers(0, n, int(indptr[-1]))
    w = rng.random(indices.size).astype(np.float32)
    feat = rng.random((indices.size, 4))
    store = write_store(tmp_path / "s", indptr, indices, edata={"w": w, "feat": feat})
    book = write_partition(store, rng.integers(0, 3, n), 3, tmp_path / "p", method="random")
    orig, new_of = np.asarray(book.orig_ids), np.empty(n, np.int64)
    new_of[orig] = np.arange(n)
    total = 0
    for k in range(3):
        part = book.part_store(k)
        assert sorted(part.edata) == ["feat", "w"]
        for r in range(part.num_nodes):
            o = orig[part.node_offset + r]
            a, b = part.indptr[r], part.indptr[r + 1]
            assert np.array_equal(part.indices[a:b], new_of[indices[indptr[o]:indptr[o + 1]]])
            assert np.array_equal(part.edge_array("w")[a:b], w[indptr[o]:indptr[o + 1]])
            assert np.array_equal(part.edge_array("feat")[a:b], feat[indptr[o]:indptr[o + 1]])
        total += part.num_edges
    assert total == indices.size
