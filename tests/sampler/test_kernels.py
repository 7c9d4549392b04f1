"""Sampling kernels against a brute-force reference (hypothesis property tests)."""
from __future__ import annotations

import numba
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bgl.sampler import ops
from bgl.sampler.edge_ids import ids_at

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(autouse=True, scope="module")
def always_parallel():
    """Small test inputs would take the serial kernels; force the parallel ones so both are checked."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ops, "PARALLEL_MIN_SEEDS", 0)
        mp.setattr(ops, "PARALLEL_MIN_ELEMENTS", 0)
        yield


@st.composite
def csc_case(draw):
    """A random multigraph CSC (duplicate edges allowed), seeds with a node offset, and sampling args."""
    n = draw(st.integers(1, 25))
    degs = draw(st.lists(st.integers(0, 30), min_size=n, max_size=n))
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(degs, out=indptr[1:])
    offset = draw(st.integers(0, 1000))
    global_n = offset + n + 50
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dtype = draw(st.sampled_from([np.int32, np.int64]))
    indices = rng.integers(0, global_n, int(indptr[-1])).astype(dtype)
    seeds = offset + rng.choice(n, size=draw(st.integers(0, n)), replace=False)
    fanout = draw(st.integers(-1, 35))
    replace = draw(st.booleans())
    seed = draw(st.integers(0, 2**64 - 1))
    return indptr, indices, seeds.astype(np.int64), offset, fanout, replace, seed


def expected_count(deg: int, fanout: int, replace: bool) -> int:
    if fanout == -1:
        return deg
    if replace:
        return fanout if deg else 0
    return min(deg, fanout)


@SETTINGS
@given(csc_case())
def test_sample_matches_reference(case):
    indptr, indices, seeds, offset, fanout, replace, seed = case
    counts, nbrs, eids = ops.sample_neighbors(indptr, indices, seeds, offset, fanout, replace, seed)
    assert nbrs.dtype == indices.dtype
    out_ptr = np.concatenate([[0], np.cumsum(counts)])
    assert out_ptr[-1] == nbrs.shape[0] == eids.shape[0]
    for i, gid in enumerate(seeds):
        row = gid - offset
        lo, hi = indptr[row], indptr[row + 1]
        assert counts[i] == expected_count(int(hi - lo), fanout, replace)
        e = eids[out_ptr[i]:out_ptr[i + 1]]
        assert np.all((e >= lo) & (e < hi)), "sampled edge not in the seed's row"
        assert np.array_equal(nbrs[out_ptr[i]:out_ptr[i + 1]], indices[e])
        if fanout == -1 or (not replace and fanout >= hi - lo):
            assert np.array_equal(e, np.arange(lo, hi))
        elif not replace:
            assert np.unique(e).size == e.size, "duplicate edge without replacement"
    again = ops.sample_neighbors(indptr, indices, seeds, offset, fanout, replace, seed)
    serial = ops.sample_neighbors(indptr, indices, seeds, offset, fanout, replace, seed, parallel=False)
    for a, b, c in zip((counts, nbrs, eids), again, serial):
        assert np.array_equal(a, b) and np.array_equal(a, c)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(csc_case())
def test_sample_depends_only_on_seed_and_node(case):
    """Splitting or reordering the seeds (as across servers) never changes a node's sample."""
    indptr, indices, seeds, offset, fanout, replace, seed = case
    counts, nbrs, _ = ops.sample_neighbors(indptr, indices, seeds, offset, fanout, replace, seed)
    ptr = np.concatenate([[0], np.cumsum(counts)])
    rev = seeds[::-1].copy()
    c2, n2, _ = ops.sample_neighbors(indptr, indices, rev, offset, fanout, replace, seed)
    ptr2 = np.concatenate([[0], np.cumsum(c2)])
    k = len(seeds)
    for i in range(k):
        j = k - 1 - i
        assert np.array_equal(nbrs[ptr[i]:ptr[i + 1]], n2[ptr2[j]:ptr2[j + 1]])


def test_different_seeds_differ(random_store):
    seeds = np.arange(100)
    a = ops.sample_neighbors(random_store.indptr, random_store.indices, seeds, 0, 3, False, 1)[1]
    b = ops.sample_neighbors(random_store.indptr, random_store.indices, seeds, 0, 3, False, 2)[1]
    assert not np.array_equal(a, b)


