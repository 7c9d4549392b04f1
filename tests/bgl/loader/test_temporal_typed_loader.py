"""bgl.DataLoader with bgl.TemporalNeighborSampler on a heterogeneous (user-item) DGLGraph."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import bgl

dgl = pytest.importorskip("dgl")

USERS, ITEMS = 120, 80
RELS = [("user", "clicks", "item"), ("item", "clicked-by", "user"), ("item", "similar", "item")]


def user_item_graph(seed: int = 0):
    """Users and items with timed clicks (both directions) and item-item links; a hub item (node 0)."""
    rng = np.random.default_rng(seed)
    u, i = rng.integers(0, USERS, 2000), rng.integers(0, ITEMS, 2000)
    i[:300] = 0
    t = rng.integers(0, 1000, 2000)
    a, b = rng.integers(0, ITEMS, 400), rng.integers(0, ITEMS, 400)
    g = dgl.heterograph({RELS[0]: (u, i), RELS[1]: (i, u), RELS[2]: (a, b)},
                        num_nodes_dict={"user": USERS, "item": ITEMS})
    g.edges[RELS[0]].data["ts"] = torch.from_numpy(t)
    g.edges[RELS[1]].data["ts"] = torch.from_numpy(t)
    g.edges[RELS[2]].data["ts"] = torch.from_numpy(rng.integers(0, 1000, 400))
    g.nodes["user"].data["feat"] = torch.randn(USERS, 4)
    g.nodes["item"].data["feat"] = torch.randn(ITEMS, 4)
    g.nodes["user"].data["nt"] = torch.from_numpy(rng.integers(0, 300, USERS))
    g.nodes["item"].data["nt"] = torch.from_numpy(rng.integers(0, 300, ITEMS))
    return g


def typed_batches(g, layout, fanouts=(2, 3), **names):
    rng = np.random.default_rng(1)
    seeds = {"user": torch.from_numpy(rng.integers(0, USERS, 60)), "item": torch.tensor([0, 0, 5, 7])}
    times = {"user": torch.from_numpy(rng.integers(0, 1000, 60)), "item": torch.tensor([10, 900, 500, 999])}
    names = names or {"edge_timestamp_attr_name": "ts"}
    sampler = bgl.TemporalNeighborSampler(list(fanouts), layout=layout, **names)
    torch.manual_seed(4)
    return list(bgl.DataLoader(g, seeds, sampler, seed_time=times, batch_size=16)), seeds, times


@pytest.mark.parametrize("layout", ["tree", "disjoint"])
def test_no_relation_brings_an_edge_from_the_future(layout):
    g = user_item_graph()
    batches, seeds, times = typed_batches(g, layout)
    assert len(batches) == 4
    seen_out = []
    for input_nodes, output_nodes, blocks in batches:
        seen_out.append(output_nodes)
        first = blocks[0]
        assert set(first.srcdata["seed_time"]) == {"user", "item"}
        for nt in ("user", "item"):
            assert torch.equal(first.srcdata["feat"][nt], g.nodes[nt].data["feat"][input_nodes[nt]])
        for blk in blocks:
            for c in RELS:
                s, d = blk.edges(etype=c)
                eid = blk.edges[c].data["_ID"]
                src_ids, dst_ids = blk.srcnodes[c[0]].data["_ID"], blk.dstnodes[c[2]].data["_ID"]
                gs, gd = g.find_edges(eid, etype=c)
                assert torch.equal(gs, src_ids[s]) and torch.equal(gd, dst_ids[d])
                dst_time = first.srcdata["seed_time"][c[2]][d]
                assert (g.edges[c].data["ts"][eid] <= dst_time).all(), (c, "an edge from the future")
                src_time = first.srcdata["seed_time"][c[0]][s]
                assert torch.equal(src_time, dst_time)
    # every seed, once, by type, in the given order
    for nt in ("user", "item"):
        got = torch.cat([o[nt] for o in seen_out if nt in o])
        assert torch.equal(torch.sort(got).values, torch.sort(seeds[nt]).values)


def test_node_times_keep_future_nodes_out_on_every_relation():
    g = user_item_graph()
    batches, _, _ = typed_batches(g, "disjoint", node_timestamp_attr_name="nt", edge_timestamp_attr_name="ts")
    for _, _, blocks in batches:
        first = blocks[0]
        for blk in blocks:
            for c in RELS:
                s, d = blk.edges(etype=c)
                src_ids = blk.srcnodes[c[0]].data["_ID"]
                assert (g.nodes[c[0]].data["nt"][src_ids[s]] <= first.srcdata["seed_time"][c[2]][d]).all()


def test_per_relation_fanouts_and_bad_seed_times():
    g = user_item_graph()
    fanouts = [{"clicks": 1, "clicked-by": 2, "similar": 0}, {"clicks": 3, "clicked-by": 0, "similar": 1}]
    batches, _, _ = typed_batches(g, "tree", fanouts=fanouts)
    last = batches[0][2][-1]
    assert last.num_edges(RELS[1]) == 0  # the seed layer (DGL order: fanouts[-1]) takes no clicked-by edge
    sampler = bgl.TemporalNeighborSampler([2], edge_timestamp_attr_name="ts")
    with pytest.raises(ValueError, match="seed_time must give the seeds' node types in their order"):
        bgl.DataLoader(g, {"user": torch.arange(3)}, sampler, seed_time={"item": torch.arange(3)})
    with pytest.raises(ValueError, match=r"seed_time\['user'\] must have shape \(3,\)"):
        bgl.DataLoader(g, {"user": torch.arange(3)}, sampler, seed_time={"user": torch.arange(2)})
    with pytest.raises(ValueError, match="node type 'item' has no node array 'when'"):
        bgl.DataLoader(g, {"user": torch.arange(3)}, bgl.TemporalNeighborSampler([2], node_timestamp_attr_name="when"),
                       seed_time={"user": torch.arange(3)})


def test_a_typed_store_with_edge_times(hetero_store, tmp_path):
    from ...sampler.conftest import with_edge_arrays

    rng = np.random.default_rng(6)
    store = with_edge_arrays(hetero_store, tmp_path / "timed", {"ts": rng.integers(0, 100, hetero_store.num_edges)})
    ts, etype, indices = (np.asarray(a) for a in (store.edge_array("ts"), store.etype, store.indices))
    seeds, times = {"paper": torch.arange(0, 300, 5)}, {"paper": torch.from_numpy(rng.integers(0, 100, 60))}
    for layout in ("tree", "disjoint"):
        loader = bgl.DataLoader(str(store.path), seeds, bgl.TemporalNeighborSampler([3, 2], edge_timestamp_attr_name="ts",
                                                                                 layout=layout),
                                seed_time=times, batch_size=20, blocks="bgl")
        for k, (_, _, blocks) in enumerate(loader):
            node_time = times["paper"].numpy()[20 * k:][:20][_subgraphs(blocks[0], store.schema)]
            for b in blocks:
                eid = b.edge_ids.numpy()
                dst = np.repeat(np.arange(b.num_dst), np.diff(b.indptr.numpy()))
                assert np.array_equal(b.etypes.numpy(), etype[eid])
                assert np.array_equal(indices[eid], b.src_ids.numpy()[b.indices.numpy()])
                assert (ts[eid] <= node_time[dst]).all()


def _subgraphs(first, schema) -> np.ndarray:
    """Each input node's subgraph, in ``src_ids`` order, from the per-type ``srcdata["batch"]``."""
    types = np.searchsorted(schema.offsets, first.src_ids.numpy(), side="right") - 1
    out = np.empty(types.shape[0], np.int64)
    for t, nt in enumerate(schema.ntypes):
        out[types == t] = first.srcdata["batch"][nt].numpy()
    return out


