"""bgl.DataLoader with bgl.TemporalNeighborSampler: seeds with times through the one pipeline.

Every batch is checked against the graph itself: each block edge is a real edge of the graph (by
its id), and its time is <= the time of the subgraph its destination belongs to, at every hop.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import bgl
from bgl.loader.stages.temporal_blocks import TIME_KEY

N, E = 300, 4000


def temporal_graph(seed: int = 0, n: int = N, e: int = E, hub: bool = True):
    """A random DGLGraph with a hub (node 3 receives a fifth of the edges), int64 edge times ``ts``,
    node times ``nt``, features and labels."""
    dgl = pytest.importorskip("dgl")
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, e), rng.integers(0, n, e)
    if hub:
        dst[: e // 5] = 3
    g = dgl.graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=n)
    g.ndata["feat"] = torch.randn(n, 6)
    g.ndata["label"] = torch.randint(0, 4, (n,))
    g.ndata["nt"] = torch.from_numpy(rng.integers(0, 500, n))
    g.edata["ts"] = torch.from_numpy(rng.integers(0, 1000, e))
    return g


def seeds_and_times(n_seeds: int = 80, seed: int = 1, n: int = N):
    rng = np.random.default_rng(seed)
    nodes = rng.integers(0, n, n_seeds)  # repeats on purpose: a node is a seed at several times
    nodes[:5] = 3  # the hub
    return torch.from_numpy(nodes), torch.from_numpy(rng.integers(0, 1000, n_seeds))


def loader(g, fanouts=(4, 3), layout="tree", strategy="uniform", seeds=None, **kw):
    nodes, times = seeds if seeds is not None else seeds_and_times()
    names = {k: kw.pop(k) for k in ("edge_timestamp_attr_name", "node_timestamp_attr_name") if k in kw}
    names = names or {"edge_timestamp_attr_name": "ts"}
    sampler = bgl.TemporalNeighborSampler(list(fanouts), layout=layout, strategy=strategy, **names)
    torch.manual_seed(11)
    return bgl.DataLoader(g, nodes, sampler, seed_time=times, batch_size=kw.pop("batch_size", 32), **kw)


def check_batch(g, blocks, given, edge_time=None, node_time=None, time_key="ts"):
    """Every edge is the graph's, no edge (or source node) is newer than its subgraph's seed time
    (``given``: the times the caller gave this batch's seeds)."""
    src_all, dst_all = (t.numpy() for t in g.edges())
    batch = blocks[0].srcdata["batch"].numpy()
    seed_time = np.asarray(given)[batch]
    assert np.array_equal(blocks[0].srcdata["seed_time"].numpy(), seed_time)
    for b in blocks:
        ids = b.srcdata["_ID"].numpy()  # dgl.NID; a DGL block's edata["_ID"] (dgl.EID) are edge ids
        s, d = (t.numpy() for t in b.edges())
        eid = b.edata["_ID"].numpy()
        assert np.array_equal(src_all[eid], ids[s]) and np.array_equal(dst_all[eid], ids[d])
        assert np.array_equal(batch[s], batch[d]), "an edge crosses subgraphs"
        # An edge's key: its time, with node times the later of it and its source's.
        keys = [t for t in (None if edge_time is None else edge_time[eid],
                            None if node_time is None else node_time[ids[s]]) if t is not None]
        key = np.maximum(*keys) if len(keys) == 2 else keys[0]
        assert (key <= seed_time[d]).all(), "an edge or a node from the future"
        assert np.array_equal(b.edata[time_key].numpy(), key)
        assert (seed_time[s] == seed_time[d]).all()


@pytest.mark.parametrize("layout", ["tree", "disjoint"])
@pytest.mark.parametrize("strategy", ["uniform", "last"])
def test_no_future_edge_at_any_hop(layout, strategy):
    g = temporal_graph()
    ts = g.edata["ts"].numpy()
    n_batches = 0
    times = seeds_and_times()[1].numpy()
    for inp, out, blocks in loader(g, layout=layout, strategy=strategy):
        check_batch(g, blocks, times[32 * n_batches:][:out.shape[0]], edge_time=ts)
        assert torch.equal(inp, blocks[0].srcdata["_ID"]) and out.shape[0] == blocks[-1].num_dst_nodes()
        assert torch.equal(blocks[0].srcdata["feat"], g.ndata["feat"][inp])
        assert torch.equal(blocks[-1].dstdata["label"], g.ndata["label"][out])
        n_batches += 1
    assert n_batches == 3


def test_seeds_are_yielded_once_each_in_order_with_their_times():
    g = temporal_graph()
    nodes, times = seeds_and_times()
    got_nodes, got_times = [], []
    for inp, out, blocks in loader(g, seeds=(nodes, times), layout="disjoint"):
        got_nodes.append(out)
        got_times.append(blocks[0].srcdata["seed_time"][: out.shape[0]])
    assert torch.equal(torch.cat(got_nodes), nodes) and torch.equal(torch.cat(got_times), times)


def test_last_takes_the_most_recent_eligible_edges():
    g = temporal_graph(hub=True)
    ts = g.edata["ts"].numpy()
    src_all, dst_all = (t.numpy() for t in g.edges())
    for _, out, blocks in loader(g, fanouts=(5,), strategy="last"):
        b = blocks[-1]
        seed_time = blocks[0].srcdata["seed_time"].numpy()
        _, d = (t.numpy() for t in b.edges())
        eid = b.edata["_ID"].numpy()
        for i, v in enumerate(out.numpy()):
            mine = np.sort(ts[eid[d == i]])[::-1]
            eligible = np.sort(ts[(dst_all == v) & (ts <= seed_time[i])])[::-1][:5]
            assert np.array_equal(mine, eligible), (v, mine, eligible)


@pytest.mark.parametrize("layout", ["tree", "disjoint"])
def test_fanout_minus_one_takes_every_eligible_edge(layout):
    g = temporal_graph(hub=True)
    ts = g.edata["ts"].numpy()
    dst_all = g.edges()[1].numpy()
    for _, out, blocks in loader(g, fanouts=(-1,), layout=layout):
        b = blocks[-1]
        seed_time = blocks[0].srcdata["seed_time"].numpy()
        d = b.edges()[1].numpy()
        eid = b.edata["_ID"].numpy()
        for i, v in enumerate(out.numpy()):
            eligible = np.flatnonzero((dst_all == v) & (ts <= seed_time[i]))
            assert np.array_equal(np.sort(eid[d == i]), eligible), v
    with pytest.raises(ValueError, match=r"int >= 1 or -1 \(all neighbours\), got -2"):
        bgl.TemporalNeighborSampler([-2], edge_timestamp_attr_name="ts")


def test_with_all_times_equal_the_seed_layer_is_the_neighbour_samplers():
    g = temporal_graph()
    g.edata["ts"] = torch.zeros(E, dtype=torch.int64)
    nodes = torch.arange(0, N, 4)
    temporal = list(loader(g, fanouts=(3,), seeds=(nodes, torch.zeros_like(nodes)), batch_size=25))
    torch.manual_seed(11)
    plain = list(bgl.DataLoader(g, nodes, bgl.NeighborSampler([3]), batch_size=25))
    assert len(temporal) == len(plain)
    for (_, out_t, bt), (_, out_p, bp) in zip(temporal, plain):
        assert torch.equal(out_t, out_p)
        for i in range(out_t.shape[0]):
            picked = [set(b.in_edges(i, form="eid").tolist()) for b in (bt[-1], bp[-1])]
            ids = [set(b.edata["_ID"][list(p)].tolist()) for b, p in zip((bt[-1], bp[-1]), picked)]
            assert ids[0] == ids[1]


def test_node_times_keep_future_nodes_out():
    g = temporal_graph()
    nt = g.ndata["nt"].numpy()
    times = seeds_and_times()[1].numpy()
    for k, (_, out, blocks) in enumerate(loader(g, layout="disjoint", node_timestamp_attr_name="nt",
                                                edge_timestamp_attr_name="ts")):
        check_batch(g, blocks, times[32 * k:][:out.shape[0]], edge_time=g.edata["ts"].numpy(), node_time=nt)
    for k, (_, out, blocks) in enumerate(loader(g, node_timestamp_attr_name="nt")):
        check_batch(g, blocks, times[32 * k:][:out.shape[0]], node_time=nt, time_key=TIME_KEY)


@pytest.mark.parametrize("pipeline", ["thread", "processes"])
def test_pipelines_give_the_inline_batches(pipeline):
    g = temporal_graph()
    inline = list(loader(g, layout="disjoint"))
    other = list(loader(g, layout="disjoint", pipeline=pipeline))
    assert len(inline) == len(other)
    for (ia, oa, ba), (ib, ob, bb) in zip(inline, other):
        assert torch.equal(ia, ib) and torch.equal(oa, ob)
        for x, y in zip(ba, bb):
            assert torch.equal(x.edata["_ID"], y.edata["_ID"]) and torch.equal(x.edata["ts"], y.edata["ts"])
        assert torch.equal(ba[0].srcdata["feat"], bb[0].srcdata["feat"])


@pytest.mark.parametrize("change, message", [
    (dict(seed_time=None), "needs a time for every seed"),
    (dict(seed_time=torch.zeros(3, dtype=torch.int64)), "seed_time must have shape"),
    (dict(seed_time=torch.zeros(80)), "must be integers"),
    (dict(edge_timestamp_attr_name="nope"), "nope"),
    (dict(node_timestamp_attr_name="nope"), "has no node array 'nope'"),
])
def test_bad_temporal_input_is_one_line(change, message):
    g = temporal_graph()
    nodes, times = seeds_and_times()
    seed_time = change.pop("seed_time", times)
    names = change or {"edge_timestamp_attr_name": "ts"}
    with pytest.raises((ValueError, TypeError), match=message):
        bgl.DataLoader(g, nodes, bgl.TemporalNeighborSampler([2], **names), seed_time=seed_time, batch_size=8)


def test_seed_time_needs_a_temporal_sampler_and_the_sampler_needs_a_time_array():
    g = temporal_graph()
    nodes, times = seeds_and_times()
    with pytest.raises(ValueError, match="seed_time= is for temporal sampling"):
        bgl.DataLoader(g, nodes, bgl.NeighborSampler([2]), seed_time=times)
    with pytest.raises(ValueError, match="needs node_timestamp_attr_name= or edge_timestamp_attr_name="):
        bgl.TemporalNeighborSampler([2])
    with pytest.raises(ValueError, match="replace=True"):
        bgl.TemporalNeighborSampler([2], replace=True, edge_timestamp_attr_name="ts")
    with pytest.raises(ValueError, match="layout"):
        bgl.TemporalNeighborSampler([2], edge_timestamp_attr_name="ts", layout="flat")
    with pytest.raises(ValueError, match=r"seed_time must have shape \(10,\)"):  # a time per seed edge
        bgl.DataLoader(g, torch.arange(10), bgl.as_edge_prediction_sampler(
            bgl.TemporalNeighborSampler([2], edge_timestamp_attr_name="ts")), seed_time=times[:9])
