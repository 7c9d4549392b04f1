"""bgl.DataLoader against real graph servers (one process per partition part, 127.0.0.1)."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import bgl


@pytest.fixture(scope="module")
def served_partition(random_store, tmp_path_factory, serve_partition):
    """A 2-part random partition of ``random_store`` served by two real server processes."""
    from bgl.partition import partition_graph

    root = tmp_path_factory.mktemp("served")
    book = partition_graph(random_store, "random", 2, root / "parts", seed=0, measure_samples=False)
    with serve_partition(book, root) as addresses:
        yield book, addresses


def check_against_original(store, book, input_nodes, output_nodes, blocks):
    """Rows served for new ids are the original store's rows of orig_ids[new id]."""
    orig = np.asarray(book.orig_ids)
    assert torch.equal(blocks[0].srcdata["feat"], torch.from_numpy(store.feat[orig[input_nodes.numpy()]]))
    assert torch.equal(blocks[-1].dstdata["label"], torch.from_numpy(store.label[orig[output_nodes.numpy()]]))
    assert torch.equal(blocks[-1].dst_ids, output_nodes)


def test_partition_dir_with_bgl_servers_env(served_partition, random_store, monkeypatch):
    book, addresses = served_partition
    monkeypatch.setenv("BGL_SERVERS", ",".join(addresses))
    train = book.split("train")
    loader = bgl.DataLoader(book.path, train, bgl.NeighborSampler([4, 4]), batch_size=64, shuffle=True,
                            cache="static-degree", cache_ratio=0.2)
    seen = []
    for input_nodes, output_nodes, blocks in loader:
        check_against_original(random_store, book, input_nodes, output_nodes, blocks)
        seen.append(output_nodes)
    assert torch.equal(torch.cat(seen).sort().values, torch.from_numpy(np.sort(train)))
    assert loader.cache_stats()["requests"] > 0


def test_server_addresses_in_stage_processes(served_partition, random_store):
    book, addresses = served_partition
    ids = book.split("train")[:128]
    with bgl.DataLoader(addresses, ids, bgl.NeighborSampler([3, 3]), batch_size=32, pipeline="processes",
                        stage_cores={"sample": 1, "fetch": 1}) as loader:
        for _ in range(2):
            n = 0
            for input_nodes, output_nodes, blocks in loader:
                check_against_original(random_store, book, input_nodes, output_nodes, blocks)
                n += 1
            assert n == len(loader) == 4


def test_proximity_order_needs_a_local_graph(served_partition):
    _, addresses = served_partition
    with pytest.raises(ValueError, match="proximity"):
        bgl.DataLoader(addresses, np.arange(10), bgl.NeighborSampler([2]), order="proximity")


@pytest.mark.parametrize("cache", [False, "lookahead", "fifo"])
def test_labels_ride_with_the_feature_request(served_partition, random_store, monkeypatch, cache):
    """Over graph servers a batch's labels come in the same round trip as its missing rows:
    a separate label fetch happens only for a batch whose rows all hit the cache."""
    from bgl.sampler.client import SamplingClient

    book, addresses = served_partition
    separate = []
    real_fetch_labels = SamplingClient.fetch_labels

    def counting_fetch_labels(self, ids):
        separate.append(len(ids))
        return real_fetch_labels(self, ids)

    monkeypatch.setattr(SamplingClient, "fetch_labels", counting_fetch_labels)
    train = book.split("train")
    loader = bgl.DataLoader(addresses, train, bgl.NeighborSampler([4, 4]), batch_size=64, shuffle=True,
                            cache=cache, **({"cache_ratio": 0.2} if cache else {}))
    batches = 0
    for input_nodes, output_nodes, blocks in loader:
        check_against_original(random_store, book, input_nodes, output_nodes, blocks)
        batches += 1
    assert batches == len(loader) > 1
    if not cache:
        assert separate == []  # every batch fetched rows, so its labels rode along
    else:
        assert len(separate) <= loader.cache_stats()["requests"]
        assert len(separate) < batches


