"""PyG's temporal batch layout (bgl.pyg.temporal) from bgl's disjoint temporal sample, checked
against a PyG ``Data``'s own arrays: no edge newer than its subgraph's seed time, PyG's fields."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

from bgl.pyg.loader import data_arrays
from bgl.pyg.negatives import PairNegatives
from bgl.pyg.temporal import disjoint_fields, link_seeds, node_seed_fields, seed_times, time_source
from bgl.sampler import LocalSampler


def temporal_data(seed=0, n=40, e=400, tmax=100):
    rng = np.random.default_rng(seed)
    ei = torch.from_numpy(rng.integers(0, n, (2, e)))
    return Data(edge_index=ei, num_nodes=n, t=torch.from_numpy(rng.integers(0, tmax, e)),
                node_t=torch.from_numpy(rng.integers(0, tmax, n)), x=torch.randn(n, 4))


def sample(data, seeds, times, fanouts, strategy="uniform", kind="edge", time_attr="t"):
    node_time = data[time_attr].numpy() if kind == "node" else None
    sampler = LocalSampler(data_arrays(data), node_time=node_time)
    s = sampler.sample_temporal(seeds, times, fanouts, strategy, seed=7, time_name=time_attr if kind == "edge" else None)
    return disjoint_fields(s.node, s.batch, s.src, s.dst, s.eid, s.num_sampled_nodes, s.num_sampled_edges)


def check_batch(data, f, seed_time, kind="edge"):
    """PyG's invariants of a disjoint temporal batch, against the Data's own arrays."""
    n_id, batch, (src, dst), e_id = f["n_id"], f["batch"], f["edge_index"], f["e_id"]
    assert torch.equal(data.edge_index[:, e_id], torch.stack([n_id[src], n_id[dst]]))  # the Data's own edges
    assert torch.equal(batch[src], batch[dst])  # an edge stays inside its subgraph
    limit = seed_time[batch[dst]]
    if kind == "edge":
        assert bool((data.t[e_id] <= limit).all()), "an edge from the future"
    else:
        assert bool((data.node_t[n_id[src]] <= limit).all()), "a node from the future"
    assert sum(f["num_sampled_nodes"]) == n_id.shape[0] and sum(f["num_sampled_edges"]) == e_id.shape[0]
    m = f["num_sampled_nodes"][0]
    assert torch.equal(batch[:m], torch.arange(m))


@pytest.mark.parametrize("strategy", ["uniform", "last"])
@pytest.mark.parametrize("seed", range(3))
def test_edge_times_never_from_the_future(seed, strategy):
    data = temporal_data(seed)
    seeds = np.array([0, 3, 3, 17, 39])  # a repeated seed is two subgraphs, at its two times
    times = np.array([50, 10, 90, 0, 99])
    f = sample(data, seeds, times, [4, 3], strategy)
    f.update(node_seed_fields(torch.arange(5), times))
    check_batch(data, f, f["seed_time"])
    assert torch.equal(f["n_id"][:5], torch.from_numpy(seeds)) and f["batch_size"] == 5
    if strategy == "last":  # the seeds' hop: exactly the 4 newest eligible in-edges (ties: the later edge)
        first = f["edge_index"][1] < 5
        for k in range(5):
            got = set(f["e_id"][first & (f["edge_index"][1] == k)].tolist())
            cand = [i for i in range(data.num_edges) if data.edge_index[1, i] == seeds[k] and data.t[i] <= times[k]]
            cand.sort(key=lambda i: (int(data.t[i]), i))
            assert {int(data.t[i]) for i in got} == {int(data.t[i]) for i in cand[-4:]} and len(got) == len(cand[-4:])


def test_node_times_never_from_the_future():
    data = temporal_data(1)
    kind, node_time = time_source(data, "node_t")
    assert kind == "node"
    seeds = np.arange(0, 40, 4)
    times = seed_times(None, kind, node_time, seeds)  # PyG's default: the seeds' own node times
    assert np.array_equal(times, data.node_t.numpy()[seeds])
    f = sample(data, seeds, times, [5, 5], kind="node", time_attr="node_t")
    check_batch(data, f, torch.from_numpy(times), kind="node")


def test_time_source_decides_as_pyg_and_refuses_bad_times():
    data = temporal_data()
    assert time_source(data, "t")[0] == "edge" and time_source(data, "node_t")[0] == "node"
    with pytest.raises(ValueError, match=r"time_attr='when' is not an attribute of the Data"):
        time_source(data, "when")
    data.ft = data.t.float()
    with pytest.raises(TypeError, match=r"edge times data.ft must be integers.*float32"):
        time_source(data, "ft")
    data.short = torch.arange(7)
    with pytest.raises(ValueError, match=r"time_attr='short' has shape \[7\]: node times are \[40\].*\[400\]"):
        time_source(data, "short")
    data.two = torch.zeros(40, 2, dtype=torch.long)
    with pytest.raises(ValueError, match=r"time_attr='two' has shape \[40, 2\]"):
        time_source(data, "two")
    with pytest.raises(ValueError, match="input_time is required with edge-level time_attr"):
        seed_times(None, "edge", None, np.arange(3))
    with pytest.raises(ValueError, match=r"input_time must have shape \(3,\), got \(2,\)"):
        seed_times(torch.tensor([1, 2]), "edge", None, np.arange(3))


def pyg_binary_reference(b, amount, times):
    """PyG 2.8's edge_sample (binary, homogeneous, disjoint): its label index and seed times."""
    t = torch.as_tensor(times)
    num_neg = math.ceil(b * amount)
    src_time = t.repeat(1 + math.ceil(amount))[:b + num_neg]
    return torch.arange(2 * (b + num_neg)).view(2, -1), src_time, torch.cat([src_time, src_time])


