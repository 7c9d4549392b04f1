"""Link prediction over real graph servers: the same batches as the whole store, exclusion on the servers.

A random 2-part partition is served by two ``bgl serve`` processes.  Its whole-graph twin is
the store of the parts concatenated (new node ids, edges numbered part after part, the
partition's edge ids), so the store and the servers must give the same batches bit for bit.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest
import torch

import bgl
from bgl import negative_sampler as ns
from bgl.store import write_store

FANOUTS = [3, 3]


@pytest.fixture(scope="module")
def served(random_store, tmp_path_factory, serve_partition):
    from bgl.partition import partition_graph

    root = tmp_path_factory.mktemp("lp-served")
    book = partition_graph(random_store, "random", 2, root / "parts", seed=0, measure_samples=False)
    parts = [book.part_store(k) for k in range(book.num_parts)]
    indptr = np.concatenate([[0]] + [np.asarray(p.indptr[1:]) + b for p, b in zip(parts, book.edge_bounds)])
    twin = write_store(root / "twin", indptr, np.concatenate([np.asarray(p.indices) for p in parts]),
                       feat=np.concatenate([np.asarray(p.feat) for p in parts]), name="twin")
    # some edge's "reverse": any map works for the exclusion rule; a permutation mixes the parts
    reverse = torch.from_numpy(np.random.default_rng(5).permutation(book.num_edges))
    with serve_partition(book, root) as addresses:
        yield book, addresses, twin, reverse


def run(graph, reverse, seeds, negative=None, **kwargs):
    sampler = bgl.as_edge_prediction_sampler(bgl.NeighborSampler(FANOUTS), exclude="reverse_id",
                                             reverse_eids=reverse, negative_sampler=negative or ns.Uniform(2))
    torch.manual_seed(7)
    out = []
    with bgl.DataLoader(graph, seeds, sampler, batch_size=40, shuffle=True, **kwargs) as loader:
        for input_nodes, pair, neg, blocks in loader:
            out.append((input_nodes, pair.edata["_ID"], pair.ndata["_ID"], *pair.edges(), *neg.edges(),
                        blocks[0].srcdata["feat"], *[t for b in blocks for t in (b.src_ids, b.indptr, b.indices)]))
    return out


def sampled_pairs(blocks_src, blocks_indptr, blocks_indices, num_dst):
    dst = np.repeat(np.arange(num_dst), np.diff(blocks_indptr))
    return set(zip(blocks_src[blocks_indices].tolist(), blocks_src[dst].tolist()))


def test_servers_give_the_store_batches_and_never_an_excluded_edge(served, monkeypatch):
    book, addresses, twin, reverse = served
    seeds = torch.arange(0, book.num_edges, 7)
    local = run(twin, reverse, seeds)
    monkeypatch.setenv("BGL_SERVERS", ",".join(addresses))
    remote = run(str(book.path), reverse, seeds)
    assert len(local) == len(remote) > 1
    indptr, indices = np.asarray(twin.indptr), np.asarray(twin.indices)
    dst_of = np.repeat(np.arange(twin.num_nodes), np.diff(indptr))
    for a, b in zip(local, remote):
        assert all(torch.equal(x, y) for x, y in zip(a, b))
        eids = b[1].numpy()
        banned = np.concatenate([eids, reverse.numpy()[eids]])
        banned_pairs = set(zip(indices[banned].tolist(), dst_of[banned].tolist()))
        for layer in range(len(FANOUTS)):
            src, ip, idx = (t.numpy() for t in b[8 + 3 * layer: 11 + 3 * layer])
            assert not sampled_pairs(src, ip, idx, ip.shape[0] - 1) & banned_pairs


@pytest.mark.parametrize("negative", [ns.GlobalUniform(3), ns.GlobalUniform(2, exclude_self_loops=False, replace=True)])
def test_global_uniform_negatives_over_servers_are_the_stores_and_never_edges(served, monkeypatch, negative):
    """DGL's GlobalUniform: pairs drawn over all node pairs minus the graph's edges; over servers
    each candidate's destination row is asked of its owner, so the negatives equal the store's."""
    book, addresses, twin, reverse = served
    seeds = torch.arange(0, book.num_edges, 23)
    local = run(twin, reverse, seeds, negative)
    monkeypatch.setenv("BGL_PARTITION", str(book.path))
    remote = run(list(addresses), reverse, seeds, negative)
    assert len(local) == len(remote) > 1
    edges = set(zip(np.asarray(twin.indices).tolist(),
                    np.repeat(np.arange(twin.num_nodes), np.diff(np.asarray(twin.indptr))).tolist()))
    drawn = 0
    for a, b in zip(local, remote):
        assert all(torch.equal(x, y) for x, y in zip(a, b))
        nodes = b[2].numpy()
        neg = list(zip(nodes[b[5].numpy()].tolist(), nodes[b[6].numpy()].tolist()))
        assert not set(neg) & edges
        if negative.exclude_self_loops:
            assert all(u != v for u, v in neg)
            assert len(set(neg)) == len(neg)  # replace=False: no pair twice
        drawn += len(neg)
    assert drawn > 0.9 * negative.k * seeds.numel()  # DGL's redundancy 1.3 leaves few short batches


def test_stage_processes_over_servers_give_the_same_batches(served, monkeypatch):
    book, addresses, twin, reverse = served
    seeds = torch.arange(0, book.num_edges, 29)
    monkeypatch.setenv("BGL_PARTITION", str(book.path))
    inline = run(list(addresses), reverse, seeds, pipeline="inline", order="proximity")
    procs = run(list(addresses), reverse, seeds, pipeline="processes", order="proximity",
                stage_cores={"sample": 1, "fetch": 1})
    assert len(inline) == len(procs) > 1
    assert sorted(torch.cat([b[1] for b in procs]).tolist()) == seeds.tolist()
    for a, b in zip(inline, procs):
        assert all(torch.equal(x, y) for x, y in zip(a, b))


def test_partition_edge_ids_map_back_to_the_store(served, random_store):
    """orig_eids: a partition's edge e is the store's edge orig_eids[e], endpoints relabelled."""
    book, _, twin, _ = served
    eids = np.arange(0, book.num_edges, 3)
    from bgl.loader.seeds.edges import partition_endpoints, store_endpoints

    src, dst = partition_endpoints(book, eids)
    osrc, odst = store_endpoints(random_store, np.asarray(book.orig_eids)[eids])
    orig = np.asarray(book.orig_ids)
    assert np.array_equal(orig[src], osrc) and np.array_equal(orig[dst], odst)
    assert np.array_equal(np.sort(np.asarray(book.orig_eids)), np.arange(random_store.num_edges))


def test_servers_without_the_partition_dir_are_refused(served, monkeypatch):
    book, addresses, _, _ = served
    monkeypatch.delenv("BGL_PARTITION", raising=False)
    sampler = bgl.as_edge_prediction_sampler(bgl.NeighborSampler([2]))
    with pytest.raises(ValueError, match="partition dir"):
        bgl.DataLoader(list(addresses), [0, 1], sampler)
    monkeypatch.setenv("BGL_PARTITION", str(book.path))
    with pytest.raises(ValueError, match=f"edge id {book.num_edges}"):
        bgl.DataLoader(list(addresses), [0, book.num_edges], sampler)


def test_reverse_edge_ids_of_a_partition_are_its_twins(served):
    book, _, twin, _ = served
    assert np.array_equal(bgl.reverse_edge_ids(book), bgl.reverse_edge_ids(twin))


def seeds_and_reverses(reverse, eids):
    """DGL's callable exclude on a homogeneous graph (here as exclude='reverse_id')."""
    return torch.cat([eids, reverse[eids]])


