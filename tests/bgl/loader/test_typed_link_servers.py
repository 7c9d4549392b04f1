"""Typed link prediction over two real graph servers: the same batches as from the store, nothing excluded drawn."""
from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import bgl
from bgl.partition import partition_graph
from bgl.sources.recsys import write_ratings_store

REVERSE = {"rates": "rated-by", "rated-by": "rates"}

RATES = ("user", "rates", "item")


def _batches(graph, seeds, negative=None, **kw):
    negative = bgl.negative_sampler.Uniform(2) if negative is None else negative
    sampler = bgl.as_edge_prediction_sampler(bgl.NeighborSampler([4, 4]), exclude="reverse_types",
                                             reverse_etypes=REVERSE, negative_sampler=negative)
    torch.manual_seed(5)
    return list(bgl.DataLoader(graph, {"rates": seeds}, sampler, batch_size=60, shuffle=True, blocks="bgl", **kw))


def test_typed_link_batches_over_servers_equal_the_stores(tmp_path, serve_partition, monkeypatch):
    store, _ = write_ratings_store(tmp_path / "ratings", num_users=80, num_items=60, clusters=4)
    book = partition_graph(store, "random", 2, tmp_path / "parts", measure_samples=False)
    etype = np.asarray(store.etype)
    seeds = np.flatnonzero(etype == store.schema.etype_id("rates"))  # the store's edge ids: CSC positions
    orig_eids = np.asarray(book.orig_eids)
    to_partition = np.empty_like(orig_eids)
    to_partition[orig_eids] = np.arange(orig_eids.shape[0])
    local = _batches(store, seeds)
    with serve_partition(book, tmp_path) as addresses:
        monkeypatch.setenv("BGL_SERVERS", ",".join(addresses))
        remote = _batches(str(book.path), to_partition[seeds])
    assert len(local) == len(remote) > 2
    indptr, indices = np.asarray(store.indptr), np.asarray(store.indices)
    dst_of = np.searchsorted(indptr, np.arange(indices.shape[0]), side="right") - 1
    rated_by = store.schema.etype_id("rated-by")
    for (in_a, pos_a, neg_a, blocks_a), (in_b, pos_b, neg_b, blocks_b) in zip(local, remote):
        for nt in ("user", "item"):
            assert torch.equal(in_a[nt], in_b[nt])
            assert torch.equal(pos_a.ndata["_ID"][nt], pos_b.ndata["_ID"][nt])
        for c in pos_a.canonical_etypes:
            assert all(torch.equal(x, y) for x, y in zip(pos_a.edges(etype=c), pos_b.edges(etype=c)))
            assert all(torch.equal(x, y) for x, y in zip(neg_a.edges(etype=c), neg_b.edges(etype=c)))
        ids = pos_a.edata["_ID"][RATES].numpy()
        assert np.array_equal(orig_eids[pos_b.edata["_ID"][RATES].numpy()], ids)
        for a, b in zip(blocks_a, blocks_b):
            for name in ("src_ids", "indptr", "indices", "etypes"):
                assert torch.equal(getattr(a, name), getattr(b, name)), name
        excluded = set(ids.tolist())
        for p in ids:  # each seed's reverse by endpoints, brute force
            u, i = int(indices[p]), int(dst_of[p])
            rev = [q for q in range(indptr[u], indptr[u + 1]) if etype[q] == rated_by and indices[q] == i]
            excluded.update(rev[:1])
        assert not excluded & {int(e) for b in blocks_a for e in b.edge_ids.tolist()}


def test_typed_seed_edges_must_be_of_their_type(tmp_path):
    store, _ = write_ratings_store(tmp_path / "ratings", num_users=80, num_items=60, clusters=4)
    wrong = int(np.flatnonzero(np.asarray(store.etype) != store.schema.etype_id("rates"))[0])
    with pytest.raises(ValueError, match=re.escape(f"seed edge {wrong} is not of edge type {RATES}")):
        _batches(store, np.array([wrong]))


