"""bgl.pyg.NeighborLoader / LinkNeighborLoader with time_attr=: PyG's temporal loaders through bgl.DataLoader.

Every batch is checked against the ``Data``'s own arrays: each edge is the Data's edge ``e_id``, stays in
its subgraph, and is no newer than that subgraph's seed time, at every hop.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch_geometric.data import Data, HeteroData

from bgl.pyg import LinkNeighborLoader, NeighborLoader


def temporal_data(seed=0, n=80, e=1500, tmax=1000):
    rng = np.random.default_rng(seed)
    ei = rng.integers(0, n, (2, e))
    ei[1, : e // 6] = 5  # a hub
    return Data(edge_index=torch.from_numpy(ei), num_nodes=n, x=torch.randn(n, 8),
                y=torch.from_numpy(rng.integers(0, 3, n)), t=torch.from_numpy(rng.integers(0, tmax, e)),
                node_t=torch.from_numpy(rng.integers(0, tmax, n)))


def check_no_future(data, b, seed_time_of_node, kind="edge"):
    """Each edge is the Data's ``e_id``, stays in its subgraph, and is not newer than its seed time."""
    src, dst = b.edge_index
    assert torch.equal(data.edge_index[:, b.e_id], torch.stack([b.n_id[src], b.n_id[dst]]))
    assert torch.equal(b.batch[src], b.batch[dst]), "an edge crosses subgraphs"
    limit = seed_time_of_node[dst]
    assert bool((data.t[b.e_id] <= limit).all()) if kind == "edge" else \
        bool((data.node_t[b.n_id[src]] <= limit).all()), "an edge or node from the future"
    assert torch.equal(b.t, data.t[b.e_id]) and torch.equal(b.x, data.x[b.n_id])  # the Data's own attributes


@pytest.mark.parametrize("strategy", ["uniform", "last"])
@pytest.mark.parametrize("seed", range(3))
def test_node_loader_never_samples_the_future(seed, strategy):
    data = temporal_data(seed)
    rng = np.random.default_rng(seed + 10)
    input_nodes = torch.from_numpy(rng.integers(0, 80, 60))  # repeats: one subgraph per (node, time)
    input_nodes[:4] = 5
    input_time = torch.from_numpy(rng.integers(0, 1000, 60))
    torch.manual_seed(seed)
    loader = NeighborLoader(data, [4, 3], input_nodes=input_nodes, input_time=input_time, time_attr="t",
                            temporal_strategy=strategy, batch_size=16, shuffle=True, disjoint=True)
    seen, edges = [], 0
    for b in loader:
        assert torch.equal(b.n_id[:b.batch_size], input_nodes[b.input_id])
        assert torch.equal(b.seed_time, input_time[b.input_id])
        check_no_future(data, b, b.seed_time[b.batch])
        assert sum(b.num_sampled_nodes) == b.n_id.shape[0] and sum(b.num_sampled_edges) == b.e_id.shape[0]
        if strategy == "last":  # the seeds' hop: the most recent eligible in-edges
            for k in range(b.batch_size):
                got = b.e_id[b.edge_index[1] == k]
                ok = ((data.edge_index[1] == b.n_id[k]) & (data.t <= b.seed_time[k])).nonzero().flatten()
                newest = sorted(data.t[ok].tolist())[-4:]
                assert sorted(data.t[got].tolist()) == newest
        seen += b.input_id.tolist()
        edges += b.e_id.shape[0]
    assert sorted(seen) == list(range(60)) and edges > 100


def test_node_level_times_default_to_the_seeds_own():
    data = temporal_data(4)
    loader = NeighborLoader(data, [5, 5], time_attr="node_t", batch_size=20)  # every node, at its own time
    for b in loader:
        assert torch.equal(b.seed_time, data.node_t[b.n_id[:b.batch_size]]) and torch.equal(b.input_id, b.n_id[:20])
        limit = b.seed_time[b.batch]
        assert bool((data.node_t[b.n_id] <= limit).all()), "a node from the future"


