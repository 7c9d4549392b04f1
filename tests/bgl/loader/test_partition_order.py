"""Proximity order over a partition dir (bgl.cache.ordering.partition_order) and bgl.DataLoader using it with real servers."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import torch

import bgl
from bgl.cache.ordering.store_order import random_order
from bgl.cache.ordering.partition_order import PartitionOrder, local_csc


@pytest.fixture(scope="module")
def cora_parts(cora_store, tmp_path_factory):
    """Cora split into 2 parts by BGL's partitioner."""
    from bgl.partition import partition_graph

    root = tmp_path_factory.mktemp("cora-parts")
    return partition_graph(cora_store, "bgl", 2, root / "parts")


@pytest.fixture(scope="module")
def served_cora(cora_parts, tmp_path_factory, serve_partition):
    """The 2-part Cora partition served by two real ``bgl serve`` processes on 127.0.0.1."""
    with serve_partition(cora_parts, tmp_path_factory.mktemp("served-cora")) as addresses:
        yield cora_parts, addresses


# ------------------------------------------------------------------ local view
def brute_local_csc(indptr, indices, start, end):
    ptr, out = [0], []
    for r in range(end - start):
        nb = [int(v) - start for v in indices[indptr[r]:indptr[r + 1]] if start <= v < end]
        out += nb
        ptr.append(len(out))
    return np.array(ptr, np.int64), np.array(out, np.int64)


@pytest.mark.parametrize("chunk_edges", [1, 5, 97, 1 << 22])
def test_local_view_keeps_exactly_the_in_part_edges(cora_parts, chunk_edges):
    for k in range(cora_parts.num_parts):
        store = cora_parts.part_store(k)
        start, end = int(cora_parts.bounds[k]), int(cora_parts.bounds[k + 1])
        view = local_csc(store.indptr, store.indices, start, end, chunk_edges)
        ref_ptr, ref_idx = brute_local_csc(np.asarray(store.indptr), np.asarray(store.indices), start, end)
        assert np.array_equal(view.indptr, ref_ptr)
        assert np.array_equal(view.indices.astype(np.int64), ref_idx)
        assert view.indices.dtype == np.int32
        assert 0 < view.num_edges < store.num_edges  # Cora's parts have cut edges to drop


def test_local_view_rejects_a_wrong_range(cora_parts):
    store = cora_parts.part_store(0)
    with pytest.raises(ValueError, match="entries"):
        local_csc(store.indptr, store.indices, 0, store.num_nodes + 1)
    with pytest.raises(ValueError, match="chunk_edges"):
        local_csc(store.indptr, store.indices, 0, store.num_nodes, chunk_edges=0)


# --------------------------------------------------------------------- orders
def test_every_training_node_once_per_epoch_and_epochs_differ(cora_parts):
    train = cora_parts.split("train")
    po = PartitionOrder(cora_parts.path, train, 4)
    assert po.parts == [0, 1]
    orders = [po.epoch_order(seed) for seed in range(4)]
    for order in orders:
        assert order.dtype == np.int64
        assert np.array_equal(np.sort(order), np.sort(train))
    for a in range(len(orders)):
        for b in range(a + 1, len(orders)):
            assert not np.array_equal(orders[a], orders[b])
    assert np.array_equal(po.epoch_order(2), orders[2])  # same seed, same order


def test_a_share_inside_one_part_reads_only_that_part(cora_parts):
    train = cora_parts.split("train")
    mine = train[train >= cora_parts.bounds[1]]
    po = PartitionOrder(cora_parts.path, mine[::-1], 4)
    assert po.parts == [1]
    order = po.epoch_order(7)
    assert np.array_equal(np.sort(order), mine)
    assert list(po._views) == [1]  # part 0's store was never turned into a view


def test_partition_order_rejects_ids_outside_the_graph(cora_parts):
    with pytest.raises(ValueError, match=str(cora_parts.num_nodes + 3)):
        PartitionOrder(cora_parts.path, np.array([0, cora_parts.num_nodes + 3]), 4)


