"""Temporal link prediction in bgl.DataLoader: seed edges with times, each endpoint its own subgraph."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import bgl

from .test_temporal_loader import temporal_graph


def link_batches(g, layout, k=2, exclude=None, **kw):
    eids = torch.arange(0, g.num_edges(), 7)
    seed_time = g.edata["ts"][eids] - 1  # PyG's examples: only what happened before the edge
    sampler = bgl.as_edge_prediction_sampler(
        bgl.TemporalNeighborSampler([3, 4], edge_timestamp_attr_name="ts", layout=layout),
        negative_sampler=bgl.negative_sampler.Uniform(k), exclude=exclude)
    torch.manual_seed(5)
    loader = bgl.DataLoader(g, eids, sampler, seed_time=seed_time, batch_size=64, **kw)
    return list(loader), eids, seed_time


@pytest.mark.parametrize("layout", ["tree", "disjoint"])
def test_each_endpoint_is_a_seed_at_its_edges_time_and_nothing_comes_from_the_future(layout):
    g = temporal_graph()
    src_all, dst_all = (t.numpy() for t in g.edges())
    ts = g.edata["ts"].numpy()
    batches, eids, seed_time = link_batches(g, layout)
    assert len(batches) == -(-eids.shape[0] // 64)
    seen = []
    for input_nodes, pos, neg, blocks in batches:
        b = pos.num_edges()
        batch_eids = pos.edata["_ID"].numpy()
        seen.append(batch_eids)
        t = seed_time.numpy()[np.searchsorted(eids.numpy(), batch_eids)]
        seeds = blocks[-1].dstdata["_ID"].numpy()
        assert np.array_equal(pos.ndata["_ID"].numpy(), seeds) and seeds.shape[0] == 2 * b + 2 * 2 * b
        ps, pd = (x.numpy() for x in pos.edges())
        assert np.array_equal(seeds[ps], src_all[batch_eids]) and np.array_equal(seeds[pd], dst_all[batch_eids])
        ns, nd = (x.numpy() for x in neg.edges())
        assert np.array_equal(seeds[ns], np.repeat(src_all[batch_eids], 2))
        node_time = blocks[0].srcdata["seed_time"].numpy()
        assert np.array_equal(node_time[:2 * b], np.concatenate([t, t]))
        assert np.array_equal(node_time[2 * b:6 * b], np.tile(np.repeat(t, 2), 2))
        for blk in blocks:
            s, d = (x.numpy() for x in blk.edges())
            e = blk.edata["_ID"].numpy()
            ids = blk.srcdata["_ID"].numpy()
            assert np.array_equal(src_all[e], ids[s]) and np.array_equal(dst_all[e], ids[d])
            assert (ts[e] <= node_time[d]).all(), "an edge from the future"
        assert torch.equal(blocks[0].srcdata["feat"], g.ndata["feat"][input_nodes])
    assert np.array_equal(np.sort(np.concatenate(seen)), eids.numpy())


def test_processes_pipeline_gives_the_inline_batches():
    g = temporal_graph()
    inline, _, _ = link_batches(g, "disjoint")
    other, _, _ = link_batches(g, "disjoint", pipeline="processes")
    for (ia, pa, na, ba), (ib, pb, nb, bb) in zip(inline, other, strict=True):
        assert torch.equal(ia, ib) and torch.equal(pa.edata["_ID"], pb.edata["_ID"])
        assert all(torch.equal(x.edata["_ID"], y.edata["_ID"]) for x, y in zip(ba, bb))


def test_exclusion_by_id_is_refused_with_what_to_do():
    g = temporal_graph()
    with pytest.raises(ValueError, match="excludes by time"):
        link_batches(g, "tree", exclude="self")
