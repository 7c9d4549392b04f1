"""Partition kernels against brute-force references."""
from __future__ import annotations

import numpy as np
import pytest

from bgl.partition import _kernels as K
from bgl.partition.graph_input import GraphInput


def random_csc(n, m, seed):
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)  # duplicates and self-loops kept
    order = np.argsort(dst, kind="stable")
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(dst, minlength=n), out=indptr[1:])
    return indptr, src[order].astype(np.int32), src, dst


def test_transpose_and_symmetric_adjacency():
    n = 60
    indptr, indices, src, dst = random_csc(n, 400, 0)
    out_ptr, out_idx = K.transpose(indptr, indices, n)
    got = {(u, int(out_idx[j])) for u in range(n) for j in range(out_ptr[u], out_ptr[u + 1])}
    assert got == set(zip(src.tolist(), dst.tolist()))
    assert out_idx.dtype == np.int32
    xadj, adjncy = K.symmetric_adjacency(indptr, indices, out_ptr, out_idx, n)
    expect = {(a, b) for a, b in zip(src.tolist(), dst.tolist()) if a != b}
    expect |= {(b, a) for a, b in expect}
    rows = [adjncy[xadj[v]:xadj[v + 1]].tolist() for v in range(n)]
    assert all(len(r) == len(set(r)) for r in rows), "duplicate neighbours"
    assert {(v, u) for v in range(n) for u in rows[v]} == expect


def test_blocks_cover_all_nodes_and_respect_cap():
    n = 300
    indptr, indices, _, _ = random_csc(n, 500, 1)
    out_ptr, out_idx = K.transpose(indptr, indices, n)
    block = np.full(n, -1, np.int64)
    size = np.zeros(n + 1, np.int64)
    queue = np.empty(n, np.int64)
    nb = K.bfs_grow_blocks(indptr, indices, out_ptr, out_idx, block, size, np.array([0, 5, 9]), 0, 7, queue)
    assert nb == 3 and np.all(np.bincount(block[block >= 0]) <= 7)
    nb = K.leftover_blocks(indptr, indices, out_ptr, out_idx, block, size, nb, 7, queue)
    assert np.all(block >= 0) and block.max() == nb - 1
    assert np.array_equal(np.bincount(block, minlength=nb), size[:nb]) and size[:nb].max() <= 7


def test_block_adjacency_counts_edges_between_blocks():
    n = 80
    indptr, indices, src, dst = random_csc(n, 300, 2)
    out_ptr, out_idx = K.transpose(indptr, indices, n)
    block = np.random.default_rng(0).integers(0, 9, n)
    bptr, members = K.group_by(block, 9)
    adj_ptr, adj, w = K.block_adjacency(indptr, indices, out_ptr, out_idx, block, bptr, members, 9)
    ref = np.zeros((9, 9))
    for a, b in zip(block[src], block[dst]):
        if a != b:
            ref[a, b] += 1
            ref[b, a] += 1
    got = np.zeros((9, 9))
    for b in range(9):
        got[b, adj[adj_ptr[b]:adj_ptr[b + 1]]] = w[adj_ptr[b]:adj_ptr[b + 1]]
    assert np.array_equal(got, ref)


@pytest.mark.parametrize("fanout", [-1, 1, 3, 50])
def test_sample_layer_draws_distinct_existing_neighbours(fanout):
    n = 50
    rng = np.random.default_rng(3)
    # no duplicate edges, so distinct positions mean distinct neighbours
    key = np.unique(rng.integers(0, n, 600) * n + rng.integers(0, n, 600))
    dst, src = key // n, key % n
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(dst, minlength=n), out=indptr[1:])
    nodes = np.arange(n)
    ptr, out = K.sample_layer(indptr, src, nodes, fanout, 11)
    for v in range(n):
        nbrs = set(src[indptr[v]:indptr[v + 1]].tolist())
        got = out[ptr[v]:ptr[v + 1]].tolist()
        deg = len(nbrs)
        assert len(got) == (deg if fanout < 0 else min(deg, fanout))
        assert len(set(got)) == len(got) and set(got) <= nbrs


def test_edge_cut_matches_brute_force(random_store):
    from bgl.partition import metrics as M

    g = GraphInput.from_store(random_store)
    part_of = np.random.default_rng(0).integers(0, 3, g.num_nodes)
    dst = np.repeat(np.arange(g.num_nodes), np.diff(g.indptr))
    expect = np.mean(part_of[dst] != part_of[np.asarray(g.indices)])
    assert M.edge_cut(g, part_of) == pytest.approx(expect)
    old = M.CUT_CHUNK_EDGES
    try:
        M.CUT_CHUNK_EDGES = 37  # force many chunks
        assert M.edge_cut(g, part_of) == pytest.approx(expect)
    finally:
        M.CUT_CHUNK_EDGES = old