def one_hop_inputs(book, seeds: np.ndarray) -> np.ndarray:
    """Seeds plus all their in-neighbours (the input nodes of a full 1-layer sample)."""
    owner = book.owner(seeds)
    out = [seeds]
    for k in np.unique(owner):
        store = book.part_store(int(k))
        local = seeds[owner == k] - book.bounds[k]
        indptr, indices = np.asarray(store.indptr), np.asarray(store.indices)
        lo, hi = indptr[local], indptr[local + 1]
        idx = np.repeat(lo - np.cumsum(np.concatenate([[0], (hi - lo)[:-1]])), hi - lo) + np.arange((hi - lo).sum())
        out.append(indices[idx].astype(np.int64))
    return np.unique(np.concatenate(out))


def consecutive_overlap(book, order: np.ndarray, batch_size: int) -> float:
    inputs = [one_hop_inputs(book, order[i:i + batch_size]) for i in range(0, order.shape[0], batch_size)]
    shared = [np.intersect1d(a, b).shape[0] for a, b in zip(inputs[:-1], inputs[1:])]
    return float(np.mean(shared))


def test_consecutive_batches_share_more_inputs_than_random_order(cora_parts):
    train = cora_parts.split("train")
    po = PartitionOrder(cora_parts.path, train, 4)
    prox = np.mean([consecutive_overlap(cora_parts, po.epoch_order(s), 32) for s in range(3)])
    rand = np.mean([consecutive_overlap(cora_parts, random_order(train, s), 32) for s in range(3)])
    assert prox > 1.2 * rand, (prox, rand)


# ------------------------------------------------------- DataLoader + servers
def sampled_overlap(loader) -> tuple[float, list[torch.Tensor]]:
    inputs, outputs = [], []
    for input_nodes, output_nodes, _ in loader:
        inputs.append(input_nodes.numpy())
        outputs.append(output_nodes)
    shared = [np.intersect1d(a, b).shape[0] / b.shape[0] for a, b in zip(inputs[:-1], inputs[1:])]
    return float(np.mean(shared)), outputs


def test_dataloader_over_partition_dir_with_servers_uses_proximity(served_cora, cora_store, monkeypatch):
    book, addresses = served_cora
    monkeypatch.setenv("BGL_SERVERS", ",".join(addresses))
    monkeypatch.delenv("BGL_PARTITION", raising=False)
    train = book.split("train")
    kw = dict(batch_size=32, shuffle=True, cache="fifo", cache_ratio=0.2)
    torch.manual_seed(0)
    prox_loader = bgl.DataLoader(book.path, train, bgl.NeighborSampler([3, 3]), order="proximity", **kw)
    rand_loader = bgl.DataLoader(book.path, train, bgl.NeighborSampler([3, 3]), order="random", **kw)
    epochs = []
    for _ in range(2):
        overlap, outputs = sampled_overlap(prox_loader)
        seen = torch.cat(outputs).numpy()
        assert np.array_equal(np.sort(seen), train)  # every training node once
        assert len(outputs) == len(prox_loader)
        epochs.append(seen)
    assert not np.array_equal(epochs[0], epochs[1])
    # The features came from the servers: rows of the original store for orig ids.
    orig = np.asarray(book.orig_ids)
    for input_nodes, output_nodes, blocks in prox_loader:
        assert torch.equal(blocks[0].srcdata["feat"], torch.from_numpy(cora_store.feat[orig[input_nodes.numpy()]]))
        assert torch.equal(blocks[-1].dstdata["label"], torch.from_numpy(cora_store.label[orig[output_nodes.numpy()]]))
        break
    rand_overlap, _ = sampled_overlap(rand_loader)
    assert overlap > 1.3 * rand_overlap, (overlap, rand_overlap)
    prox_loader.close()
    rand_loader.close()


