"""A user's callables in typed link prediction (DGL's contracts): a negative sampler
``(g, {etype: eids}) -> {etype: (src, dst)}`` and ``exclude`` ``{etype: eids} -> {etype: eids}``,
batches against DGL's own loader, and every wrong output named before anything starts."""
from __future__ import annotations

import functools
import re

import numpy as np
import pytest
import torch

dgl = pytest.importorskip("dgl")

import bgl  # noqa: E402

from .test_typed_link_prediction import _block_edges, rating_graph  # noqa: E402

RATES, RATED_BY, FOLLOWS = ("user", "rates", "item"), ("item", "rated-by", "user"), ("user", "follows", "user")
REVERSE = {RATES: RATED_BY, RATED_BY: RATES}


def shifted_negatives(g, eids):
    """Deterministic: each source twice, destinations its positive's shifted by 1, 2, ... (mod the type's count)."""
    out = {}
    for c, e in eids.items():
        s, d = g.find_edges(e, etype=c)
        out[c] = (s.repeat_interleave(2), (d.repeat_interleave(2) + torch.arange(1, 2 * len(e) + 1)) % g.num_nodes(c[2]))
    return out


def seeds_and_reverses(eids):
    """The seed edges and the same ids of the reverse type (DGL's reverse_types, as a callable)."""
    out = dict(eids)
    out.update({REVERSE[c]: e for c, e in eids.items() if c in REVERSE})
    return out


def random_items(graph, eids):
    """Random item destinations under torch's RNG (the graph: the store the loader was given, a copy in a
    stage process)."""
    assert type(graph).__name__ == "GraphStore"
    return {c: (torch.zeros(len(e), dtype=torch.int64), torch.randint(0, 50, (len(e),))) for c, e in eids.items()}


def first_items(graph, eids):
    return {c: (torch.zeros(len(e), dtype=torch.int64), torch.zeros(len(e), dtype=torch.int64)) for c, e in eids.items()}


def seeds_and_banned(banned, eids):
    return {**eids, FOLLOWS: torch.from_numpy(banned)}


def test_callable_negatives_and_exclude_give_dgls_batches():
    g = rating_graph()
    seeds = {"rates": torch.arange(0, 300, 3), "follows": torch.arange(0, 80, 2)}
    sampler = dgl.dataloading.as_edge_prediction_sampler(dgl.dataloading.MultiLayerFullNeighborSampler(2),
                                                         exclude=seeds_and_reverses, negative_sampler=shifted_negatives)
    ours = list(bgl.DataLoader(g, seeds, sampler, batch_size=32))
    theirs = list(dgl.dataloading.DataLoader(g, seeds, sampler, batch_size=32))
    assert len(ours) == len(theirs) == 5
    for (in_a, pos_a, neg_a, blocks_a), (in_b, pos_b, neg_b, blocks_b) in zip(ours, theirs):
        for nt in g.ntypes:
            assert torch.equal(pos_a.nodes[nt].data[dgl.NID], pos_b.nodes[nt].data[dgl.NID])
            assert torch.equal(neg_a.nodes[nt].data[dgl.NID], pos_b.nodes[nt].data[dgl.NID])
            assert set(in_a[nt].tolist()) == set(in_b[nt].tolist())
        for c in g.canonical_etypes:
            for a, b in ((pos_a, pos_b), (neg_a, neg_b)):
                assert all(torch.equal(x, y) for x, y in zip(a.edges(etype=c), b.edges(etype=c))), c
            assert torch.equal(pos_a.edges[c].data[dgl.EID], pos_b.edges[c].data[dgl.EID])
            for block_a, block_b in zip(blocks_a, blocks_b):
                assert _block_edges(block_a, c) == _block_edges(block_b, c)


def test_a_random_callable_sampler_is_seeded_per_batch_and_leaves_the_callers_rng(tmp_path):
    """Drawn under torch's RNG reseeded from the batch: the same negatives inline and in stage processes,
    the caller's RNG as a deterministic sampler leaves it; a callable exclude on a store's positions
    keeps its edges out of every block."""
    g = rating_graph()
    store = bgl.ingest(g, tmp_path / "ratings")
    etype = np.asarray(store.etype)
    follows = np.flatnonzero(etype == store.schema.etype_id("follows"))
    banned = follows[:40]  # follows edges never sampled, whatever the batch
    exclude = functools.partial(seeds_and_banned, banned)

    seeds = {"rates": np.flatnonzero(etype == store.schema.etype_id("rates"))}
    runs, after = {}, {}
    for mode, negatives in (("inline", random_items), ("processes", random_items), ("fixed", first_items)):
        sampler = bgl.as_edge_prediction_sampler(bgl.NeighborSampler([4, 4]), exclude=exclude,
                                                 negative_sampler=negatives)
        torch.manual_seed(7)
        loader = bgl.DataLoader(store, seeds, sampler, batch_size=60, shuffle=True, blocks="bgl",
                                pipeline="inline" if mode == "fixed" else mode)
        runs[mode] = list(loader)
        after[mode] = torch.rand(3)
        loader.close()
    assert torch.equal(after["inline"], after["fixed"])
    assert len(runs["inline"]) == len(runs["processes"]) > 2
    for (_, pos_a, neg_a, blocks_a), (_, _, neg_b, _) in zip(runs["inline"], runs["processes"]):
        assert all(torch.equal(x, y) for x, y in zip(neg_a.edges(etype=RATES), neg_b.edges(etype=RATES)))
        excluded = set(pos_a.edata["_ID"][RATES].tolist()) | set(banned.tolist())
        assert not excluded & {int(e) for b in blocks_a for e in b.edge_ids.tolist()}


