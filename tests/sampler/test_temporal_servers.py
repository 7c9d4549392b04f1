"""Temporal sampling over two real graph servers: the local store's samples, never the future."""
from __future__ import annotations

import numpy as np
import pytest
import zmq
from hypothesis import HealthCheck, given, settings, strategies as st

from bgl.errors import ProtocolError, ServerError
from bgl.sampler import LocalSampler, SamplingClient
from bgl.sampler import protocol as P
from bgl.sampler.client import _request
from bgl.sampler.temporal.sampling import source_time_keys
from bgl.sampler.temporal.frames import parse_temporal_request, temporal_request
from bgl.store import write_store

from .conftest import ServerProcess, slice_store
from .test_temporal import check_sample

N = 400
NODE_TIME = np.random.default_rng(8).integers(999_800, 1_000_400, N)


@pytest.fixture(scope="module")
def temporal_store(tmp_path_factory, random_store_factory):
    """400 nodes, hubs included (a few rows of ~300 in-edges), random int64 edge times out of row order."""
    rng = np.random.default_rng(7)
    base = random_store_factory(num_nodes=N, avg_degree=10, seed=7)
    ip, idx = np.asarray(base.indptr), np.asarray(base.indices)
    hubs = np.zeros(N, np.int64)
    hubs[[5, 250]] = 300
    deg = np.diff(ip) + hubs
    indptr = np.zeros(N + 1, np.int64)
    np.cumsum(deg, out=indptr[1:])
    indices = rng.integers(0, N, int(indptr[-1])).astype(np.int32)
    etime = rng.integers(1_000_000, 1_000_500, int(indptr[-1])).astype(np.int64)
    key = source_time_keys(indices, NODE_TIME, etime)  # node times, for servers, as an edge array
    return write_store(tmp_path_factory.mktemp("temporal") / "store", indptr, indices, feat=np.asarray(base.feat),
                       edata={"timestamp": etime, "w": np.ones(indptr[-1], np.float32), "since": key})


class Servers(list):
    """Server addresses, with the part stores they serve."""

    def with_parts(self, parts):
        self.parts = parts
        return self


@pytest.fixture(scope="module")
def two_servers(tmp_path_factory, temporal_store):
    """Two `bgl serve` processes, each serving one part (ids [0, 230) and [230, 400)) of the store
    (``two_servers.parts``: the part stores, for co-located reads)."""
    work = tmp_path_factory.mktemp("temporal-servers")
    started, parts = [], []
    try:
        for k, (lo, hi) in enumerate([(0, 230), (230, N)]):
            parts.append(slice_store(temporal_store, lo, hi, work / f"part-{k}"))
            started.append(ServerProcess(["--store", str(parts[-1].path)], work))
        yield Servers(s.address for s in started).with_parts(parts)
    finally:
        for s in started:
            s.kill()


@pytest.mark.parametrize("strategy", ["uniform", "last"])
def test_two_servers_give_the_local_stores_sample(two_servers, temporal_store, strategy):
    rng = np.random.default_rng(1)
    seeds = np.concatenate([[5, 250, 5], rng.integers(0, N, 60)])  # hubs, a repeated seed
    times = rng.integers(1_000_000, 1_000_520, seeds.shape[0])
    want = LocalSampler(temporal_store).sample_temporal(seeds, times, [6, 4, 2], strategy, seed=3)
    for local_stores in ((), two_servers.parts[1:]):  # part 1 read here from its files: the same edges
        with SamplingClient(two_servers[::-1], timeout=60, local_stores=local_stores) as client:
            got = client.sample_temporal(seeds, times, [6, 4, 2], strategy, seed=3)
            assert len(client.local_servers) == len(local_stores)
        for field in ("node", "batch", "node_time", "src", "dst", "eid", "edge_time", "num_sampled_nodes",
                      "num_sampled_edges"):
            assert np.array_equal(getattr(got, field), getattr(want, field)), field
    assert got.num_sampled_edges[0] > 0


def test_node_times_over_servers_through_a_source_time_array(two_servers, temporal_store):
    rng = np.random.default_rng(5)
    seeds, times = rng.integers(0, N, 80), rng.integers(1_000_000, 1_000_520, 80)
    want = LocalSampler(temporal_store, node_time=NODE_TIME).sample_temporal(seeds, times, [5, 5], seed=2)
    assert np.all(NODE_TIME[want.node[want.src]] <= want.node_time[want.dst]) and want.num_sampled_edges[1] > 0
    with SamplingClient(two_servers, timeout=60) as client:
        got = client.sample_temporal(seeds, times, [5, 5], seed=2, time_name="since")
    for field in ("node", "batch", "src", "dst", "eid", "edge_time"):
        assert np.array_equal(getattr(got, field), getattr(want, field)), field


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**31), m=st.integers(1, 40), strategy=st.sampled_from(["uniform", "last"]),
       fanouts=st.lists(st.sampled_from([-1, 1, 3, 8]), min_size=1, max_size=3))
