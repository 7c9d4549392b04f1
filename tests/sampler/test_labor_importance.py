"""LABOR-i (importance sampling) and weighted LABOR: the inclusion probabilities meet LABOR's
equations, edges are kept at those probabilities and jointly per source, fewer distinct inputs
than LABOR-0, DGL's LaborSampler statistics, and identical blocks from a store and 2 servers."""
from __future__ import annotations

import numpy as np
import pytest

from bgl.sampler import LocalSampler, SamplingClient, labor_ops, ops
from bgl.sampler.multilayer import Labor
from bgl.store import write_store


def csc_graph(rng, n=3000, max_deg=40):
    deg = rng.integers(1, max_deg, n)
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(deg, out=indptr[1:])
    return indptr, rng.integers(0, n, int(indptr[-1]))


@pytest.fixture(scope="module")
def graph_store(tmp_path_factory):
    rng = np.random.default_rng(11)
    indptr, indices = csc_graph(rng)
    w = rng.random(indices.size).astype(np.float32)
    w[rng.random(indices.size) < 0.2] = 0.0  # zero-weight edges: never drawn
    return write_store(tmp_path_factory.mktemp("labori") / "s", indptr, indices,
                       feat=rng.random((indptr.size - 1, 4)).astype(np.float32),
                       edata={"w": w, "ef": rng.random((indices.size, 3)).astype(np.float32)})


def layer_of(store, seeds):
    """All in-edges of ``seeds``: (counts, src ids, local positions, CSC positions)."""
    ip, ind = np.asarray(store.indptr), np.asarray(store.indices)
    counts = ip[seeds + 1] - ip[seeds]
    pos = np.concatenate([np.arange(ip[s], ip[s + 1]) for s in seeds])
    src, local = ops.relabel(seeds, ind[pos])
    return counts, src, local, pos


@pytest.mark.parametrize("rounds", [1, 3, -1])
def test_probabilities_meet_the_variance_target_and_lower_expected_inputs(graph_store, rounds):
    """Equation 22: each row's sum_t 1 / p_t equals neighbour sampling's d^2 / k; and the expected
    number of distinct sources, sum_t (1 - prod_s (1 - p_ts)), falls below LABOR-0's."""
    seeds = np.random.default_rng(0).permutation(graph_store.num_nodes)[:400]
    counts, src, local, _ = layer_of(graph_store, seeds)
    k = 5
    _, _, p = labor_ops.labor_importance(counts, src, local, k, rounds, 1, with_probabilities=True)
    indptr = np.concatenate([[0], np.cumsum(counts)])
    for i in np.flatnonzero(counts > k):
        row = p[indptr[i]:indptr[i + 1]]
        assert abs(np.sum(1 / row) - counts[i] ** 2 / k) < 1e-3 * counts[i] ** 2 / k
    assert np.all(p[np.repeat(counts <= k, counts)] == 1.0)
    # LABOR keeps t for every seed whose p_ts >= r_t: P(t drawn) = max_s p_ts
    def expected_inputs(prob):
        best = np.zeros(src.size)
        np.maximum.at(best, local, prob)
        return best.sum()
    labor0 = np.minimum(1.0, k / np.repeat(counts, counts).astype(np.float64))
    assert expected_inputs(p) < 0.97 * expected_inputs(labor0)


def test_edges_are_kept_at_their_probabilities_jointly_per_source(graph_store):
    seeds = np.random.default_rng(1).permutation(graph_store.num_nodes)[:200]
    counts, src, local, _ = layer_of(graph_store, seeds)
    _, _, p = labor_ops.labor_importance(counts, src, local, 4, 2, 0, with_probabilities=True)
    trials = 1500
    hits = np.zeros(p.size)
    # two edges from one source into different seeds: kept together as often as the rarer one
    by_src = np.argsort(local, kind="stable")
    same = np.flatnonzero(local[by_src][1:] == local[by_src][:-1])
    a, b = by_src[same], by_src[same + 1]
    both = np.zeros(a.size)
    for seed in range(trials):
        keep, _ = labor_ops.labor_importance(counts, src, local, 4, 2, seed)
        hits += keep
        both += keep[a] & keep[b]
    sd = np.sqrt(p * (1 - p) / trials) + 1e-12
    z = (hits / trials - p) / sd
    assert np.mean(np.abs(z) < 4) > 0.999 and abs(np.mean(z)) < 0.1
    assert np.allclose(both / trials, np.minimum(p[a], p[b]), atol=0.06)


def test_importance_weights_are_normalised_inverse_probabilities(graph_store):
    seeds = np.arange(300)
    counts, src, local, pos = layer_of(graph_store, seeds)
    w = np.asarray(graph_store.edge_array("w"))[pos]
    keep, imp, p = labor_ops.labor_importance(counts, src, local, 5, 1, 3, weights=w, with_probabilities=True)
    assert not np.any(keep & (w == 0)) and np.all(p[w == 0] == 0)
    rows = np.repeat(np.arange(seeds.size), counts)
    for i in np.unique(rows[keep]):
        sel = keep & (rows == i)
        want = (w[sel] / p[sel]) * sel.sum() / np.sum(w[sel] / p[sel])
        assert np.allclose(imp[sel], want, rtol=1e-5)
    assert np.all(imp[~keep] == 0)


