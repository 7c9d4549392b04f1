"""A user's callables in link prediction on a graph without edge types (DGL's contracts there): a negative
sampler ``(g, eids) -> (src, dst)`` and ``exclude`` ``eids -> eids``, batches field by field against DGL's
own loader, no excluded edge in any block, and every wrong output named before anything starts."""
from __future__ import annotations

import functools
import re

import numpy as np
import pytest
import torch

dgl = pytest.importorskip("dgl")

import bgl  # noqa: E402


def ring_graph(n=120, extra=300, seed=3):
    """A homogeneous DGLGraph: a ring plus random edges, each edge with its reverse (edge e's reverse is e ± E)."""
    rng = np.random.default_rng(seed)
    src = np.concatenate([np.arange(n), rng.integers(0, n, extra)])
    dst = np.concatenate([(np.arange(n) + 1) % n, rng.integers(0, n, extra)])
    keep = src != dst
    src, dst = src[keep], dst[keep]
    g = dgl.graph((torch.from_numpy(np.concatenate([src, dst])), torch.from_numpy(np.concatenate([dst, src]))),
                  num_nodes=n)
    g.ndata["feat"] = torch.randn(n, 4, generator=torch.Generator().manual_seed(seed))
    e = src.shape[0]
    return g, torch.from_numpy(np.concatenate([np.arange(e) + e, np.arange(e)]))


def shifted_negatives(g, eids):
    """Deterministic, DGL's homogeneous contract: each source twice, destinations its positive's shifted by 1, 2, ..."""
    s, d = g.find_edges(eids)
    return s.repeat_interleave(2), (d.repeat_interleave(2) + torch.arange(1, 2 * len(eids) + 1)) % g.num_nodes()


def with_reverses(reverse, eids):
    """DGL's callable exclude on a homogeneous graph: the seed edges and their reverses (as 'reverse_id')."""
    return torch.cat([eids, reverse[eids]])


def block_eids(block):
    return set(block.edata[dgl.EID].tolist()) if isinstance(block, dgl.DGLGraph) else set(block.edge_ids.tolist())


def test_callable_negatives_and_exclude_give_dgls_batches():
    g, reverse = ring_graph()
    seeds = torch.arange(0, g.num_edges(), 3)
    exclude = functools.partial(with_reverses, reverse)
    sampler = dgl.dataloading.as_edge_prediction_sampler(dgl.dataloading.MultiLayerFullNeighborSampler(2),
                                                         exclude=exclude, negative_sampler=shifted_negatives)
    ours = list(bgl.DataLoader(g, seeds, sampler, batch_size=64))
    theirs = list(dgl.dataloading.DataLoader(g, seeds, sampler, batch_size=64))
    assert len(ours) == len(theirs) > 3
    for (in_a, pos_a, neg_a, blocks_a), (in_b, pos_b, neg_b, blocks_b) in zip(ours, theirs):
        assert torch.equal(pos_a.ndata[dgl.NID], pos_b.ndata[dgl.NID])
        assert torch.equal(neg_a.ndata[dgl.NID], neg_b.ndata[dgl.NID])
        assert torch.equal(pos_a.edata[dgl.EID], pos_b.edata[dgl.EID])
        for a, b in ((pos_a, pos_b), (neg_a, neg_b)):
            assert all(torch.equal(x, y) for x, y in zip(a.edges(), b.edges()))
        assert set(in_a.tolist()) == set(in_b.tolist())
        banned = set(exclude(pos_a.edata[dgl.EID]).tolist())
        for block_a, block_b in zip(blocks_a, blocks_b):
            assert block_eids(block_a) == block_eids(block_b)
            assert not block_eids(block_a) & banned


def random_negatives(graph, eids):
    """Random destinations under torch's RNG (``graph``: the store the loader was given, a copy in a stage process)."""
    assert type(graph).__name__ == "GraphStore"
    return eids.new_zeros(len(eids)), torch.randint(0, graph.num_nodes, (len(eids),))


def first_nodes(graph, eids):
    return eids.new_zeros(len(eids)), eids.new_zeros(len(eids))


def seeds_and_banned(banned, eids):
    return torch.cat([eids, torch.from_numpy(banned)])