def test_servers_default_to_the_thread_pipeline_with_the_inline_batches(served_partition, random_store):
    book, addresses = served_partition
    train = book.split("train")
    batches = {}
    for pipeline in (None, "inline"):
        torch.manual_seed(3)
        loader = bgl.DataLoader(addresses, train, bgl.NeighborSampler([4, 4]), batch_size=64, shuffle=True,
                                cache="lookahead", cache_ratio=0.2, pipeline=pipeline)
        assert loader.pipeline_mode == ("thread" if pipeline is None else "inline")
        batches[pipeline] = [(i, o, [b.src_ids for b in bl], bl[0].srcdata["feat"]) for i, o, bl in loader]
        assert loader.cache_stats()["requests"] > 0
        loader.close()
    assert len(batches[None]) == len(batches["inline"]) == len(loader) > 1
    for (i1, o1, s1, f1), (i2, o2, s2, f2) in zip(batches[None], batches["inline"]):
        assert torch.equal(i1, i2) and torch.equal(o1, o2) and torch.equal(f1, f2)
        assert all(torch.equal(a, b) for a, b in zip(s1, s2))


@pytest.mark.parametrize("cache, pipeline", [("lookahead", "thread"), ("fifo", "inline"),
                                             pytest.param("lookahead", "processes", marks=pytest.mark.extended)])
def test_co_located_rows_skip_the_cache(served_partition, random_store, monkeypatch, cache, pipeline):
    """With part 0 read from its files, the cache sees only part 1's rows; the batches are
    the all-socket loader's, row for row."""
    book, addresses = served_partition
    train = book.split("train")
    runs = {}
    for local in ("", "0"):
        monkeypatch.setenv("BGL_PARTITION", str(book.path))
        monkeypatch.setenv("BGL_LOCAL_PARTS", local)
        torch.manual_seed(5)
        extra = {"stage_cores": {"sample": 1, "fetch": 1}} if pipeline == "processes" else {}
        with bgl.DataLoader(addresses, train, bgl.NeighborSampler([4, 4]), batch_size=64, shuffle=True,
                            cache=cache, cache_ratio=0.2, pipeline=pipeline, **extra) as loader:
            batches = []
            for input_nodes, output_nodes, blocks in loader:
                check_against_original(random_store, book, input_nodes, output_nodes, blocks)
                batches.append((input_nodes, blocks[0].srcdata["feat"], blocks[-1].dstdata["label"]))
            runs[local] = (batches, loader.cache_stats())
    (all_socket, stats_all), (co_located, stats_local) = runs[""], runs["0"]
    assert len(all_socket) == len(co_located) > 1
    for (i1, f1, l1), (i2, f2, l2) in zip(all_socket, co_located):
        assert torch.equal(i1, i2) and torch.equal(f1, f2) and torch.equal(l1, l2)
    inputs = sum(int(i.numel()) for i, _, _ in all_socket)
    remote = sum(int((i >= int(book.bounds[1])).sum()) for i, _, _ in all_socket)
    assert stats_all["requests"] == inputs
    assert stats_local["requests"] == remote < inputs


def test_numba_is_set_up_when_a_loader_over_servers_is_built(served_partition):
    """numba's one-time set-up (~0.2 s) is paid at construction, not by the first batch: a loader
    over servers has no local graph to load its kernels on (bgl/kernel_cache/numba_setup.py).  In a fresh
    process, since the set-up imports numba's typed containers and nothing before it does."""
    _, addresses = served_partition
    script = textwrap.dedent(f"""
        import sys
        import numpy as np
        import bgl
        assert "numba.typed.typedset" not in sys.modules, "numba was set up before the loader"
        loader = bgl.DataLoader({list(addresses)!r}, np.arange(8), bgl.NeighborSampler([2]), batch_size=4)
        print("set up" if "numba.typed.typedset" in sys.modules else "not set up")
        assert sum(1 for _ in loader) == 2
        loader.close()
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "set up"
