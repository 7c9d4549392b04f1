"""Helpers of the typed-ingest tests: compare two typed stores byte for byte, and sample one with DGL's sampler."""
from __future__ import annotations

from pathlib import Path

import pytest


def _npy_files(path) -> dict[str, bytes]:
    root = Path(path)
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.npy"))}


def _assert_same_typed_store(a, b):
    """Every array file of the two stores is byte-identical, and their schemas are equal."""
    fa, fb = _npy_files(a.path), _npy_files(b.path)
    assert sorted(fa) == sorted(fb)
    for name in fa:
        assert fa[name] == fb[name], name
    assert a.meta.schema == b.meta.schema


@pytest.fixture
def assert_same_typed_store():
    return _assert_same_typed_store


def _assert_fanouts_held(graph, g, fanouts, seeds):
    """bgl.DataLoader over ``graph`` with DGL's NeighborSampler: every block's per-relation in-degree is
    min(fanout, the DGLGraph ``g``'s in-degree) and every sampled edge is an edge of ``g``; returns the batches."""
    import dgl
    import torch

    import bgl

    torch.manual_seed(3)
    batches = list(bgl.DataLoader(graph, seeds, dgl.dataloading.NeighborSampler(fanouts), batch_size=8))
    assert batches
    for _, _, blocks in batches:
        for layer, b in enumerate(blocks):
            for canon in b.canonical_etypes:
                src_t, _, dst_t = canon
                fan = fanouts[layer]
                dst_ids = b.dstnodes[dst_t].data[dgl.NID]
                full = g.in_degrees(dst_ids, etype=canon)
                want = full if fan == -1 else torch.clamp(full, max=fan)
                assert torch.equal(b.in_degrees(etype=canon), want), (layer, canon)
                u, v = b.edges(etype=canon)
                su, sv = b.srcnodes[src_t].data[dgl.NID][u], b.dstnodes[dst_t].data[dgl.NID][v]
                assert bool(g.has_edges_between(su, sv, etype=canon).all())
    return batches


@pytest.fixture
def assert_fanouts_held():
    return _assert_fanouts_held


def _assert_same_batches(a, b):
    import torch

    assert len(a) == len(b)
    for (ia, oa, ba), (ib, ob, bb) in zip(a, b):
        assert ia.keys() == ib.keys() and all(torch.equal(ia[k], ib[k]) for k in ia)
        assert all(torch.equal(oa[k], ob[k]) for k in oa)
        for x, y in zip(ba, bb):
            assert x.canonical_etypes == y.canonical_etypes
            for canon in x.canonical_etypes:
                assert all(torch.equal(p, q) for p, q in zip(x.edges(etype=canon), y.edges(etype=canon)))


@pytest.fixture
def assert_same_batches():
    return _assert_same_batches