def test_server_addresses_use_bgl_partition_for_proximity(served_cora, monkeypatch, tmp_path):
    book, addresses = served_cora
    ids = book.split("train")[:100]
    monkeypatch.delenv("BGL_PARTITION", raising=False)
    with pytest.raises(ValueError, match="BGL_PARTITION"):
        bgl.DataLoader(addresses, ids, bgl.NeighborSampler([2]), order="proximity")
    monkeypatch.setenv("BGL_PARTITION", str(book.path))
    with bgl.DataLoader(addresses, ids, bgl.NeighborSampler([2]), batch_size=16, order="proximity",
                        pipeline="processes", stage_cores={"sample": 1, "fetch": 1}) as loader:
        seen = torch.cat([out for _, out, _ in loader]).numpy()
    assert np.array_equal(np.sort(seen), np.sort(ids))


def test_bgl_partition_of_another_graph_is_refused(served_cora, random_store, tmp_path, monkeypatch):
    from bgl.partition import partition_graph

    book, addresses = served_cora
    other = partition_graph(random_store, "random", 2, tmp_path / "other", measure_samples=False)
    monkeypatch.setenv("BGL_PARTITION", str(other.path))
    with pytest.raises(ValueError, match=str(other.num_nodes)):
        bgl.DataLoader(addresses, np.arange(10), bgl.NeighborSampler([2]), order="proximity")


# ------------------------------------------------------------------------ DDP
DDP_RANK_SCRIPT = """
import os, sys
import numpy as np
import torch
import torch.distributed as dist
import bgl
from bgl.partition import open_partition

part_dir, out = sys.argv[1], sys.argv[2]
dist.init_process_group("gloo")
try:
    train = open_partition(part_dir).split("train")
    # A shuffled id tensor, as a user might pass: ranks must still get whole parts.
    ids = torch.from_numpy(train[np.random.default_rng(1).permutation(train.shape[0])])
    loader = bgl.DataLoader(part_dir, ids, bgl.NeighborSampler([2]), batch_size=50, use_ddp=True,
                            order="proximity", shuffle=True)
    epochs = []
    for epoch in range(2):
        loader.set_epoch(epoch)
        epochs.append(torch.cat([o for _, o, _ in loader]).numpy())
    np.savez(out, e0=epochs[0], e1=epochs[1], n=len(loader))
    loader.close()
finally:
    dist.destroy_process_group()
"""


def test_ddp_ranks_get_disjoint_part_local_shares(free_port, served_cora, tmp_path):
    import os

    book, addresses = served_cora
    world = 2
    script = tmp_path / "rank.py"
    script.write_text(DDP_RANK_SCRIPT)
    env = {**os.environ, "BGL_SERVERS": ",".join(addresses), "MASTER_ADDR": "127.0.0.1",
           "MASTER_PORT": str(free_port()), "WORLD_SIZE": str(world), "DGLBACKEND": "pytorch"}
    procs = [subprocess.Popen([sys.executable, str(script), str(book.path), str(tmp_path / f"rank{r}.npz")],
                              env={**env, "RANK": str(r)}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
             for r in range(world)]
    try:
        logs = [p.communicate(timeout=120)[0].decode()[-3000:] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert [p.returncode for p in procs] == [0] * world, logs
    train = book.split("train")
    res = [np.load(tmp_path / f"rank{r}.npz") for r in range(world)]
    per_rank = -(-train.shape[0] // world)  # DGL without drop_last: ceil, short ranks padded
    for r in res:
        assert int(r["n"]) == -(-per_rank // 50)
        assert r["e0"].shape[0] == per_rank and not np.array_equal(r["e0"], r["e1"])
        assert np.array_equal(np.sort(r["e0"]), np.sort(r["e1"]))  # a rank keeps its share
    shares = [np.unique(r["e0"]) for r in res]
    assert np.intersect1d(shares[0], shares[1]).shape[0] == 0
    assert np.array_equal(np.union1d(shares[0], shares[1]), train)
    # Contiguous shares of the sorted ids: each rank's seeds sit mostly in one part
    # (a strided or shuffled split would put about half in each).
    for share in shares:
        assert np.bincount(book.owner(share)).max() >= 0.85 * share.shape[0]
