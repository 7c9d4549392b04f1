"""Typed sampling and per-type rows on real `bgl serve` processes of a 2-part typed partition:
equal to the store, to co-located reads, per-relation fanouts held exactly, bad input named."""
from __future__ import annotations

import json

import numpy as np
import pytest

from bgl.errors import ProtocolError, ServerError
from bgl.partition import partition_graph
from bgl.sampler import protocol as P
from bgl.sampler.client import SamplingClient, _request
from bgl.sampler.local import LocalSampler
from bgl.sampler.typed.sampling import relation_fanouts
from bgl.sampler.typed.remote import merged_schema, typed_sample_request

from ..conftest import typed_edges
from .conftest import part_args, started_servers

FANOUTS = {"writes": 2, "cites": -1, "in": 1, "by": 0}


@pytest.fixture(scope="module")
def typed_servers(hetero_store, tmp_path_factory):
    """The typed store's 2-part partition, a server per part and one for the whole typed store."""
    work = tmp_path_factory.mktemp("typed_servers")
    book = partition_graph(hetero_store, "random", 2, work / "p", measure_samples=False)
    with started_servers([*part_args(book), ["--store", str(hetero_store.path)]], work) as addresses:
        yield {"book": book, "parts": addresses[:2], "whole": addresses[2]}


@pytest.fixture(scope="module")
def client(typed_servers):
    with SamplingClient(typed_servers["parts"], local_stores=()) as c:
        yield c


def layer_fanouts(schema, *layers):
    return [relation_fanouts(layer, schema.canonical_etypes) for layer in layers]


def same_blocks(a, b):
    for x, y in zip(a, b, strict=True):
        for name in ("src_ids", "indptr", "indices", "etypes"):
            assert np.array_equal(getattr(x, name).numpy(), getattr(y, name).numpy()), name


def test_client_sees_the_whole_graphs_types(client, typed_servers, hetero_store):
    book = typed_servers["book"]
    assert client.schema.ntypes == hetero_store.schema.ntypes
    assert [t.count for t in client.schema.node_types] == [t.count for t in hetero_store.schema.node_types]
    assert [e.count for e in client.schema.edge_types] == [e.count for e in hetero_store.schema.edge_types]
    assert np.array_equal(client.type_bounds, book.type_bounds)
    gids = np.arange(book.num_nodes)
    types, local = client.to_typed(gids)
    assert np.array_equal(types, book.type_of(gids))
    for t, nt in enumerate(client.schema.ntypes):
        assert np.array_equal(client.to_global(nt, local[types == t]), gids[types == t])


def test_servers_colocated_and_part_stores_give_the_same_blocks(client, typed_servers, hetero_store):
    book = typed_servers["book"]
    fan = layer_fanouts(hetero_store.schema, 3, FANOUTS)
    seeds = np.concatenate([client.to_global("paper", np.arange(0, 300, 7)), client.to_global("author", [1, 150])])
    remote = client.sample_typed_blocks(seeds, fan, seed=11)
    with SamplingClient(typed_servers["parts"], local_stores=[book.part_store(0), book.part_store(1)]) as both, \
            SamplingClient(typed_servers["parts"], local_stores=[book.part_store(1)]) as one:
        assert len(both.local_servers) == 2 and len(one.local_servers) == 1
        same_blocks(remote, both.sample_typed_blocks(seeds, fan, seed=11))
        same_blocks(remote, one.sample_typed_blocks(seeds, fan, seed=11))
    # one layer of seeds all in part 1: the part store's own sampler draws the same
    mine = seeds[book.owner(seeds) == 1]
    same_blocks(client.sample_typed_blocks(mine, fan[1:], seed=4),
                LocalSampler(book.part_store(1)).sample_typed_blocks(mine, fan[1:], seed=4))
    assert remote[-1].etypes.numel() > 0 and remote[0].etypes.numel() > remote[-1].etypes.numel()


