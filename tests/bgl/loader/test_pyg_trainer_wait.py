"""``stats()`` of the ``bgl.pyg`` loaders: the trainer's wait, PyG's batch conversion included
(``TimedEpochs`` in bgl/loader/epoch_iterator.py, over bgl/loader/trainer_wait.py's timer)."""
from __future__ import annotations

import time

import numpy as np
import pytest
import torch

pytest.importorskip("torch_geometric")
from torch_geometric.data import Data, HeteroData  # noqa: E402

import bgl.pyg  # noqa: E402

from .test_trainer_wait import timed_epoch  # noqa: E402

CONVERT_S = 0.015  # a slow transform: PyG's per-batch work that runs inside the loop's next()


def _pyg_loaders():
    """(name, build(transform)) for each kind of bgl.pyg loader, over small PyG inputs."""
    rng = np.random.default_rng(0)
    n, e = 120, 900
    ei = torch.from_numpy(rng.integers(0, n, (2, e)))
    data = Data(edge_index=ei, num_nodes=n, x=torch.randn(n, 4), y=torch.from_numpy(rng.integers(0, 3, n)),
                t=torch.from_numpy(rng.integers(0, 100, e)))
    hetero = HeteroData()
    hetero["user"].x, hetero["item"].x = torch.randn(40, 3), torch.randn(50, 2)
    pairs = torch.stack([torch.from_numpy(rng.integers(0, 40, 300)), torch.from_numpy(rng.integers(0, 50, 300))])
    rates = ("user", "rates", "item")
    hetero[rates].edge_index = pairs
    hetero["item", "rev_rates", "user"].edge_index = pairs.flip(0)
    hetero[rates].time = hetero["item", "rev_rates", "user"].time = torch.from_numpy(rng.integers(0, 100, 300))
    times = torch.full((100,), 99)
    kw = dict(batch_size=20)
    return [
        ("node", lambda t: bgl.pyg.NeighborLoader(data, [3, 2], input_nodes=torch.arange(100), transform=t, **kw)),
        ("link", lambda t: bgl.pyg.LinkNeighborLoader(data, [3, 2], edge_label_index=ei[:, :100], transform=t,
                                                      **kw)),
        ("temporal", lambda t: bgl.pyg.NeighborLoader(data, [3, 2], input_nodes=torch.arange(100), time_attr="t",
                                                      input_time=times, transform=t, **kw)),
        ("hetero", lambda t: bgl.pyg.NeighborLoader(hetero, [3, 2], input_nodes=("user", torch.arange(40)),
                                                    transform=t, **kw)),
        ("hetero-link", lambda t: bgl.pyg.LinkNeighborLoader(hetero, [3, 2], edge_label_index=(rates, pairs[:, :100]),
                                                             transform=t, **kw)),
        ("hetero-temporal", lambda t: bgl.pyg.NeighborLoader(hetero, [3, 2], input_nodes=("user", torch.arange(40)),
                                                             time_attr="time", input_time=torch.full((40,), 99),
                                                             transform=t, **kw)),
    ]


@pytest.mark.parametrize("kind", ["node", "link", "temporal", "hetero", "hetero-link", "hetero-temporal"])
def test_pyg_loaders_count_the_conversion_to_pygs_batch_as_waiting(kind):
    (build,) = [b for name, b in _pyg_loaders() if name == kind]

    def slow_transform(batch):
        time.sleep(CONVERT_S)
        return batch

    loader = build(slow_transform)
    before = loader.stats()
    assert before["batches"] == 0 and not before["running"]
    start = time.perf_counter()
    mine, n = timed_epoch(loader)
    wall = time.perf_counter() - start
    stats = loader.stats()
    assert n == len(loader) == stats["batches"] >= 2
    assert not stats["running"] and stats["pipeline"] in ("inline", "thread")
    # the transform runs inside next(): a bgl.DataLoader's own timer would not see it
    assert stats["wait_mean_s"] >= CONVERT_S, stats
    assert stats["wait_s"] <= mine <= stats["wait_s"] + 0.05
    assert stats["epoch_s"] <= wall and stats["epoch"] == 0
    it = iter(loader)
    next(it)
    assert loader.stats()["running"] and loader.stats()["batches"] == 1 and loader.stats()["epoch"] == 1
    it.close()
    assert not loader.stats()["running"]
