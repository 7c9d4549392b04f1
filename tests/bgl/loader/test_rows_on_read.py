"""Fields a DGL sampler does not name are read when the model reads them, as DGL's loader reads them.

DGL's loader gathers only the fields its sampler names (``prefetch_node_feats`` / ``prefetch_labels``);
the blocks carry every other field of the graph as a lazy column, read at first use.  bgl does the
same over a graph read in place (a DGLGraph or a ``bgl.dgl`` graph): gathering its default names there
held a batch of rows per batch in flight that a script indexing the features itself (layer-wise
inference, ``h[input_nodes]``) never read.  Observable the way a script sees it: a field edited in
place after the batch was made and before the model reads it gives the edited rows when not named,
and the rows of the batch's making when named.
"""
from __future__ import annotations

import pytest
import torch

import bgl
import bgl.dgl as bdgl

N, E = 400, 3200


def _edges(seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, N, (E,), generator=gen), torch.randint(0, N, (E,), generator=gen)


def _with_fields(g):
    gen = torch.Generator().manual_seed(1)
    g.ndata["feat"] = torch.randn(N, 8, generator=gen)
    g.ndata["label"] = torch.randint(0, 4, (N,), generator=gen)
    return g


def _first_batch_after_an_edit(make_loader, g):
    """(input nodes, output nodes, features read, labels read) of the first batch, the graph's fields
    edited in place between the batch's making and the reads; the fields put back after."""
    feat, label = g.ndata["feat"], g.ndata["label"]
    before = feat.clone(), label.clone()
    try:
        inputs, outputs, blocks = next(iter(make_loader()))
        feat.add_(1.0)
        label.add_(10)
        return inputs, outputs, blocks[0].srcdata["feat"].clone(), blocks[-1].dstdata["label"].clone(), before
    finally:
        feat.copy_(before[0])
        label.copy_(before[1])


def _loaders(dgl_module, g, sampler_class, named: bool, **loader_kwargs):
    names = {"prefetch_node_feats": ["feat"], "prefetch_labels": ["label"]} if named else {}
    sampler = sampler_class([5, 5], **names)
    seeds = torch.arange(0, N, 2)
    return lambda: dgl_module(g, seeds, sampler, batch_size=64, **loader_kwargs)


@pytest.mark.parametrize("pipeline", ["inline", "thread"])
def test_unnamed_fields_are_read_when_the_model_reads_them(pipeline):
    g = _with_fields(bdgl.graph(_edges(), num_nodes=N))
    make = _loaders(bdgl.dataloading.DataLoader, g, bdgl.dataloading.NeighborSampler, named=False, pipeline=pipeline)
    inputs, outputs, feat, label, _ = _first_batch_after_an_edit(make, g)
    assert torch.equal(feat, g.ndata["feat"][inputs] + 1.0)  # read after the edit
    assert torch.equal(label, g.ndata["label"][outputs] + 10)


@pytest.mark.parametrize("pipeline", ["inline", "thread"])
def test_named_fields_come_with_the_batch(pipeline):
    g = _with_fields(bdgl.graph(_edges(), num_nodes=N))
    make = _loaders(bdgl.dataloading.DataLoader, g, bdgl.dataloading.NeighborSampler, named=True, pipeline=pipeline)
    inputs, outputs, feat, label, (feat0, label0) = _first_batch_after_an_edit(make, g)
    assert torch.equal(feat, feat0[inputs])  # gathered when the batch was made
    assert torch.equal(label, label0[outputs])


def test_a_cache_asked_for_still_serves_the_default_features():
    g = _with_fields(bdgl.graph(_edges(), num_nodes=N))
    make = _loaders(bgl.DataLoader, g, bgl.NeighborSampler, named=False, cache="lookahead", cache_ratio=0.5,
                    pipeline="inline")
    inputs, _, feat, _, (feat0, _) = _first_batch_after_an_edit(make, g)
    assert torch.equal(feat, feat0[inputs])  # from the fetch stage and its cache


def test_a_bgl_dgl_block_keeps_an_unread_field_unread_through_to():
    from bgl.dgl.frames import RowsOnRead

    g = _with_fields(bdgl.graph(_edges(), num_nodes=N))
    loader = bdgl.dataloading.DataLoader(g, torch.arange(64), bdgl.dataloading.NeighborSampler([3]), batch_size=64)
    inputs, _, blocks = next(iter(loader))
    moved = blocks[0].to("cpu")
    frame = moved._src_frames[moved.srctypes[0]]
    assert type(frame._columns["feat"]) is RowsOnRead
    assert torch.equal(moved.srcdata["feat"], g.ndata["feat"][inputs])
    assert type(frame._columns["feat"]) is torch.Tensor  # read once, then a plain column