def test_partition_on_servers_equals_the_store(client, typed_servers, hetero_store):
    """Sampled blocks, layer by layer, are the store's, ids mapped back to original (the parts' stream
    keys are the original ids)."""
    book = typed_servers["book"]
    fan = layer_fanouts(hetero_store.schema, {"writes": -1, "cites": -1, "in": 0, "by": -1}, FANOUTS)
    orig = np.asarray(book.orig_ids)
    seeds = client.to_global("paper", np.arange(0, 300, 4))
    got = client.sample_typed_blocks(seeds, fan, seed=2)
    with SamplingClient([typed_servers["whole"]], local_stores=()) as whole:
        want = whole.sample_typed_blocks(orig[seeds], fan, seed=2)
        same_blocks(want, LocalSampler(hetero_store).sample_typed_blocks(orig[seeds], fan, seed=2))
    identity = np.arange(hetero_store.num_nodes)
    for g, w in zip(got, want, strict=True):
        assert np.array_equal(orig[g.src_ids.numpy()], w.src_ids.numpy())
        assert typed_edges(g, orig) == typed_edges(w, identity)
        for name in ("indptr", "indices", "etypes"):
            assert np.array_equal(getattr(g, name).numpy(), getattr(w, name).numpy()), name
    assert got[0].etypes.numel() > 300 and not (got[0].etypes == 2).any()


def test_per_relation_fanouts_are_held_exactly(client, typed_servers, hetero_store):
    schema, book = hetero_store.schema, typed_servers["book"]
    fan = relation_fanouts(FANOUTS, schema.canonical_etypes)
    src_type, dst_type = schema.relation_ends()
    seeds = np.arange(book.num_nodes)
    block = client.sample_typed_blocks(seeds, [fan], seed=5)[0]
    orig = np.asarray(book.orig_ids)
    store_ptr, store_et = np.asarray(hetero_store.indptr), np.asarray(hetero_store.etype)
    ptr, idx, et = block.indptr.numpy(), block.indices.numpy(), block.etypes.numpy()
    src_t = book.type_of(block.src_ids.numpy()[idx])
    assert np.array_equal(src_t, src_type[et])  # each edge's source is of its relation's source type
    dst_t = book.type_of(seeds)
    for j, v in enumerate(orig[seeds]):
        row = store_et[store_ptr[v]:store_ptr[v + 1]]
        got = np.bincount(et[ptr[j]:ptr[j + 1]], minlength=len(fan))
        for r, f in enumerate(fan):
            deg = int(np.count_nonzero(row == r)) if dst_type[r] == dst_t[j] else 0
            assert got[r] == (deg if f == -1 else min(int(f), deg)), (j, r)


def test_rows_of_each_type_come_from_the_owning_server(client, typed_servers, hetero_store):
    book = typed_servers["book"]
    with SamplingClient(typed_servers["parts"], local_stores=[book.part_store(0)]) as colocated:
        for nt in ("paper", "author"):
            ids = np.arange(hetero_store.schema.node_type(nt).count)[::-3]
            orig_local = book.to_orig(client.to_global(nt, ids))[1]
            want = hetero_store.type_feat[nt][orig_local]
            got = client.fetch_type_features(nt, ids)
            assert got.numpy().dtype == want.dtype and np.array_equal(got.numpy(), want)
            assert np.array_equal(colocated.fetch_type_features(nt, ids).numpy(), want)
        ids = np.arange(300)[::5]
        want = hetero_store.type_label["paper"][book.to_orig(client.to_global("paper", ids))[1]]
        assert np.array_equal(client.fetch_type_labels("paper", ids).numpy(), want)


