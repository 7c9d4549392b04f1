"""bgl.ingest of an in-memory graph keeps its node times (``g.ndata``, a ``Data``'s or ``HeteroData``'s node
attributes) as store node arrays, so the store samples temporally as the graph does: the same batches."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import bgl
from bgl.errors import IngestError

dgl = pytest.importorskip("dgl")
pyg_data = pytest.importorskip("torch_geometric.data")

N = 200


def csc_ordered_edges(rng, n: int, e: int) -> tuple[np.ndarray, np.ndarray]:
    """Unique, loop-free edges sorted by (dst, src): ingest keeps them as they are (no dedupe or loop
    removal to do), so a store's CSC positions are the input's edge ids; node 3 a hub."""
    src, dst = rng.integers(0, n, e), rng.integers(0, n, e)
    dst[: e // 6] = 3
    pairs = np.unique(np.stack([dst, src], 1), axis=0)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    return pairs[:, 1].astype(np.int64), pairs[:, 0].astype(np.int64)


@pytest.fixture(scope="module")
def timed_graph():
    rng = np.random.default_rng(17)
    src, dst = csc_ordered_edges(rng, N, 2400)
    g = dgl.graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=N)
    g.ndata["feat"] = torch.randn(N, 4)
    g.ndata["label"] = torch.from_numpy(rng.integers(0, 3, N))
    g.ndata["nt"] = torch.from_numpy(rng.integers(0, 1000, N))
    g.ndata["score"] = torch.rand(N)  # a float column: not a node array by default
    g.ndata["_ID"] = torch.arange(N)  # ids, not data
    return g


def dgl_batches(graph, **names):
    rng = np.random.default_rng(4)
    nodes, times = rng.integers(0, N, 75), rng.integers(0, 1000, 75)
    nodes[:5] = 3
    sampler = bgl.TemporalNeighborSampler([3, 4], layout="disjoint", **(names or {"node_timestamp_attr_name": "nt"}))
    torch.manual_seed(7)
    return list(bgl.DataLoader(graph, torch.from_numpy(nodes), sampler, seed_time=torch.from_numpy(times),
                               batch_size=25, blocks="bgl"))


def test_a_dglgraphs_node_times_become_a_node_array_and_sample_the_same(timed_graph, tmp_path):
    store = bgl.ingest(timed_graph, tmp_path / "s")
    assert sorted(store.meta.ndata) == ["nt"]
    assert np.array_equal(store.node_array("nt"), timed_graph.ndata["nt"].numpy())
    local, stored = dgl_batches(timed_graph), dgl_batches(str(store.path))
    assert len(local) == len(stored) == 3
    sampled = 0
    for (ia, oa, ba), (ib, ob, bb) in zip(local, stored):
        assert torch.equal(ia, ib) and torch.equal(oa, ob)
        for x, y in zip(ba, bb):
            for name in ("src_ids", "indptr", "indices", "edge_ids"):
                assert torch.equal(getattr(x, name), getattr(y, name)), name
            sampled += int(x.edge_ids.numel())
    assert sampled > 0
    from bgl.partition import partition_graph  # and a partition of it carries them to its graph servers

    book = partition_graph(store, "random", 2, tmp_path / "p", measure_samples=False)
    for k in range(2):
        part = book.part_store(k)
        lo = int(book.bounds[k])
        assert np.array_equal(part.node_array("nt"), store.node_array("nt")[book.orig_ids[lo:lo + part.num_nodes]])
        assert "nt" in part.ndata_source


def test_node_keys_pick_the_node_arrays(timed_graph, tmp_path):
    store = bgl.ingest(timed_graph, tmp_path / "a", node_keys=["nt", "score"])
    assert sorted(store.meta.ndata) == ["nt", "score"] and store.node_array("score").dtype == np.float32
    assert bgl.ingest(timed_graph, tmp_path / "b", node_keys=[]).meta.ndata == {}
    with pytest.raises(IngestError, match=r"node_keys: g.ndata\['since'\] must have one row per node \(200\), got "
                                          r"missing; there are \[") as info:
        bgl.ingest(timed_graph, tmp_path / "c", node_keys=["since"])
    assert "\n" not in str(info.value) and not (tmp_path / "c").exists()
    with pytest.raises(IngestError, match=r"node_time= \(--node-time\) .* node_keys="):
        bgl.ingest(timed_graph, tmp_path / "d", node_time=str(tmp_path / "t.npy"))


def test_a_pyg_datas_node_time_attr_samples_the_same_from_its_store(timed_graph, tmp_path):
    from bgl.pyg import NeighborLoader

    src, dst = timed_graph.edges()
    data = pyg_data.Data(x=timed_graph.ndata["feat"], y=timed_graph.ndata["label"],
                         edge_index=torch.stack([src, dst]), time=timed_graph.ndata["nt"], num_nodes=N)
    store = bgl.ingest(data, tmp_path / "s")
    assert sorted(store.meta.ndata) == ["time"]

    def batches(graph):
        torch.manual_seed(2)
        return list(NeighborLoader(graph, [4, 3], input_nodes=torch.arange(0, N, 3), time_attr="time",
                                   temporal_strategy="last", batch_size=30, shuffle=True))

    local, stored = batches(data), batches(str(store.path))
    assert len(local) == len(stored) == 3
    for a, b in zip(local, stored):
        for key in ("n_id", "batch", "edge_index", "e_id", "seed_time", "input_id", "x"):
            assert torch.equal(a[key], b[key]), key
        assert (data.time[a.n_id] <= a.seed_time[a.batch]).all(), "a node from the future"


USERS, ITEMS = 70, 50
RELS = [("user", "clicks", "item"), ("item", "clicked-by", "user"), ("item", "similar", "item")]


def user_item(rng):
    u, i = rng.integers(0, USERS, 900), rng.integers(0, ITEMS, 900)
    i[:150] = 0
    a, b = rng.integers(0, ITEMS, 200), rng.integers(0, ITEMS, 200)
    return {RELS[0]: (u, i), RELS[1]: (i, u), RELS[2]: (a, b)}, {"user": rng.integers(0, 300, USERS),
                                                                 "item": rng.integers(0, 300, ITEMS)}


def test_typed_node_times_become_one_node_array_and_sample_the_same(tmp_path):
    rng = np.random.default_rng(5)
    edges, times = user_item(rng)
    g = dgl.heterograph({c: (torch.from_numpy(s), torch.from_numpy(d)) for c, (s, d) in edges.items()},
                        num_nodes_dict={"user": USERS, "item": ITEMS})
    hetero = pyg_data.HeteroData()
    for nt, t in times.items():
        g.nodes[nt].data["nt"] = torch.from_numpy(t)
        hetero[nt].nt = torch.from_numpy(t)
        hetero[nt].num_nodes = int(t.shape[0])
    g.nodes["user"].data["only_users"] = torch.arange(USERS)  # not on every type: not a node array
    for c, (s, d) in edges.items():
        hetero[c].edge_index = torch.from_numpy(np.stack([s, d]))
    store = bgl.ingest(g, tmp_path / "dgl")
    from_pyg = bgl.ingest(hetero, tmp_path / "pyg")
    assert sorted(store.meta.ndata) == sorted(from_pyg.meta.ndata) == ["nt"]
    for typed in (store, from_pyg):  # each type's times at its global ids (DGL sorts the types, PyG keeps them)
        offsets = {t.name: t.offset for t in typed.schema.node_types}
        for nt, t in times.items():
            assert np.array_equal(typed.node_array("nt")[offsets[nt]:][:t.shape[0]], t)

    def batches(graph):
        seeds = {"user": torch.arange(0, USERS, 2), "item": torch.tensor([0, 0, 4, 9])}
        seed_time = {"user": torch.from_numpy(rng_t.integers(0, 300, 35)), "item": torch.tensor([5, 299, 150, 80])}
        sampler = bgl.TemporalNeighborSampler([2, 3], node_timestamp_attr_name="nt", layout="disjoint")
        torch.manual_seed(1)
        return list(bgl.DataLoader(graph, seeds, sampler, seed_time=seed_time, batch_size=13, blocks="bgl"))

    rng_t = np.random.default_rng(0)
    local = batches(g)
    rng_t = np.random.default_rng(0)
    stored = batches(str(store.path))
    assert len(local) == len(stored) == 3
    for (ia, _, ba), (ib, _, bb) in zip(local, stored):
        assert all(torch.equal(ia[k], ib[k]) for k in ia)
        for x, y in zip(ba, bb):
            for name in ("src_ids", "indptr", "indices", "etypes"):
                assert torch.equal(getattr(x, name), getattr(y, name)), name
    with pytest.raises(IngestError, match=r"node_keys: 'only_users' must be a node field of every node type .*"
                                          r"\['item'\] have none"):
        bgl.ingest(g, tmp_path / "bad", node_keys=["only_users"])
