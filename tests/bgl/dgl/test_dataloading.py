"""``bgl.dgl.dataloading``: DGL's loader names over bgl's loader, batches of ``bgl.dgl`` graphs.

Every batch is checked against the graph it came from (ids, features, edge ids, excluded
edges), and in the pinned lane the full-neighbour blocks against DGL's own loader.
"""
from __future__ import annotations

import pytest
import torch

import bgl
import bgl.dgl as bdgl
import bgl.dgl.function as fn
import bgl.dgl.nn as dglnn
from bgl.dgl.dataloading import graph_arrays

NID = EID = "_ID"


def _random_graph(seed: int = 0, n: int = 300, e: int = 2400):
    gen = torch.Generator().manual_seed(seed)
    src = torch.randint(0, n, (e,), generator=gen)
    dst = torch.randint(0, n - 5, (e,), generator=gen)  # the last 5 nodes have no in-edges
    g = bdgl.graph((src, dst), num_nodes=n)
    g.ndata["feat"] = torch.randn(n, 6, generator=gen)
    g.ndata["feat2"] = torch.randn(n, 2, generator=gen)
    g.ndata["label"] = torch.randint(0, 3, (n,), generator=gen)
    g.ndata["train_mask"] = torch.rand(n, generator=gen) < 0.5
    g.edata["w"] = torch.rand(e, generator=gen)
    return g


@pytest.fixture(scope="module")
def g():
    return _random_graph()


def _check_block_against_graph(block, g) -> None:
    """The block's edges are graph edges: EID's endpoints are the block's endpoints' NIDs."""
    src, dst = block.edges()
    eids = block.edata[EID]
    gs, gd = g.find_edges(eids)
    assert torch.equal(block.srcdata[NID][src.long()], gs.long())
    assert torch.equal(block.dstdata[NID][dst.long()], gd.long())
    assert torch.equal(block.edata["w"], g.edata["w"][eids.long()])


def test_graph_arrays_share_the_graphs_memory(g):
    """Zero copy: the loader's CSC indices, edge ids, features and labels are the graph's own tensors."""
    arrays = graph_arrays(g, "feat", "label")
    csc = g._relation(None).csc()  # what the graph caches (built on first use)
    assert arrays.tensor("indices").data_ptr() == csc.indices.data_ptr()
    if csc.eids is not None:
        assert arrays.tensor("edge_ids").data_ptr() == csc.eids.data_ptr()
    assert arrays.tensor("feat").data_ptr() == g.ndata["feat"].data_ptr()
    assert arrays.tensor("label").data_ptr() == g.ndata["label"].data_ptr()
    assert g._relation(None).csc() is csc  # built once, kept


def test_node_batches_are_bgl_dgl_blocks(g):
    seeds = torch.arange(0, 300, 3)
    sampler = bdgl.dataloading.NeighborSampler([4, 3])
    loader = bdgl.dataloading.DataLoader(g, seeds, sampler, batch_size=32, shuffle=True)
    assert len(loader) == 4
    seen = []
    conv = dglnn.SAGEConv(6, 5, "mean")
    for input_nodes, output_nodes, blocks in loader:
        assert all(isinstance(b, bdgl.DGLGraph) and b.is_block for b in blocks) and len(blocks) == 2
        assert torch.equal(input_nodes, blocks[0].srcdata[NID])
        assert torch.equal(output_nodes, blocks[-1].dstdata[NID])
        assert torch.equal(blocks[0].dstdata[NID], blocks[1].srcdata[NID])
        ids = blocks[0].srcdata[NID]
        assert torch.equal(blocks[0].srcdata["feat"], g.ndata["feat"][ids])
        assert torch.equal(blocks[0].srcdata["feat2"], g.ndata["feat2"][ids])  # every field, as DGL
        out = blocks[-1].dstdata[NID]
        assert torch.equal(blocks[-1].dstdata["label"], g.ndata["label"][out])
        assert torch.equal(blocks[-1].dstdata["train_mask"], g.ndata["train_mask"][out])
        for b in blocks:
            _check_block_against_graph(b, g)
            assert int(b.in_degrees().max()) <= 4
        h = conv(blocks[0], blocks[0].srcdata["feat"])
        h.sum().backward()
        seen.append(output_nodes)
    assert torch.equal(torch.sort(torch.cat(seen)).values, seeds)