@pytest.mark.parametrize("named", [False, True])
def test_reads_match_dgls_loader(named):
    """Pinned lane: DGL's own loader and bgl's, both over a DGLGraph with DGL's sampler, read alike."""
    dgl = pytest.importorskip("dgl", reason="DGL is needed to compare with (pinned lane)")
    g = _with_fields(dgl.graph(_edges(), num_nodes=N))
    for loader_class in (dgl.dataloading.DataLoader, bgl.DataLoader):
        make = _loaders(loader_class, g, dgl.dataloading.NeighborSampler, named=named)
        inputs, outputs, feat, label, (feat0, label0) = _first_batch_after_an_edit(make, g)
        expected_feat = feat0[inputs] if named else feat0[inputs] + 1.0
        expected_label = label0[outputs] if named else label0[outputs] + 10
        assert torch.equal(feat, expected_feat), loader_class
        assert torch.equal(label, expected_label), loader_class


def test_bgl_blocks_of_a_dgl_graph_still_carry_the_default_features():
    """``blocks="bgl"``: bgl's own Blocks carry no lazy fields of the graph, so the defaults are gathered."""
    g = _with_fields(bdgl.graph(_edges(), num_nodes=N))
    inputs, outputs, blocks = next(iter(bgl.DataLoader(g, torch.arange(64), bgl.NeighborSampler([3]), batch_size=64,
                                                       blocks="bgl")))
    assert isinstance(blocks[0], bgl.Block)
    assert torch.equal(blocks[0].srcdata["feat"], g.ndata["feat"][inputs])
    assert torch.equal(blocks[-1].dstdata["label"], g.ndata["label"][outputs])


def _unread_batch():
    """A bgl.dgl graph with node and edge fields, and the first batch of a link-prediction loader over it
    (its pair graph and blocks carry the fields unread)."""
    g = _with_fields(bdgl.graph(_edges(), num_nodes=N))
    g.edata["w"] = torch.rand(E, generator=torch.Generator().manual_seed(2))
    sampler = bdgl.dataloading.as_edge_prediction_sampler(
        bdgl.dataloading.NeighborSampler([3]), negative_sampler=bdgl.dataloading.negative_sampler.Uniform(1))
    loader = bdgl.dataloading.DataLoader(g, torch.arange(64), sampler, batch_size=64)
    _, pair, _, blocks = next(iter(loader))
    return g, pair, blocks


def test_a_partial_write_to_an_unread_field_reads_it_first():
    """``g.nodes[ids].data[k] = x`` / ``g.edges[ids].data[k] = x`` on a batch's unread field, as DGL allows."""
    from bgl.dgl import NID, EID
    from bgl.dgl.frames import RowsOnRead

    g, pair, blocks = _unread_batch()
    block = blocks[0]
    assert type(block._src_frames[block.srctypes[0]]._columns["feat"]) is RowsOnRead
    block.srcnodes[[0, 2]].data["feat"] = torch.zeros(2, 8)
    expected = g.ndata["feat"][block.srcdata[NID]].clone()
    expected[[0, 2]] = 0
    assert torch.equal(block.srcdata["feat"], expected)
    block.edges[[1]].data["w"] = torch.full((1,), 7.0)
    expected_w = g.edata["w"][block.edata[EID]].clone()
    expected_w[1] = 7.0
    assert torch.equal(block.edata["w"], expected_w)
    pair.nodes[[3]].data["label"] = torch.tensor([9])
    assert int(pair.ndata["label"][3]) == 9
    assert torch.equal(pair.ndata["label"][:3], g.ndata["label"][pair.ndata[NID][:3]])


def test_a_subgraph_of_a_batch_keeps_its_unread_fields_unread_and_right():
    from bgl.dgl import NID, EID
    from bgl.dgl.frames import RowsOnRead

    g, pair, _ = _unread_batch()
    nodes = torch.tensor([5, 1, 3])
    sub = pair.subgraph(nodes)
    assert type(sub._src_frames[sub.ntypes[0]]._columns["feat"]) is RowsOnRead  # composed, not gathered
    assert torch.equal(sub.ndata["feat"], g.ndata["feat"][pair.ndata[NID][nodes]])
    edges = torch.tensor([4, 0])
    esub = pair.edge_subgraph(edges)
    assert torch.equal(esub.edata["w"], g.edata["w"][pair.edata[EID][edges]])
    assert torch.equal(esub.ndata["feat"], g.ndata["feat"][pair.ndata[NID][esub.ndata[NID]]])


def _field_names(batch) -> dict:
    _, pair, neg, blocks = batch
    return {"pair nodes": set(pair.ndata.keys()), "pair edges": set(pair.edata.keys()),
            "negative nodes": set(neg.ndata.keys()), "negative edges": set(neg.edata.keys()),
            "first block sources": set(blocks[0].srcdata.keys()), "last block destinations": set(blocks[-1].dstdata.keys()),
            "block edges": [set(b.edata.keys()) for b in blocks]}


