"""bgl.TemporalNeighborSampler(node_timestamp_attr_name=) on a store's node times (``bgl ingest --node-time``):
the batches a DGLGraph with the same ``g.ndata`` times gives, and over a partition's two real graph servers
the store's batches, never a node newer than its subgraph's seed time (typed graphs over servers:
test_temporal_typed_loader.py)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import bgl
from bgl.store import write_store

from ...sampler.conftest import hub_csc, slice_store, started_servers

dgl = pytest.importorskip("dgl")

N = 300


@pytest.fixture(scope="module")
def timed_store(tmp_path_factory):
    """300 nodes, a hub (node 4: ~400 in-edges), int64 edge times ``ts`` and node times ``nt``."""
    rng = np.random.default_rng(13)
    indptr, indices = hub_csc(rng, N, 12, 4, 400)
    e = int(indptr[-1])
    return write_store(tmp_path_factory.mktemp("nt-loader") / "store", indptr, indices,
                       feat=rng.standard_normal((N, 4)).astype(np.float32), label=rng.integers(0, 3, N),
                       edata={"ts": rng.integers(0, 1000, e).astype(np.int64)},
                       ndata={"nt": rng.integers(0, 1000, N).astype(np.int64)})


def as_dglgraph(store):
    """The store's graph as a DGLGraph whose edge ids are the store's CSC positions, with its times."""
    indptr, indices = np.asarray(store.indptr), np.asarray(store.indices).astype(np.int64)
    dst = np.repeat(np.arange(store.num_nodes), np.diff(indptr))
    g = dgl.graph((torch.from_numpy(indices), torch.from_numpy(dst)), num_nodes=store.num_nodes)
    g.ndata["feat"] = torch.from_numpy(np.array(store.feat))
    g.ndata["label"] = torch.from_numpy(np.array(store.label))
    g.ndata["nt"] = torch.from_numpy(np.array(store.node_array("nt")))
    g.edata["ts"] = torch.from_numpy(np.array(store.edge_array("ts")))
    return g


def batches(graph, layout="tree", strategy="uniform", **names):
    rng = np.random.default_rng(5)
    nodes = rng.integers(0, N, 90)
    nodes[:6] = 4
    times = rng.integers(0, 1000, 90)
    sampler = bgl.TemporalNeighborSampler([3, 4], layout=layout, strategy=strategy,
                                          **(names or {"node_timestamp_attr_name": "nt"}))
    torch.manual_seed(3)
    return list(bgl.DataLoader(graph, torch.from_numpy(nodes), sampler, seed_time=torch.from_numpy(times),
                               batch_size=30, blocks="bgl")), times


def check_no_future(store, blks, given, edges: bool):
    """Each block edge is the store's (CSC position) and neither it nor its source is newer than its subgraph."""
    node_time, indices = np.asarray(store.node_array("nt")), np.asarray(store.indices)
    seed_time = np.asarray(given)[blks[0].srcdata["batch"].numpy()]
    for b in blks:
        eid, src_ids = b.edge_ids.numpy(), b.src_ids.numpy()
        d = np.repeat(np.arange(b.num_dst), np.diff(b.indptr.numpy()))
        src = src_ids[b.indices.numpy()]
        assert np.array_equal(indices[eid], src)
        key = np.maximum(node_time[src], store.edge_array("ts")[eid]) if edges else node_time[src]
        assert (key <= seed_time[d]).all(), "a node (or an edge) from the future"


def same_batches(a, b):
    assert len(a) == len(b) and len(a) == 3
    for (inp_a, out_a, ba), (inp_b, out_b, bb) in zip(a, b):
        assert torch.equal(inp_a, inp_b) and torch.equal(out_a, out_b)
        assert torch.equal(ba[0].srcdata["batch"], bb[0].srcdata["batch"])
        for x, y in zip(ba, bb):
            for name in ("src_ids", "indptr", "indices", "edge_ids"):
                assert torch.equal(getattr(x, name), getattr(y, name)), name
            assert all(torch.equal(x.edata[k], y.edata[k]) for k in x.edata)


@pytest.mark.parametrize("layout", ["tree", "disjoint"])
@pytest.mark.parametrize("edges", [False, True])
def test_a_stores_node_times_give_the_dglgraphs_batches(timed_store, layout, edges):
    names = {"node_timestamp_attr_name": "nt", **({"edge_timestamp_attr_name": "ts"} if edges else {})}
    local, times = batches(str(timed_store.path), layout, **names)
    same_batches(local, batches(as_dglgraph(timed_store), layout, **names)[0])
    for k, (_, _, blks) in enumerate(local):
        check_no_future(timed_store, blks, times[30 * k:][:30], edges)


