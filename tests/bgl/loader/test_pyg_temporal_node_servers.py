"""bgl.pyg's temporal loaders with a node-level ``time_attr`` (the store's node array, ``bgl ingest
--node-time``) over a partition's two real graph servers: the store's PyG batches, none with a node newer
than its subgraph's seed time; the seeds' own times (PyG's default) and the negatives' redraws read from the
partition dir's part stores; without the partition dir, one line naming what to give."""
from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
import torch

from bgl.pyg import LinkNeighborLoader, NeighborLoader
from bgl.store import write_store

from ...sampler.conftest import hub_csc, part_args, slice_store, started_servers
from .test_pyg_temporal_servers import pyg_batches as edge_time_batches

N = 260


@pytest.fixture(scope="module")
def node_timed(tmp_path_factory):
    """``(store, partition dir)``: 260 nodes, a hub (node 7: ~350 in-edges), int64 node times ``timestamp``
    (the name servers warm their temporal kernels for before they are ready) and edge times ``ts``; the
    partition is two id ranges (ids as the store's, so samples can be compared)."""
    rng = np.random.default_rng(21)
    indptr, indices = hub_csc(rng, N, 10, 7, 350)
    work = tmp_path_factory.mktemp("pyg-node-servers")
    store = write_store(work / "store", indptr, indices, feat=rng.standard_normal((N, 3)).astype(np.float32),
                        label=rng.integers(0, 4, N), edata={"ts": rng.integers(0, 500, int(indptr[-1]))},
                        ndata={"timestamp": rng.integers(0, 500, N).astype(np.int64)})
    out, bounds, parts = work / "partition", [0, 110, N], []
    for k in range(2):
        ps = slice_store(store, bounds[k], bounds[k + 1], out / f"part-{k}")
        parts.append({"part": k, "store": f"part-{k}", "node_start": bounds[k], "node_end": bounds[k + 1],
                      "num_nodes": ps.num_nodes, "num_edges": ps.num_edges, "num_train": 0})
    (out / "partition.json").write_text(json.dumps({
        "format": "bgl-partition", "version": 1, "method": "range", "params": {}, "num_parts": 2,
        "num_nodes": N, "num_edges": store.num_edges, "parts": parts, "metrics": {}}))
    np.save(out / "orig_ids.npy", np.arange(N, dtype=np.int64))
    return store, out


@pytest.fixture(scope="module")
def addresses(node_timed, tmp_path_factory):
    from partition import open_partition

    with started_servers(part_args(open_partition(node_timed[1])), tmp_path_factory.mktemp("srv")) as addrs:
        yield addrs


def pyg_batches(graph, strategy: str, link: bool, given_times: bool = False):
    return edge_time_batches(graph, strategy, link, n=N, hub=7, horizon=500, fanouts=(3, 4),
                             node_times=not given_times)


KEYS = ("n_id", "batch", "edge_index", "e_id", "x", "input_id")


@pytest.mark.parametrize("link", [False, True])
@pytest.mark.parametrize("strategy", ["uniform", "last"])
def test_a_partitions_servers_give_the_stores_node_temporal_batches(node_timed, addresses, monkeypatch, strategy,
                                                                    link):
    store, part_dir = node_timed
    local = pyg_batches(str(store.path), strategy, link)
    monkeypatch.setenv("BGL_SERVERS", ",".join(addresses))
    remote = pyg_batches(str(part_dir), strategy, link)
    assert len(local) == len(remote) == 3
    node_time, indices = np.asarray(store.node_array("timestamp")), np.asarray(store.indices)
    sampled = 0
    for bl, br in zip(local, remote):
        for key in KEYS + (("edge_label_index", "edge_label", "edge_label_time") if link else ("seed_time",)):
            assert torch.equal(bl[key], br[key]), key
        src, dst = bl.edge_index
        assert np.array_equal(indices[bl.e_id.numpy()], bl.n_id[src].numpy())  # e_id: the store's CSC positions
        if not link:  # PyG's default: each seed at its own node time
            assert np.array_equal(bl.seed_time.numpy(), node_time[bl.n_id[:bl.batch_size].numpy()])
        # batch: each node's subgraph (a link batch's modulo B: negative j grew at positive j % B's time)
        per_node = (bl.edge_label_time if link else bl.seed_time)[bl.batch].numpy()
        checked = np.ones(per_node.shape[0], bool)
        if link:  # the given pairs' ends are seeds at their pair's time whatever their own (PyG's rule)
            b, p = bl.input_id.shape[0], bl.edge_label_time.shape[0]
            checked[:b] = checked[p:p + b] = False
        assert (node_time[bl.n_id.numpy()] <= per_node)[checked].all(), "a node from the future"
        sampled += bl.e_id.numel()
    assert sampled > 0


def test_given_input_times_need_no_partition_dir(node_timed, addresses):
    store, _ = node_timed
    local, remote = pyg_batches(str(store.path), "uniform", False, True), pyg_batches(addresses, "uniform", False, True)
    for bl, br in zip(local, remote):
        for key in KEYS + ("seed_time",):
            assert torch.equal(bl[key], br[key]), key


def test_what_bare_server_addresses_cannot_give_is_one_line(addresses, monkeypatch):
    monkeypatch.delenv("BGL_PARTITION", raising=False)
    with pytest.raises(ValueError, match=r"input_time is required here: .*partition dir") as info:
        NeighborLoader(addresses, [2], input_nodes=torch.arange(5), time_attr="timestamp")
    assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match=r"negatives with node-level time_attr over graph servers .* drop the") as info:
        LinkNeighborLoader(addresses, [2], edge_label_index=torch.zeros(2, 3, dtype=torch.long),
                           edge_label_time=torch.zeros(3, dtype=torch.long), time_attr="timestamp",
                           neg_sampling="binary")
    assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match=r"time_attr='since' is neither a node nor an edge array of every graph "
                                         r"server \(they have node arrays \['timestamp'\], edge arrays \['ts'\]"):
        NeighborLoader(addresses, [2], input_nodes=torch.arange(5), time_attr="since")


def test_a_real_partitions_node_array_reads_by_new_id(node_timed, tmp_path):
    """PartitionNodeArray over a `bgl partition` (ids renumbered): each new id's value is its original
    node's, the oldest node found, and a pickle is the path and name only (what a stage process gets)."""
    from bgl.partition import partition_graph
    from bgl.partition.node_arrays import PartitionNodeArray

    store, _ = node_timed
    book = partition_graph(store, "random", 3, tmp_path / "p", measure_samples=False)
    view = PartitionNodeArray(book.path, "timestamp")
    node_time = np.asarray(store.node_array("timestamp"))
    new = np.random.default_rng(0).integers(0, N, (4, 50))
    assert np.array_equal(view[new], node_time[np.asarray(book.orig_ids)[new]])
    assert node_time[book.orig_ids[view.argmin()]] == node_time.min() and len(view) == N
    copy = pickle.loads(pickle.dumps(view))
    assert len(pickle.dumps(view)) < 1000 and np.array_equal(copy[new], view[new])
    with pytest.raises(IndexError, match=f"node id {N} outside"):
        view[np.array([N])]