@pytest.mark.parametrize("layout", ["tree", "disjoint"])
def test_typed_link_prediction_each_endpoint_at_its_clicks_time(layout):
    g = user_item_graph()
    clicks = RELS[0]
    eids = torch.arange(0, g.num_edges(clicks), 9)
    seed_time = g.edges[clicks].data["ts"][eids] - 1
    sampler = bgl.as_edge_prediction_sampler(
        bgl.TemporalNeighborSampler([2, 3], edge_timestamp_attr_name="ts", layout=layout),
        negative_sampler=bgl.negative_sampler.Uniform(2))
    torch.manual_seed(3)
    loader = bgl.DataLoader(g, {clicks: eids}, sampler, seed_time={clicks: seed_time}, batch_size=50)
    seen = []
    for input_nodes, pos, neg, blocks in loader:
        e = pos.edges[clicks].data["_ID"]
        seen.append(e)
        t = seed_time[torch.searchsorted(eids, e)]
        s, d = pos.edges(etype=clicks)
        gs, gd = g.find_edges(e, etype=clicks)
        assert torch.equal(pos.nodes["user"].data["_ID"][s], gs) and torch.equal(pos.nodes["item"].data["_ID"][d], gd)
        first = blocks[0]
        b = e.shape[0]
        # users: the positive sources then the negative sources; items: the positive then the negative destinations
        assert torch.equal(first.srcdata["seed_time"]["user"][:3 * b], torch.cat([t, t.repeat_interleave(2)]))
        assert torch.equal(first.srcdata["seed_time"]["item"][:3 * b], torch.cat([t, t.repeat_interleave(2)]))
        for nt in ("user", "item"):
            assert torch.equal(blocks[-1].dstnodes[nt].data["_ID"], pos.nodes[nt].data["_ID"])
        for blk in blocks:
            for c in RELS:
                bs, bd = blk.edges(etype=c)
                be = blk.edges[c].data["_ID"]
                assert (g.edges[c].data["ts"][be] <= first.srcdata["seed_time"][c[2]][bd]).all()
    assert torch.equal(torch.sort(torch.cat(seen)).values, eids)