def test_full_neighbour_blocks_match_dgl(g):
    dgl = pytest.importorskip("dgl", reason="DGL is needed to compare with (pinned lane)")
    src, dst = g.edges()
    h = dgl.graph((src, dst), num_nodes=g.num_nodes())
    seeds = torch.tensor([0, 7, 9, 120, 299, 298])
    ours = next(iter(bdgl.dataloading.DataLoader(g, seeds, bdgl.dataloading.MultiLayerFullNeighborSampler(2),
                                                 batch_size=6)))
    theirs = next(iter(dgl.dataloading.DataLoader(h, seeds, dgl.dataloading.MultiLayerFullNeighborSampler(2),
                                                  batch_size=6)))
    assert torch.equal(ours[1], theirs[1])
    assert set(ours[0].tolist()) == set(theirs[0].tolist())
    for a, b in zip(ours[2], theirs[2]):
        assert a.num_src_nodes() == b.num_src_nodes() and a.num_dst_nodes() == b.num_dst_nodes()
        # the seeds lead in order; the other nodes' order is the sampler's (bgl: CSC order)
        assert torch.equal(a.dstdata[NID][:6], b.dstdata[dgl.NID][:6])
        assert set(a.dstdata[NID].tolist()) == set(b.dstdata[dgl.NID].tolist())

        def triples(block, nid, eid):
            s, d = block.edges()
            return set(zip(block.srcdata[nid][s.long()].tolist(), block.dstdata[nid][d.long()].tolist(),
                           block.edata[eid].tolist()))

        assert triples(a, NID, EID) == triples(b, dgl.NID, dgl.EID)


def test_link_prediction_batches(g):
    n, e = g.num_nodes(), g.num_edges()
    src, dst = g.edges()
    both = bdgl.graph((torch.cat([src, dst]), torch.cat([dst, src])), num_nodes=n)
    both.ndata["feat"] = g.ndata["feat"]
    reverse = torch.cat([torch.arange(e, 2 * e), torch.arange(0, e)])
    sampler = bdgl.dataloading.as_edge_prediction_sampler(
        bdgl.dataloading.NeighborSampler([3, 3]), exclude="reverse_id", reverse_eids=reverse,
        negative_sampler=bdgl.dataloading.negative_sampler.Uniform(2))
    seeds = torch.arange(0, 2 * e, 37)
    loader = bdgl.dataloading.DataLoader(both, seeds, sampler, batch_size=20)
    for input_nodes, pair, neg, blocks in loader:
        assert isinstance(pair, bdgl.DGLGraph) and isinstance(neg, bdgl.DGLGraph)
        eids = pair.edata[EID]
        ps, pd = pair.edges()
        gs, gd = both.find_edges(eids)
        assert torch.equal(pair.ndata[NID][ps.long()], gs.long())
        assert torch.equal(pair.ndata[NID][pd.long()], gd.long())
        assert torch.equal(pair.ndata[NID], blocks[-1].dstdata[NID])
        assert torch.equal(pair.ndata["feat"], both.ndata["feat"][pair.ndata[NID]])
        ns, _ = neg.edges()
        assert torch.equal(ns, ps.repeat_interleave(2))  # Uniform(2): two negatives per positive source
        excluded = set(eids.tolist()) | set(reverse[eids].tolist())
        for b in blocks:
            assert not excluded & set(b.edata[EID].tolist())
        with pair.local_scope():
            pair.ndata["h"] = torch.randn(pair.num_nodes(), 4)
            pair.apply_edges(fn.u_dot_v("h", "h", "score"))
            assert pair.edata["score"].shape == (pair.num_edges(), 1)


