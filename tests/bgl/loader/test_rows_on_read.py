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