def test_all_times_equal_gives_the_non_temporal_samplers_edges():
    data = temporal_data(5)
    data.t = torch.zeros_like(data.t)
    seeds = torch.arange(0, 80, 2)
    torch.manual_seed(3)
    temporal = list(NeighborLoader(data, [3, 2], input_nodes=seeds, time_attr="t",
                                   input_time=torch.zeros_like(seeds), batch_size=20))
    torch.manual_seed(3)
    plain = list(NeighborLoader(data, [3, 2], input_nodes=seeds, batch_size=20))
    assert len(temporal) == len(plain) == 2
    for bt, bp in zip(temporal, plain):
        for k in range(20):  # the seeds' hop, per seed
            assert set(bt.e_id[bt.edge_index[1] == k].tolist()) == set(bp.e_id[bp.edge_index[1] == k].tolist())
        # hop 1: the nodes first reached there (not seeds) draw the same edges in both layouts
        def hop1(b):
            first = b.num_sampled_edges[0]
            dst = b.n_id[b.edge_index[1, first:]]
            keep = ~torch.isin(dst, b.n_id[:20])
            return set(zip(dst[keep].tolist(), b.e_id[first:][keep].tolist()))
        assert hop1(bt) == hop1(bp) and len(hop1(bp)) > 0


def test_bad_temporal_input_is_one_line():
    data = temporal_data()
    seeds = torch.arange(10)
    cases = [
        (dict(time_attr="when", input_time=seeds), ValueError, "time_attr='when' is not an attribute of the Data"),
        (dict(time_attr="t"), ValueError, "input_time is required with edge-level time_attr"),
        (dict(time_attr="t", input_time=seeds[:3]), ValueError, r"input_time must have shape \(10,\), got \(3,\)"),
        (dict(time_attr="t", input_time=seeds.float()), TypeError, "input_time must be integers.*float32"),
        (dict(input_time=seeds), ValueError, "does not support input_time=.*time_attr="),
        (dict(disjoint=True), ValueError, "does not support disjoint=.*temporal sampling only"),
        (dict(time_attr="t", input_time=seeds, temporal_strategy="first"), ValueError, "'first'"),
        (dict(time_attr="t", input_time=seeds, replace=True), ValueError, "replace=True"),
    ]
    for kwargs, error, match in cases:
        with pytest.raises(error, match=match):
            NeighborLoader(data, [2], input_nodes=seeds, **kwargs)
    data.ft, data.short = data.t.double(), torch.arange(7)
    with pytest.raises(TypeError, match=r"edge times data.ft must be integers.*float64"):
        NeighborLoader(data, [2], input_nodes=seeds, time_attr="ft", input_time=seeds)
    with pytest.raises(ValueError, match=r"time_attr='short' has shape \[7\]: node times are \[80\]"):
        NeighborLoader(data, [2], input_nodes=seeds, time_attr="short", input_time=seeds)
    with pytest.raises(ValueError, match="edge_label_time= is required with time_attr="):
        LinkNeighborLoader(data, [2], time_attr="t")
    with pytest.raises(ValueError, match="does not support edge_label_time=.*time_attr="):
        LinkNeighborLoader(data, [2], edge_label_time=data.t)
    with pytest.raises(ValueError, match=r"edge_label_time must have shape \(1500,\)"):
        LinkNeighborLoader(data, [2], time_attr="t", edge_label_time=data.t[:5])
    hetero = HeteroData()
    hetero["a"].x, hetero["a"].t = torch.randn(4, 2), torch.arange(4)
    hetero["a", "r", "a"].edge_index = torch.tensor([[0, 1], [1, 2]])
    with pytest.raises(ValueError, match="time_attr='t' is node-level: a HeteroData's temporal LinkNeighborLoader "
                                         "takes edge times"):
        LinkNeighborLoader(hetero, [2], edge_label_index=(("a", "r", "a"), hetero["a", "r", "a"].edge_index),
                           time_attr="t", edge_label_time=torch.arange(2))


