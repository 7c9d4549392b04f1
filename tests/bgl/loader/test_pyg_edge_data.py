"""bgl.pyg.NeighborLoader: weight_attr= samples by an edge attribute; edge_attr / e_id of the sampled edges."""
from __future__ import annotations

import pytest
import torch

from bgl.pyg import NeighborLoader

Data = pytest.importorskip("torch_geometric.data").Data


@pytest.fixture(scope="module")
def data():
    g = torch.Generator().manual_seed(0)
    n, e = 300, 4000
    edge_index = torch.randint(0, n, (2, e), generator=g)
    w = torch.rand(e, generator=g)
    w[w < 0.5] = 0
    return Data(x=torch.randn(n, 5, generator=g), y=torch.randint(0, 3, (n,), generator=g),
                edge_index=edge_index, edge_attr=torch.randn(e, 3, generator=g), w=w)


def test_weight_attr_and_edge_attr(data):
    loader = NeighborLoader(data, [5, 5], batch_size=50, weight_attr="w", input_nodes=torch.arange(100))
    batches = 0
    for batch in loader:
        e_id = batch.e_id
        assert e_id.shape[0] == batch.edge_index.shape[1]
        assert bool((data.w[e_id] > 0).all())  # never through a zero-weight edge
        assert torch.equal(batch.edge_attr, data.edge_attr[e_id])
        # e_id names the very edge: its endpoints are the batch edge's endpoints
        src, dst = batch.n_id[batch.edge_index[0]], batch.n_id[batch.edge_index[1]]
        assert torch.equal(data.edge_index[0, e_id], src) and torch.equal(data.edge_index[1, e_id], dst)
        batches += 1
    assert batches == 2


def test_unknown_weight_attr_is_named(data):
    with pytest.raises(ValueError, match="prob / mask names edge data 'nope'"):
        NeighborLoader(data, [2], batch_size=10, weight_attr="nope")
