"""Node times as data of a store, its partition and its graph servers: a server filters by its part's copy
of each in-edge's source time, so two real server processes give exactly the store's samples, never a
node (or edge) newer than its subgraph's seed time."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from bgl.cli import main
from bgl.errors import ProtocolError, ServerError
from bgl.partition import open_partition
from bgl.sampler import LocalSampler, SamplingClient
from bgl.sampler.temporal.frames import parse_temporal_request, temporal_request
from bgl.store import GraphStore, write_store

from .conftest import hub_csc, part_args, slice_store, started_servers
from .test_temporal import check_sample

N = 300
FIELDS = ("node", "batch", "node_time", "src", "dst", "eid", "edge_time", "num_sampled_nodes", "num_sampled_edges")


@pytest.fixture(scope="module")
def timed_store(tmp_path_factory):
    """300 nodes, a hub (node 7: ~500 in-edges), int64 edge times and node times both named ``timestamp``
    (the defaults of both flags), node times spread so that they filter as often as edge times do."""
    rng = np.random.default_rng(21)
    indptr, indices = hub_csc(rng, N, 14, 7, 500)
    e = int(indptr[-1])
    return write_store(tmp_path_factory.mktemp("node-times") / "store", indptr, indices,
                       feat=rng.standard_normal((N, 3)).astype(np.float32),
                       edata={"timestamp": rng.integers(0, 1000, e).astype(np.int64)},
                       ndata={"timestamp": rng.integers(0, 1000, N).astype(np.int64),
                              "score": rng.random(N).astype(np.float32)})


@pytest.fixture(scope="module")
def two_servers(timed_store, tmp_path_factory):
    """Two `bgl serve` processes over parts [0, 140) and [140, 300) of the store (the store's ids)."""
    work = tmp_path_factory.mktemp("node-time-servers")
    parts = [slice_store(timed_store, lo, hi, work / f"part-{k}") for k, (lo, hi) in enumerate([(0, 140), (140, N)])]
    with started_servers([["--store", str(p.path)] for p in parts], work) as addresses:
        yield addresses, parts


def seeds_and_times(seed, m=60):
    rng = np.random.default_rng(seed)
    seeds = rng.integers(0, N, m)
    seeds[:4] = 7  # the hub, a seed at several times
    return seeds, rng.integers(-5, 1010, m)


def node_key(store, edges: bool):
    """What an edge is filtered by: its source's time, with edge times the later of the two."""
    src_time = np.asarray(store.node_array("timestamp"))[np.asarray(store.indices)]
    return np.maximum(src_time, store.edge_array("timestamp")) if edges else src_time


@pytest.mark.parametrize("strategy", ["uniform", "last"])
@pytest.mark.parametrize("edges", [True, False])
def test_servers_filter_by_node_times_exactly_as_the_store_does(timed_store, two_servers, strategy, edges):
    addresses, parts = two_servers
    seeds, times = seeds_and_times(3)
    time_name = "timestamp" if edges else None
    node_time = np.asarray(timed_store.node_array("timestamp"))
    want = LocalSampler(timed_store, node_time=node_time).sample_temporal(seeds, times, [5, 3, 2], strategy, 4,
                                                                          time_name)
    named = LocalSampler(timed_store).sample_temporal(seeds, times, [5, 3, 2], strategy, 4, time_name,
                                                      node_time_name="timestamp")
    check_sample(timed_store, node_key(timed_store, edges), want, [5, 3, 2], strategy, node_time)
    assert want.num_sampled_edges[1] > 0
    for local_stores in ((), parts[1:]):  # part 1 read here from its files: the same edges
        with SamplingClient(addresses[::-1], timeout=60, local_stores=local_stores) as client:
            got = client.sample_temporal(seeds, times, [5, 3, 2], strategy, 4, time_name, node_time_name="timestamp")
        for field in FIELDS:
            assert np.array_equal(getattr(got, field), getattr(want, field)), field
            assert np.array_equal(getattr(named, field), getattr(want, field)), field


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**31), m=st.integers(1, 30), strategy=st.sampled_from(["uniform", "last"]),
       edges=st.booleans(), fanouts=st.lists(st.sampled_from([-1, 1, 3, 8]), min_size=1, max_size=3))
def test_no_node_from_the_future_over_two_servers(timed_store, two_servers, seed, m, strategy, edges, fanouts):
    rng = np.random.default_rng(seed)
    seeds, times = rng.integers(0, N, m), rng.integers(-5, 1010, m)
    time_name = "timestamp" if edges else None
    with SamplingClient(two_servers[0], timeout=60) as client:
        s = client.sample_temporal(seeds, times, fanouts, strategy, seed, time_name, node_time_name="timestamp")
    node_time = np.asarray(timed_store.node_array("timestamp"))
    check_sample(timed_store, node_key(timed_store, edges), s, fanouts, strategy, node_time)
    want = LocalSampler(timed_store, node_time=node_time).sample_temporal(seeds, times, fanouts, strategy, seed,
                                                                          time_name)
    assert np.array_equal(s.eid, want.eid) and np.array_equal(s.node, want.node)


