"""bgl.DataLoader with DGL's prob= / mask= and prefetch_edge_feats, over a DGLGraph, a store and servers."""
from __future__ import annotations

import numpy as np
import pytest

import bgl
from bgl.partition.format import write_partition

dgl = pytest.importorskip("dgl")
torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def weighted_graph():
    torch.manual_seed(0)
    g = dgl.rand_graph(400, 5000)
    g.ndata["feat"] = torch.randn(400, 6)
    g.ndata["label"] = torch.randint(0, 3, (400,))
    w = torch.rand(5000)
    w[w < 0.4] = 0
    g.edata["w"] = w
    g.edata["m"] = torch.rand(5000) > 0.5
    g.edata["ef"] = torch.randn(5000, 2)
    return g


def check_batches(loader, g, prob):
    n = 0
    for _, _, blocks in loader:
        for b in blocks:
            eid = b.edata[dgl.EID]
            assert bool((g.edata[prob][eid] > 0).all())
            assert torch.equal(b.edata["ef"], g.edata["ef"][eid])
        n += 1
    assert n == len(loader) > 0


@pytest.mark.parametrize("kwargs, prob", [({"prob": "w"}, "w"), ({"mask": "m"}, "m"),
                                          ({"prob": "w", "replace": True}, "w")])
def test_dgl_sampler_over_a_dglgraph(weighted_graph, kwargs, prob):
    sampler = dgl.dataloading.NeighborSampler([5, 5], prefetch_edge_feats=["ef"], **kwargs)
    check_batches(bgl.DataLoader(weighted_graph, torch.arange(100), sampler, batch_size=40), weighted_graph, prob)


def test_edge_features_are_the_rows_of_the_sampled_edges_through_stage_processes(weighted_graph):
    sampler = dgl.dataloading.NeighborSampler([4, 4], prob="w", prefetch_edge_feats=["ef"])
    loader = bgl.DataLoader(weighted_graph, torch.arange(80), sampler, batch_size=40, pipeline="processes")
    try:
        check_batches(loader, weighted_graph, "w")
    finally:
        loader.close()


def test_store_and_two_servers_give_the_same_weighted_batches(weighted_graph, tmp_path, serve_partition):
    store = bgl.ingest(weighted_graph, tmp_path / "s", remove_self_loops=False, dedupe=False)
    sampler = bgl.NeighborSampler([4, 3], prob="w", prefetch_edge_feats=["ef", "w"])
    book = write_partition(store, np.arange(store.num_nodes) * 2 // store.num_nodes, 2, tmp_path / "p",
                           method="range")
    ids = torch.arange(60)  # a range partition keeps the ids: parts own [0, 200) and [200, 400)
    torch.manual_seed(3)
    dl = bgl.DataLoader(store, ids, sampler, batch_size=30, blocks="bgl")
    local = [(i.clone(), [(b.src_ids, b.indices, dict(b.edata)) for b in bl])
             for i, _, bl in dl]
    with serve_partition(book, tmp_path) as addresses:
        torch.manual_seed(3)
        # keep the loader referenced while iterating (a temporary one over servers was
        # closed by GC mid-comprehension and yielded nothing)
        rdl = bgl.DataLoader(addresses, ids, sampler, batch_size=30, blocks="bgl")
        remote = [(i, [(b.src_ids, b.indices, dict(b.edata)) for b in bl])
                  for i, _, bl in rdl]
        with pytest.raises(ValueError, match="prob / mask names edge data 'nope'.*'ef', 'm', 'w'"):
            bgl.DataLoader(addresses, ids, bgl.NeighborSampler([2], prob="nope"), batch_size=30)
    assert len(local) == len(remote) == 2
    w = np.asarray(store.edge_array("w"))
    for (ia, la), (ib, lb) in zip(local, remote):
        assert torch.equal(ia, ib)
        for (sa, xa, ea), (sb, xb, eb) in zip(la, lb):
            assert torch.equal(sa, sb) and torch.equal(xa, xb)
            assert torch.equal(ea["ef"], eb["ef"]) and torch.equal(ea["w"], eb["w"])
            assert bool((ea["w"] > 0).all())
    assert w.size == store.num_edges


@pytest.mark.parametrize("sampler, match", [
    (lambda: bgl.NeighborSampler([2], prob="nope"), r"prob / mask names edge data 'nope'"),
    (lambda: bgl.NeighborSampler([2], prefetch_edge_feats=["nope"]), r"prefetch_edge_feats names edge data 'nope'"),
    (lambda: bgl.NeighborSampler([2], mask="w"), r"mask='w' must name a bool edge array, got dtype float32"),
    (lambda: bgl.NeighborSampler([2], prob="neg"), r"'neg' must be finite and >= 0; edge 7 has -1.0"),
])
def test_bad_edge_options_fail_before_anything_starts(weighted_graph, sampler, match):
    g = weighted_graph.clone()
    neg = torch.ones(g.num_edges())
    neg[7] = -1.0
    g.edata["neg"] = neg
    with pytest.raises(ValueError, match=match):
        bgl.DataLoader(g, torch.arange(10), sampler(), batch_size=5)


def test_prob_and_mask_are_exclusive():
    with pytest.raises(ValueError, match="mutually exclusive"):
        bgl.NeighborSampler([2], prob="w", mask="m")
    with pytest.raises(TypeError, match="must name an edge array"):
        bgl.NeighborSampler([2], prob=np.ones(3))


def test_a_loader_iterated_without_a_reference_yields_its_batches(weighted_graph):
    """``for batch in bgl.DataLoader(...)``: the temporary loader must live until the loop ends."""
    sampler = bgl.NeighborSampler([3], prob="w")
    assert len([b for b in bgl.DataLoader(weighted_graph, torch.arange(100), sampler, batch_size=25)]) == 4
