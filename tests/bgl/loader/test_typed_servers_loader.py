"""bgl.DataLoader on a typed 2-part partition served by 2 real `bgl serve` processes: the store's
batches (original ids), co-located reads equal to socket reads, DistDGL ids without the partition
dir, bad input named."""
from __future__ import annotations

import numpy as np
import pytest
import torch

dgl = pytest.importorskip("dgl")

import bgl  # noqa: E402
from bgl.partition import partition_graph  # noqa: E402

from ...sampler.conftest import part_args, started_servers  # noqa: E402

FULL = [{"writes": -1, "cites": -1, "in": 0, "by": -1}, {"writes": -1, "cites": -1, "in": -1, "by": 0}]
SAMPLED = [{"writes": 2, "cites": 3, "in": 1, "by": 1}, {"writes": 1, "cites": 2, "in": 0, "by": 2}]
SEEDS = {"paper": torch.arange(0, 300, 3)}


@pytest.fixture(scope="module")
def served(hetero_store, tmp_path_factory):
    work = tmp_path_factory.mktemp("typed_loader")
    book = partition_graph(hetero_store, "random", 2, work / "p", measure_samples=False)
    with started_servers(part_args(book), work) as addresses:
        yield book, ",".join(addresses)


def batches(graph, fanouts, seeds=SEEDS, **kw):
    torch.manual_seed(7)  # the loader draws each batch's sample seed from torch's generator, as DGL
    loader = bgl.DataLoader(graph, seeds, dgl.dataloading.NeighborSampler(fanouts), batch_size=32, **kw)
    return list(loader)


def same_batches(a, b):
    assert len(a) == len(b) > 0
    for (ia, oa, ba), (ib, ob, bb) in zip(a, b):
        assert ia.keys() == ib.keys() and all(torch.equal(ia[k], ib[k]) for k in ia)
        assert oa.keys() == ob.keys() and all(torch.equal(oa[k], ob[k]) for k in oa)
        for x, y in zip(ba, bb, strict=True):
            for name in ("src_ids", "indptr", "indices", "etypes"):
                assert torch.equal(getattr(x, name), getattr(y, name)), name
            for key, per_type in x.srcdata.items():
                assert per_type.keys() == y.srcdata[key].keys()
                assert all(torch.equal(v, y.srcdata[key][nt]) for nt, v in per_type.items())
            for key, per_type in x.dstdata.items():
                assert all(torch.equal(v, y.dstdata[key][nt]) for nt, v in per_type.items())


def test_partition_on_servers_gives_the_stores_batches(served, hetero_store, monkeypatch):
    book, servers = served
    monkeypatch.setenv("BGL_SERVERS", servers)
    for fanouts in (FULL, SAMPLED):  # bit for bit: the parts' stream keys are the original ids
        same_batches(batches(hetero_store, fanouts, blocks="bgl"), batches(str(book.path), fanouts, blocks="bgl"))
    got = batches(str(book.path), FULL, blocks="bgl")
    assert got[0][2][0].srcdata["feat"]["author"].dtype == torch.float16


def test_dgl_heterograph_blocks_over_servers(served, hetero_store, monkeypatch):
    book, servers = served
    monkeypatch.setenv("BGL_SERVERS", servers)
    for input_nodes, output_nodes, blocks in batches(str(book.path), SAMPLED):
        first, last = blocks[0], blocks[-1]
        for nt in ("paper", "author"):
            ids = first.srcnodes[nt].data[dgl.NID]
            assert torch.equal(ids, input_nodes[nt])
            assert np.array_equal(first.srcnodes[nt].data["feat"].numpy(), hetero_store.type_feat[nt][ids.numpy()])
        seeds = last.dstnodes["paper"].data[dgl.NID]
        assert torch.equal(seeds, output_nodes["paper"])
        assert np.array_equal(last.dstnodes["paper"].data["label"].numpy(),
                              hetero_store.type_label["paper"][seeds.numpy()])
        for layer, b in enumerate(blocks):  # per-relation fanouts, original ids: checked on the store
            for canon in b.canonical_etypes:
                fan = SAMPLED[layer][canon[1]]
                dst = b.dstnodes[canon[2]].data[dgl.NID].numpy() + hetero_store.schema.node_type(canon[2]).offset
                r = hetero_store.schema.etype_id(canon)
                ptr, et = np.asarray(hetero_store.indptr), np.asarray(hetero_store.etype)
                full = np.array([np.count_nonzero(et[ptr[v]:ptr[v + 1]] == r) for v in dst])
                want = full if fan == -1 else np.minimum(full, fan)
                assert np.array_equal(b.in_degrees(etype=canon).numpy(), want), (layer, canon)


def test_colocated_reads_equal_socket_reads(served, monkeypatch):
    book, servers = served
    monkeypatch.setenv("BGL_SERVERS", servers)
    remote = batches(str(book.path), SAMPLED, blocks="bgl")
    monkeypatch.setenv("BGL_PARTITION", str(book.path))
    monkeypatch.setenv("BGL_LOCAL_PARTS", "0,1")
    local = batches(str(book.path), SAMPLED, blocks="bgl")
    same_batches(remote, local)


