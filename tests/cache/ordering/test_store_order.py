"""Proximity ordering: BFS kernel vs reference, permutation property, locality vs random order."""
from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from bgl.cache._kernels import bfs_train_order, interleave_chunks
from bgl.cache.ordering.store_order import proximity_order, random_order
from bgl.store import write_store


def grid_store(path, side: int):
    """A side x side 4-neighbour grid (symmetric CSC): strong locality, known BFS structure."""
    n = side * side
    r, c = np.divmod(np.arange(n), side)
    src, dst = [], []
    for dr, dc in ((0, 1), (1, 0), (0, -1), (-1, 0)):
        ok = (r + dr >= 0) & (r + dr < side) & (c + dc >= 0) & (c + dc < side)
        src.append(((r + dr) * side + c + dc)[ok])
        dst.append(np.arange(n)[ok])
    src, dst = np.concatenate(src), np.concatenate(dst)
    order = np.lexsort((src, dst))
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(dst, minlength=n), out=indptr[1:])
    rng = np.random.default_rng(0)
    feat = rng.standard_normal((n, 4)).astype(np.float32)
    train = np.sort(rng.choice(n, n // 2, replace=False))
    return write_store(path, indptr, src[order], feat=feat, splits={"train": train})


def ref_bfs(indptr, indices, roots, is_train):
    visited = np.zeros(len(is_train), bool)
    out = []
    for root in roots:
        if visited[root]:
            continue
        visited[root] = True
        q = deque([root])
        while q:
            u = q.popleft()
            if is_train[u]:
                out.append(u)
            for v in indices[indptr[u]:indptr[u + 1]]:
                if not visited[v]:
                    visited[v] = True
                    q.append(v)
    return out


def test_bfs_kernel_matches_reference(random_store_factory):
    store = random_store_factory(num_nodes=300, avg_degree=1.5, seed=4)  # sparse: many components
    n = store.num_nodes
    is_train = np.zeros(n, bool)
    train = store.train_idx
    is_train[train] = True
    roots = np.random.default_rng(2).permutation(train)
    got = bfs_train_order(store.indptr, store.indices, 0, roots, is_train, train.size,
                          np.empty(n, np.int32), np.zeros(n, np.uint8))
    assert got.tolist() == ref_bfs(store.indptr, store.indices, roots, is_train)
    assert sorted(got.tolist()) == train.tolist()  # restarts cover every training node


def ref_interleave(seqs, chunk):
    """Turn by turn, each row gives its next `chunk` ids not emitted yet."""
    out, seen, ptr = [], set(), [0] * len(seqs)
    while any(p < len(r) for p, r in zip(ptr, seqs)):
        for i, row in enumerate(seqs):
            taken = 0
            while taken < chunk and ptr[i] < len(row):
                v = row[ptr[i]]
                ptr[i] += 1
                if v not in seen:
                    seen.add(v)
                    out.append(v)
                    taken += 1
    return out


def test_interleave_keeps_first_occurrence():
    seqs = np.array([[3, 1, 2, 0], [2, 3, 0, 1]])
    assert interleave_chunks(seqs, 1, np.zeros(4, np.uint8)).tolist() == [3, 2, 1, 0]
    assert interleave_chunks(seqs, 2, np.zeros(4, np.uint8)).tolist() == [3, 1, 2, 0]


@pytest.mark.parametrize("chunk", [1, 2, 5, 64])
def test_interleave_chunks_matches_reference(chunk):
    rng = np.random.default_rng(chunk)
    seqs = np.stack([rng.permutation(40) for _ in range(3)])
    got = interleave_chunks(seqs, chunk, np.zeros(40, np.uint8)).tolist()
    assert got == ref_interleave(seqs.tolist(), chunk)
    assert sorted(got) == list(range(40))


@pytest.mark.parametrize("num_sequences, chunk", [(1, 16), (3, 16), (4, 7), (8, 1000)])
def test_chunked_proximity_order_visits_each_train_node_once(random_store_factory, num_sequences, chunk):
    store = random_store_factory(num_nodes=400, avg_degree=2.0, seed=6)
    train = store.train_idx
    a = proximity_order(store, train, num_sequences, seed=3, chunk=chunk)
    assert a.dtype == np.int64 and np.array_equal(np.sort(a), np.sort(train))
    assert not np.array_equal(a, proximity_order(store, train, num_sequences, seed=4, chunk=chunk))
    if num_sequences > 1:  # chunking changes the mix of the same sequences
        assert not np.array_equal(a, proximity_order(store, train, num_sequences, seed=3, chunk=1))
    with pytest.raises(ValueError, match="chunk"):
        proximity_order(store, train, num_sequences, seed=3, chunk=0)


@pytest.mark.parametrize("num_sequences", [1, 3, 8])
def test_proximity_order_is_a_permutation_and_seeded(random_store_factory, num_sequences):
    store = random_store_factory(num_nodes=400, avg_degree=2.0, seed=5)
    train = store.train_idx
    a = proximity_order(store, train, num_sequences, seed=1)
    assert a.dtype == np.int64 and np.array_equal(np.sort(a), np.sort(train))
    assert np.array_equal(a, proximity_order(store, train, num_sequences, seed=1))
    assert not np.array_equal(a, proximity_order(store, train, num_sequences, seed=2))
    r = random_order(train, 1)
    assert np.array_equal(np.sort(r), np.sort(train)) and not np.array_equal(r, random_order(train, 2))


def test_proximity_order_on_a_part_store_uses_global_ids(tmp_path):
    full = grid_store(tmp_path / "full", 10)
    # the second half of the grid as a part: rows 50..99, global ids everywhere
    lo = 50
    indptr = full.indptr[lo:] - full.indptr[lo]
    indices = full.indices[full.indptr[lo]:]
    train = full.train_idx[full.train_idx >= lo]
    part = write_store(tmp_path / "part", indptr, indices, splits={"train": train},
                       node_offset=lo, global_num_nodes=100)
    order = proximity_order(part, train, 2, seed=0)
    assert np.array_equal(np.sort(order), train)
    with pytest.raises(ValueError, match="3"):
        proximity_order(part, np.array([3]), 2, seed=0)


def test_proximity_order_bad_input(random_store):
    train = random_store.train_idx
    with pytest.raises(ValueError, match="duplicates"):
        proximity_order(random_store, np.concatenate([train, train[:2]]), 2, 0)
    with pytest.raises(ValueError, match="500"):
        proximity_order(random_store, np.array([1, 500]), 2, 0)
    with pytest.raises(ValueError, match="0"):
        proximity_order(random_store, train, 0, 0)


def test_consecutive_batches_share_more_inputs_under_proximity_order(tmp_path):
    from bgl.sampler import LocalSampler

    store = grid_store(tmp_path / "grid", 60)
    sampler = LocalSampler(store)
    train, batch = store.train_idx, 32

    def mean_overlap(order):
        inputs = [set(sampler.sample_blocks(order[i:i + batch], [3, 3], seed=i)[0].src_ids.tolist())
                  for i in range(0, order.size - batch + 1, batch)]
        return np.mean([len(a & b) / len(b) for a, b in zip(inputs, inputs[1:])])

    prox = np.mean([mean_overlap(proximity_order(store, train, 4, seed=s)) for s in range(2)])
    rand = np.mean([mean_overlap(random_order(train, seed=s)) for s in range(2)])
    assert prox > 2 * rand, (prox, rand)