def test_link_batches_carry_the_fields_dgls_do():
    """Pinned lane: a link-prediction batch of bgl.dgl's loader over a bgl.dgl graph names the same fields as
    DGL's loader's over the same DGLGraph (the positive pair graph: the graph's node and edge fields; the
    negative one: only the ids), and the positive pairs' edge fields are the graph's rows of their edges."""
    dgl = pytest.importorskip("dgl", reason="DGL is needed to compare with (pinned lane)")
    batches = {}
    for name, module in (("dgl", dgl), ("bgl.dgl", bdgl)):
        g = _with_fields(module.graph(_edges(), num_nodes=N))
        g.edata["w"] = torch.rand(E, generator=torch.Generator().manual_seed(2))
        sampler = module.dataloading.as_edge_prediction_sampler(
            module.dataloading.NeighborSampler([3, 3]), negative_sampler=module.dataloading.negative_sampler.Uniform(1))
        batch = next(iter(module.dataloading.DataLoader(g, torch.arange(64), sampler, batch_size=64)))
        pair = batch[1]
        assert torch.equal(pair.edata["w"], g.edata["w"][pair.edata[module.EID].long()]), name
        batches[name] = _field_names(batch)
    assert batches["bgl.dgl"] == batches["dgl"]


def _typed_fields_batch(module, loader_class):
    """The first typed link-prediction batch of ``loader_class`` over a user-item graph of ``module``'s
    (DGL or bgl.dgl) with node and edge fields, and that graph."""
    gen = torch.Generator().manual_seed(0)
    u, i = torch.randint(0, 50, (400,), generator=gen), torch.randint(0, 30, (400,), generator=gen)
    g = module.heterograph({("user", "rates", "item"): (u, i), ("item", "rated-by", "user"): (i, u)},
                           num_nodes_dict={"user": 50, "item": 30})
    for nt, n in (("user", 50), ("item", 30)):
        g.nodes[nt].data["feat"] = torch.randn(n, 4, generator=gen)
    for et in ("rates", "rated-by"):
        g.edges[et].data["w"] = torch.rand(400, generator=gen)
    sampler = module.dataloading.as_edge_prediction_sampler(
        module.dataloading.NeighborSampler([3]), exclude="reverse_types",
        reverse_etypes={"rates": "rated-by", "rated-by": "rates"},
        negative_sampler=module.dataloading.negative_sampler.Uniform(1))
    return g, next(iter(loader_class(g, {"rates": torch.arange(64)}, sampler, batch_size=64)))


def _typed_field_names(batch) -> dict:
    _, pair, neg, _ = batch
    return {(name, kind, t): set(view[t].data.keys()) for name, x in (("pair", pair), ("negative", neg))
            for kind, view, types in (("nodes", x.nodes, x.ntypes), ("edges", x.edges, x.canonical_etypes))
            for t in types}


def _check_pair_rows(g, batch, module) -> None:
    pair = batch[1]
    for nt in pair.ntypes:
        assert torch.equal(pair.nodes[nt].data["feat"], g.nodes[nt].data["feat"][pair.nodes[nt].data[module.NID].long()])
    ids = pair.edges["rates"].data[module.EID].long()
    assert ids.shape[0] == 64
    assert torch.equal(pair.edges["rates"].data["w"], g.edges["rates"].data["w"][ids])


def test_typed_link_batches_carry_the_fields_dgls_do():
    """Pinned lane: typed link prediction, bgl's loader over a heterogeneous DGLGraph and bgl.dgl's over a
    bgl.dgl graph, name the fields DGL's loader names (positive pair graph: every type's node fields and
    every relation's edge fields; negative: the ids), and read the graph's rows of the pairs' nodes and edges."""
    dgl = pytest.importorskip("dgl", reason="DGL is needed to compare with (pinned lane)")
    names = {}
    for name, module, loader_class in (("dgl", dgl, dgl.dataloading.DataLoader), ("bgl", dgl, bgl.DataLoader),
                                       ("bgl.dgl", bdgl, bdgl.dataloading.DataLoader)):
        g, batch = _typed_fields_batch(module, loader_class)
        _check_pair_rows(g, batch, module)
        names[name] = _typed_field_names(batch)
    assert names["bgl"] == names["dgl"]
    assert names["bgl.dgl"] == names["dgl"]


def test_a_typed_bgl_dgl_positive_pair_graph_carries_the_graphs_fields():
    """Current stack (no DGL): the positive pair graph of a bgl.dgl graph reads its node and edge fields,
    the negative one carries only the ids."""
    g, batch = _typed_fields_batch(bdgl, bdgl.dataloading.DataLoader)
    _check_pair_rows(g, batch, bdgl)
    neg = batch[2]
    assert all(set(neg.nodes[nt].data.keys()) == {bdgl.NID} for nt in neg.ntypes)