def test_typed_batches():
    gen = torch.Generator().manual_seed(1)

    def edges(n_src, n_dst, k):
        return torch.randint(0, n_src, (k,), generator=gen), torch.randint(0, n_dst, (k,), generator=gen)

    g = bdgl.heterograph({("user", "follows", "user"): edges(40, 40, 150),
                          ("user", "buys", "item"): edges(40, 30, 200),
                          ("item", "bought_by", "user"): edges(30, 40, 200)},
                         num_nodes_dict={"user": 40, "item": 30})
    g.nodes["user"].data["feat"] = torch.randn(40, 4, generator=gen)
    g.nodes["item"].data["feat"] = torch.randn(30, 4, generator=gen)
    g.nodes["user"].data["label"] = torch.randint(0, 2, (40,), generator=gen)
    seeds = {"user": torch.arange(0, 40, 2)}
    loader = bdgl.dataloading.DataLoader(g, seeds, bdgl.dataloading.NeighborSampler([3, 3]), batch_size=8)
    conv = dglnn.HeteroGraphConv({r: dglnn.GraphConv(4, 3, allow_zero_in_degree=True)
                                  for r in ("follows", "buys", "bought_by")}, aggregate="sum")
    outputs = []
    for input_nodes, output_nodes, blocks in loader:
        assert set(output_nodes) == {"user"}
        first = blocks[0]
        for nt in first.srctypes:
            ids = first.srcnodes[nt].data[NID]
            assert torch.equal(input_nodes[nt], ids)
            assert torch.equal(first.srcnodes[nt].data["feat"], g.nodes[nt].data["feat"][ids])
        last = blocks[-1]
        assert torch.equal(last.dstnodes["user"].data["label"],
                           g.nodes["user"].data["label"][last.dstnodes["user"].data[NID]])
        for b in blocks:
            for cet in b.canonical_etypes:
                s, d = b.edges(etype=cet)
                gs, gd = g.find_edges(b.edges[cet].data[EID], etype=cet)
                assert torch.equal(b.srcnodes[cet[0]].data[NID][s.long()], gs.long())
                assert torch.equal(b.dstnodes[cet[2]].data[NID][d.long()], gd.long())
        h = conv(first, {nt: first.srcnodes[nt].data["feat"] for nt in first.srctypes})
        assert h["user"].shape == (first.num_dst_nodes("user"), 3)
        outputs.append(output_nodes["user"])
    assert torch.equal(torch.sort(torch.cat(outputs)).values, seeds["user"])


def test_typed_link_prediction_batches():
    gen = torch.Generator().manual_seed(2)
    n_user, n_item, k = 30, 20, 120
    pairs = torch.randperm(n_user * n_item, generator=gen)[:k]  # no repeated pair: one reverse each
    us, it = pairs // n_item, pairs % n_item
    g = bdgl.heterograph({("user", "buys", "item"): (us, it), ("item", "bought_by", "user"): (it, us)},
                         num_nodes_dict={"user": n_user, "item": n_item})
    g.nodes["user"].data["feat"] = torch.randn(n_user, 3, generator=gen)
    g.nodes["item"].data["feat"] = torch.randn(n_item, 3, generator=gen)
    sampler = bdgl.dataloading.as_edge_prediction_sampler(
        bdgl.dataloading.NeighborSampler([2, 2]), exclude="reverse_types",
        reverse_etypes={"buys": "bought_by", "bought_by": "buys"},
        negative_sampler=bdgl.dataloading.negative_sampler.Uniform(1))
    loader = bdgl.dataloading.DataLoader(g, {"buys": torch.arange(k)}, sampler, batch_size=40)
    for input_nodes, pair, neg, blocks in loader:
        assert isinstance(pair, bdgl.DGLGraph) and pair.canonical_etypes == g.canonical_etypes
        c = ("user", "buys", "item")
        s, d = pair.edges(etype=c)
        gs, gd = g.find_edges(pair.edges[c].data[EID], etype=c)
        assert torch.equal(pair.nodes["user"].data[NID][s.long()], gs.long())
        assert torch.equal(pair.nodes["item"].data[NID][d.long()], gd.long())
        assert neg.num_edges(c) == pair.num_edges(c)
        excluded = set(pair.edges[c].data[EID].tolist())  # and the same ids of the reverse type
        for b in blocks:
            for cet in (c, ("item", "bought_by", "user")):
                assert not excluded & set(b.edges[cet].data[EID].tolist())
        for nt in ("user", "item"):  # the pair graph's nodes lead the last block's dst nodes
            assert torch.equal(pair.nodes[nt].data[NID], blocks[-1].dstnodes[nt].data[NID])
            assert torch.equal(pair.nodes[nt].data["feat"], g.nodes[nt].data["feat"][pair.nodes[nt].data[NID]])


