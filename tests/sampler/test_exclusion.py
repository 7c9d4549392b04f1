"""Sampling around excluded edges (sampler/exclusion.py, its kernels in sampler/_edge_kernels.py):
the rank-mapping kernels against a scan of each row's remaining edges, and the distribution of
the draw on hub rows, where the kernels never read the row's edges."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

from bgl.sampler import _edge_kernels as EK
from bgl.sampler import _kernels as K
from bgl.sampler import exclusion, ops

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def scan_reference(indptr, seeds, fanout, replace, seed, xpos):
    """Brute force: list each row's remaining positions, draw ranks among them from the row's own
    stream (the plain draw's :func:`_row_positions` over ``0..n-1``), and index the list."""
    excluded = set(xpos.tolist())
    tmp = np.empty(K.FLOYD_MAX_K, np.int64)
    out = []
    for v in seeds.tolist():
        allowed = [p for p in range(indptr[v], indptr[v + 1]) if p not in excluded]
        n = len(allowed)
        k = K._count_one(n, fanout, replace)
        ranks = np.empty(k, np.int64)
        K._row_positions(0, n, v, fanout, replace, np.uint64(seed), ranks, 0, k, tmp)
        out.append([allowed[r] for r in ranks.tolist()])
    return out


def kernel_sample(indptr, seeds, fanout, replace, seed, xpos):
    """The two exclusion kernels as the Python layer runs them; one list of positions per seed."""
    m = seeds.shape[0]
    starts, degs, xlo, nexcl, counts = (np.empty(m, np.int64) for _ in range(5))
    EK.excluded_spans(indptr, seeds, np.int64(0), np.int64(fanout), replace, xpos, starts, degs, xlo, nexcl,
                      counts)
    bounds = np.zeros(m + 1, np.int64)
    np.cumsum(counts, out=bounds[1:])
    out = np.empty(bounds[-1], np.int64)
    EK.sample_positions_excluding(starts, degs, xlo, nexcl, xpos, seeds, np.int64(fanout), replace,
                                  np.uint64(seed), bounds, out)
    return [out[bounds[i]:bounds[i + 1]].tolist() for i in range(m)]


@st.composite
def hub_case(draw):
    """A CSC with a few hubs among small rows, seeds, excluded positions (runs and scattered)."""
    n = draw(st.integers(1, 12))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    degs = np.where(rng.random(n) < 0.3, rng.integers(100, 400, n), rng.integers(0, 12, n))
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(degs, out=indptr[1:])
    e = int(indptr[-1])
    seeds = rng.choice(n, size=draw(st.integers(1, n)), replace=False).astype(np.int64)
    runs = [np.arange(a, min(a + 30, e)) for a in rng.integers(0, max(e, 1), 2)] if e else []
    scattered = rng.integers(0, max(e, 1), draw(st.integers(0, max(e, 1))))
    xpos = np.unique(np.concatenate([scattered, *runs]).astype(np.int64)) if e else np.empty(0, np.int64)
    return indptr, seeds, xpos, draw(st.integers(-1, 80)), draw(st.booleans()), draw(st.integers(0, 2**64 - 1))


@SETTINGS
@given(hub_case())
def test_kernels_draw_exactly_what_a_scan_of_the_remaining_edges_draws(case):
    indptr, seeds, xpos, fanout, replace, seed = case
    assert kernel_sample(indptr, seeds, fanout, replace, seed, xpos) == \
        scan_reference(indptr, seeds, fanout, replace, seed, xpos)


def test_graph_edge_ids_are_mapped_to_positions_once():
    ids = np.array([3, 0, 4, 1, 2], np.int64)
    pos = exclusion.edge_positions(ids)
    assert pos.tolist() == [1, 3, 4, 0, 2]
    # ids past the slice's edges name none of its edges; the rest map through the inverse, sorted
    assert exclusion.excluded_positions(np.array([0, 4, 9]), 5, ids, pos).tolist() == [1, 2]
    assert exclusion.excluded_positions(np.array([0, 4, 9]), 5, ids).tolist() == [1, 2]
    with pytest.raises(ValueError, match="position 2 holds 3"):
        exclusion.edge_positions(np.array([3, 0, 3, 1], np.int64))
    with pytest.raises(ValueError, match="position 1 holds 7"):
        exclusion.edge_positions(np.array([0, 7], np.int64))
    with pytest.raises(ValueError, match="edge_pos has 4 entries for 5 edges"):
        exclusion.excluded_positions(np.array([1]), 5, ids, pos[:4])


def test_graph_edge_ids_sample_as_the_same_graph_renumbered():
    """A graph read with its own edge ids samples what the store numbered by position samples,
    its excluded ids renamed: the inverse map changes the names, never the draw."""
    rng = np.random.default_rng(5)
    indptr = np.array([0, 300, 304, 700], np.int64)
    indices = rng.integers(0, 3, 700)
    ids = rng.permutation(700).astype(np.int64)
    excluded_pos = np.unique(rng.integers(0, 700, 120))
    seeds = np.array([2, 0, 1], np.int64)
    by_pos = ops.sample_neighbors(indptr, indices, seeds, 0, 10, False, 11, parallel=False, exclude=excluded_pos)
    by_id = ops.sample_neighbors(indptr, indices, seeds, 0, 10, False, 11, parallel=False,
                                 exclude=ids[excluded_pos], edge_ids=ids, edge_pos=exclusion.edge_positions(ids))
    for a, b in zip(by_pos, by_id):
        assert np.array_equal(a, b)


HUB_DEGREE, FANOUT, DRAWS = 2000, 10, 4000


def hub_frequencies(sample_row, xpos):
    """How often each remaining position of one hub row is drawn over ``DRAWS`` sampling seeds."""
    freq = np.zeros(HUB_DEGREE, np.int64)
    for seed in range(DRAWS):
        got = sample_row(seed)
        assert len(got) == FANOUT and len(set(got)) == FANOUT
        np.add.at(freq, got, 1)
    assert not freq[xpos].any()
    return np.delete(freq, xpos)


def uniform_p_value(freq) -> float:
    """Chi-square test of the frequencies against uniform; the draws without replacement make the
    statistic slightly smaller than a multinomial's, so the test only gets more conservative."""
    return float(stats.chisquare(freq).pvalue)


@pytest.mark.parametrize("layout", ["front-run", "scattered", "most-excluded"])
def test_hub_rows_draw_uniformly_among_their_remaining_edges(layout):
    """One hub row (degree 2000) with a quarter, or nine tenths, of its edges excluded, sampled
    under 4000 seeds: every remaining edge is drawn equally often (chi-square, p > 1e-4: the
    seeds are fixed, so the outcome is too), never an excluded one; a sampler that takes the
    first remaining edges, or one that favours the edges after excluded ones, fails the same test."""
    rng = np.random.default_rng(0)
    xpos = {"front-run": np.arange(0, 500), "scattered": np.sort(rng.choice(HUB_DEGREE, 500, replace=False)),
            "most-excluded": np.sort(rng.choice(HUB_DEGREE, 1800, replace=False))}[layout].astype(np.int64)
    indptr = np.array([0, HUB_DEGREE], np.int64)
    seeds = np.zeros(1, np.int64)
    freq = hub_frequencies(lambda s: kernel_sample(indptr, seeds, FANOUT, False, s, xpos)[0], xpos)
    assert uniform_p_value(freq) > 1e-4

    remaining = np.setdiff1d(np.arange(HUB_DEGREE), xpos)
    first_k = hub_frequencies(lambda s: remaining[:FANOUT].tolist(), xpos)
    assert uniform_p_value(first_k) < 1e-12
    # subtler: draw among all the row's edges and step past an excluded (or taken) one to the next
    # remaining edge, as a redraw-free sampler might: right counts, never an excluded edge, but
    # the edges just after excluded ones are drawn more often
    excluded = set(xpos.tolist())

    def skewed(s):
        draws, taken = np.random.default_rng(s).integers(0, HUB_DEGREE, FANOUT), set()
        for p in draws.tolist():
            while p in excluded or p in taken:
                p = (p + 1) % HUB_DEGREE
            taken.add(p)
        return sorted(taken)
    assert uniform_p_value(hub_frequencies(skewed, xpos)) < 1e-4


def test_hub_rows_with_replacement_draw_uniformly_among_their_remaining_edges():
    rng = np.random.default_rng(1)
    xpos = np.sort(rng.choice(HUB_DEGREE, 700, replace=False)).astype(np.int64)
    indptr = np.array([0, HUB_DEGREE], np.int64)
    freq = np.zeros(HUB_DEGREE, np.int64)
    for seed in range(DRAWS):
        np.add.at(freq, kernel_sample(indptr, np.zeros(1, np.int64), FANOUT, True, seed, xpos)[0], 1)
    assert freq.sum() == DRAWS * FANOUT and not freq[xpos].any()
    assert uniform_p_value(np.delete(freq, xpos)) > 1e-4