def test_independent_of_thread_count(random_store):
    seeds = np.arange(random_store.num_nodes)
    before = numba.get_num_threads()
    try:
        results = []
        for threads in sorted({1, numba.config.NUMBA_NUM_THREADS}):
            numba.set_num_threads(threads)
            for replace in (False, True):
                results.append((threads, replace, ops.sample_neighbors(
                    random_store.indptr, random_store.indices, seeds, 0, 4, replace, 99)))
    finally:
        numba.set_num_threads(before)
    by_replace = {}
    for _, replace, (counts, nbrs, eids) in results:
        ref = by_replace.setdefault(replace, (counts, nbrs, eids))
        assert all(np.array_equal(x, y) for x, y in zip(ref, (counts, nbrs, eids)))


def test_floyd_and_reservoir_paths_are_uniform_subsets():
    """One row of degree 40: k=3 takes Floyd's path, k=30 the reservoir path; both cover every neighbour."""
    indptr = np.array([0, 40], np.int64)
    indices = np.arange(40, dtype=np.int64)
    for k in (3, 30):
        hits = np.zeros(40)
        for s in range(600):
            _, nbrs, _ = ops.sample_neighbors(indptr, indices, np.array([0]), 0, k, False, s)
            assert np.unique(nbrs).size == k
            hits[nbrs] += 1
        expected = 600 * k / 40
        from scipy.stats import chisquare
        assert chisquare(hits, np.full(40, expected)).pvalue > 1e-4


def test_weighted_sampling_avoids_zero_weights_and_follows_weights():
    indptr = np.array([0, 6], np.int64)
    indices = np.arange(6, dtype=np.int64)
    prob = np.array([0.0, 1.0, 2.0, 0.0, 3.0, 4.0])
    counts, nbrs, _ = ops.sample_neighbors(indptr, indices, np.array([0]), 0, 10, False, 5, prob=prob)
    assert counts[0] == 4 and set(nbrs.tolist()) == {1, 2, 4, 5}
    _, draws, _ = ops.sample_neighbors(indptr, indices, np.array([0]), 0, 20000, True, 5, prob=prob)
    freq = np.bincount(draws, minlength=6) / draws.size
    assert freq[0] == 0 and freq[3] == 0
    assert np.allclose(freq, prob / prob.sum(), atol=0.02)


@pytest.mark.parametrize("fanout, msg", [(-2, "fanout must be >= -1"), (ops.MAX_FANOUT + 1, "fanout must be <="),
                                         (2.5, "fanout must be an int")])
def test_bad_fanout(random_store, fanout, msg):
    with pytest.raises(ValueError, match=msg):
        ops.sample_neighbors(random_store.indptr, random_store.indices, np.array([0]), 0, fanout, False, 0)


def test_seed_out_of_range_names_the_id(random_store):
    with pytest.raises(ValueError, match=r"seeds\[1\] = 500 is outside"):
        ops.sample_neighbors(random_store.indptr, random_store.indices, np.array([3, 500]), 0, 2, False, 0)
    with pytest.raises(ValueError, match="-1 is outside"):
        ops.gather(random_store.feat, np.array([-1]), 0)


def test_gather_rows_and_labels(random_store):
    ids = np.array([7, 0, 499, 7])
    assert np.array_equal(ops.gather(random_store.feat, ids, 0), np.asarray(random_store.feat)[ids])
    assert np.array_equal(ops.gather(random_store.feat, ids, 0, parallel=False), np.asarray(random_store.feat)[ids])
    assert np.array_equal(ops.gather(random_store.label, ids, 0), np.asarray(random_store.label)[ids])
    part_ids = np.array([107, 499, 100])  # a part owning global ids [100, 500)
    assert np.array_equal(ops.gather(np.asarray(random_store.feat)[100:], part_ids, 100),
                          np.asarray(random_store.feat)[part_ids])


@pytest.mark.parametrize("table_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("pos_dtype", [np.int32, np.int64])
def test_ids_at_is_a_gather_widened_to_int64(table_dtype, pos_dtype):
    rng = np.random.default_rng(0)
    table = rng.permutation(10_000).astype(table_dtype)
    table.flags.writeable = False  # a DGLGraph's CSC edge ids come read-only
    positions = rng.integers(0, 10_000, 3_000).astype(pos_dtype)
    out = ids_at(table, positions)
    assert out.dtype == np.int64 and np.array_equal(out, table[positions])
    assert ids_at(table, positions[:0]).shape == (0,)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 40), st.integers(0, 200), st.integers(0, 2**32 - 1))
