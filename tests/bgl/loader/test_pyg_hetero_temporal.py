"""bgl.pyg.NeighborLoader(hetero_data, ..., time_attr=): PyG's temporal loader over a HeteroData."""
from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("torch_geometric")
from torch_geometric.data import HeteroData  # noqa: E402

from bgl.pyg import NeighborLoader  # noqa: E402

CLICKS, BACK = ("user", "clicks", "item"), ("item", "rev_clicks", "user")


def user_item(seed: int = 0, node_times: bool = False) -> HeteroData:
    """Users and items, clicks with times both ways, a hub item (0); node times on request."""
    rng = np.random.default_rng(seed)
    u, i, t = rng.integers(0, 90, 1500), rng.integers(0, 60, 1500), rng.integers(0, 1000, 1500)
    i[:200] = 0
    data = HeteroData()
    data["user"].x, data["item"].x = torch.randn(90, 3), torch.randn(60, 5)
    data["user"].y = torch.from_numpy(rng.integers(0, 2, 90))
    data[CLICKS].edge_index = torch.from_numpy(np.stack([u, i]))
    data[BACK].edge_index = torch.from_numpy(np.stack([i, u]))
    if node_times:
        data["user"].time = torch.from_numpy(rng.integers(0, 500, 90))
        data["item"].time = torch.from_numpy(rng.integers(0, 500, 60))
    else:
        data[CLICKS].time = torch.from_numpy(t)
        data[BACK].time = torch.from_numpy(t)
    return data


@pytest.mark.parametrize("strategy", ["uniform", "last"])
def test_no_edge_from_the_future_in_any_relation_and_pygs_disjoint_fields(strategy):
    data = user_item()
    rng = np.random.default_rng(1)
    seeds = torch.from_numpy(rng.integers(0, 90, 70))
    input_time = torch.from_numpy(rng.integers(0, 1000, 70))
    loader = NeighborLoader(data, {CLICKS: [3, 2], BACK: [2, 4]}, input_nodes=("user", seeds), time_attr="time",
                            input_time=input_time, temporal_strategy=strategy, batch_size=32)
    done = 0
    for k, batch in enumerate(loader):
        bs = batch["user"].batch_size
        assert torch.equal(batch["user"].input_id, torch.arange(32 * k, 32 * k + bs))
        assert torch.equal(batch["user"].n_id[:bs], seeds[32 * k:32 * k + bs])
        assert torch.equal(batch["user"].seed_time, input_time[32 * k:32 * k + bs])
        assert torch.equal(batch["user"].x, data["user"].x[batch["user"].n_id])
        assert torch.equal(batch["user"].y, data["user"].y[batch["user"].n_id])
        seed_time = batch["user"].seed_time
        for et in (CLICKS, BACK):
            src, dst = batch[et].edge_index
            e = batch[et].e_id
            src_type, _, dst_type = et
            assert torch.equal(data[et].edge_index[0, e], batch[src_type].n_id[src])
            assert torch.equal(data[et].edge_index[1, e], batch[dst_type].n_id[dst])
            subgraph = batch[dst_type].batch[dst]
            assert torch.equal(batch[src_type].batch[src], subgraph), "an edge crosses subgraphs"
            assert (data[et].time[e] <= seed_time[subgraph]).all(), "an edge from the future"
        done += bs
    assert done == 70


def test_minus_one_takes_every_eligible_edge_of_each_relation():
    data = user_item()
    seeds, input_time = torch.arange(40), torch.full((40,), 600)
    loader = NeighborLoader(data, [-1], input_nodes=("user", seeds), time_attr="time", input_time=input_time,
                            batch_size=40)
    batch = next(iter(loader))
    back_dst, back_time = data[BACK].edge_index[1], data[BACK].time
    eligible = torch.stack([((back_dst == u) & (back_time <= 600)).sum() for u in seeds])
    subgraph = batch["user"].batch[batch[BACK].edge_index[1]]
    assert torch.equal(torch.bincount(subgraph, minlength=40), eligible)
    assert batch[CLICKS].edge_index.shape[1] == 0  # one hop from users: no edge into a user of this relation


def test_node_times_default_the_seed_times_and_keep_future_nodes_out():
    data = user_item(node_times=True)
    loader = NeighborLoader(data, [4, 4], input_nodes=("item", None), time_attr="time", batch_size=20)
    for batch in loader:
        bs = batch["item"].batch_size
        seed_time = batch["item"].seed_time
        assert torch.equal(seed_time, data["item"].time[batch["item"].n_id[:bs]])
        for nt in ("user", "item"):
            assert (data[nt].time[batch[nt].n_id] <= seed_time[batch[nt].batch]).all(), "a node from the future"


def test_bad_hetero_times_are_one_line():
    data = user_item()
    del data[BACK].time
    with pytest.raises(ValueError, match=r"time_attr='time' is on edge types .* but not on \[\('item', 'rev_clicks'"):
        NeighborLoader(data, [2], input_nodes=("user", None), time_attr="time", input_time=torch.zeros(90, dtype=torch.long))
    data = user_item()
    with pytest.raises(ValueError, match="input_time is required with edge-level time_attr"):
        NeighborLoader(data, [2], input_nodes=("user", None), time_attr="time")


@pytest.mark.parametrize("neg", [None, dict(neg_sampling_ratio=2.0), dict(neg_sampling="triplet")])
def test_hetero_link_loader_each_pair_at_its_time(neg):
    """PyG's examples/hetero/temporal_link_pred.py shape: user-item pairs with times, typed batches."""
    from bgl.pyg import LinkNeighborLoader

    data = user_item()
    pairs = data[CLICKS].edge_index[:, :300]
    label_time = data[CLICKS].time[:300] - 1  # only what happened before the click
    loader = LinkNeighborLoader(data, [3, 2], edge_label_index=(CLICKS, pairs), edge_label_time=label_time,
                                time_attr="time", batch_size=64, shuffle=True, **(neg or {}))
    seen = []
    for batch in loader:
        ids = batch[CLICKS].input_id
        seen.append(ids)
        b = ids.shape[0]
        t = label_time[ids]
        users, items = batch["user"].n_id, batch["item"].n_id
        if neg is None or "neg_sampling_ratio" in neg:
            eli = batch[CLICKS].edge_label_index
            assert torch.equal(users[eli[0, :b]], pairs[0, ids]) and torch.equal(items[eli[1, :b]], pairs[1, ids])
            assert torch.equal(batch[CLICKS].edge_label_time[:b], t)
            assert batch[CLICKS].edge_label[:b].eq(1).all() and batch[CLICKS].edge_label[b:].eq(0).all()
            assert eli.shape[1] == (b if neg is None else b + 2 * b)
        else:
            assert torch.equal(users[batch["user"].src_index], pairs[0, ids])
            assert torch.equal(items[batch["item"].dst_pos_index], pairs[1, ids])
            assert batch["item"].dst_neg_index.shape == (b,)
        for et in (CLICKS, BACK):
            src, dst = batch[et].edge_index
            e = batch[et].e_id
            assert torch.equal(data[et].edge_index[0, e], batch[et[0]].n_id[src])
            pair = batch[et[2]].batch[dst]
            assert torch.equal(batch[et[0]].batch[src], pair), "an edge crosses subgraphs"
            assert (data[et].time[e] <= t[pair]).all(), "an edge from the future"
    assert torch.equal(torch.sort(torch.cat(seen)).values, torch.arange(300))