def test_dgl_names_are_bgl_samplers():
    dl = bdgl.dataloading
    assert dl.NeighborSampler is bgl.NeighborSampler and dl.as_edge_prediction_sampler is bgl.as_edge_prediction_sampler
    assert dl.LaborSampler is bgl.LaborSampler and dl.negative_sampler is bgl.negative_sampler
    assert dl.MultiLayerFullNeighborSampler(2).fanouts == [-1, -1]


def test_other_block_kinds_refused(g):
    with pytest.raises(ValueError, match="blocks='dgl'"):
        bdgl.dataloading.DataLoader(g, torch.arange(4), bdgl.dataloading.NeighborSampler([2]), blocks="dgl")


def _edge_prediction_batches(lib, graph, seeds, exclude="self"):
    sampler = lib.dataloading.as_edge_prediction_sampler(lib.dataloading.MultiLayerFullNeighborSampler(1),
                                                         exclude=exclude)
    return list(lib.dataloading.DataLoader(graph, seeds, sampler, batch_size=7))


def _edge_triples(block, nid, eid) -> set:
    s, d = block.edges()
    return set(zip(block.srcdata[nid][s.long()].tolist(), block.dstdata[nid][d.long()].tolist(),
                   block.edata[eid].tolist()))


def test_seed_edge_ids_are_the_graphs_edge_ids(g):
    """Edges given in an order far from CSC order: seed ``i`` is the graph's edge ``i`` (its own id), the pair
    graph names it so, and the excluded seed edges are those, whatever CSC position they sit at."""
    assert not torch.equal(g._relation(None).csc().eids, torch.arange(g.num_edges()))  # ids not in CSC order
    seeds = torch.tensor([0, 1, 2, 3, 4, 2399, 1200, 57, 58, 600, 31, 2000, 1999, 5])
    src, dst = g.edges()
    for _, pair, blocks in _edge_prediction_batches(bdgl, g, seeds):
        eids = pair.edata[EID]
        ps, pd = pair.edges()
        assert torch.equal(pair.ndata[NID][ps.long()], src[eids])
        assert torch.equal(pair.ndata[NID][pd.long()], dst[eids])
        for b in blocks:
            assert not set(eids.tolist()) & set(b.edata[EID].tolist())
            _check_block_against_graph(b, g)
    assert sorted(torch.cat([p.edata[EID] for _, p, _ in _edge_prediction_batches(bdgl, g, seeds)]).tolist()) \
        == sorted(seeds.tolist())