def _loader(g, **kw):
    sampler = bgl.as_edge_prediction_sampler(bgl.NeighborSampler([2]), **kw)
    return bgl.DataLoader(g, {"rates": torch.arange(10)}, sampler, batch_size=5)


@pytest.mark.parametrize("output, error, message", [
    (lambda g, e: (e[RATES], e[RATES]), TypeError, "must return {etype: (src, dst)} on a graph with edge types"),
    (lambda g, e: {"likes": (e[RATES], e[RATES])}, ValueError, "returned edge type 'likes': unknown edge type"),
    (lambda g, e: {RATES: e[RATES]}, TypeError, "must return a (src, dst) pair of id tensors"),
    (lambda g, e: {RATES: ([0], [1])}, TypeError, "sources of ('user', 'rates', 'item') must be an integer tensor, got list"),
    (lambda g, e: {RATES: (e[RATES].float(), e[RATES])}, TypeError, "must hold integer ids, got a tensor of dtype torch.float32"),
    (lambda g, e: {RATES: (e[RATES][None], e[RATES][None])}, ValueError, "must be 1-D, got shape (1, 1)"),
    (lambda g, e: {RATES: (e[RATES], torch.tensor([1, 2]))}, ValueError, "returned 1 sources and 2 destinations"),
    (lambda g, e: {RATES: (torch.tensor([0]), torch.tensor([50]))}, ValueError,
     "destinations of ('user', 'rates', 'item') holds id 50, outside [0, 50)"),
])
def test_a_callable_negative_samplers_bad_output_is_named_before_anything_starts(output, error, message):
    with pytest.raises(error, match=re.escape(message)):
        _loader(rating_graph(), negative_sampler=output)


@pytest.mark.parametrize("output, error, message", [
    (lambda e: [1, 2], TypeError, "must return {etype: edge ids} on a graph with edge types"),
    (lambda e: {"likes": e[RATES]}, ValueError, "returned edge type 'likes': unknown edge type"),
    (lambda e: {RATES: e[RATES].double()}, TypeError, "must hold integer ids, got a tensor of dtype torch.float64"),
    (lambda e: {FOLLOWS: torch.tensor([80])}, ValueError, "edge ids of ('user', 'follows', 'user') holds id 80, outside [0, 80)"),
])
def test_a_callable_excludes_bad_output_is_named_before_anything_starts(output, error, message):
    with pytest.raises(error, match=re.escape(message)):
        _loader(rating_graph(), exclude=output)


def test_a_store_edge_of_another_type_is_named(tmp_path):
    store = bgl.ingest(rating_graph(), tmp_path / "ratings")
    etype = np.asarray(store.etype)
    rates = np.flatnonzero(etype == store.schema.etype_id("rates"))
    follows = int(np.flatnonzero(etype == store.schema.etype_id("follows"))[0])
    sampler = bgl.as_edge_prediction_sampler(bgl.NeighborSampler([2]), exclude=lambda e: {RATES: torch.tensor([follows])})
    with pytest.raises(ValueError, match=re.escape(f"exclude returned edge {follows} as one of edge type {RATES}, "
                                                   f"but it is of edge type {FOLLOWS}")):
        bgl.DataLoader(store, {"rates": rates}, sampler, batch_size=50)


def test_a_callable_that_does_not_pickle_is_named_when_stage_processes_start(tmp_path):
    store = bgl.ingest(rating_graph(), tmp_path / "ratings")
    seeds = {"rates": np.flatnonzero(np.asarray(store.etype) == store.schema.etype_id("rates"))}
    sampler = bgl.as_edge_prediction_sampler(bgl.NeighborSampler([2]), exclude=lambda e: e)
    # The stage processes start at construction (in the background), so the loader refuses it there.
    with pytest.raises(TypeError, match="runs the exclude <function .*<lambda>.* in the sample stage's process, "
                                        "and it does not pickle"):
        bgl.DataLoader(store, seeds, sampler, batch_size=50, pipeline="processes")
