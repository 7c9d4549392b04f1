"""A DGLGraph's weights are checked and put in CSC order once per graph and tensor version, not per
loader (bgl/loader/graph_derivations.py)."""
from __future__ import annotations

import numpy as np
import pytest

import bgl
from bgl.sampler import _weighted_kernels

dgl = pytest.importorskip("dgl", reason="needs DGL (the pinned lane)")
torch = pytest.importorskip("torch")


@pytest.fixture
def weight_checks(monkeypatch) -> list:
    """One entry per full pass of the weight check over a graph's edges."""
    calls = []
    real = _weighted_kernels.first_bad_weight

    def counting(prob):
        calls.append(prob.shape[0])
        return real(prob)

    monkeypatch.setattr(_weighted_kernels, "first_bad_weight", counting)
    return calls


def weighted_graph(seed: int = 0):
    torch.manual_seed(seed)
    g = dgl.rand_graph(300, 4000)  # random edge order: the CSC's edge ids are a permutation
    g.ndata["feat"] = torch.randn(300, 4)
    g.ndata["label"] = torch.randint(0, 3, (300,))
    g.edata["w"] = torch.rand(4000)
    g.edata["m"] = torch.rand(4000) > 0.5
    return g


def loader(g, **kw):
    return bgl.DataLoader(g, torch.arange(60), dgl.dataloading.NeighborSampler([4, 4], **kw), batch_size=30)


def sampled_eids(ld) -> torch.Tensor:
    return torch.cat([b.edata[dgl.EID] for _, _, blocks in ld for b in blocks])


def test_a_second_loader_over_the_same_graph_does_not_check_or_permute_again(weight_checks):
    g = weighted_graph()
    first = loader(g, prob="w")
    sampled_eids(first)
    checks = [n for n in weight_checks if n == g.num_edges()]
    assert len(checks) == 1  # one full pass, shared by the construction check and the sampler
    torch.manual_seed(1)  # before building: the loader's own generator is seeded from torch's RNG then
    second = loader(g, prob="w")
    a = sampled_eids(second)
    assert [n for n in weight_checks if n == g.num_edges()] == checks
    assert second._info.store.edata["w"] is first._info.store.edata["w"]  # the CSC copy, made once
    torch.manual_seed(1)
    assert torch.equal(a, sampled_eids(loader(g, prob="w")))


def test_an_edited_weight_tensor_is_checked_again(weight_checks):
    g = weighted_graph()
    loader(g, prob="w")
    before = len(weight_checks)
    g.edata["w"][7] = -1.0  # in place: same tensor object, a new version
    with pytest.raises(ValueError, match=r"'w'.*edge 7 has -1"):
        loader(g, prob="w")
    g.edata["w"][7] = 0.5
    loader(g, prob="w")
    g.edata["w"] = torch.rand(g.num_edges())  # replaced
    loader(g, prob="w")
    assert len(weight_checks) - before >= 3


def test_an_edited_mask_is_sampled_by_its_new_values():
    g = weighted_graph()
    kept = set(np.flatnonzero(g.edata["m"].numpy()).tolist())
    assert set(sampled_eids(loader(g, mask="m")).tolist()) <= kept
    g.edata["m"][:] = ~g.edata["m"]  # in place: the kept edges are now the others
    eids = set(sampled_eids(loader(g, mask="m")).tolist())
    assert eids and not (eids & kept)


def test_each_graph_has_its_own_derivations():
    g, h = weighted_graph(0), weighted_graph(1)
    a, b = loader(g, prob="w"), loader(h, prob="w")
    assert not np.array_equal(a._info.store.edata["w"], b._info.store.edata["w"])
    for ld, graph in ((a, g), (b, h)):
        eids = ld._info.store.edge_ids
        assert np.array_equal(ld._info.store.edata["w"], graph.edata["w"].numpy()[eids])


