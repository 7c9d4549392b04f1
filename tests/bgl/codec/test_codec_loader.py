"""Encoded feature rows through the whole loader: a store, a 2-part partition over 2 real graph
servers, and co-located reads give the same decoded batches; the cache and the wire count
encoded bytes."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import bgl
from bgl.codec import compress_store
from bgl.sampler.client import SamplingClient, traffic


@pytest.fixture(scope="module")
def int8_store(random_store, tmp_path_factory):
    """``random_store`` with int8 rows instead of float32 (16 columns: 24 B a row, was 64)."""
    return compress_store(random_store.path, "int8", out=tmp_path_factory.mktemp("codec") / "int8",
                          keep_float32=False)


@pytest.fixture(scope="module")
def int8_served(int8_store, tmp_path_factory, serve_partition):
    """A 2-part random partition of the int8 store, each part served by a real ``bgl serve``."""
    from bgl.partition import partition_graph

    root = tmp_path_factory.mktemp("codec-served")
    book = partition_graph(int8_store, "random", 2, root / "parts", seed=0, measure_samples=False)
    with serve_partition(book, root) as addresses:
        yield book, addresses


def decoded(store, ids: torch.Tensor) -> torch.Tensor:
    """The reference: the store's encoded rows of ``ids`` decoded in one call."""
    return store.feat_codec.decode(torch.from_numpy(np.asarray(store.feat_rows)[ids.numpy()]))


def epoch(graph, train, **kw):
    torch.manual_seed(3)
    with bgl.DataLoader(graph, train, bgl.NeighborSampler([4, 3]), batch_size=64, shuffle=True, **kw) as loader:
        return [(i, b[0].srcdata["feat"], b[-1].dstdata["label"]) for i, _, b in loader], loader.cache_stats()


def test_a_partition_carries_encoded_rows_per_part(int8_served):
    book, _ = int8_served
    for k in range(2):
        part = book.part_store(k)
        assert part.feat is None and part.feat_codec == book.part_store(0).feat_codec
        assert part.feat_rows.dtype == np.uint8 and part.feat_rows.shape == (part.num_nodes, 24)


@pytest.mark.parametrize("local", ["", "0,1"])
def test_servers_and_co_located_reads_give_the_stores_decoded_rows(int8_store, int8_served, monkeypatch, local):
    book, addresses = int8_served
    monkeypatch.setenv("BGL_PARTITION", str(book.path))
    monkeypatch.setenv("BGL_LOCAL_PARTS", local)
    orig = torch.from_numpy(np.array(book.orig_ids))
    batches, _ = epoch(addresses, book.split("train"), cache="lookahead", cache_ratio=0.2)
    assert len(batches) > 1
    for input_nodes, feat, _ in batches:
        assert feat.dtype == torch.float32 and feat.shape == (input_nodes.numel(), 16)
        assert torch.equal(feat, decoded(int8_store, orig[input_nodes]))


@pytest.mark.parametrize("cache", [None, "lookahead"])
def test_a_store_gives_decoded_rows_within_the_bound(int8_store, random_store, cache):
    batches, _ = epoch(int8_store, int8_store.train_idx, cache=cache)
    x = np.asarray(random_store.feat)
    bound = (x.max(axis=1) - x.min(axis=1)) / 255 / 2 * 1.001 + 1e-6
    for input_nodes, feat, labels in batches:
        assert torch.equal(feat, decoded(int8_store, input_nodes))
        err = (feat.numpy() - x[input_nodes.numpy()]).__abs__().max(axis=1)
        assert np.all(err <= bound[input_nodes.numpy()])
    if cache is None:
        assert epoch(int8_store, int8_store.train_idx, feat_dtype=torch.float16)[0][0][1].dtype == torch.float16


def test_the_cache_budget_counts_encoded_bytes(int8_store, random_store):
    budget = 64 * 100  # 100 float32 rows of 16 columns; 266 int8 rows of 24 bytes
    runs = {}
    for name, store in (("float32", random_store), ("int8", int8_store)):
        with bgl.DataLoader(store, store.train_idx, bgl.NeighborSampler([4, 3]), batch_size=64,
                            cache="fifo", cache_bytes=budget) as loader:
            assert loader._fetch.cache.capacity == budget // {"float32": 64, "int8": 24}[name]
            for _ in loader:
                pass
            runs[name] = loader.cache_stats()
    for name, row_bytes in (("float32", 64), ("int8", 24)):
        stats = runs[name]
        assert stats["bytes_from_source"] == stats["misses"] * row_bytes
        assert stats["hits"] + stats["misses"] == stats["requests"]
    assert runs["int8"]["hits"] > runs["float32"]["hits"]  # same epoch, 2.7x the rows in the budget


def test_servers_send_encoded_rows(int8_served, monkeypatch):
    book, addresses = int8_served
    monkeypatch.setenv("BGL_LOCAL_PARTS", "")
    ids = torch.arange(0, book.num_nodes, 2)
    with SamplingClient(addresses, timeout=60, local_stores=()) as client:
        assert client.feat_codec == book.part_store(0).feat_codec
        client.fetch_features(ids[:4])
        before = traffic()["received"]
        rows = client.fetch_features(ids)
        received = traffic()["received"] - before
    assert rows.dtype == torch.uint8 and rows.shape == (ids.numel(), 24)
    assert ids.numel() * 24 <= received < ids.numel() * 24 + 1024  # float32 rows would be 64 B each


def test_feat_dtype_casts_float32_rows_too(random_store):
    (input_nodes, feat, _), *_ = epoch(random_store, random_store.train_idx, feat_dtype=torch.float16)[0]
    assert torch.equal(feat, torch.from_numpy(np.asarray(random_store.feat)[input_nodes.numpy()]).half())


def test_bad_feat_dtype_and_an_undecodable_server_codec_are_refused(int8_store):
    from bgl.codec.wire import codec_of_info
    from bgl.errors import ProtocolError

    with pytest.raises(TypeError, match="feat_dtype must be a torch floating dtype .* got torch.int64"):
        bgl.DataLoader(int8_store, int8_store.train_idx, bgl.NeighborSampler([2]), feat_dtype=torch.int64)
    info = {"feat_dim": 16, "feat_codec": {"name": "int4", "dim": 16, "block": 0}}
    with pytest.raises(ProtocolError, match="server tcp://h:1 sends feature rows this bgl cannot decode: "
                                            "unknown feature codec 'int4'"):
        codec_of_info("tcp://h:1", info)
    with pytest.raises(ProtocolError, match="feat_codec is for 16 columns, feat_dim is 8"):
        codec_of_info("tcp://h:1", {**info, "feat_dim": 8, "feat_codec": {"name": "int8", "dim": 16}})