def test_a_node_time_name_the_store_lacks_is_one_line(timed_store):
    sampler = bgl.TemporalNeighborSampler([2], node_timestamp_attr_name="since")
    with pytest.raises(ValueError, match=r"node_timestamp_attr_name='since': graph store .* has no node array "
                                         r"'since'; it has \['nt'\]") as info:
        bgl.DataLoader(str(timed_store.path), torch.tensor([1]), sampler, seed_time=torch.tensor([5]))
    assert "\n" not in str(info.value)


def test_a_non_integer_node_time_array_is_one_line(tmp_path):
    store = write_store(tmp_path / "s", np.array([0, 1, 2]), np.array([1, 0]), ndata={"nt": np.ones(2, np.float32)})
    sampler = bgl.TemporalNeighborSampler([2], node_timestamp_attr_name="nt")
    with pytest.raises(TypeError, match=r"node time array 'nt' of .* must be integers .* got dtype float32"):
        bgl.DataLoader(str(store.path), torch.tensor([1]), sampler, seed_time=torch.tensor([5]))


@pytest.fixture(scope="module")
def two_servers(timed_store, tmp_path_factory):
    work = tmp_path_factory.mktemp("nt-loader-servers")
    parts = [slice_store(timed_store, lo, hi, work / f"part-{k}") for k, (lo, hi) in enumerate([(0, 120), (120, N)])]
    with started_servers([["--store", str(p.path)] for p in parts], work) as addresses:
        yield addresses


@pytest.mark.parametrize("layout", ["tree", "disjoint"])
@pytest.mark.parametrize("strategy", ["uniform", "last"])
def test_servers_filter_by_their_node_times_and_give_the_stores_batches(timed_store, two_servers, layout, strategy):
    names = {"node_timestamp_attr_name": "nt", "edge_timestamp_attr_name": "ts"}
    local, times = batches(str(timed_store.path), layout, strategy, **names)
    same_batches(local, batches(two_servers, layout, strategy, **names)[0])
    for k, (_, _, blks) in enumerate(local):
        check_no_future(timed_store, blks, times[30 * k:][:30], True)
    sampler = bgl.TemporalNeighborSampler([2], node_timestamp_attr_name="since")
    with pytest.raises(ValueError, match=r"graph servers have no node array 'since'.*they have \['nt'\]"):
        bgl.DataLoader(two_servers, torch.tensor([1]), sampler, seed_time=torch.tensor([5]))


def test_ingested_node_times_feed_the_loader_and_pygs(tmp_path):
    """`bgl ingest --node-time` then bgl.DataLoader(node_timestamp_attr_name=) and PyG's NeighborLoader(time_attr=)
    (node-level, as PyG decides for a node attribute: the seeds' own times by default)."""
    from bgl.cli import main
    from bgl.pyg import NeighborLoader
    from bgl.store import GraphStore

    rng = np.random.default_rng(0)
    src, dst = rng.integers(0, 50, 600), rng.integers(0, 50, 600)
    (tmp_path / "g.txt").write_text("".join(f"{a} {b}\n" for a, b in zip(src, dst)))
    node_time = rng.integers(0, 100, 50)
    (tmp_path / "t.txt").write_text("\n".join(map(str, node_time)) + "\n")
    assert main(["ingest", str(tmp_path / "g.txt"), str(tmp_path / "s"), "--no-progress", "--no-symmetrize",
                 "--num-nodes", "50", "--node-time", str(tmp_path / "t.txt")]) == 0
    store = GraphStore(tmp_path / "s")
    seeds, times = torch.arange(50), torch.from_numpy(rng.integers(0, 100, 50))
    sampler = bgl.TemporalNeighborSampler([4, 4], node_timestamp_attr_name="timestamp", layout="disjoint")
    for k, (_, _, blks) in enumerate(bgl.DataLoader(str(store.path), seeds, sampler, seed_time=times, batch_size=25,
                                                    blocks="bgl")):
        seed_time = times.numpy()[25 * k:][:25][blks[0].srcdata["batch"].numpy()]
        for b in blks:
            d = np.repeat(np.arange(b.num_dst), np.diff(b.indptr.numpy()))
            assert (node_time[b.src_ids.numpy()[b.indices.numpy()]] <= seed_time[d]).all()
    sampled = 0
    for batch in NeighborLoader(str(store.path), [4, 4], input_nodes=seeds, time_attr="timestamp", batch_size=25):
        seed_time = node_time[batch.n_id[:batch.batch_size].numpy()]
        assert np.array_equal(batch.seed_time.numpy(), seed_time)
        assert (node_time[batch.n_id.numpy()] <= seed_time[batch.batch.numpy()]).all(), "a node from the future"
        sampled += batch.e_id.numel()
    assert sampled > 0