def test_bad_typed_input_is_named(client, typed_servers, hetero_store):
    R = len(hetero_store.schema.edge_types)
    with pytest.raises(ValueError, match="id 300 of node type 'paper' outside \\[0, 300\\)"):
        client.to_global("paper", [3, 300])
    with pytest.raises(ValueError, match="'venue' of the served graph has no features"):
        client.fetch_type_features("venue", [0])
    with pytest.raises(ValueError, match="fanout names edge type 'likes'"):
        relation_fanouts({**FANOUTS, "likes": 2}, client.schema.canonical_etypes)
    addr = typed_servers["parts"][0]
    seeds = np.array([0], np.int64)
    cases = [
        (typed_sample_request(1, seeds, np.full(R + 1, 2), False, 0), f"{R + 1} fanouts for a graph of {R} relations"),
        (typed_sample_request(1, seeds, np.array([2, -3, 1, 1]), False, 0), "fanout of relation 1 must be >= -1"),
        (typed_sample_request(1, np.array([519], np.int64), np.full(R, 1), False, 0), "seeds[0] = 519 is outside"),
        (P.features_request(1, np.array([0], np.int64), P.FIELD_FEAT, 1), "ids of node type 'author'"),
        (P.features_request(1, np.array([0], np.int64), P.FIELD_FEAT, 7), "node type index 7 outside"),
    ]
    for frames, message in cases:
        with pytest.raises(ServerError, match=message.replace("[", "\\[")):
            _request(addr, frames, P.Op.SAMPLE if P.unpack_header(frames[0]).op == P.Op.SAMPLE else P.Op.FEATURES,
                     5.0, curve=None)


def test_untyped_servers_refuse_typed_requests_by_name(typed_servers, random_store):
    """An untyped store's server (its request handling, without sockets) names what it lacks."""
    from bgl.sampler.server import GraphServer

    untyped = GraphServer(random_store)
    for frames, op, message in [
            (typed_sample_request(1, np.array([0], np.int64), np.array([2]), False, 0), P.Op.SAMPLE, "has no edge types"),
            (P.features_request(1, np.array([0], np.int64), P.FIELD_FEAT, 0), P.Op.FEATURES, "has no node types")]:
        with pytest.raises(ServerError, match=message):
            P.parse_reply(untyped.handle(frames), op)
    info = json.loads(json.dumps(untyped.info()))  # as INFO carries it
    assert info["schema"] is None and merged_schema([info], ["untyped"]) == (None, None, None)
    with SamplingClient([typed_servers["whole"]], local_stores=()) as typed:
        with pytest.raises(ProtocolError, match="untyped part"):
            merged_schema([typed.infos[0], info], ["typed", "untyped"])


def test_typed_frames_are_checked_before_any_server_work():
    seeds = np.array([0], np.int64).tobytes()
    typed = typed_sample_request(1, np.array([0], np.int64), np.array([1, 2]), True, 3)
    req = P.parse_request(typed, num_relations=2)
    assert req.fanouts.tolist() == [1, 2] and req.header.flags & P.FLAG_REPLACE
    h = P.unpack_header(typed[0])
    bad = [
        ([typed[0], seeds], "typed SAMPLE needs 3 frames"),
        ([typed[0], seeds, b"1234567"], "fanouts frame of 7 bytes"),
        ([P.Header(P.Op.SAMPLE, 1, P.FLAG_TYPED | P.FLAG_LABOR, 0, 2, len0=1, width=1).pack(), seeds, typed[2]],
         r"typed SAMPLE needs 4 frames \(header, seeds, fanouts, LABOR\)"),
        ([P.Header(P.Op.SAMPLE, 1, P.FLAG_TYPED, 0, 2, fanout=5, len0=1, width=1).pack(), seeds, typed[2]],
         "header fanout must be 0"),
        ([P.Header(P.Op.SAMPLE, 1, 0, 0, 2, len0=1, width=1, ntype=2).pack(), seeds], "ntype header field must be 0"),
        ([P.Header(P.Op.SAMPLE, 1, 8, 0, 2, len0=1, width=1).pack(), seeds], "unknown flag bits 0x8"),
    ]
    for frames, message in bad:
        with pytest.raises(ProtocolError, match=message):
            P.parse_request(frames, num_relations=2)
    with pytest.raises(ProtocolError, match="3 fanouts for a graph of 2 relations"):
        P.parse_request(typed_sample_request(1, np.array([0], np.int64), np.array([1, 2, 3]), False, 0), 2)
    assert h.flags == P.FLAG_TYPED | P.FLAG_REPLACE
