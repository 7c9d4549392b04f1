"""Reverse relations on request (``add_reverse``), as ``dgl.AddReverse()`` adds them, and the typed-only options."""
from __future__ import annotations

import numpy as np
import pytest
import torch

dgl = pytest.importorskip("dgl")

import bgl  # noqa: E402
from bgl.errors import IngestError  # noqa: E402


def mag_like(seed=0, papers=30, authors=12, fields=5):
    gen = torch.Generator().manual_seed(seed)

    def ids(n, m):
        return torch.randint(0, n, (m,), generator=gen)

    g = dgl.heterograph({
        ("author", "writes", "paper"): (ids(authors, 60), ids(papers, 60)),
        ("paper", "cites", "paper"): (ids(papers, 80), ids(papers, 80)),
        ("paper", "has_topic", "field"): (ids(papers, 40), ids(fields, 40)),
    }, num_nodes_dict={"author": authors, "paper": papers, "field": fields})
    g.nodes["paper"].data["feat"] = torch.randn(papers, 4, generator=gen)
    g.nodes["paper"].data["label"] = ids(3, papers)
    g.nodes["paper"].data["train_mask"] = torch.arange(papers) % 3 == 0
    return g


def test_add_reverse_gives_the_store_of_dgls_addreverse_graph(tmp_path, assert_same_typed_store):
    g = mag_like()
    ours = bgl.ingest(g, tmp_path / "ours", add_reverse=True)
    theirs = bgl.ingest(dgl.AddReverse()(g), tmp_path / "theirs")
    assert ours.schema.canonical_etypes == dgl.AddReverse()(g).canonical_etypes
    assert ("paper", "rev_writes", "author") in ours.schema.canonical_etypes
    assert ours.schema.edge_types[ours.schema.etype_id("cites")].count == 2 * g.num_edges("cites")
    assert_same_typed_store(ours, theirs)


def test_the_reversed_store_samples_as_dgls_reversed_graph(tmp_path, assert_fanouts_held, assert_same_batches):
    g = mag_like(1)
    rg = dgl.AddReverse()(g)
    store = bgl.ingest(g, tmp_path / "s", add_reverse=True)
    seeds = {"paper": torch.arange(30)}
    a = assert_fanouts_held(store, rg, [3, -1], seeds)
    assert_same_batches(a, assert_fanouts_held(rg, rg, [3, -1], seeds))


def test_a_reverse_already_there_is_not_added_again(tmp_path):
    g = dgl.heterograph({("paper", "has", "word"): ([0, 1], [2, 0]), ("word", "rev_has", "paper"): ([2, 0], [0, 1]),
                         ("word", "in", "paper"): ([1], [1])})
    store = bgl.ingest(g, tmp_path / "s", add_reverse=True)
    assert store.schema.canonical_etypes == [("paper", "has", "word"), ("paper", "rev_in", "word"),
                                             ("word", "in", "paper"), ("word", "rev_has", "paper")]
    assert [e.count for e in store.schema.edge_types] == [2, 1, 1, 2]


def test_add_reverse_of_arrays_is_the_reversed_edges_in_dgls_order(tmp_path):
    from bgl.sources.hetero import fused_csc, schema_of, write_typed_store

    schema = schema_of({"u": 4, "i": 3}, [("u", "buys", "i"), ("u", "follows", "u")])
    buys, follows = (np.array([0, 3, 3]), np.array([2, 2, 0])), (np.array([1, 2]), np.array([0, 0]))
    store = write_typed_store(tmp_path / "s", schema, [buys, follows], add_reverse=True, fill_bytes=10)
    want_schema = schema_of({"u": 4, "i": 3}, [("i", "rev_buys", "u"), ("u", "buys", "i"), ("u", "follows", "u")])
    want = fused_csc(want_schema, [buys[::-1], buys, (np.r_[follows[0], follows[1]], np.r_[follows[1], follows[0]])])
    assert store.schema.canonical_etypes == want_schema.canonical_etypes
    for got, ref in zip((store.indptr, store.indices, store.etype), want[:3]):
        assert np.array_equal(got, ref)


def test_homogeneous_and_typed_only_options_are_refused_by_name(tmp_path):
    edges = tmp_path / "g.txt"
    edges.write_text("0 1\n1 2\n")
    with pytest.raises(IngestError, match="add_reverse.*symmetrize"):
        bgl.ingest(edges, tmp_path / "a", add_reverse=True)
    with pytest.raises(IngestError, match="add_reverse.*symmetrize"):
        bgl.ingest("rmat:4", tmp_path / "b", add_reverse=True)
    g = mag_like()
    with pytest.raises(IngestError, match="symmetrize applies to graphs with one edge type.*add_reverse"):
        bgl.ingest(g, tmp_path / "c", symmetrize=True)
    with pytest.raises(IngestError, match="feat_dim"):
        bgl.ingest(g, tmp_path / "d", feat_dim=8)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.txt"]
