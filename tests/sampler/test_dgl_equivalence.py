"""Our blocks vs DGL's: same edges for fanout -1, same (uniform) selection law for a fanout."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.stats import chi2_contingency, chisquare

dgl = pytest.importorskip("dgl", reason="compares bgl's blocks with DGL's: needs DGL (the pinned lane)")

from bgl.dgl.real_dgl.blocks import to_dgl_blocks  # noqa: E402
from bgl.dgl.real_dgl.graph_reader import csc_to_dglgraph, dglgraph_to_csc  # noqa: E402
from bgl.sampler import LocalSampler  # noqa: E402
from bgl.store import write_store  # noqa: E402


def pairs(src_ids, src_local, dst_ids, dst_local) -> set[tuple[int, int]]:
    return set(zip(src_ids[src_local].tolist(), dst_ids[dst_local].tolist()))


def test_dglgraph_roundtrip(random_store):
    g = csc_to_dglgraph(random_store.indptr, random_store.indices)
    indptr, indices, _ = dglgraph_to_csc(g)
    assert np.array_equal(indptr, random_store.indptr) and np.array_equal(indices, random_store.indices)


@pytest.mark.parametrize("store_name", ["random_store", "cora_store"])
def test_full_fanout_blocks_equal_dgl(store_name, request):
    store = request.getfixturevalue(store_name)
    g = csc_to_dglgraph(store.indptr, store.indices)
    seeds = torch.from_numpy(np.random.default_rng(0).choice(store.num_nodes, 64, replace=False))
    ours = LocalSampler(store).sample_blocks(seeds, [-1, -1], seed=0)
    _, _, theirs = dgl.dataloading.NeighborSampler([-1, -1]).sample_blocks(g, seeds)
    # single layer through sample_neighbors + to_block, as the brief asks
    frontier = dgl.sampling.sample_neighbors(g, seeds, -1)
    one = dgl.to_block(frontier, seeds)
    for mine, ref in [(ours[-1], one), *zip(ours, theirs)]:
        ref_src, ref_dst = ref.srcdata[dgl.NID], ref.dstdata[dgl.NID]
        assert torch.equal(ref_src[: ref.num_dst_nodes()], ref_dst)
        if mine is ours[-1]:
            assert torch.equal(mine.dst_ids, ref_dst)  # seeds first, in the given order
        else:  # inner layers: DGL orders new src nodes its own way, so compare as sets
            assert set(mine.dst_ids.tolist()) == set(ref_dst.tolist())
        assert torch.equal(mine.src_ids[: mine.num_dst], mine.dst_ids)
        assert set(mine.src_ids.tolist()) == set(ref_src.tolist())
        u, v = ref.edges()
        s, d = mine.edges()
        assert mine.num_edges == ref.num_edges()
        assert pairs(mine.src_ids, s, mine.src_ids, d) == pairs(ref_src, u, ref_dst, v)


@pytest.fixture(scope="module")
def fan_store(tmp_path_factory):
    """200 dst nodes (10..209), each with in-edges from the 10 sources 0..9."""
    n, k = 210, 10
    indptr = np.concatenate([np.zeros(k + 1, np.int64), k + k * np.arange(1, n - k + 1)]) - k
    indptr[: k + 1] = 0
    indices = np.tile(np.arange(k), n - k)
    return write_store(tmp_path_factory.mktemp("fan") / "fan", indptr, indices)


@pytest.mark.parametrize("replace", [False, True])
def test_selection_frequencies_uniform_like_dgl(fan_store, replace):
    seeds = np.arange(10, 210)
    sampler = LocalSampler(fan_store)
    g = csc_to_dglgraph(fan_store.indptr, fan_store.indices)
    ours = np.zeros(10)
    theirs = np.zeros(10)
    for s in range(8):
        b = sampler.sample_blocks(seeds, [3], replace=replace, seed=s)[0]
        ours += np.bincount(b.src_ids[b.indices].numpy(), minlength=10)
        dgl.seed(s)
        f = dgl.sampling.sample_neighbors(g, torch.from_numpy(seeds), 3, replace=replace)
        theirs += np.bincount(f.edges()[0].numpy(), minlength=10)
    assert ours.sum() == theirs.sum() == 8 * 200 * 3
    expected = np.full(10, ours.sum() / 10)
    assert chisquare(ours, expected).pvalue > 1e-4
    assert chisquare(theirs, expected).pvalue > 1e-4
    assert chi2_contingency(np.stack([ours, theirs])).pvalue > 1e-4


def test_adapter_blocks_run_a_dgl_layer(random_store):
    sampler = LocalSampler(random_store)
    seeds = torch.tensor([1, 2, 3, 40])
    blocks = sampler.sample_blocks(seeds, [4, 3], seed=1)
    blocks[0].srcdata["feat"] = sampler.fetch_features(blocks[0].src_ids)
    blocks[-1].dstdata["label"] = sampler.fetch_labels(blocks[-1].dst_ids)
    dblocks = to_dgl_blocks(blocks)
    for b, d in zip(blocks, dblocks):
        assert (d.num_src_nodes(), d.num_dst_nodes(), d.num_edges()) == (b.num_src, b.num_dst, b.num_edges)
        assert torch.equal(d.srcdata[dgl.NID], b.src_ids) and torch.equal(d.dstdata[dgl.NID], b.dst_ids)
        u, v = d.edges()
        s, t = b.edges()
        assert torch.equal(u, s) and torch.equal(v, t)
    assert torch.equal(dblocks[-1].dstdata["label"], sampler.fetch_labels(seeds))
    conv = dgl.nn.SAGEConv(16, 5, "mean")
    h = conv(dblocks[0], dblocks[0].srcdata["feat"])
    assert h.shape == (blocks[0].num_dst, 5)


def test_adapter_block_equals_dgl_create_block(random_store):
    """The adapter builds dgl.Blocks straight from CSC; they must be the graph create_block builds."""
    import dgl.function as fn

    blocks = LocalSampler(random_store).sample_blocks(random_store.train_idx[:64], [5, 3], seed=7)
    for b, ours in zip(blocks, to_dgl_blocks(blocks)):
        ref = dgl.create_block({("_N", "_E", "_N"): ("csc", (b.indptr, b.indices, torch.empty(0, dtype=torch.int64)))},
                               num_src_nodes={"_N": b.num_src}, num_dst_nodes={"_N": b.num_dst})
        assert (ours.num_src_nodes(), ours.num_dst_nodes(), ours.num_edges()) == \
               (ref.num_src_nodes(), ref.num_dst_nodes(), ref.num_edges())
        for got, want in zip(ours.edges(order="eid"), ref.edges(order="eid")):
            assert torch.equal(got, want)
        assert torch.equal(ours.in_degrees(), ref.in_degrees())
        x = torch.randn(b.num_src, 3)
        results = []
        for g in (ours, ref):
            g.srcdata["h"] = x
            g.update_all(fn.copy_u("h", "m"), fn.sum("m", "s"))
            results.append(g.dstdata["s"])
        torch.testing.assert_close(results[0], results[1])