def test_a_store_names_its_edge_time_array(tmp_path):
    import bgl

    (tmp_path / "g.txt").write_text("src dst time\n" + "".join(f"{i % 7} {(i * 3) % 7} {i}\n" for i in range(60)))
    store = bgl.ingest(tmp_path / "g.txt", tmp_path / "s", edge_time_column=2, dedupe=False, remove_self_loops=False)
    times = np.asarray(store.edge_array("timestamp"))
    for b in NeighborLoader(store, [3, 3], input_nodes=torch.arange(7), time_attr="timestamp",
                            input_time=torch.full((7,), 30), batch_size=7):
        assert b.e_id.numel() > 0 and (times[b.e_id.numpy()] <= 30).all()
    with pytest.raises(ValueError, match="time_attr='ts' is neither a node nor an edge array of the store"):
        NeighborLoader(store, [3], input_nodes=torch.arange(7), time_attr="ts", input_time=torch.zeros(7, dtype=torch.long))


@pytest.mark.parametrize("neg", [None, dict(neg_sampling_ratio=2.0), dict(neg_sampling="triplet")])
def test_link_loader_subgraphs_grow_at_their_pairs_time(neg):
    data = temporal_data(6)
    label_index = data.edge_index[:, :300]
    label_time = data.t[:300]
    torch.manual_seed(0)
    loader = LinkNeighborLoader(data, [3, 3], edge_label_index=label_index, edge_label_time=label_time,
                                time_attr="t", batch_size=64, shuffle=True, **(neg or {}))
    assert len(loader) == 5
    seen = []
    for b in loader:
        pos = b.input_id
        seen += pos.tolist()
        if neg and "neg_sampling" in neg:  # triplet
            assert torch.equal(b.seed_time, label_time[pos])
            assert torch.equal(b.n_id[b.src_index], label_index[0, pos]) and b.dst_neg_index.shape == (len(pos),)
            pair_time = b.seed_time
        else:
            k = len(pos)
            assert torch.equal(b.n_id[b.edge_label_index[:, :k]], label_index[:, pos])
            assert torch.equal(b.edge_label_time[:k], label_time[pos]) and b.edge_label[:k].eq(1).all()
            assert b.edge_label_index.shape[1] == b.edge_label.shape[0] == b.edge_label_time.shape[0]
            pair_time = b.edge_label_time
        assert int(b.batch.max()) < len(pos)
        check_no_future(data, b, pair_time[b.batch])
    assert sorted(seen) == list(range(300))


def test_stage_processes_give_the_inline_batches():
    data = temporal_data(7)

    def run(**kw):
        torch.manual_seed(0)
        nodes = [(b.n_id, b.e_id, b.batch) for b in NeighborLoader(data, [3, 2], time_attr="node_t", batch_size=32, **kw)]
        torch.manual_seed(0)
        links = [(b.n_id, b.e_id, b.edge_label_index) for b in LinkNeighborLoader(
            data, [3, 2], edge_label_index=data.edge_index[:, :200], edge_label_time=data.t[:200], time_attr="t",
            neg_sampling_ratio=1.0, batch_size=64, **kw)]
        return nodes + links

    inline, processes = run(), run(num_workers=2)
    assert len(inline) == len(processes) == 3 + 4
    for a, b in zip(inline, processes):
        assert all(torch.equal(x, y) for x, y in zip(a, b))


def test_link_loader_drop_last_and_a_saved_position():
    data = temporal_data(8)

    def loader():
        return LinkNeighborLoader(data, [2], edge_label_index=data.edge_index[:, :300], edge_label_time=data.t[:300],
                                  time_attr="t", batch_size=64, drop_last=True, shuffle=True, neg_sampling_ratio=1.0)

    torch.manual_seed(3)
    first = loader()
    sizes = [b.input_id.shape[0] for b in first]
    assert len(first) == 4 and sizes == [64] * 4
    torch.manual_seed(4)
    whole = [(b.input_id, b.n_id, b.edge_label_index) for b in first]  # epoch 1, uninterrupted
    torch.manual_seed(3)
    stopped = loader()
    list(stopped)  # epoch 0
    torch.manual_seed(4)
    it = iter(stopped)
    head = [next(it) for _ in range(2)]
    state = stopped.state_dict()
    del it
    resumed = loader()
    resumed.load_state_dict(state)
    tail = list(resumed)
    got = [(b.input_id, b.n_id, b.edge_label_index) for b in head + tail]
    assert len(got) == len(whole) == 4
    for a, b in zip(got, whole):  # the same pairs, negatives and samples
        assert all(torch.equal(x, y) for x, y in zip(a, b))