@pytest.mark.parametrize("amount", [1, 1.5, 3])
def test_binary_link_seeds_are_pygs(amount):
    b = 6
    src, dst, times = np.arange(b), np.arange(b) + 10, np.array([5, 1, 9, 9, 0, 3])
    ls = link_seeds(src, dst, times, None, PairNegatives("binary", amount), 40, seed=3)
    ref_index, ref_time, ref_seed_time = pyg_binary_reference(b, amount, times)
    assert torch.equal(ls.fields["edge_label_index"], ref_index)
    assert torch.equal(ls.fields["edge_label_time"], ref_time) and np.array_equal(ls.times, ref_seed_time.numpy())
    p = ref_time.shape[0]
    assert ls.fields["edge_label"].tolist() == [1.0] * b + [0.0] * (p - b)
    assert np.array_equal(ls.seeds[:b], src) and np.array_equal(ls.seeds[p:p + b], dst)
    assert torch.equal(ls.subgraph(torch.arange(2 * p)), torch.arange(2 * p) % b)
    none = link_seeds(src, dst, times, torch.tensor([2, 2, 3, 3, 4, 4]), None, 40, seed=3)
    assert torch.equal(none.fields["edge_label_index"], torch.arange(2 * b).view(2, -1))
    assert none.fields["edge_label"].tolist() == [2, 2, 3, 3, 4, 4]


def test_triplet_link_seeds_are_pygs():
    b, k = 4, 3
    times = np.array([7, 2, 8, 1])
    ls = link_seeds(np.arange(b), np.arange(b) + 4, times, None, PairNegatives("triplet", k), 40, seed=5)
    assert ls.seeds.shape == (b * (2 + k),) and np.array_equal(ls.times, np.tile(times, 2 + k))
    ref = torch.arange(2 * b, b * (2 + k)).view(-1, b).t().view(b, -1)  # PyG's dst_neg_index
    assert torch.equal(ls.fields["dst_neg_index"], ref)
    assert torch.equal(ls.fields["src_index"], torch.arange(b)) and torch.equal(ls.fields["dst_pos_index"], torch.arange(b, 2 * b))
    assert ls.fields["seed_time"].tolist() == times.tolist() and "edge_label_time" not in ls.fields
    one = link_seeds(np.arange(b), np.arange(b), times, None, PairNegatives("triplet", 1), 40, seed=5)
    assert one.fields["dst_neg_index"].shape == (b,)


def test_negatives_with_node_times_are_not_newer_than_their_pair():
    node_time = np.arange(100, dtype=np.int64)  # node v exists from time v
    times = np.array([30, 60, 99, 5])
    ls = link_seeds([1, 2, 3, 4], [5, 6, 7, 0], times, None, PairNegatives("binary", 4), 100, seed=11,
                    node_time=node_time)
    assert np.all(node_time[ls.seeds] <= ls.times)
    again = link_seeds([1, 2, 3, 4], [5, 6, 7, 0], times, None, PairNegatives("binary", 4), 100, seed=11,
                       node_time=node_time)
    assert np.array_equal(again.seeds, ls.seeds)  # a function of the batch seed


def test_link_batch_has_no_future_edge_in_any_subgraph():
    data = temporal_data(2)
    pos = torch.randperm(data.num_edges, generator=torch.Generator().manual_seed(0))[:8]
    src, dst, times = data.edge_index[0, pos].numpy(), data.edge_index[1, pos].numpy(), data.t[pos].numpy()
    ls = link_seeds(src, dst, times, None, PairNegatives("binary", 2), data.num_nodes, seed=1)
    f = sample(data, ls.seeds, ls.times, [3, 3])
    sample_batch = f["batch"]
    check_batch(data, f, torch.from_numpy(ls.times))
    f["batch"] = ls.subgraph(sample_batch)
    lt = ls.fields["edge_label_time"]
    # every node's subgraph is one pair's: its edges are no newer than that pair's label time
    assert bool((data.t[f["e_id"]] <= lt[f["batch"][f["edge_index"][1]]]).all())
    assert torch.equal(f["n_id"][ls.fields["edge_label_index"]][:, :8], torch.from_numpy(np.stack([src, dst])))
