"""Link prediction on typed graphs: DGL's heterogeneous edge-prediction loop with only the loader swapped.

Seeds ``{etype: eids}`` flow through the node pipeline as one more item kind
(:mod:`bgl.loader.seeds.typed_edges`); batches are compared field by field with DGL's own loader
where sampling is deterministic (every in-neighbour), and checked for excluded edges where it is not.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

dgl = pytest.importorskip("dgl")

import bgl  # noqa: E402

REVERSE = {"rates": "rated-by", "rated-by": "rates"}


def rating_graph(seed=0, users=30, items=50, n=300):
    """user-rates-item, its reverse item-rated-by-user (same ids, as dgl.AddReverse makes it) and user-follows-user."""
    gen = torch.Generator().manual_seed(seed)
    u = torch.randint(0, users, (n,), generator=gen)
    i = torch.randint(0, items, (n,), generator=gen)
    g = dgl.heterograph({("user", "rates", "item"): (u, i), ("item", "rated-by", "user"): (i, u),
                         ("user", "follows", "user"): (torch.randint(0, users, (80,), generator=gen),
                                                       torch.randint(0, users, (80,), generator=gen))},
                        num_nodes_dict={"user": users, "item": items})
    g.nodes["user"].data["feat"] = torch.randn(users, 4, generator=gen)
    g.nodes["item"].data["feat"] = torch.randn(items, 3, generator=gen)
    return g


def _edge_prediction(sampler, exclude="reverse_types", negative=None, **kw):
    if exclude == "reverse_types":
        kw["reverse_etypes"] = REVERSE
    return dgl.dataloading.as_edge_prediction_sampler(sampler, exclude=exclude, negative_sampler=negative, **kw)


def _block_edges(block, c):
    s, d, e = block.edges(etype=c, form="all")
    return set(zip(block.srcnodes[c[0]].data[dgl.NID][s].tolist(), block.dstnodes[c[2]].data[dgl.NID][d].tolist(),
                   block.edges[c].data[dgl.EID][e].tolist()))


@pytest.mark.parametrize("exclude,pipeline", [(None, "inline"), ("self", "inline"), ("reverse_types", "inline"),
                                              ("reverse_types", "thread")])
def test_full_neighbour_batches_equal_dgls_own_loader(exclude, pipeline):
    g = rating_graph()
    seeds = {"rates": torch.arange(0, 300, 3), "follows": torch.arange(0, 80, 2)}
    sampler = _edge_prediction(dgl.dataloading.MultiLayerFullNeighborSampler(2), exclude)
    ours = list(bgl.DataLoader(g, seeds, sampler, batch_size=32, pipeline=pipeline))
    theirs = list(dgl.dataloading.DataLoader(g, seeds, sampler, batch_size=32))
    assert len(ours) == len(theirs) == 5
    for (in_a, pair_a, blocks_a), (in_b, pair_b, blocks_b) in zip(ours, theirs):
        assert pair_a.ntypes == pair_b.ntypes and pair_a.canonical_etypes == pair_b.canonical_etypes
        assert pair_a.is_unibipartite == pair_b.is_unibipartite
        for nt in g.ntypes:
            assert torch.equal(pair_a.nodes[nt].data[dgl.NID], pair_b.nodes[nt].data[dgl.NID])
            assert torch.equal(blocks_a[-1].dstnodes[nt].data[dgl.NID], pair_b.nodes[nt].data[dgl.NID])
            assert set(in_a[nt].tolist()) == set(in_b[nt].tolist())
        for c in g.canonical_etypes:
            assert all(torch.equal(x, y) for x, y in zip(pair_a.edges(etype=c), pair_b.edges(etype=c)))
            assert torch.equal(pair_a.edges[c].data[dgl.EID], pair_b.edges[c].data[dgl.EID])
            for block_a, block_b in zip(blocks_a, blocks_b):
                assert _block_edges(block_a, c) == _block_edges(block_b, c)


def test_a_thread_pipeline_hands_over_blocks_with_their_formats_built():
    """On the CPU, pipeline="thread" builds the DGL blocks in its producer thread with the CSR their
    backward reads (DGL would build it inside the model step); inline leaves it to DGL, as before."""
    g = rating_graph()
    sampler = _edge_prediction(dgl.dataloading.NeighborSampler([3, 3]), "reverse_types",
                               negative=dgl.dataloading.negative_sampler.Uniform(1))
    seeds = {"rates": torch.arange(0, 300, 3)}
    made = {}
    for pipeline in ("inline", "thread"):
        torch.manual_seed(0)
        batches = list(bgl.DataLoader(g, seeds, sampler, batch_size=32, pipeline=pipeline))
        made[pipeline] = [sorted(b.formats()["created"]) for _, _, _, blocks in batches for b in blocks]
        made[pipeline + " edges"] = [_block_edges(b, c) for _, _, _, blocks in batches for b in blocks
                                     for c in g.canonical_etypes]
    assert made["thread"] and all(f == ["csc", "csr"] for f in made["thread"])
    assert all(f == ["csc"] for f in made["inline"])
    assert made["thread edges"] == made["inline edges"]  # the same batches either way


def test_negatives_are_drawn_per_edge_type_in_dgls_layout():
    g = rating_graph()
    seeds = {"rates": torch.arange(300), "follows": torch.arange(80)}
    sampler = _edge_prediction(bgl.NeighborSampler([3, 3]), negative=dgl.dataloading.negative_sampler.Uniform(2))
    torch.manual_seed(0)
    seen = {"rates": [], "follows": []}
    for _, pos, neg, blocks in bgl.DataLoader(g, seeds, sampler, batch_size=64, shuffle=True):
        assert sum(pos.num_edges(c) for c in pos.canonical_etypes) > 0
        for c in g.canonical_etypes:
            ps, pd = pos.edges(etype=c)
            ns, nd = neg.edges(etype=c)
            assert torch.equal(ns, ps.repeat_interleave(2)) and nd.shape[0] == 2 * pd.shape[0]
            assert nd.numel() == 0 or int(nd.max()) < neg.num_nodes(c[2])
            if pos.num_edges(c):
                seen[c[1]].append(pos.edges[c].data[dgl.EID])
        for nt in g.ntypes:
            assert torch.equal(neg.nodes[nt].data[dgl.NID], pos.nodes[nt].data[dgl.NID])
            assert torch.equal(blocks[-1].dstnodes[nt].data[dgl.NID], pos.nodes[nt].data[dgl.NID])
    # one epoch: every seed edge once, types mixed in batches as DGL shuffles them
    assert sorted(torch.cat(seen["rates"]).tolist()) == list(range(300))
    assert sorted(torch.cat(seen["follows"]).tolist()) == list(range(80))


def _sampled_positions(blocks, schema):
    return {int(e) for b in blocks for e in b.edge_ids.tolist()}


def test_no_excluded_edge_is_ever_sampled_from_a_dglgraph_or_a_typed_store(tmp_path):
    g = rating_graph()
    sampler = _edge_prediction(bgl.NeighborSampler([5, 5]))
    for _, pos, blocks in bgl.DataLoader(g, {"rates": torch.arange(300)}, sampler, batch_size=50, shuffle=True):
        seed_ids = set(pos.edges[("user", "rates", "item")].data[dgl.EID].tolist())
        for b in blocks:
            for c in (("user", "rates", "item"), ("item", "rated-by", "user")):  # same ids: DGL's reverse_types
                assert not seed_ids & set(b.edges[c].data[dgl.EID].tolist())
    store = bgl.ingest(g, tmp_path / "ratings")
    etype = np.asarray(store.etype)
    rates, rated_by = store.schema.etype_id("rates"), store.schema.etype_id("rated-by")
    seeds = np.flatnonzero(etype == rates)  # a typed store's edge ids are its CSC positions
    indptr, indices = np.asarray(store.indptr), np.asarray(store.indices)
    dst_of = np.searchsorted(indptr, np.arange(indices.shape[0]), side="right") - 1
    loader = bgl.DataLoader(store, {"rates": seeds}, sampler, batch_size=50, shuffle=True, blocks="bgl")
    for _, pos, blocks in loader:
        ids = pos.edata["_ID"][("user", "rates", "item")].numpy()
        excluded = set(ids.tolist())
        for p in ids:  # the reverse by endpoints, brute force: the first rated-by edge item -> user
            u, i = int(indices[p]), int(dst_of[p])
            rev = [q for q in range(indptr[u], indptr[u + 1]) if etype[q] == rated_by and indices[q] == i]
            excluded.update(rev[:1])
        assert not excluded & _sampled_positions(blocks, store.schema)


def test_typed_exclusion_draws_uniformly_among_the_remaining_edges():
    from bgl.sampler.typed.sampling import sample_typed_layer

    # one hub row of 40 in-edges of relation 0, 6 of them excluded: fanout 5 over the 34 left
    deg, excluded = 40, np.array([0, 3, 4, 17, 30, 39], np.int64)
    indptr = np.array([0, 0, deg], np.int64)
    indices = np.zeros(deg, np.int64)
    etype = np.zeros(deg, np.uint8)
    counts = np.zeros(deg, np.int64)
    for trial in range(3000):
        _, _, eids, _ = sample_typed_layer(indptr, indices, etype, np.array([1]), 0, np.array([5]), False, trial,
                                           np.array([0]), np.array([0, 2]), exclude=excluded)
        assert eids.shape == (5,) and np.unique(eids).shape == (5,)
        counts[eids] += 1
    assert not counts[excluded].any()
    left = np.delete(counts, excluded)
    expected = 3000 * 5 / 34  # ~441 draws each; a biased draw (e.g. the first 5 left) is far outside
    assert np.abs(left - expected).max() < 5 * np.sqrt(expected)
    _, _, every, _ = sample_typed_layer(indptr, indices, etype, np.array([1]), 0, np.array([-1]), False, 1,
                                        np.array([0]), np.array([0, 2]), exclude=excluded)
    assert sorted(every.tolist()) == sorted(set(range(deg)) - set(excluded.tolist()))


def test_bgl_blocks_give_typed_pair_graphs_without_dgl():
    g = rating_graph()
    sampler = bgl.as_edge_prediction_sampler(bgl.NeighborSampler([2, 2]), exclude="self",
                                             negative_sampler=bgl.negative_sampler.Uniform(1))
    _, pos, neg, blocks = next(iter(bgl.DataLoader(g, {"follows": torch.arange(10)}, sampler, batch_size=10,
                                                   blocks="bgl")))
    c = ("user", "follows", "user")
    src, dst = pos.edges(etype="follows")
    assert pos.num_edges(c) == 10 and neg.num_edges(c) == 10 and pos.num_edges("rates") == 0
    users = pos.ndata["_ID"]["user"]
    g_src, g_dst = g.find_edges(torch.arange(10), etype="follows")
    assert torch.equal(users[src], g_src) and torch.equal(users[dst], g_dst)
    assert torch.equal(pos.edata["_ID"][c], torch.arange(10))


def test_bad_typed_link_input_is_named():
    g = rating_graph()
    sampler = _edge_prediction(bgl.NeighborSampler([2]))
    with pytest.raises(ValueError, match="unknown edge type 'likes'"):
        bgl.DataLoader(g, {"likes": torch.arange(3)}, sampler, batch_size=2)
    with pytest.raises(ValueError, match=r"edge type \('user', 'rates', 'item'\).*edge id 300, outside \[0, 300\)"):
        bgl.DataLoader(g, {"rates": torch.tensor([0, 300])}, sampler, batch_size=2)
    bad_pairs = {"rates": "follows"}
    with pytest.raises(ValueError, match="swap the node types and have as many edges"):
        bgl.DataLoader(g, {"rates": torch.arange(3)}, dgl.dataloading.as_edge_prediction_sampler(
            bgl.NeighborSampler([2]), exclude="reverse_types", reverse_etypes=bad_pairs), batch_size=2)
    twice = {"rates": "rated-by", "follows": "rated-by"}
    with pytest.raises(ValueError, match="reverse_etypes"):
        bgl.DataLoader(g, {"rates": torch.arange(3)}, bgl.as_edge_prediction_sampler(
            bgl.NeighborSampler([2]), exclude="reverse_types", reverse_etypes=twice), batch_size=2)
    with pytest.raises(ValueError, match="needs reverse_etypes"):
        bgl.as_edge_prediction_sampler(bgl.NeighborSampler([2]), exclude="reverse_types")
    with pytest.raises(ValueError, match="this graph has one"):
        untyped = dgl.graph((torch.tensor([0, 1]), torch.tensor([1, 0])))
        bgl.DataLoader(untyped, torch.arange(2), bgl.as_edge_prediction_sampler(
            bgl.NeighborSampler([2]), exclude="reverse_types", reverse_etypes=REVERSE), batch_size=2)


def _global_negatives(loader, g):
    """{canonical etype: [(positives, negatives)]} per batch, each negative checked to be a non-edge of its
    edge type and no self loop where both ends are of one node type, as DGL's GlobalUniform guarantees."""
    counts = {c: [] for c in g.canonical_etypes}
    for _, pos, neg, _ in loader:
        for c in g.canonical_etypes:
            ns, nd = neg.edges(etype=c)
            assert ns.dtype == nd.dtype == torch.int64
            src, dst = neg.ndata[dgl.NID][c[0]][ns], neg.ndata[dgl.NID][c[2]][nd]
            assert not g.has_edges_between(src, dst, etype=c).any(), c
            assert c[0] != c[2] or not (src == dst).any()
            assert len(set(zip(src.tolist(), dst.tolist()))) == src.shape[0]  # replace=False: no pair twice
            counts[c].append((pos.num_edges(c), neg.num_edges(c)))
    return counts


