"""bgl.pyg's temporal loaders over a store and over its two real graph servers: the same PyG batches,
none with an edge newer than its subgraph's seed time (``time_attr`` names the store's edge array)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from bgl.pyg import LinkNeighborLoader, NeighborLoader

from .test_temporal_loader_servers import N, servers, timed_store  # noqa: F401 (module fixtures)


def pyg_batches(graph, strategy: str, link: bool, *, n: int = N, hub: int = 9, horizon: int = 10_000,
                fanouts=(3, 5), node_times: bool = False):
    """Three batches of 20 (60 seeds or pairs, six at the ``hub``) of PyG's temporal loaders over ``graph``
    with ``time_attr="timestamp"``; ``node_times``: node-level times, the seeds' own (no ``input_time``)."""
    rng = np.random.default_rng(8)
    times = torch.from_numpy(rng.integers(0, horizon, 60))
    torch.manual_seed(4)
    if link:
        pairs = torch.from_numpy(rng.integers(0, n, (2, 60)))
        pairs[1, :6] = hub
        loader = LinkNeighborLoader(graph, list(fanouts), edge_label_index=pairs, edge_label_time=times,
                                    time_attr="timestamp", temporal_strategy=strategy, neg_sampling_ratio=1.0,
                                    batch_size=20, shuffle=True)
    else:
        nodes = torch.from_numpy(rng.integers(0, n, 60))
        nodes[:6] = hub
        loader = NeighborLoader(graph, list(fanouts), input_nodes=nodes, time_attr="timestamp",
                                temporal_strategy=strategy, batch_size=20, shuffle=True,
                                **({} if node_times else {"input_time": times}))
    out = list(loader)
    loader.close()
    return out


@pytest.mark.parametrize("link", [False, True])
@pytest.mark.parametrize("strategy", ["uniform", "last"])
def test_servers_give_the_stores_pyg_batches(timed_store, servers, strategy, link):
    local = pyg_batches(str(timed_store.path), strategy, link)
    remote = pyg_batches(servers, strategy, link)
    assert len(local) == len(remote) == 3
    edge_time = np.asarray(timed_store.edge_array("timestamp"))
    indices = np.asarray(timed_store.indices)
    for bl, br in zip(local, remote):
        for key in ("n_id", "batch", "edge_index", "e_id", "x", "input_id"):
            assert torch.equal(bl[key], br[key]), key
        src, dst = bl.edge_index
        assert np.array_equal(indices[bl.e_id.numpy()], bl.n_id[src].numpy())  # e_id: the store's CSC positions
        seed_time = (bl.edge_label_time if link else bl.seed_time)[bl.batch[dst]]
        assert (edge_time[bl.e_id.numpy()] <= seed_time.numpy()).all(), "an edge from the future"
