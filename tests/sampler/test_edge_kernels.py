"""Link-prediction kernels against brute force: sampling around excluded edges, uniform draws, edge tests."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bgl.sampler import _edge_kernels as EK
from bgl.sampler import ops

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def exclusion_case(draw):
    """A random CSC, its seeds, an excluded edge set and optionally a permuted edge-id map."""
    n = draw(st.integers(1, 20))
    degs = draw(st.lists(st.integers(0, 25), min_size=n, max_size=n))
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(degs, out=indptr[1:])
    e = int(indptr[-1])
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    indices = rng.integers(0, n, e).astype(np.int64)
    seeds = rng.choice(n, size=draw(st.integers(1, n)), replace=False).astype(np.int64)
    edge_ids = rng.permutation(e).astype(np.int64) if draw(st.booleans()) else None
    exclude = np.unique(rng.integers(0, max(e, 1), draw(st.integers(0, max(e, 1)))))
    return indptr, indices, seeds, edge_ids, exclude, draw(st.integers(-1, 30)), draw(st.booleans()), \
        draw(st.integers(0, 2**64 - 1))


@SETTINGS
@given(exclusion_case())
def test_sampling_never_draws_an_excluded_edge_and_keeps_unaffected_rows(case):
    indptr, indices, seeds, edge_ids, exclude, fanout, replace, seed = case
    counts, nbrs, pos = ops.sample_neighbors(indptr, indices, seeds, 0, fanout, replace, seed, parallel=False,
                                             exclude=exclude, edge_ids=edge_ids)
    plain_counts, _, plain_pos = ops.sample_neighbors(indptr, indices, seeds, 0, fanout, replace, seed,
                                                      parallel=False)
    ids_of = (lambda p: edge_ids[p]) if edge_ids is not None else (lambda p: p)
    excluded = set(exclude.tolist())
    bounds = np.concatenate([[0], np.cumsum(counts)])
    plain_bounds = np.concatenate([[0], np.cumsum(plain_counts)])
    for i, v in enumerate(seeds):
        row = range(indptr[v], indptr[v + 1])
        allowed = [p for p in row if ids_of(p) not in excluded]
        got = pos[bounds[i]:bounds[i + 1]]
        assert all(indptr[v] <= p < indptr[v + 1] for p in got)
        assert not {int(ids_of(p)) for p in got} & excluded
        assert np.array_equal(nbrs[bounds[i]:bounds[i + 1]], indices[got])
        if fanout < 0 or (not replace and fanout >= len(allowed)):
            assert sorted(got.tolist()) == allowed
        elif replace:
            assert len(got) == (fanout if allowed else 0)
        else:
            assert len(got) == fanout and len(set(got.tolist())) == fanout
        if len(allowed) == len(row):  # no exclusion in this row: the very sample drawn without any
            assert np.array_equal(got, plain_pos[plain_bounds[i]:plain_bounds[i + 1]])


def test_exclusion_is_a_function_of_seed_and_ids():
    indptr = np.array([0, 40, 80], np.int64)
    indices = np.arange(80, dtype=np.int64) % 2
    exclude = np.arange(0, 80, 3, dtype=np.int64)
    a = ops.sample_neighbors(indptr, indices, np.array([1, 0]), 0, 5, False, 7, parallel=False, exclude=exclude)
    b = ops.sample_neighbors(indptr, indices, np.array([0, 1]), 0, 5, False, 7, parallel=False, exclude=exclude)
    assert np.array_equal(a[2][:5], b[2][5:]) and np.array_equal(a[2][5:], b[2][:5])


def test_exclude_must_be_non_negative_ids():
    with pytest.raises(ValueError, match="-2"):
        ops.check_exclude(np.array([-2, 3]))
    assert np.array_equal(ops.check_exclude(np.array([5, 1, 5])), [1, 5])


def test_uniform_below_is_in_range_reproducible_and_sliceable():
    a = np.empty(1000, np.int64)
    EK.uniform_below(np.uint64(42), np.int64(0), np.int64(7), a)
    assert a.min() >= 0 and a.max() < 7 and len(set(a.tolist())) == 7
    tail = np.empty(10, np.int64)
    EK.uniform_below(np.uint64(42), np.int64(990), np.int64(7), tail)
    assert np.array_equal(tail, a[990:])
    other = np.empty(1000, np.int64)
    EK.uniform_below(np.uint64(43), np.int64(0), np.int64(7), other)
    assert not np.array_equal(a, other)


def test_has_edges_matches_a_scan():
    rng = np.random.default_rng(0)
    indptr = np.array([0, 3, 3, 6], np.int64)
    indices = np.array([1, 2, 0, 0, 1, 2], np.int64)
    src, dst = rng.integers(0, 3, 50), rng.integers(0, 3, 50)
    out = np.empty(50, np.int8)
    EK.has_edges(indptr, indices, src, dst, out)
    expect = [int(s in indices[indptr[d]:indptr[d + 1]]) for s, d in zip(src, dst)]
    assert out.tolist() == expect