def test_labels_that_are_not_int64_are_widened_once_per_version():
    g = weighted_graph()
    g.ndata["label"] = g.ndata["label"].to(torch.int32)
    a, b = loader(g), loader(g)
    assert b._info.store.tensor("label") is a._info.store.tensor("label")  # one widened copy
    assert a._info.store.num_classes == int(g.ndata["label"].max()) + 1
    g.ndata["label"][0] = 9  # in place: a new version, a new copy and class count
    c = loader(g)
    assert c._info.store.tensor("label") is not a._info.store.tensor("label")
    assert c._info.store.num_classes == 10 and int(c._info.store.label[0]) == 9


def user_item_graph(seed: int = 0, extra: int = 0):
    torch.manual_seed(seed)
    u, i = torch.randint(0, 50, (400 + extra,)), torch.randint(0, 30, (400 + extra,))
    return dgl.heterograph({("user", "rates", "item"): (u, i), ("item", "rated-by", "user"): (i, u)})


def typed_batches(g) -> list:
    """Every batch's (seed edges, sampled edges) of a seeded typed link-prediction loader over ``g``."""
    sampler = dgl.dataloading.as_edge_prediction_sampler(
        dgl.dataloading.NeighborSampler([3, 3]), exclude="reverse_types",
        reverse_etypes={"rates": "rated-by", "rated-by": "rates"},
        negative_sampler=dgl.dataloading.negative_sampler.Uniform(1))
    torch.manual_seed(7)
    ld = bgl.DataLoader(g, {"rates": torch.arange(g.num_edges("rates"))}, sampler, batch_size=64, shuffle=True)
    return ld, [(pair.edges["rates"].data[dgl.EID], [b.edata[dgl.EID] for b in blocks])
                for _, pair, _, blocks in ld]


def test_a_typed_graphs_fused_csc_is_built_once_and_again_after_add_edges():
    g = user_item_graph()
    first, a = typed_batches(g)
    second, b = typed_batches(g)
    assert second._info.store.indptr is first._info.store.indptr  # kept with the graph, not rebuilt
    _, fresh = typed_batches(user_item_graph())  # the same edges in a new graph object: built anew
    for (ea, ba), (eb, bb), (ef, bf) in zip(a, b, fresh):
        assert torch.equal(ea, eb) and torch.equal(ea, ef)
        assert all(torch.equal(x[k], y[k]) and torch.equal(x[k], z[k])
                   for x, y, z in zip(ba, bb, bf) for k in x)
    g.add_edges(torch.tensor([49]), torch.tensor([29]), etype="rates")  # in place: new edge arrays
    g.add_edges(torch.tensor([29]), torch.tensor([49]), etype="rated-by")
    third, c = typed_batches(g)
    assert third._info.store.indptr is not first._info.store.indptr
    assert third._info.store.num_edges == first._info.store.num_edges + 2
    seen = torch.cat([eids for eids, _ in c])
    assert sorted(seen.tolist()) == list(range(g.num_edges("rates")))  # the new edge is a seed too


def test_a_graphs_csc_is_read_once_per_graph_index_and_again_after_an_edit():
    import gc

    from bgl.dgl.real_dgl import graph_reader

    g = weighted_graph()
    first, second = loader(g), loader(g)
    assert second._info.store.tensor("indices") is first._info.store.tensor("indices")  # no second adj_tensors
    g.add_edges(torch.tensor([1]), torch.tensor([2]))  # DGL gives the graph a new index
    third = loader(g)
    assert third._info.store.num_edges == first._info.store.num_edges + 1
    store = third._info.store
    assert sorted(store.indices[store.indptr[2]:store.indptr[3]].tolist()) == sorted(g.in_edges(2)[0].tolist())
    del store
    held = len(graph_reader._CSC_BY_INDEX)
    del first, second, third, g
    gc.collect()
    assert len(graph_reader._CSC_BY_INDEX) < held  # the entries go with their graph's indices