def test_weighted_labor0_keeps_fanout_edges_in_expectation_proportional_to_weight(graph_store):
    seeds = np.arange(graph_store.num_nodes)
    counts, src, local, pos = layer_of(graph_store, seeds)
    w = np.asarray(graph_store.edge_array("w"))[pos].astype(np.float64)
    _, _, p = labor_ops.labor_importance(counts, src, local, 4, 0, 0, weights=w, with_probabilities=True)
    indptr = np.concatenate([[0], np.cumsum(counts)])
    checked = 0
    for i in range(seeds.size):
        a, b = indptr[i], indptr[i + 1]
        row, ws = p[a:b], w[a:b]
        if np.count_nonzero(ws) > 4 and row.max() < 1:  # unclipped: p = 4 w / sum w exactly
            assert np.allclose(row, 4 * ws / ws.sum(), rtol=1e-3)
            checked += 1
    assert checked > 100


def test_labor_i_draws_fewer_distinct_inputs_than_labor0_with_about_as_many_edges(graph_store):
    sampler = LocalSampler(graph_store)
    seeds = np.random.default_rng(2).permutation(graph_store.num_nodes)[:500]
    def mean(labor, prob=None):
        blocks = [sampler.sample_blocks(seeds, [5], seed=s, labor=labor, prob=prob)[0] for s in range(8)]
        return np.mean([b.num_src for b in blocks]), np.mean([b.num_edges for b in blocks])
    src0, edges0 = mean(Labor())
    src1, edges1 = mean(Labor(importance_sampling=1))
    assert src1 < 0.96 * src0 and edges1 < 1.35 * edges0
    wsrc0, _ = mean(Labor(), prob="w")
    wsrc1, _ = mean(Labor(importance_sampling=1), prob="w")
    assert wsrc1 < 0.96 * wsrc0


def test_labor_i_statistics_match_dgls_labor_sampler(tmp_path):
    """Same graph, same batch: DGL's sample_labors and bgl's, mean edges and distinct inputs over
    seeds (different RNGs, so statistics, not bits)."""
    dgl = pytest.importorskip("dgl")
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    indptr, indices = csc_graph(rng)
    n = indptr.size - 1
    g = dgl.graph((torch.from_numpy(indices), torch.from_numpy(np.repeat(np.arange(n), np.diff(indptr)))),
                  num_nodes=n)
    sampler = LocalSampler(write_store(tmp_path / "s", indptr, indices))
    seeds = rng.permutation(n)[:500]
    for rounds in (1, 2):
        ours = [sampler.sample_blocks(seeds, [5], seed=s, labor=Labor(importance_sampling=rounds))[0]
                for s in range(10)]
        theirs = [dgl.sampling.sample_labors(g, torch.from_numpy(seeds), 5, importance_sampling=rounds,
                                             random_seed=dgl.backend.zerocopy_to_dgl_ndarray(
                                                 torch.tensor([s * 7 + 1])))[0] for s in range(10)]
        e_ours, e_theirs = np.mean([b.num_edges for b in ours]), np.mean([sg.num_edges() for sg in theirs])
        s_ours = np.mean([b.num_src for b in ours])
        s_theirs = np.mean([np.union1d(sg.edges()[0].numpy(), seeds).size for sg in theirs])
        assert abs(e_ours - e_theirs) < 0.06 * e_theirs and abs(s_ours - s_theirs) < 0.03 * s_theirs


def test_store_and_two_servers_give_the_same_labor_i_blocks(graph_store, serve, tmp_path, part_slicer):
    parts = [part_slicer(graph_store, lo, hi, tmp_path / f"p{lo}")
             for lo, hi in ((0, 1300), (1300, graph_store.num_nodes))]
    servers = [serve("--store", str(p.path)) for p in parts]
    local = LocalSampler(graph_store)
    seeds = np.random.default_rng(5).permutation(graph_store.num_nodes)[:300]
    with SamplingClient([s.address for s in servers], local_stores=()) as client, \
            SamplingClient([s.address for s in servers], local_stores=[parts[0]]) as mixed:
        for labor, prob in ((Labor(importance_sampling=1), None), (Labor(True, 99, 0.5, -1), None),
                            (Labor(importance_sampling=2), "w"), (Labor(), "w")):
            want = local.sample_blocks(seeds, [4, 4], seed=8, labor=labor, prob=prob, edge_data=["ef"])
            assert all("edge_weights" in b.edata and "w" not in b.edata for b in want)
            for got in (client.sample_blocks(seeds, [4, 4], seed=8, labor=labor, prob=prob, edge_data=["ef"]),
                        mixed.sample_blocks(seeds, [4, 4], seed=8, labor=labor, prob=prob, edge_data=["ef"])):
                for x, y in zip(want, got, strict=True):
                    assert np.array_equal(x.src_ids, y.src_ids) and np.array_equal(x.indices, y.indices)
                    assert np.array_equal(x.indptr, y.indptr)
                    for name in ("ef", "edge_weights"):
                        assert np.array_equal(x.edata[name], y.edata[name])
            # the sampled edges' features are the stored rows of those edges
            ef = np.asarray(graph_store.edge_array("ef"))
            assert np.array_equal(want[-1].edata["ef"].numpy(), ef[want[-1].edge_ids.numpy()])


def test_bad_importance_arguments_are_named(graph_store):
    counts, src, local, pos = layer_of(graph_store, np.arange(5))
    with pytest.raises(ValueError, match="importance_sampling must be an int, got 1.5"):
        labor_ops.labor_importance(counts, src, local, 3, 1.5, 0)
    bad = np.ones(local.size)
    bad[2] = -1.0
    with pytest.raises(ValueError, match="edge weights 'w' must be finite and >= 0; edge 2 has -1.0"):
        labor_ops.labor_importance(counts, src, local, 3, 1, 0, weights=bad, name="w")
    with pytest.raises(ValueError, match="fanout must be >= -1"):
        labor_ops.labor_importance(counts, src, local, -3, 1, 0)