def test_relabel_matches_reference(m, e, s):
    rng = np.random.default_rng(s)
    dst = rng.choice(1000, size=m, replace=False).astype(np.int64)
    nbrs = rng.integers(0, 1000, e).astype(np.int64)
    src, local = ops.relabel(dst, nbrs)
    assert np.array_equal(src[:m], dst)
    assert np.unique(src).size == src.size
    assert np.array_equal(src[local], nbrs)
    # new ids in order of first appearance, as dgl.to_block
    new = [v for v in dict.fromkeys(nbrs.tolist()) if v not in set(dst.tolist())]
    assert src[m:].tolist() == new


def test_relabel_rejects_duplicate_dst():
    with pytest.raises(ValueError, match="id 4 repeats at position 2"):
        ops.relabel(np.array([4, 2, 4]), np.array([1]))



@settings(max_examples=60, deadline=None)
@given(st.integers(0, 40), st.integers(0, 200), st.integers(0, 2**32 - 1), st.sampled_from([np.int32, np.int64]))
def test_dense_relabeler_equals_hash_relabel_across_calls(m, e, s, dtype):
    """The reused marker array must not leak state from one call into the next."""
    rng = np.random.default_rng(s)
    relabeler = ops.Relabeler(1000)
    assert relabeler.dense
    for _ in range(3):
        dst = rng.choice(1000, size=m, replace=False).astype(np.int64)
        nbrs = rng.integers(0, 1000, e).astype(dtype)
        want_src, want_local = ops.relabel(dst, nbrs)
        src, local = relabeler(dst, nbrs)
        assert np.array_equal(src, want_src) and np.array_equal(local, want_local)


@pytest.mark.parametrize("max_nodes", [ops.DENSE_RELABEL_MAX_NODES, 10])  # 10: hash fallback
def test_relabeler_errors_name_the_id(max_nodes):
    relabeler = ops.Relabeler(100, max_nodes=max_nodes)
    assert relabeler.dense == (max_nodes > 100)
    with pytest.raises(ValueError, match="id 4 repeats at position 2"):
        relabeler(np.array([4, 2, 4]), np.array([1]))
    with pytest.raises(ValueError, match=r"nbrs\[1\] = 100 is outside"):
        relabeler(np.array([4, 2]), np.array([1, 100]))
    with pytest.raises(ValueError, match=r"dst_ids\[0\] = -1 is outside"):
        relabeler(np.array([-1]), np.array([1]))
    src, local = relabeler(np.array([4, 2]), np.array([7, 4, 7]))  # still usable after errors
    assert src.tolist() == [4, 2, 7] and local.tolist() == [2, 0, 2]


def test_relabeler_allocates_its_markers_at_the_first_dense_call():
    """A sampler that only fetches rows (the loader's fetch stage opens one) never relabels: its
    Relabeler must not pay for num_nodes markers (an 8 MiB memset per loader at 1M nodes)."""
    relabeler = ops.Relabeler(1 << 20)
    assert relabeler.dense and relabeler._mark is None
    with relabeler._lock:  # busy: the hash path answers and allocates nothing
        relabeler(np.array([3]), np.array([5]))
    assert relabeler._mark is None
    src, local = relabeler(np.array([3, 9]), np.array([9, 11]))
    assert src.tolist() == [3, 9, 11] and local.tolist() == [1, 2]
    assert relabeler._mark.shape == (1 << 20,) and relabeler._mark.dtype == np.int64


def test_relabeler_stamp_wrap_and_busy_fallback():
    relabeler = ops.Relabeler(50)
    dst, nbrs = np.array([3, 9]), np.array([9, 11, 3, 11, 40])
    want = ops.relabel(dst, nbrs)
    relabeler(dst, nbrs)  # leaves tags of stamp 1 behind
    relabeler._stamp = ops._MAX_STAMP  # next call wraps to stamp 1 and must clear those tags
    for _ in range(2):
        got = relabeler(dst, nbrs)
        assert all(np.array_equal(a, b) for a, b in zip(got, want))
    assert relabeler._stamp == 2
    with relabeler._lock:  # another thread holds the markers: the hash path answers
        got = relabeler(dst, nbrs)
    assert all(np.array_equal(a, b) for a, b in zip(got, want))
    assert relabeler._stamp == 2
