"""Weighted and masked sampling: frequencies follow the weights (chi-square at fixed seeds), zero-weight
and masked edges never appear, and a store, 2 graph servers and co-located reads give the same blocks."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import chisquare

from bgl.errors import ServerError
from bgl.sampler import LocalSampler, SamplingClient, ops
from bgl.store import write_store

P_MIN = 1e-3  # at fixed seeds a correct sampler passes; a biased one fails by many orders of magnitude


def repeated_rows(weights: np.ndarray, rows: int):
    """CSC of ``rows`` nodes whose in-edges all carry ``weights`` (neighbour j of a row is node j)."""
    deg = weights.size
    indptr = np.arange(rows + 1, dtype=np.int64) * deg
    indices = np.tile(np.arange(deg, dtype=np.int64), rows)
    return indptr, indices, np.tile(weights, rows)


def draws(weights, fanout, replace, rows=6000, seed=7):
    indptr, indices, prob = repeated_rows(np.asarray(weights), rows)
    counts, nbrs, _ = ops.sample_neighbors(indptr, indices, np.arange(rows), 0, fanout, replace, seed,
                                           prob=ops.check_weights(prob, indices.size))
    return counts, nbrs


SHAPES = {  # several degree shapes: short with a zero, geometric, long with many zeros, all-equal
    "short": np.array([1.0, 2.0, 3.0, 0.0, 4.0]),
    "geometric": 0.7 ** np.arange(12),
    "long_sparse": np.where(np.arange(60) % 3 == 0, 0.0, 1.0 + np.arange(60) % 7),
    "flat": np.ones(9),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_with_replacement_frequencies_match_the_weights(shape):
    w = SHAPES[shape]
    counts, nbrs = draws(w, 4, True)
    assert np.all(counts == 4)
    hits = np.bincount(nbrs, minlength=w.size)
    assert hits[w == 0].sum() == 0
    pos = w > 0
    assert chisquare(hits[pos], hits.sum() * w[pos] / w[pos].sum()).pvalue > P_MIN


def subset_probabilities(w: np.ndarray, k: int) -> dict[tuple, float]:
    """Exact P(sample = subset) of successive sampling (draw by weight, remove, repeat): DGL's semantics."""
    probs = {}
    for order in itertools.permutations(np.flatnonzero(w > 0).tolist(), k):
        p, left = 1.0, w.sum()
        for i in order:
            p *= w[i] / left
            left -= w[i]
        key = tuple(sorted(order))
        probs[key] = probs.get(key, 0.0) + p
    return probs


@pytest.mark.parametrize("weights, k", [([1.0, 2.0, 3.0, 0.0, 4.0], 2), ([5.0, 1.0, 1.0, 2.0, 0.5, 3.0], 3),
                                        ([8.0, 0.0, 1.0, 1.0, 0.25, 2.0, 0.0, 4.0], 4)])
def test_without_replacement_subsets_follow_successive_sampling(weights, k):
    w = np.asarray(weights)
    counts, nbrs = draws(w, k, False, rows=8000)
    assert np.all(counts == k)
    subsets = [tuple(s) for s in nbrs.reshape(-1, k).tolist()]
    assert all(list(s) == sorted(set(s)) for s in subsets)  # distinct, in CSC order
    exact = subset_probabilities(w, k)
    assert set(subsets) <= set(exact)  # no subset with a zero-weight edge
    keys = sorted(exact)
    seen = {key: 0 for key in keys}
    for s in subsets:
        seen[s] += 1
    observed = np.array([seen[key] for key in keys])
    expected = np.array([exact[key] for key in keys]) * len(subsets)
    assert chisquare(observed, expected).pvalue > P_MIN


def test_without_replacement_on_a_long_skewed_row_matches_exact_inclusion():
    """Degree 40, fanout 2: per-edge inclusion probability against the exact value (z-scores)."""
    w = 1.0 / (1.0 + np.arange(40)) ** 1.5
    rows = 20000
    _, nbrs = draws(w, 2, False, rows=rows)
    W = w.sum()
    exact = w / W + np.array([sum(w[j] / W * w[i] / (W - w[j]) for j in range(40) if j != i) for i in range(40)])
    hits = np.bincount(nbrs, minlength=40) / rows
    z = (hits - exact) / np.sqrt(exact * (1 - exact) / rows)
    assert np.abs(z).max() < 4.5
    uniform = np.full(40, 2 / 40)  # the test can fail: uniform draws are far off
    assert np.abs((uniform - exact) / np.sqrt(exact * (1 - exact) / rows)).max() > 20