def test_bgl_partition_carries_node_times_and_its_servers_give_the_stores_edges(timed_store, tmp_path):
    """A real `bgl partition` renumbers nodes: each part keeps its own nodes' times and its in-edges' source
    times, so its servers' "last" samples are the store's edges (mapped through orig_ids / orig_eids)."""
    assert main(["partition", str(timed_store.path), str(tmp_path / "p"), "--method", "random", "--parts", "2"]) == 0
    book = open_partition(tmp_path / "p")
    node_time = np.asarray(timed_store.node_array("timestamp"))
    orig_ids, orig_eids = np.asarray(book.orig_ids), np.asarray(book.orig_eids)
    new_of = np.empty(N, np.int64)
    new_of[orig_ids] = np.arange(N)
    for k in range(2):
        part = GraphStore(tmp_path / "p" / f"part-{k}")
        lo, hi = int(book.bounds[k]), int(book.bounds[k + 1])
        assert np.array_equal(part.node_array("timestamp"), node_time[orig_ids[lo:hi]])
        assert np.array_equal(part.source_values("timestamp"), node_time[orig_ids[np.asarray(part.indices)]])
        with pytest.raises(KeyError, match=r"no node array 'nope'; it has \['score', 'timestamp'\]"):
            part.node_array("nope")
    seeds, times = seeds_and_times(8)
    want = LocalSampler(timed_store, node_time=node_time).sample_temporal(seeds, times, [4, 3], "last", 1)
    with started_servers(part_args(book), tmp_path) as addresses, SamplingClient(addresses, timeout=60) as client:
        got = client.sample_temporal(new_of[seeds], times, [4, 3], "last", 1, node_time_name="timestamp")
        uniform = client.sample_temporal(new_of[seeds], times, [4, 3], "uniform", 1, node_time_name="timestamp")
    assert np.array_equal(orig_ids[got.node], want.node) and np.array_equal(orig_eids[got.eid], want.eid)
    for field in ("batch", "src", "dst", "edge_time", "num_sampled_edges"):
        assert np.array_equal(getattr(got, field), getattr(want, field)), field
    key = np.maximum(node_time[np.asarray(timed_store.indices)], timed_store.edge_array("timestamp"))
    assert np.all(key[orig_eids[uniform.eid]] <= uniform.node_time[uniform.dst])
    assert np.all(node_time[orig_ids[uniform.node[uniform.src]]] <= uniform.node_time[uniform.dst])


def test_bad_node_time_requests_are_one_line_errors(two_servers):
    addresses, _ = two_servers
    with SamplingClient(addresses, timeout=60) as client:
        with pytest.raises(ServerError, match=r"no node array 'nope'; it has \['score', 'timestamp'\]"):
            client.sample_temporal([1, 200], [5, 5], [2], node_time_name="nope")
        with pytest.raises(ServerError, match="node time array 'score' must be integers.*float32"):
            client.sample_temporal([1, 200], [5, 5], [2], node_time_name="score")
        with pytest.raises(ValueError, match="needs an edge time array.*or a node time array"):
            client.sample_temporal([1], [5], [2], time_name=None)
        with pytest.raises(ValueError, match="edge data name"):
            client.sample_temporal([1], [5], [2], node_time_name="a/b")
    frames = temporal_request(1, np.array([1], np.int64), np.array([5]), 2, "last", 0, None, "timestamp")
    req = parse_temporal_request(frames)
    assert req.time_name is None and req.node_time_name == "timestamp"
    with pytest.raises(ProtocolError, match="bad time array name"):
        parse_temporal_request([*frames[:3], b"timestamp\0a/b"])
    assert parse_temporal_request(temporal_request(1, np.array([1]), np.array([5]), 2, "last", 0,
                                                   "timestamp")).node_time_name is None


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**31), n=st.integers(2, 120), avg=st.integers(0, 12), tmax=st.integers(1, 40))
def test_random_graphs_over_two_servers_equal_the_store_and_never_the_future(tmp_path_factory, seed, n, avg, tmax):
    """Random graph, edge and node times (few distinct values: ties), cut at a random node into two parts
    served by two real processes: every multi-hop sample equals the store's and has no future node or edge."""
    rng = np.random.default_rng(seed)
    deg = rng.integers(0, 2 * avg + 1, n)
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(deg, out=indptr[1:])
    e = int(indptr[-1])
    work = tmp_path_factory.mktemp("random-node-times")
    store = write_store(work / "store", indptr, rng.integers(0, n, e).astype(np.int32),
                        edata={"timestamp": rng.integers(0, tmax, e).astype(np.int64)},
                        ndata={"timestamp": rng.integers(0, tmax, n).astype(np.int64)})
    cut = int(rng.integers(1, n))
    parts = [slice_store(store, lo, hi, work / f"part-{k}") for k, (lo, hi) in enumerate([(0, cut), (cut, n)])]
    node_time = np.asarray(store.node_array("timestamp"))
    with started_servers([["--store", str(p.path)] for p in parts], work) as addresses, \
            SamplingClient(addresses, timeout=60) as client:
        for trial in range(6):
            m, strategy, edges = int(rng.integers(1, 20)), ("uniform", "last")[trial % 2], trial % 3 != 0
            fanouts = list(rng.choice([-1, 1, 2, 5], int(rng.integers(1, 4))))
            seeds, times = rng.integers(0, n, m), rng.integers(-1, tmax + 1, m)
            time_name = "timestamp" if edges else None
            got = client.sample_temporal(seeds, times, fanouts, strategy, trial, time_name, node_time_name="timestamp")
            want = LocalSampler(store, node_time=node_time).sample_temporal(seeds, times, fanouts, strategy, trial,
                                                                            time_name)
            for field in FIELDS:
                assert np.array_equal(getattr(got, field), getattr(want, field)), field
            check_sample(store, node_key(store, edges), got, fanouts, strategy, node_time)