def test_per_type_caches_over_servers_give_the_stores_batches(served, hetero_store, monkeypatch):
    """Each type's lookahead cache (own width: author rows are float16) over 2 servers: the store's
    batches, the misses fetched from the servers, and hits on the rows the window kept."""
    book, servers = served
    monkeypatch.setenv("BGL_SERVERS", servers)
    want = batches(hetero_store, SAMPLED, blocks="bgl")
    torch.manual_seed(7)
    loader = bgl.DataLoader(str(book.path), SEEDS, dgl.dataloading.NeighborSampler(SAMPLED), batch_size=32,
                            blocks="bgl", cache="lookahead", cache_ratio=0.2)
    same_batches(want, list(loader))
    per_type = loader.cache_stats()["by_type"]
    assert {nt for nt, t in zip(hetero_store.schema.ntypes, hetero_store.schema.node_types) if t.feat_dim} \
        == set(per_type)
    assert all(s["misses"] > 0 and s["bytes_from_source"] > 0 for s in per_type.values())
    assert sum(s["hits"] for s in per_type.values()) > 0


def test_without_the_partition_dir_ids_are_distdgls_per_type_new_ids(served, hetero_store):
    book, servers = served
    addresses = servers.split(",")
    per_type_new = torch.arange(0, 300, 5)
    for input_nodes, output_nodes, blocks in batches(addresses, SAMPLED, seeds={"paper": per_type_new}):
        from bgl.sampler.client import SamplingClient

        with SamplingClient(addresses, local_stores=()) as client:
            for nt in ("paper", "author"):
                ids = input_nodes[nt].numpy()
                orig_local = book.to_orig(client.to_global(nt, ids))[1]
                assert np.array_equal(blocks[0].srcnodes[nt].data["feat"].numpy(),
                                      hetero_store.type_feat[nt][orig_local])
        assert set(output_nodes["paper"].tolist()) <= set(per_type_new.tolist())
        break


def test_bad_typed_input_over_servers_is_named(served, monkeypatch):
    book, servers = served
    monkeypatch.setenv("BGL_SERVERS", servers)
    with pytest.raises(ValueError, match="'paper'.*300"):
        bgl.DataLoader(str(book.path), {"paper": torch.tensor([0, 300])}, dgl.dataloading.NeighborSampler([2]))
    with pytest.raises(ValueError, match="'likes'"):
        bgl.DataLoader(str(book.path), SEEDS, dgl.dataloading.NeighborSampler([{**SAMPLED[0], "likes": 1}]))
    with pytest.raises(ValueError, match="unknown node type 'user'"):
        bgl.DataLoader(str(book.path), {"user": torch.tensor([0])}, dgl.dataloading.NeighborSampler([2]))


def test_proximity_order_over_a_typed_partition(served, monkeypatch):
    """order='proximity' with typed seeds on servers: the partition's BFS order over the seeds'
    (original, per-type) ids, each seed once, reproducible, not the random order of the same draws."""
    book, servers = served
    monkeypatch.setenv("BGL_SERVERS", servers)

    def seeds_in_order(order):
        return torch.cat([out["paper"] for _, out, _ in batches(str(book.path), SAMPLED, shuffle=True,
                                                                order=order, blocks="bgl")]).tolist()

    first = seeds_in_order("proximity")
    assert sorted(first) == SEEDS["paper"].tolist() and first == seeds_in_order("proximity")
    assert first != seeds_in_order("random")
    # the BFS ran over the parts in new ids: each part's seeds form runs (parts are interleaved in
    # chunks), so consecutive seeds share a part far more often than in the random order
    owner = book.owner(book.to_new("paper", np.asarray(first)))
    shuffled = book.owner(book.to_new("paper", np.asarray(seeds_in_order("random"))))
    assert (owner[1:] == owner[:-1]).mean() > (shuffled[1:] == shuffled[:-1]).mean()


@pytest.mark.parametrize("policy", ["static-degree", "presample"])
def test_degree_and_presample_caches_over_servers(served, hetero_store, monkeypatch, policy):
    """static-degree ranks each type by its partition's in-degrees in original ids (the store's), presample
    by a presampled epoch over the servers; batches are the store's either way."""
    book, servers = served
    monkeypatch.setenv("BGL_SERVERS", servers)
    want = batches(hetero_store, SAMPLED, blocks="bgl")
    torch.manual_seed(7)
    loader = bgl.DataLoader(str(book.path), SEEDS, dgl.dataloading.NeighborSampler(SAMPLED), batch_size=32,
                            blocks="bgl", cache=policy, cache_ratio=0.3)
    specs = loader._fetch.cache.specs
    if policy == "static-degree":
        degrees = np.asarray(hetero_store.in_degrees())
        for nt, s in specs.items():
            t = hetero_store.schema.node_type(nt)
            assert np.array_equal(s.degrees, degrees[t.offset:t.offset + t.count]), nt
    else:
        assert all(s.presample_counts.shape == (s.num_nodes,) for s in specs.values())
    same_batches(want, list(loader))
    assert loader.cache_stats()["hits"] > 0
