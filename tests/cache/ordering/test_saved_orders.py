"""Proximity orders saved beside the checkpoints (bgl.cache.ordering.saved_orders) and read back by a loader
built the same way: same batches, damaged files never used, only the newest kept, bad paths refused."""
from __future__ import annotations

import logging
import os
import time

import numpy as np
import pytest
import torch

import bgl
from bgl.cache.ordering.saved_orders import KEEP, SavedOrders, array_crc32
from bgl.loader.stages.order import OrderStage


def _seeds(loader, limit=None) -> list[np.ndarray]:
    out = []
    for i, (_, output_nodes, _) in enumerate(loader):
        if limit is not None and i == limit:
            break
        out.append(output_nodes.numpy().copy())
    return out


def _loader(store, order_dir, **kw):
    torch.manual_seed(7)  # the first epoch's seed comes from torch's RNG, as with DGL
    train = torch.from_numpy(np.asarray(store.split("train")).copy())
    return bgl.DataLoader(store, train, bgl.NeighborSampler([3, 3]), batch_size=16, shuffle=True,
                          order="proximity", order_dir=order_dir, **kw)


def _files(d):
    return sorted(p for p in os.listdir(d) if p.startswith("proximity-"))


def test_round_trip_keeps_the_newest(tmp_path):
    saved = SavedOrders(tmp_path / "orders", "abc123")
    orders = {seed: np.random.default_rng(seed).permutation(50).astype(np.int64) for seed in range(5)}
    for seed, order in orders.items():
        saved.save(seed, order)
    assert len(_files(tmp_path / "orders")) == KEEP
    assert np.array_equal(saved.load(4, 50), orders[4])
    assert saved.load(0, 50) is None  # pruned
    assert saved.load(4, 49) is None  # another length: not this loader's
    assert SavedOrders(tmp_path / "orders", "def456").load(4, 50) is None  # another key


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_damaged_file_is_not_used(tmp_path, caplog, damage):
    saved = SavedOrders(tmp_path, "k1")
    saved.save(3, np.arange(1000, dtype=np.int64))
    path = tmp_path / _files(tmp_path)[0]
    data = bytearray(path.read_bytes())
    path.write_bytes(data[:-100] if damage == "truncate" else data[:-8] + b"\x01" * 8)
    with caplog.at_level(logging.WARNING):
        assert saved.load(3, 1000) is None
    assert "computing it again" in caplog.text


def test_a_killed_writers_temporary_is_removed_and_a_bad_dir_only_warns(tmp_path, caplog):
    saved = SavedOrders(tmp_path, "k2")
    leftover = tmp_path / ".proximity-k2-1-00000000.npy.999999999.1.tmp"
    leftover.write_bytes(b"half")
    saved.save(1, np.arange(10, dtype=np.int64))
    assert not leftover.exists() and len(_files(tmp_path)) == 1
    (tmp_path / "file").write_text("x")
    with caplog.at_level(logging.WARNING):
        SavedOrders(tmp_path / "file" / "orders", "k3").save(1, np.arange(10, dtype=np.int64))  # no raise
    assert "could not save the proximity order" in caplog.text


def test_a_loader_built_the_same_way_reads_the_saved_order(random_store, tmp_path):
    d = tmp_path / "orders"
    first = _seeds(_loader(random_store, d))
    # The next epoch's order is built (and saved) by a background thread started during this one: two
    # files once it ends (on a loaded box the 19-batch epoch can finish first; the thread still saves).
    deadline = time.monotonic() + 60
    while len(_files(d)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(_files(d)) == 2
    assert [b.tolist() for b in _seeds(_loader(random_store, d))] == [b.tolist() for b in first]
    assert [b.tolist() for b in _seeds(_loader(random_store, None))] == [b.tolist() for b in first]
    # Read back, not recomputed: a doctored file under the epoch's name is what the loader yields.
    name = next(p for p in _files(d) if p.endswith(f"-{array_crc32(np.concatenate(first)):08x}.npy"))
    for p in _files(d):
        os.unlink(d / p)
    flipped = np.concatenate(first)[::-1].copy()
    np.save(d / name.replace(name.rsplit("-", 1)[1], f"{array_crc32(flipped):08x}.npy"), flipped)
    assert np.array_equal(np.concatenate(_seeds(_loader(random_store, d))), flipped)
    # Another number of BFS sequences is another order: the file is not taken for it.
    other = np.concatenate(_seeds(_loader(random_store, d, num_sequences=3)))
    assert not np.array_equal(other, flipped)


def test_resume_with_saved_orders_gives_the_uninterrupted_batches(random_store, tmp_path):
    d = tmp_path / "orders"
    whole = _seeds(_loader(random_store, None))
    for k in (0, 3, len(whole) - 1):
        a = _loader(random_store, d)
        it = iter(a)
        head = [next(it)[1].numpy().copy() for _ in range(k)]
        state = a.state_dict()
        b = _loader(random_store, d)
        b.load_state_dict(state)
        assert [x.tolist() for x in head + _seeds(b)] == [x.tolist() for x in whole]


def test_partition_order_is_saved_and_read_back(cora_store, tmp_path):
    from bgl.partition import partition_graph

    parts = partition_graph(cora_store, "bgl", 2, tmp_path / "parts")
    ids = np.sort(parts.split("train")).astype(np.int64)
    stage = lambda d: OrderStage(ids=ids, batch_size=8, order="proximity", partition_dir=str(tmp_path / "parts"),  # noqa: E731
                                 num_sequences=4, order_dir=d)
    plain = stage(None).epoch_order(11)
    assert np.array_equal(stage(str(tmp_path / "o")).epoch_order(11), plain)
    assert len(_files(tmp_path / "o")) == 1
    assert np.array_equal(stage(str(tmp_path / "o")).epoch_order(11), plain)


def test_bad_order_dir_is_refused(random_store, tmp_path):
    with pytest.raises(TypeError, match="order_dir must be a directory path"):
        _loader(random_store, 5)
    (tmp_path / "f").write_text("x")
    with pytest.raises(NotADirectoryError, match="is not a directory"):
        _loader(random_store, tmp_path / "f")


def test_edge_seeds_in_stage_processes_save_and_read_back(random_store, tmp_path):
    d = tmp_path / "orders"

    def edges(order_dir):
        torch.manual_seed(8)
        sampler = bgl.as_edge_prediction_sampler(bgl.NeighborSampler([3]), negative_sampler=bgl.negative_sampler.Uniform(1))
        return bgl.DataLoader(random_store, torch.arange(0, 1200, 2), sampler, batch_size=64, shuffle=True,
                              order="proximity", order_dir=order_dir, pipeline="processes",
                              stage_cores={"sample": [0], "fetch": [0]})

    def pairs(loader):
        try:
            # a batch's seeds' endpoints and its sampled input nodes
            return [(b[-1][-1].dst_ids.tolist(), b[-1][0].src_ids.tolist()) for b in loader]
        finally:
            loader.close()

    plain = pairs(edges(None))
    assert pairs(edges(d)) == plain
    assert len(_files(d)) == 1  # written by the order stage's process (processes do not prefetch the next epoch)
    assert pairs(edges(d)) == plain


def test_a_graph_written_again_is_another_graph(tmp_path):
    from bgl.cache.ordering.saved_orders import graph_identity

    (tmp_path / "meta.json").write_text("{}")
    before = graph_identity(None, str(tmp_path))
    os.utime(tmp_path / "meta.json", ns=(1, 1))  # same bytes, written again
    assert graph_identity(None, str(tmp_path)) != before
    assert graph_identity(None, str(tmp_path / "missing")) is None
