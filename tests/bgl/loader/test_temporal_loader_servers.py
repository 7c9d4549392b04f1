"""A temporal bgl.DataLoader over a store and over its partition's two real graph servers: same batches."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import bgl
from bgl.store import write_store

from ...sampler.conftest import slice_store, started_servers

N = 400


@pytest.fixture(scope="module")
def timed_store(tmp_path_factory):
    """400 nodes with a hub (node 9: ~600 in-edges), int64 edge times out of row order, features."""
    rng = np.random.default_rng(3)
    deg = rng.integers(0, 12, N)
    deg[9] = 600
    indptr = np.zeros(N + 1, np.int64)
    np.cumsum(deg, out=indptr[1:])
    e = int(indptr[-1])
    return write_store(tmp_path_factory.mktemp("timed") / "store", indptr, rng.integers(0, N, e).astype(np.int32),
                       feat=rng.standard_normal((N, 5)).astype(np.float32), label=rng.integers(0, 3, N),
                       edata={"timestamp": rng.integers(0, 10_000, e).astype(np.int64)})


@pytest.fixture(scope="module")
def servers(timed_store, tmp_path_factory):
    """Two `bgl serve` processes, one per id range of the store (ids as the store's, CSC order kept)."""
    work = tmp_path_factory.mktemp("timed-servers")
    parts = [slice_store(timed_store, lo, hi, work / f"part-{k}") for k, (lo, hi) in enumerate([(0, 170), (170, N)])]
    with started_servers([["--store", str(part.path)] for part in parts], work) as addresses:
        yield addresses


def batches(graph, layout, strategy, **kw):
    rng = np.random.default_rng(5)
    nodes = rng.integers(0, N, 120)
    nodes[:10] = 9
    times = rng.integers(0, 10_000, 120)
    sampler = bgl.TemporalNeighborSampler([3, 5], edge_timestamp_attr_name="timestamp", layout=layout,
                                          strategy=strategy)
    torch.manual_seed(2)
    loader = bgl.DataLoader(graph, torch.from_numpy(nodes), sampler, seed_time=torch.from_numpy(times),
                            batch_size=40, blocks="bgl", **kw)
    return list(loader), times


@pytest.mark.parametrize("layout", ["tree", "disjoint"])
@pytest.mark.parametrize("strategy", ["uniform", "last"])
def test_servers_give_the_stores_batches_and_no_future_edge(timed_store, servers, layout, strategy):
    local, times = batches(str(timed_store.path), layout, strategy)
    remote, _ = batches(servers, layout, strategy)
    assert len(local) == len(remote) == 3
    edge_time = np.asarray(timed_store.edge_array("timestamp"))
    indices, indptr = np.asarray(timed_store.indices), np.asarray(timed_store.indptr)
    for k, ((inp_l, out_l, bl), (inp_r, out_r, br)) in enumerate(zip(local, remote)):
        assert torch.equal(inp_l, inp_r) and torch.equal(out_l, out_r)
        assert torch.equal(bl[0].srcdata["feat"], br[0].srcdata["feat"])
        seed_time = times[40 * k:][:40][bl[0].srcdata["batch"].numpy()]
        for x, y in zip(bl, br):
            for name in ("src_ids", "indptr", "indices"):
                assert torch.equal(getattr(x, name), getattr(y, name)), name
            assert torch.equal(x.edata["timestamp"], y.edata["timestamp"])
            # The store's edge ids are CSC positions: check each edge and its time there.
            eid, dst_local = x.edge_ids.numpy(), np.repeat(np.arange(x.num_dst), np.diff(x.indptr.numpy()))
            src, dst = x.src_ids.numpy()[x.indices.numpy()], x.src_ids.numpy()[dst_local]
            assert np.array_equal(indices[eid], src)
            assert ((indptr[dst] <= eid) & (eid < indptr[dst + 1])).all()
            assert (edge_time[eid] <= seed_time[dst_local]).all()