def test_global_uniform_negatives_per_edge_type_as_dgls():
    """DGL's GlobalUniform on a heterograph: per edge type, k pairs per positive drawn over its (src type,
    dst type) pairs that are not edges of that type; the same counts and types from DGL's loader."""
    g = rating_graph()
    seeds = {"rates": torch.arange(300), "follows": torch.arange(80)}
    sampler = _edge_prediction(dgl.dataloading.NeighborSampler([3, 3]),
                               negative=dgl.dataloading.negative_sampler.GlobalUniform(2))
    torch.manual_seed(1)
    ours = _global_negatives(bgl.DataLoader(g, seeds, sampler, batch_size=64, shuffle=True), g)
    theirs = _global_negatives(dgl.dataloading.DataLoader(g, seeds, sampler, batch_size=64, shuffle=True), g)
    for c in g.canonical_etypes:
        assert sum(p for p, _ in ours[c]) == sum(p for p, _ in theirs[c]) == {"rates": 300, "follows": 80}.get(c[1], 0)
        assert all(n == 2 * p for p, n in ours[c]) and all(n == 2 * p for p, n in theirs[c]), c


def test_global_uniform_on_a_typed_store_avoids_only_its_edge_types_edges(tmp_path):
    """From a typed store: the same non-edge guarantee per edge type (a pair may be an edge of another
    type: DGL tests only the negative's own), and the same negatives in every pipeline mode."""
    g = rating_graph()
    store = bgl.ingest(g, tmp_path / "ratings")
    etype = np.asarray(store.etype)
    seeds = {"rates": np.flatnonzero(etype == store.schema.etype_id("rates"))}
    sampler = bgl.as_edge_prediction_sampler(bgl.NeighborSampler([2]), exclude="self",
                                             negative_sampler=bgl.negative_sampler.GlobalUniform(3))
    runs = {}
    for mode in ("inline", "processes"):
        torch.manual_seed(2)
        loader = bgl.DataLoader(store, seeds, sampler, batch_size=50, shuffle=True, pipeline=mode)
        runs[mode] = [neg.edges(etype="rates") for _, _, neg, _ in loader]
        loader.close()
    assert all(torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) for a, b in zip(runs["inline"], runs["processes"]))
    counts = _global_negatives(bgl.DataLoader(store, seeds, sampler, batch_size=50, shuffle=True), g)
    assert all(n == 3 * p for p, n in counts[("user", "rates", "item")])


def test_seed_edges_are_held_four_bytes_each_and_batches_come_int64():
    """A loader holds its seed edges for its whole life, and an epoch's shuffled order beside them (and
    the next epoch's, prefetched): positions, ids and endpoints are int32 while they fit, widened per batch."""
    g = rating_graph()
    sampler = _edge_prediction(dgl.dataloading.NeighborSampler([3, 3]), "reverse_types",
                               negative=dgl.dataloading.negative_sampler.Uniform(1))
    loader = bgl.DataLoader(g, {"rates": torch.arange(300)}, sampler, batch_size=64, shuffle=True)
    stage = loader._order_stage
    assert stage.ids.dtype == np.int32 and stage.epoch_order(5).dtype == np.int32
    assert sorted(stage.epoch_order(5).tolist()) == list(range(300))
    for _ in range(2):  # the second epoch's order comes from the prefetch
        seen = []
        for _, pair, _, _ in loader:
            eids = pair.edges["rates"].data[dgl.EID]
            assert eids.dtype == torch.int64
            seen += eids.tolist()
        assert sorted(seen) == list(range(300))
    assert stage.prefetch_hits == 1