@pytest.fixture(scope="module")
def timed_typed_servers(hetero_store, tmp_path_factory):
    """The shared typed store with int64 edge and node times, its 2-part partition and two real graph servers."""
    from partition import partition_graph

    from ...sampler.conftest import part_args, started_servers, with_edge_arrays, with_node_arrays

    work = tmp_path_factory.mktemp("timed-typed")
    rng = np.random.default_rng(8)
    # "timestamp": the servers warm the typed temporal kernels for it before they are ready
    store = with_edge_arrays(hetero_store, work / "edges",
                             {"timestamp": rng.integers(0, 100, hetero_store.num_edges)})
    store = with_node_arrays(store, work / "store", {"timestamp": rng.integers(0, 100, hetero_store.num_nodes)})
    book = partition_graph(store, "random", 2, work / "p", measure_samples=False)
    with started_servers(part_args(book), work) as addresses:
        yield store, book, addresses


@pytest.mark.parametrize("layout", ["tree", "disjoint"])
@pytest.mark.parametrize("kinds", [("edge",), ("node",), ("edge", "node")])
def test_typed_servers_give_the_stores_temporal_batches(timed_typed_servers, layout, kinds, monkeypatch):
    """Edge times, node times (each part filters by its copy of its in-edges' source times) or both."""
    store, book, addresses = timed_typed_servers
    indices, etype = np.asarray(store.indices), np.asarray(store.etype)
    key = np.zeros(store.num_edges, np.int64)  # what an edge is filtered by
    for kind in kinds:
        key = np.maximum(key, store.edge_array("timestamp") if kind == "edge"
                         else np.asarray(store.node_array("timestamp"))[indices])
    rng = np.random.default_rng(2)
    seeds, times = {"paper": torch.arange(0, 300, 4)}, {"paper": torch.from_numpy(rng.integers(0, 100, 75))}

    def batches(graph):
        sampler = bgl.TemporalNeighborSampler([2, 3], layout=layout,
                                              **{f"{kind}_timestamp_attr_name": "timestamp" for kind in kinds})
        torch.manual_seed(9)
        return list(bgl.DataLoader(graph, seeds, sampler, seed_time=times, batch_size=25, blocks="bgl",
                                   server_timeout=30.0))

    local = batches(str(store.path))
    monkeypatch.setenv("BGL_PARTITION", str(book.path))  # ids in the original store's space
    remote = batches(addresses)
    assert len(local) == len(remote) == 3
    for k, ((il, ol, bl), (ir, orr, br)) in enumerate(zip(local, remote)):
        seed_time = times["paper"].numpy()[25 * k:][:25][_subgraphs(bl[0], store.schema)]
        for nt in il:
            assert torch.equal(il[nt], ir[nt])
        for x, y in zip(bl, br):
            for name in ("src_ids", "indptr", "indices", "etypes"):
                assert torch.equal(getattr(x, name), getattr(y, name)), name
        first = bl[0]
        assert all(torch.equal(first.srcdata[k][nt], br[0].srcdata[k][nt]) for k in ("batch", "seed_time")
                   for nt in first.srcdata[k])
        for x in bl:  # the store's edge ids: each edge real, of its relation, not from the future
            eid = x.edge_ids.numpy()
            assert np.array_equal(etype[eid], x.etypes.numpy())
            assert np.array_equal(indices[eid], x.src_ids.numpy()[x.indices.numpy()])
            assert (key[eid] <= seed_time[np.repeat(np.arange(x.num_dst), np.diff(x.indptr.numpy()))]).all()
