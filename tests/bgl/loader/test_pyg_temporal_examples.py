"""A temporal link-prediction loop in the shape of PyG's examples, with only the loader import swapped.

Edge-level times (``time_attr="time"``), ``LinkNeighborLoader(..., edge_label_time=)`` with binary
negatives, a learnt node embedding read through ``n_id`` and two SAGEConv layers, a few optimiser
steps; every batch is checked for edges newer than its pair's time.  On a small generated temporal
graph always, and on SNAP's CollegeMsg (the real temporal graph in ../shared/datasets) when it is there.
"""
from __future__ import annotations

import gzip
import os
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch_geometric.data import Data
from torch_geometric.nn import SAGEConv

from bgl.pyg import LinkNeighborLoader  # was: from torch_geometric.loader import LinkNeighborLoader

COLLEGE_MSG = Path(os.environ.get("BGL_SHARED_DATASETS", "/work/shared/datasets")) / "CollegeMsg.txt.gz"


class Model(torch.nn.Module):
    def __init__(self, num_nodes: int, hidden: int = 32):
        super().__init__()
        self.emb = torch.nn.Embedding(num_nodes, hidden)
        self.conv1, self.conv2 = SAGEConv(hidden, hidden), SAGEConv(hidden, hidden)

    def forward(self, n_id, edge_index):
        h = self.conv1(self.emb(n_id), edge_index).relu()
        return self.conv2(h, edge_index)


def train_steps(data: Data, steps: int, batch_size: int = 128) -> list[float]:
    """PyG's temporal link-prediction loop; returns the losses (and checks every batch)."""
    torch.manual_seed(0)
    # supervise the newest fifth of the messages, each predicted from strictly older ones
    newest = torch.argsort(data.time)[-data.num_edges // 5:]
    loader = LinkNeighborLoader(data, num_neighbors=[10, 5], edge_label_index=data.edge_index[:, newest],
                                edge_label_time=data.time[newest] - 1, time_attr="time",
                                neg_sampling_ratio=1.0, batch_size=batch_size, shuffle=True)
    model = Model(data.num_nodes)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for step, batch in enumerate(loader):
        if step == steps:
            break
        src, dst = batch.edge_index
        assert batch.e_id.numel() > 0
        pair_time = batch.edge_label_time[batch.batch[dst]]
        assert bool((data.time[batch.e_id] <= pair_time).all()), "an edge from the future"
        assert torch.equal(data.edge_index[:, batch.e_id], batch.n_id[batch.edge_index])
        opt.zero_grad()
        h = model(batch.n_id, batch.edge_index)
        pred = (h[batch.edge_label_index[0]] * h[batch.edge_label_index[1]]).sum(-1)
        loss = F.binary_cross_entropy_with_logits(pred, batch.edge_label)
        loss.backward()
        opt.step()
        losses.append(float(loss))
    loader.close()
    return losses


def test_generated_temporal_graph():
    rng = np.random.default_rng(0)
    n, e = 300, 6000
    src, dst = rng.integers(0, n, e), rng.integers(0, n, e)
    data = Data(edge_index=torch.from_numpy(np.stack([src, dst])), num_nodes=n,
                time=torch.from_numpy(np.sort(rng.integers(1_082_040_961, 1_098_777_142, e))))
    losses = train_steps(data, steps=6)
    assert len(losses) == 6 and all(np.isfinite(losses))


@pytest.mark.skipif(not COLLEGE_MSG.exists(), reason=f"{COLLEGE_MSG} not present")
def test_college_msg():
    with gzip.open(COLLEGE_MSG, "rt") as f:
        rows = np.loadtxt(f, dtype=np.int64, skiprows=1)  # header: src dst time
    data = Data(edge_index=torch.from_numpy(rows[:, :2].T.copy()), num_nodes=int(rows[:, :2].max()) + 1,
                time=torch.from_numpy(rows[:, 2].copy()))
    losses = train_steps(data, steps=8, batch_size=256)
    assert len(losses) == 8 and all(np.isfinite(losses))
