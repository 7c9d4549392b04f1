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


def sym_level(n, m, seed):
    """A symmetric CSR with unit edge weights (what ``bgl_part.node_level`` builds)."""
    indptr, indices, _, _ = random_csc(n, m, seed)
    out_ptr, out_idx = K.transpose(indptr, indices, n)
    ptr, adj = K.symmetric_adjacency(indptr, indices, out_ptr, out_idx, n)
    return ptr, adj, np.ones(adj.size)


def test_blocks_cover_all_vertices_and_respect_cap():
    n = 300
    ptr, adj, wt = sym_level(n, 250, 1)  # sparse: many small components and isolated vertices
    vw = np.random.default_rng(1).integers(1, 3, n).astype(np.float64)
    block = np.full(n, -1, np.int64)
    bw = np.zeros(n + 1)
    queue = np.empty(n, np.int64)
    nb = K.wbfs_grow(ptr, adj, vw, block, bw, np.array([0, 5, 9]), 0, 7.0, queue)
    assert nb <= 3 and np.all(np.bincount(block[block >= 0], weights=vw[block >= 0]) <= 7)
    # BFS-grown blocks are connected (BFS never jumps)
    for b in range(nb):
        members = np.flatnonzero(block == b)
        seen = {int(members[0])}
        stack = [int(members[0])]
        while stack:
            u = stack.pop()
            for w in adj[ptr[u]:ptr[u + 1]]:
                if block[w] == b and int(w) not in seen:
                    seen.add(int(w))
                    stack.append(int(w))
        assert len(seen) == members.size
    nb = K.wleftover(ptr, adj, vw, block, bw, nb, 7.0, queue)
    assert np.all(block >= 0) and block.max() == nb - 1
    assert np.allclose(np.bincount(block, weights=vw, minlength=nb), bw[:nb]) and bw[:nb].max() <= 7
    block, nb2 = K.regroup_singletons(ptr, adj, wt, vw, block, nb, 7.0)
    assert nb2 <= nb and np.all(block >= 0) and np.unique(block).size == nb2
    assert np.bincount(block, weights=vw).max() <= 7
    isolated = np.flatnonzero(np.diff(ptr) == 0)
    assert np.unique(block[isolated]).size <= int(np.ceil(vw[isolated].sum() / 6)), "isolated not packed"


def test_contract_sums_edge_weights_between_blocks():
    n = 80
    ptr, adj, wt = sym_level(n, 300, 2)
    wt = np.random.default_rng(4).random(adj.size)
    block = np.random.default_rng(0).integers(0, 9, n)
    bptr, members = K.group_by(block, 9)
    assert np.array_equal(np.sort(members), np.arange(n))
    cptr, cadj, cw = K.contract(ptr, adj, wt, block, bptr, members, 9)
    ref = np.zeros((9, 9))
    for v in range(n):
        for j in range(ptr[v], ptr[v + 1]):
            if block[v] != block[adj[j]]:
                ref[block[v], block[adj[j]]] += wt[j]
    got = np.zeros((9, 9))
    for b in range(9):
        row = cadj[cptr[b]:cptr[b + 1]]
        assert row.size == np.unique(row).size
        got[b, row] = cw[cptr[b]:cptr[b + 1]]
    assert np.allclose(got, ref)
    aff = K.part_affinity(ptr, adj, wt, block % 3, 3)
    ref_aff = np.zeros((n, 3))
    for v in range(n):
        for j in range(ptr[v], ptr[v + 1]):
            ref_aff[v, block[adj[j]] % 3] += wt[j]
    assert np.allclose(aff, ref_aff)


def test_refinement_never_breaks_caps_and_never_raises_cut():
    n = 200
    ptr, adj, wt = sym_level(n, 900, 5)
    vn, vt = np.ones(n), (np.arange(n) % 2).astype(np.float64)
    part = np.random.default_rng(0).integers(0, 4, n)
    aff = K.part_affinity(ptr, adj, wt, part, 4)
    cap_n, cap_t = np.full(4, 1.1 * n / 4), np.full(4, 1.1 * vt.sum() / 4)
    low_n, low_t = np.full(4, 0.9 * n / 4), np.full(4, 0.9 * vt.sum() / 4)

    def cut(p):
        return sum(wt[j] for v in range(n) for j in range(ptr[v], ptr[v + 1]) if p[v] != p[adj[j]])

    K.rebalance_blocks(ptr, adj, wt, aff, part, vn, vt, 4, cap_n, cap_t)
    assert np.all(np.bincount(part, minlength=4) <= cap_n)
    before = cut(part)
    moves = K.refine_blocks(ptr, adj, wt, aff, part, vn, vt, 4, cap_n, cap_t, low_n, low_t, 5)
    assert moves > 0 and cut(part) < before
    assert np.all(np.bincount(part, minlength=4) <= cap_n)
    assert np.all(np.bincount(part, weights=vt, minlength=4) <= cap_t + 1e-9)
    assert np.allclose(aff, K.part_affinity(ptr, adj, wt, part, 4)), "affinity not kept current"


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
