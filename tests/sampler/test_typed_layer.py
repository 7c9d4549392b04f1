"""The typed layer's two fused passes draw exactly what a per-(row, relation) loop over the
homogeneous sampler's row draw gives: same positions, rows grouped by relation ascending."""
import numpy as np
import pytest

from bgl.sampler import _kernels as K
from bgl.sampler.typed.sampling import MASK64, relation_seed, sample_typed_layer


def _typed_csc(rng, num_nodes, num_rel, max_deg, type_offsets=None, dst_type_of_rel=None):
    """A random fused CSC as a store holds it: each row's in-edges grouped by relation id, ascending,
    and only of relations that end at the row's node type (a type no relation ends at: no in-edges)."""
    type_offsets = np.array([0, num_nodes]) if type_offsets is None else type_offsets
    dst_type_of_rel = np.zeros(num_rel, np.int64) if dst_type_of_rel is None else dst_type_of_rel
    row_type = np.searchsorted(type_offsets, np.arange(num_nodes), side="right") - 1
    into = [np.flatnonzero(dst_type_of_rel == t) for t in range(len(type_offsets) - 1)]
    degs = np.array([rng.integers(0, max_deg + 1) if into[t].size else 0 for t in row_type], np.int64)
    indptr = np.zeros(num_nodes + 1, np.int64)
    np.cumsum(degs, out=indptr[1:])
    etype = np.concatenate([np.sort(rng.choice(into[t], d)) if d else np.empty(0, np.int64)
                            for t, d in zip(row_type, degs)]).astype(np.uint8)
    indices = rng.integers(0, num_nodes, int(indptr[-1])).astype(np.int32)
    return indptr, indices, etype


def _reference(indptr, indices, etype, dst, off, fanouts, replace, seed, dst_type_of_rel, type_offsets, keys):
    """Row by row, relation by relation, the homogeneous sampler's draw on each relation span."""
    dst_type = np.searchsorted(type_offsets, dst, side="right") - 1
    tmp = np.empty(K.FLOYD_MAX_K, np.int64)
    counts, eids, rels = [], [], []
    for i, g in enumerate(dst):
        lo, hi = indptr[g - off], indptr[g - off + 1]
        n = 0
        for r, f in enumerate(fanouts):
            if f == 0 or dst_type_of_rel[r] != dst_type[i]:
                continue
            row = etype[lo:hi]
            s = lo + int(np.searchsorted(row, r, side="left"))
            e = lo + int(np.searchsorted(row, r, side="right"))
            k = (e - s) if f < 0 else ((f if e > s else 0) if replace else min(e - s, f))
            out = np.empty(k, np.int64)
            key = g if keys is None else keys[g - off]
            K._row_positions(s, e - s, np.int64(key), np.int64(f), replace,
                             np.uint64(relation_seed(seed, r) & MASK64), out, 0, k, tmp)
            eids.append(out)
            rels.append(np.full(k, r, np.int64))
            n += k
        counts.append(n)
    eids = np.concatenate(eids) if eids else np.empty(0, np.int64)
    return np.array(counts, np.int64), indices[eids], eids, np.concatenate(rels) if rels else np.empty(0, np.int64)


@pytest.mark.parametrize("replace", [False, True])
@pytest.mark.parametrize("case", range(6))
def test_typed_layer_matches_row_by_row_reference(case, replace):
    rng = np.random.default_rng(100 + case)
    num_rel = int(rng.integers(1, 5))
    num_nodes = 300
    type_offsets = np.array([0, 120, 200, num_nodes], np.int64)  # three node types
    dst_type_of_rel = rng.integers(0, 3, num_rel)  # types one relation ends at, several, or none
    indptr, indices, etype = _typed_csc(rng, num_nodes, num_rel, int(rng.choice([3, 40, 150])), type_offsets,
                                        dst_type_of_rel)
    fanouts = rng.choice([-1, 0, 1, 5, 70], num_rel).astype(np.int64)  # 70 > FLOYD_MAX_K: the other draws
    off = int(rng.choice([0, 1000]))
    dst = rng.choice(num_nodes, 80, replace=False).astype(np.int64) + off
    keys = None if case % 2 else rng.permutation(10_000)[:num_nodes].astype(np.int64)
    got = sample_typed_layer(indptr, indices, etype, dst, off, fanouts, replace, 7 + case, dst_type_of_rel,
                             type_offsets + off, keys=keys)
    want = _reference(indptr, indices, etype, dst, off, fanouts, replace, 7 + case, dst_type_of_rel,
                      type_offsets + off, keys)
    for g, w, name in zip(got, want, ("counts", "nbrs", "eids", "etypes")):
        np.testing.assert_array_equal(g, w, err_msg=name)
    assert got[0].sum() > 0