def uniform_pairs(num_nodes, graph, eids):
    """A user's negative sampler under torch's RNG (``graph``: the store, or the partition dir over servers)."""
    return torch.randint(0, num_nodes, (len(eids),)), torch.randint(0, num_nodes, (len(eids),))


def test_callables_over_servers_give_the_stores_batches(served, monkeypatch):
    """A callable exclude gets (and returns) the partition's edge ids over servers, the twin store's locally:
    the same batches, its edges in none of their blocks; a callable sampler's negatives the same too."""
    book, addresses, twin, reverse = served
    seeds = torch.arange(0, book.num_edges, 13)

    def batches(graph):
        sampler = bgl.as_edge_prediction_sampler(
            bgl.NeighborSampler(FANOUTS), exclude=functools.partial(seeds_and_reverses, reverse),
            negative_sampler=functools.partial(uniform_pairs, book.num_nodes))
        torch.manual_seed(3)
        with bgl.DataLoader(graph, seeds, sampler, batch_size=40, shuffle=True, blocks="bgl") as loader:
            return [(pair.edata["_ID"], *neg.edges(), neg.ndata["_ID"], blocks) for _, pair, neg, blocks in loader]

    local = batches(twin)
    monkeypatch.setenv("BGL_SERVERS", ",".join(addresses))
    remote = batches(str(book.path))
    assert len(local) == len(remote) > 2
    indptr, indices = np.asarray(twin.indptr), np.asarray(twin.indices)
    dst_of = np.repeat(np.arange(twin.num_nodes), np.diff(indptr))
    for a, b in zip(local, remote):
        assert all(torch.equal(x, y) for x, y in zip(a[:4], b[:4]))
        banned = seeds_and_reverses(reverse, b[0]).numpy()
        banned_pairs = set(zip(indices[banned].tolist(), dst_of[banned].tolist()))
        for block_a, block_b in zip(a[4], b[4]):
            for name in ("src_ids", "indptr", "indices"):
                assert torch.equal(getattr(block_a, name), getattr(block_b, name)), name
            assert not set(block_a.edge_ids.tolist()) & set(banned.tolist())  # the store's blocks carry edge ids
            src, ip, idx = (getattr(block_b, name).numpy() for name in ("src_ids", "indptr", "indices"))
            assert not sampled_pairs(src, ip, idx, ip.shape[0] - 1) & banned_pairs