def ratings_partition(tmp_path):
    """A generated ratings store, its 2-part random partition, its rates edges (the store's ids) and
    the store -> partition edge id map."""
    store, _ = write_ratings_store(tmp_path / "ratings", num_users=80, num_items=60, clusters=4)
    book = partition_graph(store, "random", 2, tmp_path / "parts", measure_samples=False)
    orig_eids = np.asarray(book.orig_eids)
    to_partition = np.empty_like(orig_eids)
    to_partition[orig_eids] = np.arange(orig_eids.shape[0])
    return store, book, np.flatnonzero(np.asarray(store.etype) == store.schema.etype_id("rates")), to_partition


def test_typed_global_uniform_negatives_over_servers_are_the_stores(tmp_path, serve_partition, monkeypatch):
    """GlobalUniform per edge type over two servers: each candidate tested against its destination row's
    edges of that type, asked of the row's owner, so the negatives are the store's and never its edges."""
    store, book, seeds, to_partition = ratings_partition(tmp_path)
    negative = bgl.negative_sampler.GlobalUniform(3)
    local = _batches(store, seeds, negative)
    with serve_partition(book, tmp_path) as addresses:
        monkeypatch.setenv("BGL_SERVERS", ",".join(addresses))
        remote = _batches(str(book.path), to_partition[seeds], negative)
    assert len(local) == len(remote) > 2
    indptr, indices, etype = np.asarray(store.indptr), np.asarray(store.indices), np.asarray(store.etype)
    rates = store.schema.etype_id("rates")
    users, items = (store.schema.node_types[store.schema.ntype_id(t)].offset for t in ("user", "item"))
    for (_, pos_a, neg_a, _), (_, pos_b, neg_b, _) in zip(local, remote):
        s_a, d_a = neg_a.edges(etype=RATES)
        assert s_a.shape[0] == 3 * pos_a.num_edges(RATES)
        assert all(torch.equal(x, y) for x, y in zip((s_a, d_a), neg_b.edges(etype=RATES)))
        src = neg_a.ndata["_ID"]["user"][s_a].numpy() + users
        dst = neg_a.ndata["_ID"]["item"][d_a].numpy() + items
        for u, i in zip(src.tolist(), dst.tolist()):  # brute force: no rates edge u -> i
            row = slice(indptr[i], indptr[i + 1])
            assert not ((indices[row] == u) & (etype[row] == rates)).any()


def seeds_only(eids):
    """DGL's callable exclude: the batch's seed edges (as exclude='self')."""
    return dict(eids)


def counted_items(graph, eids):
    """Negatives that depend on the batch's counts only: user 0 with items 0, 1, 2, ..."""
    return {c: (torch.zeros(len(e), dtype=torch.int64), torch.arange(len(e)) % 60) for c, e in eids.items()}


def test_typed_callables_over_servers_give_the_stores_batches(tmp_path, serve_partition, monkeypatch):
    """A callable exclude gets (and returns) a partition's edge ids over servers, a store's positions
    locally: the same batches, its edges in none of their blocks; a callable sampler's negatives too."""
    store, book, seeds, to_partition = ratings_partition(tmp_path)

    def batches(graph, ids):
        sampler = bgl.as_edge_prediction_sampler(bgl.NeighborSampler([4, 4]), exclude=seeds_only,
                                                 negative_sampler=counted_items)
        torch.manual_seed(5)
        return list(bgl.DataLoader(graph, {"rates": ids}, sampler, batch_size=60, shuffle=True, blocks="bgl",
                                   pipeline="processes"))

    local = batches(store, seeds)
    with serve_partition(book, tmp_path) as addresses:
        monkeypatch.setenv("BGL_SERVERS", ",".join(addresses))
        remote = batches(str(book.path), to_partition[seeds])
    assert len(local) == len(remote) > 2
    for (_, pos_a, neg_a, blocks_a), (_, pos_b, neg_b, blocks_b) in zip(local, remote):
        assert all(torch.equal(x, y) for x, y in zip(neg_a.edges(etype=RATES), neg_b.edges(etype=RATES)))
        for a, b in zip(blocks_a, blocks_b):
            for name in ("src_ids", "indptr", "indices", "etypes"):
                assert torch.equal(getattr(a, name), getattr(b, name)), name
        ids = set(pos_a.edata["_ID"][RATES].tolist())
        assert not ids & {int(e) for b in blocks_a for e in b.edge_ids.tolist()}
