"""Weighted temporal sampling in the loaders: ``bgl.TemporalNeighborSampler(prob_name=)`` (GraphBolt's) and
``bgl.pyg.NeighborLoader(time_attr=, weight_attr=)`` (PyG's) never draw a future or zero-weight edge, and a
store ingested from the DGLGraph, and its two real graph servers, give its batches; what cannot be weighted
is one line before any batch."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import bgl

from ...sampler.conftest import slice_store, started_servers
from .test_temporal_loader_servers import servers, timed_store  # noqa: F401 (module fixtures)

dgl = pytest.importorskip("dgl")

N = 150


@pytest.fixture(scope="module")
def weighted_graph():
    """Unique loop-free edges in CSC order (ingest keeps them as given), edge times ``timestamp`` and
    weights ``w`` (a third of them 0), node 2 a hub."""
    rng = np.random.default_rng(8)
    src, dst = rng.integers(0, N, 2000), rng.integers(0, N, 2000)
    dst[:400] = 2
    pairs = np.unique(np.stack([dst, src], 1), axis=0)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    g = dgl.graph((torch.from_numpy(pairs[:, 1]), torch.from_numpy(pairs[:, 0])), num_nodes=N)
    e = g.num_edges()
    g.ndata["feat"] = torch.randn(N, 3)
    g.edata["timestamp"] = torch.from_numpy(rng.integers(0, 1000, e))
    w = rng.random(e).astype(np.float32)
    w[rng.random(e) < 0.33] = 0
    g.edata["w"] = torch.from_numpy(w)
    return g


def weighted_batches(graph, layout="tree"):
    rng = np.random.default_rng(1)
    nodes, times = rng.integers(0, N, 60), rng.integers(0, 1000, 60)
    nodes[:6] = 2
    sampler = bgl.TemporalNeighborSampler([4, 5], edge_timestamp_attr_name="timestamp", prob_name="w", layout=layout)
    torch.manual_seed(3)
    return list(bgl.DataLoader(graph, torch.from_numpy(nodes), sampler, seed_time=torch.from_numpy(times),
                               batch_size=20, blocks="bgl")), times


@pytest.mark.parametrize("layout", ["tree", "disjoint"])
def test_weighted_blocks_have_no_future_or_zero_weight_edge_and_the_store_gives_them(weighted_graph, tmp_path, layout):
    local, times = weighted_batches(weighted_graph, layout)
    store = bgl.ingest(weighted_graph, tmp_path / "s")
    stored, _ = weighted_batches(str(store.path), layout)
    ts, w = weighted_graph.edata["timestamp"].numpy(), weighted_graph.edata["w"].numpy()
    sampled = 0
    for k, ((ia, oa, ba), (ib, ob, bb)) in enumerate(zip(local, stored)):
        assert torch.equal(ia, ib) and torch.equal(oa, ob)
        seed_time = times[20 * k:][:20][ba[0].srcdata["batch"].numpy()] if layout == "disjoint" else None
        for x, y in zip(ba, bb):
            for name in ("src_ids", "indptr", "indices", "edge_ids"):
                assert torch.equal(getattr(x, name), getattr(y, name)), name
            eid = x.edge_ids.numpy()
            assert (w[eid] > 0).all(), "a zero-weight edge"
            if seed_time is not None:
                d = np.repeat(np.arange(x.num_dst), np.diff(x.indptr.numpy()))
                assert (ts[eid] <= seed_time[d]).all(), "an edge from the future"
            sampled += eid.shape[0]
    assert len(local) == 3 and sampled > 0


def test_pygs_weight_attr_with_time_attr(weighted_graph):
    from torch_geometric.data import Data

    from bgl.pyg import NeighborLoader

    src, dst = weighted_graph.edges()
    data = Data(x=weighted_graph.ndata["feat"], edge_index=torch.stack([src, dst]),
                time=weighted_graph.edata["timestamp"], w=weighted_graph.edata["w"], num_nodes=N)
    rng = np.random.default_rng(2)
    seeds, seed_time = torch.from_numpy(rng.integers(0, N, 40)), torch.from_numpy(rng.integers(0, 1000, 40))
    batches = list(NeighborLoader(data, [5, 5], input_nodes=seeds, input_time=seed_time, time_attr="time",
                                  weight_attr="w", batch_size=20))
    assert len(batches) == 2 and sum(b.e_id.numel() for b in batches) > 0
    for b in batches:
        dst_local = b.edge_index[1]
        assert (data.w[b.e_id] > 0).all(), "a zero-weight edge"
        assert (data.time[b.e_id] <= b.seed_time[b.batch[dst_local]]).all(), "an edge from the future"
    from bgl.pyg import LinkNeighborLoader

    pairs = torch.from_numpy(rng.integers(0, N, (2, 30)))
    for b in LinkNeighborLoader(data, [5, 5], edge_label_index=pairs, edge_label_time=seed_time[:30],
                                time_attr="time", weight_attr="w", neg_sampling_ratio=1.0, batch_size=15):
        assert (data.w[b.e_id] > 0).all(), "a zero-weight edge"
        assert (data.time[b.e_id] <= b.edge_label_time[b.batch[b.edge_index[1]]]).all(), "an edge from the future"
    with pytest.raises(ValueError, match=r"weight_attr='w' weighs the uniform temporal draw; temporal_strategy='last'"):
        NeighborLoader(data, [5], input_nodes=seeds, input_time=seed_time, time_attr="time", weight_attr="w",
                       temporal_strategy="last")


def test_what_cannot_be_weighted_is_one_line_before_any_batch(weighted_graph, servers):  # noqa: F811
    with pytest.raises(ValueError, match=r"prob_name='w' weighs a uniform draw; strategy='last'"):
        bgl.TemporalNeighborSampler([2], edge_timestamp_attr_name="timestamp", prob_name="w", strategy="last")
    one = {"seed_time": torch.tensor([5])}
    sampler = bgl.TemporalNeighborSampler([2], edge_timestamp_attr_name="timestamp", prob_name="w")
    with pytest.raises(ValueError, match=r"prob_name='w': the graph servers have no edge array 'w'; they have "
                                         r"\['timestamp'\]") as info:
        bgl.DataLoader(servers, torch.tensor([1]), sampler, **one)
    assert "\n" not in str(info.value)
    g = dgl.heterograph({("a", "r", "b"): ([0, 1], [1, 0]), ("b", "s", "a"): ([0], [1])})
    g.edges["r"].data["w"] = torch.ones(2)
    with pytest.raises(ValueError, match=r"weighted temporal sampling runs on an untyped graph .* not on a typed"):
        bgl.DataLoader(g, {"a": torch.tensor([0])}, bgl.TemporalNeighborSampler(
            [2], node_timestamp_attr_name="t", prob_name="w"), seed_time={"a": torch.tensor([1])})
    from torch_geometric.data import HeteroData

    from bgl.pyg import NeighborLoader

    hetero = HeteroData()
    hetero["a"].x, hetero["a"].time = torch.zeros(3, 2), torch.arange(3)
    hetero["a", "r", "a"].edge_index, hetero["a", "r", "a"].w = torch.tensor([[0, 1, 2], [1, 2, 0]]), torch.ones(3)
    with pytest.raises(ValueError, match=r"on a HeteroData with time_attr= does not take weight_attr="):
        NeighborLoader(hetero, {("a", "r", "a"): [2]}, input_nodes=("a", torch.arange(3)), time_attr="time",
                       weight_attr="w")
    with pytest.raises(ValueError, match=r"prob_name='since': .*has no edge"):
        bgl.DataLoader(weighted_graph, torch.tensor([1]), bgl.TemporalNeighborSampler(
            [2], edge_timestamp_attr_name="timestamp", prob_name="since"), **one)


@pytest.fixture(scope="module")
def weighted_servers(weighted_graph, tmp_path_factory):
    """``(store, addresses)``: the graph ingested, and two `bgl serve` processes over its id ranges."""
    work = tmp_path_factory.mktemp("weighted-servers")
    store = bgl.ingest(weighted_graph, work / "store")
    parts = [slice_store(store, lo, hi, work / f"part-{k}") for k, (lo, hi) in enumerate([(0, 70), (70, N)])]
    with started_servers([["--store", str(p.path)] for p in parts], work) as addresses:
        yield store, addresses


@pytest.mark.parametrize("layout", ["tree", "disjoint"])
def test_servers_give_the_stores_weighted_batches(weighted_servers, layout):
    store, addresses = weighted_servers
    local, _ = weighted_batches(str(store.path), layout)
    remote, _ = weighted_batches(addresses, layout)
    assert len(local) == len(remote) == 3
    for (ia, oa, ba), (ib, ob, bb) in zip(local, remote):
        assert torch.equal(ia, ib) and torch.equal(oa, ob)
        for x, y in zip(ba, bb):
            for name in ("src_ids", "indptr", "indices", "edge_ids"):
                assert torch.equal(getattr(x, name), getattr(y, name)), name
            assert (np.asarray(store.edge_array("w"))[x.edge_ids.numpy()] > 0).all()


def test_pygs_weighted_temporal_loader_over_servers(weighted_servers):
    from bgl.pyg import NeighborLoader

    store, addresses = weighted_servers
    rng = np.random.default_rng(6)
    seeds, seed_time = torch.from_numpy(rng.integers(0, N, 40)), torch.from_numpy(rng.integers(0, 1000, 40))

    def batches(graph):
        torch.manual_seed(0)
        return list(NeighborLoader(graph, [4, 4], input_nodes=seeds, input_time=seed_time, time_attr="timestamp",
                                   weight_attr="w", batch_size=20, shuffle=True))

    for a, b in zip(batches(str(store.path)), batches(addresses)):
        for key in ("n_id", "batch", "edge_index", "e_id"):
            assert torch.equal(a[key], b[key]), key