def test_rows_with_few_positive_edges_take_them_all_and_fanout_minus_one_takes_every_positive_edge():
    w = np.array([0.0, 3.0, 0.0, 1.0])
    counts, nbrs = draws(w, 3, False, rows=10)
    assert np.all(counts == 2) and set(nbrs.tolist()) == {1, 3}
    for replace in (False, True):
        counts, nbrs = draws(w, -1, replace, rows=10)
        assert np.all(counts == 2) and np.array_equal(nbrs.reshape(-1, 2), np.tile([1, 3], (10, 1)))
    counts, _ = draws(np.zeros(4), 2, True, rows=3)
    assert np.all(counts == 0)


def test_bool_mask_draws_uniformly_among_true_edges():
    mask = np.array([True, False, True, True, False, True, True])
    indptr, indices, prob = repeated_rows(mask, 5000)
    counts, nbrs, _ = ops.sample_neighbors(indptr, indices, np.arange(5000), 0, 2, False, 3,
                                           prob=ops.check_weights(prob, indices.size))
    hits = np.bincount(nbrs, minlength=7)
    assert hits[~mask].sum() == 0 and np.all(counts == 2)
    assert chisquare(hits[mask]).pvalue > P_MIN


def test_the_parallel_kernels_give_the_serial_sample():
    rng = np.random.default_rng(0)
    indptr, indices, prob = repeated_rows(rng.random(30) * (rng.random(30) > 0.2), ops.PARALLEL_MIN_SEEDS)
    seeds = rng.permutation(ops.PARALLEL_MIN_SEEDS)
    for replace in (False, True):
        a = ops.sample_neighbors(indptr, indices, seeds, 0, 5, replace, 9, prob=prob, parallel=True)
        b = ops.sample_neighbors(indptr, indices, seeds, 0, 5, replace, 9, prob=prob, parallel=False)
        assert all(np.array_equal(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize("values, match", [
    (np.array([1.0, -0.5, 1.0]), r"'w' must be finite and >= 0; edge 1 has -0.5"),
    (np.array([1.0, 1.0, np.nan]), r"edge 2 has nan"),
    (np.array([np.inf, 1.0, 1.0]), r"edge 0 has inf"),
    (np.ones(4), r"'w' must have shape \(3,\).*got \(4,\)"),
    (np.array(["a", "b", "c"]), r"float, integer or a bool mask"),
])
def test_bad_weights_are_named(values, match):
    with pytest.raises(ValueError, match=match):
        ops.check_weights(values, 3, "w")


# ------------------------------------------------------------ store, servers, co-located reads
@pytest.fixture(scope="module")
def weighted_store(tmp_path_factory):
    rng = np.random.default_rng(11)
    n = 400
    deg = rng.integers(0, 25, n)
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(deg, out=indptr[1:])
    indices = rng.integers(0, n, int(indptr[-1]))
    w = (rng.random(indices.size) * (rng.random(indices.size) > 0.25)).astype(np.float32)
    edata = {"w": w, "m": rng.random(indices.size) > 0.5, "ef": rng.random((indices.size, 3)).astype(np.float32)}
    return write_store(tmp_path_factory.mktemp("weighted") / "s", indptr, indices,
                       feat=rng.random((n, 4)).astype(np.float32), edata=edata)


def part_stores(store, bounds, out):
    ip = np.asarray(store.indptr)
    parts = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        a, b = ip[lo], ip[hi]
        parts.append(write_store(out / f"part-{lo}", ip[lo:hi + 1] - a, np.asarray(store.indices[a:b]),
                                 feat=np.asarray(store.feat[lo:hi]), node_offset=lo,
                                 global_num_nodes=store.num_nodes,
                                 edata={k: np.asarray(v[a:b]) for k, v in store.edata.items()}))
    return parts


def same_blocks(a, b):
    for x, y in zip(a, b, strict=True):
        assert np.array_equal(x.src_ids, y.src_ids) and np.array_equal(x.indptr, y.indptr)
        assert np.array_equal(x.indices, y.indices)
        assert sorted(x.edata) == sorted(y.edata)
        for k in x.edata:
            assert np.array_equal(x.edata[k], y.edata[k])


def test_store_and_two_servers_and_colocated_reads_give_identical_weighted_blocks(weighted_store, serve, tmp_path):
    parts = part_stores(weighted_store, [0, 170, weighted_store.num_nodes], tmp_path)
    servers = [serve("--store", str(p.path)) for p in parts]
    local = LocalSampler(weighted_store)
    seeds = np.random.default_rng(2).permutation(weighted_store.num_nodes)[:120]
    w = np.asarray(weighted_store.edge_array("w"))
    with SamplingClient([s.address for s in servers], local_stores=()) as client, \
            SamplingClient([s.address for s in servers], local_stores=[parts[1]]) as mixed:
        for prob, replace in (("w", False), ("w", True), ("m", False)):
            want = local.sample_blocks(seeds, [4, 3], replace=replace, seed=5, prob=prob, edge_data=["ef", "w"])
            for b in want:
                eids = b.edge_ids.numpy()
                assert np.all(np.asarray(weighted_store.edge_array(prob))[eids] > 0)
                assert np.array_equal(b.edata["ef"].numpy(), np.asarray(weighted_store.edge_array("ef"))[eids])
                assert np.array_equal(b.edata["w"].numpy(), w[eids])
            same_blocks(want, client.sample_blocks(seeds, [4, 3], replace=replace, seed=5, prob=prob,
                                                   edge_data=["ef", "w"]))
            same_blocks(want, mixed.sample_blocks(seeds, [4, 3], replace=replace, seed=5, prob=prob,
                                                  edge_data=["ef", "w"]))
        # uniform sampling is unchanged by any of this
        same_blocks(local.sample_blocks(seeds, [4, 3], seed=5), client.sample_blocks(seeds, [4, 3], seed=5))
        with pytest.raises(ServerError, match="no edge data 'nope'"):
            client.sample_blocks(seeds, [2], seed=1, prob="nope")
        with pytest.raises(ServerError, match="no edge data 'gone'"):
            client.sample_blocks(seeds, [2], seed=1, edge_data=["gone"])
    with pytest.raises(ValueError, match="no edge data 'nope'"):
        local.sample_blocks(seeds, [2], seed=1, prob="nope")


def test_excluded_edges_combine_with_edge_data_on_a_store_servers_and_colocated_reads(weighted_store, serve, tmp_path):
    """Link prediction's exclusion and prefetch_edge_feats together: the same blocks from every source,
    no excluded edge in any of them, each block's edge rows those of its own edges."""
    parts = part_stores(weighted_store, [0, 170, weighted_store.num_nodes], tmp_path)
    servers = [serve("--store", str(p.path)) for p in parts]
    local = LocalSampler(weighted_store)
    seeds = np.random.default_rng(4).permutation(weighted_store.num_nodes)[:100]
    exclude = np.sort(np.random.default_rng(5).choice(weighted_store.num_edges, weighted_store.num_edges // 2,
                                                      replace=False))
    ef = np.asarray(weighted_store.edge_array("ef"))
    want = local.sample_blocks(seeds, [-1, 3], seed=5, edge_data=["ef"], exclude=exclude)
    for b in want:
        eids = b.edge_ids.numpy()
        assert eids.size and not np.isin(eids, exclude).any()
        assert np.array_equal(b.edata["ef"].numpy(), ef[eids])
    with SamplingClient([s.address for s in servers], local_stores=()) as client, \
            SamplingClient([s.address for s in servers], local_stores=[parts[1]]) as mixed:
        for sampler in (client, mixed):
            same_blocks(want, sampler.sample_blocks(seeds, [-1, 3], seed=5, edge_data=["ef"], exclude=exclude))
        with pytest.raises(ServerError, match="weighted sampling with excluded edges is not supported"):
            client.sample_blocks(seeds, [2], seed=1, prob="w", exclude=exclude)
    with pytest.raises(ValueError, match="LABOR with excluded edges is not supported"):
        local.sample_layer(seeds, 2, False, 1, labor=(3, -1.0), exclude=exclude)