def test_no_future_edge_over_two_servers(two_servers, temporal_store, seed, m, strategy, fanouts):
    rng = np.random.default_rng(seed)
    seeds, times = rng.integers(0, N, m), rng.integers(999_990, 1_000_510, m)
    with SamplingClient(two_servers, timeout=60) as client:
        s = client.sample_temporal(seeds, times, fanouts, strategy, seed=seed)
    g = temporal_store
    check_sample(g, np.asarray(g.edge_array("timestamp")), s, fanouts, strategy)


def test_bad_temporal_requests_are_one_line_errors(two_servers):
    with SamplingClient(two_servers, timeout=60) as client:
        with pytest.raises(ServerError, match="'w' must be integers.*float32"):
            client.sample_temporal([1, 300], [5, 5], [2], time_name="w")
        with pytest.raises(ServerError, match="nope"):
            client.sample_temporal([1], [5], [2], time_name="nope")
        with pytest.raises(ValueError, match="seed times are required"):
            client.sample_temporal([1], None, [2])
        with pytest.raises(ValueError, match="needs an edge time array .time_name=. or a node time array"):
            client.temporal_layer([1], [5], 2, "uniform", 0, time_name=None)
    frames = temporal_request(1, np.array([1], np.int64), np.array([5]), 2, "last", 0, "timestamp")
    bad = P.Header(P.Op.SAMPLE, 1, 32, 7, 2, 2, 2, 0, 1, 1, 1).pack()  # strategy code 7
    with pytest.raises(ProtocolError, match="unknown strategy code 7"):
        parse_temporal_request([bad, *frames[1:]])
    with pytest.raises(ServerError, match="unknown strategy code 7"):
        _request(two_servers[0], [bad, *frames[1:]], P.Op.SAMPLE, timeout=60, curve=None)
    with pytest.raises(ProtocolError, match="needs 4 frames"):
        parse_temporal_request(frames[:3])


def malformed_temporal(rng, good: list) -> list:
    """One broken variant of a valid temporal SAMPLE's frames (a field, a frame's size or count)."""
    h = P.unpack_header(good[0])
    kind = int(rng.integers(0, 8))
    if kind == 0:
        return good[:int(rng.integers(1, 4))]  # frames missing
    if kind == 1:
        return good + [b"x"]
    if kind == 2:
        return [good[0], good[1], good[2][:-1], good[3]]  # times frame short of a byte
    if kind == 3:
        return [good[0], good[1], good[2], bytes(rng.integers(0, 256, 9, dtype=np.uint8))]  # bad name bytes
    fields = {4: {"field": int(rng.integers(2, 256))}, 5: {"len1": h.len1 + 1},
              6: {"dtype1": int(rng.integers(3, 13))}, 7: {"fanout": -int(rng.integers(2, 2**40))}}[kind]
    return [P.Header(**{**h.__dict__, **fields}).pack(), *good[1:]]


def test_fuzz_temporal_requests_each_get_an_error(two_servers, temporal_store):
    """400 malformed temporal requests each get ERROR (none a crash or a hang); the server then still samples."""
    rng = np.random.default_rng(99)
    seeds = np.arange(0, 230, 7, dtype=np.int64)
    good = temporal_request(1, seeds, np.full(seeds.shape[0], 1_000_200), 3, "uniform", 5, "timestamp")
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.linger = 0
    sock.connect(two_servers[0])
    try:
        for _ in range(400):
            sock.send_multipart(malformed_temporal(rng, good))
            assert sock.poll(30_000), "server stopped answering"
            assert P.unpack_header(sock.recv_multipart()[0]).op == P.Op.ERROR
    finally:
        sock.close()
    with SamplingClient(two_servers, timeout=60) as client:
        got = client.sample_temporal(seeds, np.full(seeds.shape[0], 1_000_200), [3], seed=5)
    want = LocalSampler(temporal_store).sample_temporal(seeds, np.full(seeds.shape[0], 1_000_200), [3], seed=5)
    assert np.array_equal(got.eid, want.eid)
