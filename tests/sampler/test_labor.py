"""LABOR-0: each edge kept with probability min(1, k/deg) (statistical tests), one shared variate per source
node (joint inclusion), fewer distinct inputs than neighbour sampling, identical from a store and 2 servers."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom, chisquare

from bgl.sampler import LocalSampler, SamplingClient, ops
from bgl.sampler.multilayer import Labor
from bgl.store import write_store

P_MIN = 1e-3


def disjoint_rows(deg: int, rows: int):
    """``rows`` seed rows of degree ``deg`` whose sources are all distinct (independent variates)."""
    indptr = np.arange(rows + 1, dtype=np.int64) * deg
    indices = rows + np.arange(rows * deg, dtype=np.int64)
    return indptr, indices


@pytest.mark.parametrize("deg, k, mix", [(10, 3, -1.0), (40, 5, -1.0), (7, 7, -1.0), (25, 4, 0.4)])
def test_kept_edges_per_seed_are_binomial_with_p_k_over_deg(deg, k, mix):
    rows = 6000
    indptr, indices = disjoint_rows(deg, rows)
    counts, nbrs, eids = ops.sample_labor(indptr, indices, np.arange(rows), 0, k, 17, 99, mix)
    p = min(1.0, k / deg)
    if p == 1.0:
        assert np.all(counts == deg)
        return
    assert abs(counts.mean() - k) < 4 * np.sqrt(deg * p * (1 - p) / rows)
    hist = np.bincount(counts, minlength=deg + 1)
    expect = binom.pmf(np.arange(deg + 1), deg, p) * rows
    keep = expect >= 5  # pool the sparse tails
    observed = np.append(hist[keep], hist[~keep].sum())
    expected = np.append(expect[keep], expect[~keep].sum())
    assert chisquare(observed, expected * observed.sum() / expected.sum()).pvalue > P_MIN
    assert np.array_equal(nbrs, indices[eids]) and np.all(np.diff(eids) > 0)  # CSC order


def test_a_shared_neighbour_is_kept_jointly_not_independently():
    """Rows A (deg 4) and B (deg 10) share source 0: over many batch seeds, P(kept in both) is
    min(pA, pB) = 0.2 for LABOR; independent (uniform) sampling gives pA * pB = 0.1."""
    indptr = np.array([0, 4, 14], np.int64)
    indices = np.array([0, 1, 2, 3, 0, 4, 5, 6, 7, 8, 9, 10, 11, 12], np.int64)
    trials = 4000
    both = in_a = in_b = 0
    for seed in range(trials):
        counts, nbrs, _ = ops.sample_labor(indptr, indices, np.array([100, 101]) - 100, 0, 2, seed)
        a, b = nbrs[:counts[0]], nbrs[counts[0]:]
        in_a += 0 in a
        in_b += 0 in b
        both += (0 in a) and (0 in b)
    sd = np.sqrt(0.25 / trials)
    assert abs(in_a / trials - 0.5) < 4 * sd and abs(in_b / trials - 0.2) < 4 * sd
    assert abs(both / trials - 0.2) < 4 * sd


@pytest.fixture(scope="module")
def graph_store(tmp_path_factory):
    rng = np.random.default_rng(4)
    n = 3000
    deg = rng.integers(1, 40, n)
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(deg, out=indptr[1:])
    indices = rng.integers(0, n, int(indptr[-1]))
    return write_store(tmp_path_factory.mktemp("labor") / "s", indptr, indices,
                       feat=rng.random((n, 4)).astype(np.float32),
                       edata={"ef": rng.random(indices.size).astype(np.float32)})


def test_fewer_distinct_inputs_than_neighbour_sampling(graph_store):
    sampler = LocalSampler(graph_store)
    seeds = np.random.default_rng(0).permutation(graph_store.num_nodes)[:1000]
    uniform = sampler.sample_blocks(seeds, [5], seed=3)[0]
    labor = sampler.sample_blocks(seeds, [5], seed=3, labor=Labor())[0]
    assert abs(labor.num_edges - uniform.num_edges) < 0.1 * uniform.num_edges  # same edges in expectation
    assert labor.num_src - 1000 < 0.7 * (uniform.num_src - 1000)  # far fewer new input rows
    few = seeds[:100]  # two layers, away from saturating the 3000 nodes
    independent = sampler.sample_blocks(few, [5, 5], seed=3, labor=Labor())
    dependent = sampler.sample_blocks(few, [5, 5], seed=3, labor=Labor(layer_dependency=True))
    assert dependent[0].num_src < independent[0].num_src


def test_store_and_two_servers_give_the_same_labor_blocks(graph_store, serve, tmp_path):
    ip = np.asarray(graph_store.indptr)
    parts = []
    for lo, hi in ((0, 1300), (1300, graph_store.num_nodes)):
        a, b = ip[lo], ip[hi]
        parts.append(write_store(tmp_path / f"p{lo}", ip[lo:hi + 1] - a, np.asarray(graph_store.indices[a:b]),
                                 feat=np.asarray(graph_store.feat[lo:hi]), node_offset=lo,
                                 global_num_nodes=graph_store.num_nodes,
                                 edata={"ef": np.asarray(graph_store.edge_array("ef")[a:b])}))
    servers = [serve("--store", str(p.path)) for p in parts]
    local = LocalSampler(graph_store)
    seeds = np.random.default_rng(1).permutation(graph_store.num_nodes)[:300]
    with SamplingClient([s.address for s in servers], local_stores=()) as client, \
            SamplingClient([s.address for s in servers], local_stores=[parts[0]]) as mixed:
        for labor in (Labor(), Labor(True), Labor(False, 12345, 0.25)):
            want = local.sample_blocks(seeds, [5, 5], seed=8, labor=labor, edge_data=["ef"])
            for got in (client.sample_blocks(seeds, [5, 5], seed=8, labor=labor, edge_data=["ef"]),
                        mixed.sample_blocks(seeds, [5, 5], seed=8, labor=labor, edge_data=["ef"])):
                for x, y in zip(want, got, strict=True):
                    assert np.array_equal(x.src_ids, y.src_ids) and np.array_equal(x.indices, y.indices)
                    assert np.array_equal(x.indptr, y.indptr) and np.array_equal(x.edata["ef"], y.edata["ef"])


def test_bad_labor_mix_is_refused():
    with pytest.raises(ValueError, match="must be -1 or in \\[0, 1\\), got 1.5"):
        ops.sample_labor(np.array([0, 1]), np.array([0]), np.array([0]), 0, 1, 0, 0, 1.5)