def test_seed_edge_batches_match_dgl(g):
    """The same seed edge ids give DGL's pair graphs and DGL's blocks (edge ids included), seed edges excluded."""
    dgl = pytest.importorskip("dgl", reason="DGL is needed to compare with (pinned lane)")
    src, dst = g.edges()
    h = dgl.graph((src, dst), num_nodes=g.num_nodes())
    seeds = torch.tensor([3, 2399, 1200, 57, 0, 600, 31, 2000, 1999, 5, 77, 1500])
    ours, theirs = _edge_prediction_batches(bdgl, g, seeds), _edge_prediction_batches(dgl, h, seeds)
    assert len(ours) == len(theirs)
    for (_, pair_a, blocks_a), (_, pair_b, blocks_b) in zip(ours, theirs):
        # the batch's seed edges: their (src, dst) and their ids (DGL 2.1 lists a pair graph's EID sorted,
        # apart from its edges, which keep seed order: only the sets are comparable)
        assert _pair_ends(pair_a, NID) == _pair_ends(pair_b, dgl.NID)
        assert set(pair_a.edata[EID].tolist()) == set(pair_b.edata[dgl.EID].tolist())
        assert _edge_triples(blocks_a[0], NID, EID) == _edge_triples(blocks_b[0], dgl.NID, dgl.EID)


def _pair_ends(pair, nid) -> set:
    s, d = pair.edges()
    return set(zip(pair.ndata[nid][s.long()].tolist(), pair.ndata[nid][d.long()].tolist()))


@pytest.mark.parametrize("lib", ["bgl.dgl", "dgl"])
def test_a_loader_sees_edges_edited_in_place_from_the_next_epoch(lib):
    """DGL's loader samples the graph as it is: after ``g.remove_edges`` in place between epochs, bgl's loader
    samples the edited graph too (node seeds), and refuses, in one line, to go on over edge ids that no
    longer mean the same edges (edge seeds)."""
    if lib == "dgl":
        module = pytest.importorskip("dgl", reason="needs DGL (pinned lane) to compare against")
    else:
        module = bdgl
    gen = torch.Generator().manual_seed(4)
    src, dst = torch.randint(0, 60, (400,), generator=gen), torch.randint(0, 60, (400,), generator=gen)
    g = module.graph((src, dst), num_nodes=60)
    g.ndata["feat"] = torch.randn(60, 4, generator=gen)
    loader = bgl.DataLoader(g, torch.arange(60), bgl.NeighborSampler([5]), batch_size=20)
    assert sum(blocks[0].num_edges() for _, _, blocks in loader) > 0
    g.remove_edges(torch.nonzero(g.edges()[1] < 30).view(-1))  # every in-edge of nodes 0..29
    for _, output_nodes, blocks in loader:
        s, d = blocks[0].edges()
        dst_ids = blocks[0].dstdata[NID][d.long()]
        assert not bool((dst_ids < 30).any())  # none of the removed edges sampled
        assert bool(g.has_edges_between(blocks[0].srcdata[NID][s.long()], dst_ids).all())
    edge_loader = bgl.DataLoader(g, torch.arange(g.num_edges()), bgl.as_edge_prediction_sampler(
        bgl.NeighborSampler([3])), batch_size=50)
    next(iter(edge_loader))
    g.remove_edges(torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="edited in place since this loader was built"):
        next(iter(edge_loader))


@pytest.mark.parametrize("lib", ["bgl.dgl", "dgl"])
def test_a_loader_over_a_typed_graph_refuses_after_its_edges_were_edited(lib, user_item):
    """A typed graph's structure is read once, at construction: after an in-place edit the next epoch raises one
    line instead of sampling edges that are gone; a feature written in place is no edit."""
    module = pytest.importorskip("dgl", reason="needs DGL (pinned lane) to compare against") if lib == "dgl" else bdgl
    g = user_item(module, 5, 30, 20, 120)
    loader = bgl.DataLoader(g, {"user": torch.arange(30)}, bgl.NeighborSampler([3, 3]), batch_size=10)
    assert len(list(loader)) == 3
    g.nodes["user"].data["x"][0] = 1.0
    assert len(list(loader)) == 3
    g.remove_edges(torch.tensor([0, 1]), etype="rates")
    with pytest.raises(ValueError, match="typed graph's nodes or edges were edited in place") as e:
        next(iter(loader))
    assert "\n" not in str(e.value)