def test_a_random_callable_sampler_is_seeded_per_batch_and_a_store_keeps_excluded_edges_out(random_store):
    """Drawn under torch's RNG reseeded from the batch: the same negatives inline and in stage processes,
    the caller's RNG left as a deterministic sampler leaves it; the callable's store ids in no block."""
    banned = np.arange(0, random_store.num_edges, 11)
    exclude = functools.partial(seeds_and_banned, banned)
    seeds = np.arange(1, random_store.num_edges, 5)
    runs, after = {}, {}
    for mode, negatives in (("inline", random_negatives), ("processes", random_negatives), ("fixed", first_nodes)):
        sampler = bgl.as_edge_prediction_sampler(bgl.NeighborSampler([4, 4]), exclude=exclude,
                                                 negative_sampler=negatives)
        torch.manual_seed(7)
        with bgl.DataLoader(random_store, seeds, sampler, batch_size=200, shuffle=True,
                            pipeline="inline" if mode == "fixed" else mode) as loader:
            runs[mode] = list(loader)
        after[mode] = torch.rand(3)
    assert torch.equal(after["inline"], after["fixed"])
    assert len(runs["inline"]) == len(runs["processes"]) > 2
    for (_, pos_a, neg_a, blocks_a), (_, _, neg_b, _) in zip(runs["inline"], runs["processes"]):
        assert all(torch.equal(x, y) for x, y in zip(neg_a.edges(), neg_b.edges()))
        assert neg_a.num_edges() == pos_a.num_edges()
        excluded = set(pos_a.edata["_ID"].tolist()) | set(banned.tolist())
        assert not excluded & set().union(*(block_eids(b) for b in blocks_a))


def _loader(g, **kw):
    sampler = bgl.as_edge_prediction_sampler(bgl.NeighborSampler([2]), **kw)
    return bgl.DataLoader(g, torch.arange(10), sampler, batch_size=5)


@pytest.mark.parametrize("output, error, message", [
    (lambda g, e: e, TypeError, "must return a (src, dst) pair of id tensors (or {etype: (src, dst)}), got Tensor"),
    (lambda g, e: (e, e, e), TypeError, "must return a (src, dst) pair of id tensors, got tuple of 3"),
    (lambda g, e: {("_N", "likes", "_N"): (e, e)}, ValueError, "returned edge type ('_N', 'likes', '_N'): unknown"),
    (lambda g, e: ([0], [1]), TypeError, "sources must be an integer tensor, got list"),
    (lambda g, e: (e.float(), e), TypeError, "sources must hold integer ids, got a tensor of dtype torch.float32"),
    (lambda g, e: (e[None], e[None]), ValueError, "sources must be 1-D, got shape (1, 1)"),
    (lambda g, e: (e, torch.tensor([1, 2])), ValueError, "returned 1 sources and 2 destinations"),
    (lambda g, e: (e, torch.tensor([120])), ValueError, "destinations holds id 120, outside [0, 120)"),
])
def test_a_callable_negative_samplers_bad_output_is_named_before_anything_starts(output, error, message):
    with pytest.raises(error, match=re.escape(message)):
        _loader(ring_graph()[0], negative_sampler=output)


@pytest.mark.parametrize("output, error, message", [
    (lambda e: [1, 2], TypeError, "must return a tensor of edge ids (or {etype: edge ids}), got list"),
    (lambda e: e.double(), TypeError, "must hold integer ids, got a tensor of dtype torch.float64"),
    (lambda e: e - 1, ValueError, "exclude <lambda>'s edge ids holds id -1, outside [0, "),
])
def test_a_callable_excludes_bad_output_is_named_before_anything_starts(output, error, message):
    with pytest.raises(error, match=re.escape(message)):
        _loader(ring_graph()[0], exclude=output)


def test_dgls_keyed_forms_are_taken_and_other_samplers_refused():
    g, _ = ring_graph()
    etype = g.canonical_etypes[0]
    sampler = bgl.as_edge_prediction_sampler(bgl.NeighborSampler([2]), exclude=lambda e: {etype: e},
                                             negative_sampler=lambda g, e: {etype: shifted_negatives(g, e)})
    _, pos, neg, blocks = next(iter(bgl.DataLoader(g, torch.arange(10), sampler, batch_size=5)))
    assert neg.num_edges() == 10 and not block_eids(blocks[-1]) & set(range(5))
    with pytest.raises(TypeError, match="unsupported negative_sampler builtins.int"):
        _loader(g, negative_sampler=3)
