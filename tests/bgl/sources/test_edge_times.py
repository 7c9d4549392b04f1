"""Edge times through ingest, partitioning and graph servers: an edge list's time column becomes the
int64 ``timestamp`` edge array, parts carry it, and servers sample by it."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import bgl
from bgl.errors import IngestError
from bgl.partition.format import write_partition
from bgl.sampler import LocalSampler, SamplingClient
from bgl.sampler.temporal.sampling import TemporalLayer, build_index
from bgl.store import write_store

BIG = 2**53 + 1  # a float64 column would round it


def edges_with_times(rng, n, e):
    src, dst = rng.integers(0, n, e), rng.integers(0, n, e)
    times = rng.integers(1_082_040_961, 1_098_777_142, e)
    times[::97] = BIG
    return src, dst, times


def write_edge_list(path, src, dst, times, weights=None):
    lines = ["# Directed graph: src dst time [weight]"]
    for i, (s, d, t) in enumerate(zip(src, dst, times)):
        sep = (" ", "\t", ",")[i % 3]
        extra = "" if weights is None else f"{sep}{weights[i]:.3f}"
        lines.append(f"{s}{sep}{d}{sep}{t}{extra}")
        if i % 50 == 0:
            lines.append("% a comment between edges")
            lines.append("")
    path.write_text("\n".join(lines) + "\n")


def triples(store, name="timestamp"):
    """Sorted (src, dst, time) of every stored edge."""
    dst = np.repeat(np.arange(store.num_nodes), np.diff(np.asarray(store.indptr)))
    return sorted(zip(np.asarray(store.indices).tolist(), dst.tolist(), np.asarray(store.edge_array(name)).tolist()))


def test_time_column_becomes_the_int64_timestamp_array(tmp_path):
    rng = np.random.default_rng(0)
    src, dst, times = edges_with_times(rng, 60, 800)
    weights = rng.random(800)
    write_edge_list(tmp_path / "g.txt", src, dst, times, weights)
    store = bgl.ingest(str(tmp_path / "g.txt"), tmp_path / "s", "edgelist", edge_time_column=2,
                       edge_weight_column=3, dedupe=False, remove_self_loops=False)
    ts = store.edge_array("timestamp")
    assert ts.dtype == np.int64 and ts.shape == (800,) and int(ts.max()) == BIG
    assert triples(store) == sorted(zip(src.tolist(), dst.tolist(), times.tolist()))
    w = np.asarray(store.edge_array("weight"))  # the weight column still rides along
    dst_of = np.repeat(np.arange(store.num_nodes), np.diff(np.asarray(store.indptr)))
    got = sorted(zip(np.asarray(store.indices).tolist(), dst_of.tolist(), ts.tolist(), w.tolist()))
    assert got == sorted(zip(src.tolist(), dst.tolist(), times.tolist(), np.round(weights, 3).astype(np.float32).tolist()))


def test_bad_time_column_is_one_line_naming_the_line(tmp_path):
    (tmp_path / "g.txt").write_text("0 1 100\n1 2 1.5\n")
    with pytest.raises(IngestError, match=r"g.txt:2: edge time column 2 missing or not an integer: '1 2 1.5'"):
        bgl.ingest(str(tmp_path / "g.txt"), tmp_path / "s", "edgelist", edge_time_column=2)
    (tmp_path / "h.txt").write_text("0 1 100\n# c\n1 2\n")
    with pytest.raises(IngestError, match=r"h.txt:3: edge time column 2 missing"):
        bgl.ingest(str(tmp_path / "h.txt"), tmp_path / "s", "edgelist", edge_time_column=2)
    with pytest.raises(IngestError, match="edge_time_column must be an int >= 2.*got 1"):
        bgl.ingest(str(tmp_path / "g.txt"), tmp_path / "s", "edgelist", edge_time_column=1)
    assert not (tmp_path / "s").exists()


def test_cli_edge_time_column(tmp_path):
    (tmp_path / "g.txt").write_text("0 1 30\n2 1 10\n1 0 20\n")
    out = subprocess.run([sys.executable, "-m", "bgl", "ingest", str(tmp_path / "g.txt"), str(tmp_path / "s"),
                          "--edge-time-column", "2", "--no-progress"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert triples(bgl.open_store(tmp_path / "s")) == [(0, 1, 30), (1, 0, 20), (2, 1, 10)]
    bad = subprocess.run([sys.executable, "-m", "bgl", "ingest", str(tmp_path / "g.txt"), str(tmp_path / "t"),
                          "--edge-time-column", "1"], capture_output=True, text=True)
    assert bad.returncode != 0 and len(bad.stderr.strip().splitlines()) == 1 and "--edge-time-column" in bad.stderr


def test_ingest_stores_the_rows_time_order_and_samplers_read_it(tmp_path, caplog):
    rng = np.random.default_rng(2)
    src, dst, times = edges_with_times(rng, 40, 900)
    write_edge_list(tmp_path / "g.txt", src, dst, times)
    store = bgl.ingest(str(tmp_path / "g.txt"), tmp_path / "s", "edgelist", edge_time_column=2, dedupe=False)
    stored = store.edge_array("timestamp.order")
    assert stored.dtype == np.int32  # 4 B per edge
    ip, ts = np.asarray(store.indptr), np.asarray(store.edge_array("timestamp"))
    built = build_index(ip, np.asarray(store.indices), ts)
    assert np.array_equal(stored, built.order)
    index = TemporalLayer(store).index("timestamp")
    assert np.shares_memory(index.order, stored)  # read in place, not rebuilt
    # a time order that is not one (a stale or hand-made file) is refused and rebuilt, with a warning
    bad = np.asarray(stored).copy()
    bad[ip[3]:ip[4]] = bad[ip[3]:ip[4]][::-1]
    forged = write_store(tmp_path / "f", ip, np.asarray(store.indices), edata={"timestamp": ts, "timestamp.order": bad})
    with caplog.at_level("WARNING"):
        index = TemporalLayer(forged).index("timestamp")
    assert np.array_equal(index.order, built.order) and "is not a time order" in caplog.text
    # rows already in time order: nothing stored
    (tmp_path / "h.txt").write_text("0 1 5\n2 1 7\n1 0 3\n")
    assert "timestamp.order" not in bgl.ingest(str(tmp_path / "h.txt"), tmp_path / "h", "edgelist",
                                               edge_time_column=2).edata


def test_partition_servers_sample_by_the_ingested_times(tmp_path, serve_partition):
    rng = np.random.default_rng(1)
    src, dst, times = edges_with_times(rng, 300, 4000)
    write_edge_list(tmp_path / "g.txt", src, dst, times)
    store = bgl.ingest(str(tmp_path / "g.txt"), tmp_path / "s", "edgelist", edge_time_column=2, dedupe=False)
    book = write_partition(store, rng.integers(0, 2, store.num_nodes), 2, tmp_path / "p", method="random")
    orig = np.asarray(book.orig_ids)
    for k in range(2):  # each part keeps its in-edges' times, and their stored time order
        assert book.part_store(k).edge_array("timestamp").dtype == np.int64
        assert book.part_store(k).edge_array("timestamp.order").dtype == np.int32
    seeds_orig = rng.integers(0, store.num_nodes, 50)
    new_of = np.empty_like(orig)
    new_of[orig] = np.arange(orig.shape[0])
    seed_times = rng.integers(1_082_040_961, 1_098_777_142, 50)
    want = LocalSampler(store).sample_temporal(seeds_orig, seed_times, [5, 3], "last", seed=0)
    with serve_partition(book, tmp_path) as addresses, SamplingClient(addresses, timeout=60) as client:
        got = client.sample_temporal(new_of[seeds_orig], seed_times, [5, 3], "last", seed=0)
        uniform = client.sample_temporal(new_of[seeds_orig], seed_times, [5, 3], "uniform", seed=0)
    # "last" is deterministic: the partition's servers give the store's sample, ids mapped back
    assert np.array_equal(orig[got.node], want.node) and np.array_equal(got.edge_time, want.edge_time)
    assert np.array_equal(got.src, want.src) and np.array_equal(got.dst, want.dst)
    assert got.num_sampled_edges[0] > 0
    for s in (got, uniform):
        assert np.all(s.edge_time <= s.node_time[s.dst])