def test_typed_layer_refuses_past_max_edges():
    rng = np.random.default_rng(5)
    indptr, indices, etype = _typed_csc(rng, 50, 2, max_deg=20)
    dst = np.arange(50, dtype=np.int64)
    args = (indptr, indices, etype, dst, 0, np.array([-1, -1], np.int64), False, 1, np.zeros(2, np.int64),
            np.array([0, 50], np.int64))
    total = int(indptr[-1])
    assert sample_typed_layer(*args, max_edges=total)[0].sum() == total
    with pytest.raises(ValueError, match="more than the limit"):
        sample_typed_layer(*args, max_edges=total - 1)


@pytest.mark.parametrize("replace", [False, True])
def test_typed_layer_draws_among_the_edges_left_after_exclusion(replace):
    """Excluded positions (scattered, a whole row, the last edge): each span draws ranks among its
    remaining edges, the q-th rank being the q-th remaining position (the bucket index's lookups)."""
    from bgl.sampler.typed._kernels import exclusion_buckets

    rng = np.random.default_rng(11)
    type_offsets, dst_type_of_rel = np.array([0, 150, 300], np.int64), np.array([0, 1, 0], np.int64)
    indptr, indices, etype = _typed_csc(rng, 300, 3, 40, type_offsets, dst_type_of_rel)
    hub = int(np.argmax(np.diff(indptr)))
    e = int(indptr[-1])
    excl = np.unique(np.concatenate([rng.integers(0, e, 60), np.arange(indptr[hub], indptr[hub + 1]), [e - 1]]))
    for shift in (0, 3, 9):  # the index: how many excluded positions lie below each bucket's start
        first = exclusion_buckets(excl, np.int64(shift))
        np.testing.assert_array_equal(first, np.searchsorted(excl, np.arange(first.shape[0]) << shift))
    dst = np.unique(np.concatenate([rng.choice(300, 60, replace=False), [hub]])).astype(np.int64)
    fanouts = np.array([3, 5, -1], np.int64)
    counts, nbrs, eids, etypes = sample_typed_layer(indptr, indices, etype, dst, 0, fanouts, replace, 4,
                                                    dst_type_of_rel, type_offsets, exclude=excl)
    tmp, want = np.empty(K.FLOYD_MAX_K, np.int64), []
    dst_type = np.searchsorted(type_offsets, dst, side="right") - 1
    for g, t in zip(dst, dst_type):
        for r in np.flatnonzero(dst_type_of_rel == t):
            span = np.arange(indptr[g], indptr[g + 1])[etype[indptr[g]:indptr[g + 1]] == r]
            left = np.setdiff1d(span, excl)
            f = fanouts[r]
            k = left.size if f < 0 else ((f if left.size else 0) if replace else min(left.size, f))
            ranks = np.empty(k, np.int64)
            K._row_positions(0, left.size, np.int64(g), np.int64(f), replace,
                             np.uint64(relation_seed(4, int(r)) & MASK64), ranks, 0, k, tmp)
            want.append(left[ranks])
    np.testing.assert_array_equal(eids, np.concatenate(want))
    np.testing.assert_array_equal(nbrs, indices[eids])
    assert not np.isin(eids, excl).any() and counts[dst == hub][0] == 0
