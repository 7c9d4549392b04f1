"""bgl.pyg.NeighborLoader over a store ingested from a PyG Data, and over its 2 graph servers:
weight_attr= and edge_attr (the array named edge_attr, or any edge array asked for by name)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import bgl
from bgl.partition.format import write_partition
from bgl.pyg import NeighborLoader

Data = pytest.importorskip("torch_geometric.data").Data


@pytest.fixture(scope="module")
def pyg_store(tmp_path_factory):
    g = torch.Generator().manual_seed(1)
    n, e = 300, 4000
    w = torch.rand(e, generator=g)
    w[w < 0.4] = 0
    data = Data(x=torch.randn(n, 5, generator=g), y=torch.randint(0, 3, (n,), generator=g),
                edge_index=torch.randint(0, n, (2, e), generator=g), edge_attr=torch.randn(e, 2, generator=g),
                edge_weight=w, score=torch.randn(e, 4, generator=g))
    return bgl.ingest(data, tmp_path_factory.mktemp("pygstore") / "s", remove_self_loops=False, dedupe=False)


def batches(loader):
    return [(b.n_id.clone(), b.edge_index.clone(), b.edge_attr.clone()) for b in loader]


@pytest.mark.parametrize("edge_attr", [None, "score"])
def test_store_batches_carry_the_stored_rows_of_the_sampled_edges(pyg_store, edge_attr):
    torch.manual_seed(0)
    loader = NeighborLoader(str(pyg_store.path), [4, 3], batch_size=40, input_nodes=torch.arange(120),
                            weight_attr="edge_weight", edge_attr=edge_attr)
    rows = np.asarray(pyg_store.edge_array(edge_attr or "edge_attr"))
    weights = np.asarray(pyg_store.edge_array("edge_weight"))
    for b in loader:
        assert np.array_equal(b.edge_attr.numpy(), rows[b.e_id.numpy()])
        assert bool((weights[b.e_id.numpy()] > 0).all())


def test_two_servers_give_the_store_batches_with_a_named_edge_array(pyg_store, tmp_path, serve_partition):
    book = write_partition(pyg_store, np.arange(pyg_store.num_nodes) * 2 // pyg_store.num_nodes, 2, tmp_path / "p",
                           method="range")  # range parts keep the ids
    kwargs = dict(batch_size=40, input_nodes=torch.arange(120), weight_attr="edge_weight", edge_attr="score")
    torch.manual_seed(5)
    local = batches(NeighborLoader(str(pyg_store.path), [4, 3], **kwargs))
    with serve_partition(book, tmp_path) as addresses:
        torch.manual_seed(5)
        loader = NeighborLoader(addresses, [4, 3], **kwargs)
        remote = batches(loader)
        loader.close()
    assert len(local) == len(remote) == 3
    for x, y in zip(local, remote):
        assert all(torch.equal(a, b) for a, b in zip(x, y))


def test_a_missing_edge_attr_is_named(pyg_store):
    with pytest.raises(ValueError, match="names edge data 'nope'"):
        NeighborLoader(str(pyg_store.path), [4], batch_size=10, edge_attr="nope")
