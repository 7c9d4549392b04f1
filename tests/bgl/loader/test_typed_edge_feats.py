"""``prefetch_edge_feats`` on typed graphs: DGL heterograph blocks' ``edata[name]`` = ``{canonical etype: rows}``
read by edge id, bgl typed blocks' rows aligned with ``etypes``; a heterogeneous DGLGraph, a typed store and
its partition on 2 real graph servers (the store's batches)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

dgl = pytest.importorskip("dgl")

import bgl  # noqa: E402
from bgl.partition import partition_graph  # noqa: E402

from ...sampler.conftest import part_args, started_servers, with_edge_arrays  # noqa: E402
from ...sampler.test_typed_weighted import random_heterograph  # noqa: E402
from .test_typed_servers_loader import same_batches  # noqa: E402

HG_FANOUTS = [{"writes": 2, "cites": 3, "by": 2}, {"writes": 1, "cites": 2, "by": 1}]
CITES = ("paper", "cites", "paper")


def heterograph():
    """:func:`random_heterograph` with edge features ``ef`` on ``writes`` and ``cites`` only."""
    g = random_heterograph(1)
    gen = torch.Generator().manual_seed(2)
    for c in ("writes", "cites"):
        g.edges[c].data["ef"] = torch.randn(g.num_edges(c), 3, generator=gen)
    return g


def batches(graph, seeds, fanouts, prefetch, blocks="dgl", **kw):
    torch.manual_seed(3)
    sampler = dgl.dataloading.NeighborSampler(fanouts, prefetch_edge_feats=prefetch, **kw)
    return list(bgl.DataLoader(graph, seeds, sampler, batch_size=16, blocks=blocks))


@pytest.mark.parametrize("prefetch", [["ef"], {CITES: ["ef"], "writes": ["ef"]}])
def test_heterograph_dgl_blocks_carry_each_relations_rows_by_edge_id(prefetch):
    g = heterograph()
    got = batches(g, {"paper": torch.arange(40)}, HG_FANOUTS, prefetch)
    assert got
    for _, _, blocks in got:
        for block in blocks:
            rows = block.edata["ef"]
            assert isinstance(rows, dict) and set(rows) <= {("author", "writes", "paper"), CITES}
            for c in block.canonical_etypes:
                if c[1] == "by":  # the relation without the field has none, as in DGL's blocks
                    assert "ef" not in block.edges[c].data
                    continue
                assert torch.equal(block.edges[c].data["ef"], g.edges[c].data["ef"][block.edges[c].data[dgl.EID]])


def test_heterograph_bgl_blocks_carry_rows_aligned_with_etypes():
    g = heterograph()
    got = batches(g, {"paper": torch.arange(40)}, HG_FANOUTS, ["ef"], blocks="bgl", prob="w")
    etypes = g.canonical_etypes
    for _, _, blocks in got:
        for b in blocks:
            rows, et, eids = b.edata["ef"], b.etypes, b.edge_ids
            assert rows.shape == (b.num_edges, 3)
            for r, c in enumerate(etypes):
                sel = et == r
                if "ef" in g.edges[c].data:  # edge ids are each relation's own (DGL's)
                    assert torch.equal(rows[sel], g.edges[c].data["ef"][eids[sel]]), c


def test_fields_of_different_widths_by_relation_go_to_dgl_blocks_and_are_named_for_bgl_blocks():
    g = heterograph()
    g.edges["by"].data["ef"] = torch.zeros(g.num_edges("by"), 5)  # "ef" is 3 wide on the other relations
    got = batches(g, {"paper": torch.arange(40)}, HG_FANOUTS, ["ef"])  # DGL blocks: each relation its own
    by = ("paper", "by", "author")
    assert any(b.edges[by].data["ef"].shape[1:] == (5,) for _, _, blocks in got for b in blocks if b.num_edges(by))
    with pytest.raises(ValueError, match=r"edge data 'ef' has rows of shape \(5,\) on \('paper', 'by', 'author'\)"):
        batches(g, {"paper": torch.arange(40)}, HG_FANOUTS, ["ef"], blocks="bgl")  # one fused array: one width


@pytest.fixture(scope="module")
def featured(hetero_store, tmp_path_factory):
    """The typed test store with edge features ``ef`` (float32 [E, 2]) and weights ``w``, its
    2-part partition and a server per part."""
    work = tmp_path_factory.mktemp("typed_edge_feats")
    rng = np.random.default_rng(4)
    e = hetero_store.num_edges
    store = with_edge_arrays(hetero_store, work / "store",
                             {"ef": rng.standard_normal((e, 2)).astype(np.float32), "w": rng.random(e) + 0.01})
    book = partition_graph(store, "random", 2, work / "p", measure_samples=False)
    with started_servers(part_args(book), work) as addresses:
        yield store, book, ",".join(addresses)


STORE_FANOUTS = [{"writes": 2, "cites": 3, "in": 1, "by": 1}, {"writes": 1, "cites": 2, "in": 0, "by": 2}]
SEEDS = {"paper": torch.arange(0, 300, 3)}


def test_typed_store_blocks_carry_its_rows_by_edge_id_and_servers_the_same(featured, monkeypatch):
    store, book, servers = featured
    ef = torch.from_numpy(np.array(store.edge_array("ef")))
    for _, _, blocks in batches(store, SEEDS, STORE_FANOUTS, ["ef", "w"]):
        for block in blocks:  # a typed store's edge ids are CSC positions
            assert set(block.edata["ef"]) == set(block.canonical_etypes)
            for c in block.canonical_etypes:
                assert torch.equal(block.edges[c].data["ef"], ef[block.edges[c].data[dgl.EID]]), c
    monkeypatch.setenv("BGL_SERVERS", servers)
    for kw in ({}, {"prob": "w"}):
        want = batches(store, SEEDS, STORE_FANOUTS, ["ef"], blocks="bgl", **kw)
        got = batches(str(book.path), SEEDS, STORE_FANOUTS, ["ef"], blocks="bgl", **kw)
        same_batches(want, got)
        for (_, _, a), (_, _, b) in zip(want, got):
            assert all(torch.equal(x.edata["ef"], y.edata["ef"]) for x, y in zip(a, b, strict=True))
    with pytest.raises(ValueError, match="prefetch_edge_feats names edge data 'nope'"):
        batches(str(book.path), SEEDS, STORE_FANOUTS, ["nope"])
