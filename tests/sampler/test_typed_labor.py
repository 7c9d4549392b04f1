"""LABOR on typed graphs (bgl/sampler/typed/sampling.py, ``labor=``): each relation keeps ``fanout`` edges in
expectation, one variate per source node shared by every relation, the same blocks from a store and
its server, from a partition's servers and co-located reads; LABOR-i relation by relation; the loader's
LaborSampler on a heterograph."""
from __future__ import annotations

import numpy as np
import pytest
import torch

dgl = pytest.importorskip("dgl")

import bgl  # noqa: E402
from bgl.partition import partition_graph  # noqa: E402
from bgl.sampler.client import SamplingClient  # noqa: E402
from bgl.sampler.local import LocalSampler  # noqa: E402
from bgl.sampler.multilayer import Labor  # noqa: E402
from bgl.sampler.typed.sampling import relation_fanouts  # noqa: E402
from bgl.sources.hetero import TypedArrays  # noqa: E402

from .conftest import part_args, started_servers  # noqa: E402
from .test_typed_weighted import hub_graph, random_heterograph  # noqa: E402


def test_each_relation_keeps_its_fanout_in_expectation_and_shares_the_sources_variates():
    arrays = TypedArrays.from_dglgraph(hub_graph())
    schema = arrays.schema
    etypes = schema.canonical_etypes
    rates, views, clicks = (etypes.index(("user", r, "item")) for r in ("rates", "views", "clicks"))
    fan = relation_fanouts({"rates": 3, "views": 20, "clicks": 2}, etypes)
    sampler, hub, n = LocalSampler(arrays), schema.node_type("item").offset, 2000
    kept = {r: np.zeros(n) for r in (rates, views, clicks)}
    edge_freq = np.zeros(12)
    for s in range(n):
        _, nbrs, eids, et = sampler.sample_typed_layer(np.array([hub]), fan, False, s, labor=(0, -1.0))
        for r in kept:
            kept[r][s] = (et == r).sum()
        edge_freq[eids[et == rates]] += 1
        # rates (3 of 12) and clicks (2 of 8) keep a source below the same threshold 1/4: the
        # users joined to the hub by both relations are kept by both or by neither
        both = set(range(schema.node_type("user").offset, schema.node_type("user").offset + 8))
        assert set(nbrs[et == rates].tolist()) & both == set(nbrs[et == clicks].tolist()), s
    assert (kept[views] == 10).all()  # degree 10 <= fanout 20: every edge
    assert abs(kept[rates].mean() - 3) < 0.2 and abs(kept[clicks].mean() - 2) < 0.15
    assert np.all(np.abs(edge_freq / n - 0.25) < 0.05), edge_freq / n  # each edge: min(1, fanout / degree)


@pytest.fixture(scope="module")
def labor_servers(hetero_store, tmp_path_factory):
    """A server for the typed store and one per part of its 2-part partition."""
    work = tmp_path_factory.mktemp("typed_labor")
    book = partition_graph(hetero_store, "random", 2, work / "p", measure_samples=False)
    with started_servers([["--store", str(hetero_store.path)], *part_args(book)], work) as addresses:
        yield book, addresses[0], addresses[1:]


def same_blocks(a, b):
    for x, y in zip(a, b, strict=True):
        for field in ("src_ids", "indptr", "indices", "etypes"):
            assert torch.equal(getattr(x, field), getattr(y, field)), field


@pytest.mark.parametrize("labor", [Labor(), Labor(layer_dependency=True, seed2=77, mix=0.5),
                                   Labor(importance_sampling=1), Labor(importance_sampling=-1, seed2=5, mix=0.25)])
def test_store_server_partition_and_colocated_reads_give_the_same_labor_blocks(labor_servers, hetero_store, labor):
    book, whole, parts = labor_servers
    fan = [relation_fanouts(layer, hetero_store.schema.canonical_etypes)
           for layer in (2, {"writes": 3, "cites": 1, "in": 2, "by": -1})]
    seeds = np.arange(0, hetero_store.num_nodes, 5)
    want = LocalSampler(hetero_store).sample_typed_blocks(seeds, fan, seed=4, labor=labor)
    uniform = LocalSampler(hetero_store).sample_typed_blocks(seeds, fan, seed=4)
    assert any(a.src_ids.shape != b.src_ids.shape for a, b in zip(want, uniform))
    with SamplingClient([whole], local_stores=()) as client:
        same_blocks(want, client.sample_typed_blocks(seeds, fan, seed=4, labor=labor))
    new_seeds = book.to_new_global(seeds)  # a partition's variates are keyed by its own (new) ids
    with SamplingClient(parts, local_stores=()) as remote, \
            SamplingClient(parts, local_stores=[book.part_store(0), book.part_store(1)]) as local:
        same_blocks(remote.sample_typed_blocks(new_seeds, fan, seed=4, labor=labor),
                    local.sample_typed_blocks(new_seeds, fan, seed=4, labor=labor))


@pytest.mark.parametrize("kw", [{}, {"importance_sampling": 1}, {"importance_sampling": -1}, {"prob": "w"}])
def test_labor_sampler_on_a_heterograph_gives_real_edges(kw):
    """LABOR-0, LABOR-i (one round, until convergence) and weighted LABOR through the loader: each block
    edge is the graph's edge of its id; LABOR-i and weighted LABOR weigh every kept edge (``edge_weights``)."""
    g = random_heterograph()
    fanouts = [{"writes": 2, "cites": 1, "by": 2}, {"writes": 3, "cites": 2, "by": 1}]
    seeds = {"paper": torch.arange(40)}
    torch.manual_seed(0)
    loader = bgl.DataLoader(g, seeds, dgl.dataloading.LaborSampler(fanouts, batch_dependency=2, **kw), batch_size=16)
    n = 0
    for _, _, blocks in loader:
        for block in blocks:
            for c in block.canonical_etypes:
                src, dst = block.edges(etype=c)
                eids = block.edges[c].data[dgl.EID]
                gs, gd = g.find_edges(eids, etype=c)  # each block edge is the graph's edge of that id
                assert torch.equal(block.srcnodes[c[0]].data[dgl.NID][src], gs)
                assert torch.equal(block.dstnodes[c[2]].data[dgl.NID][dst], gd)
                if kw:
                    w = block.edges[c].data["edge_weights"]
                    assert w.shape == eids.shape and bool((w > 0).all()), c
                if kw.get("prob") and c[1] != "by":  # no edge of weight 0 is kept
                    assert bool((g.edges[c].data["w"][eids] > 0).all())
                n += eids.numel()
    assert n > 0


def test_labor_i_is_each_relations_own_problem():
    """A typed LABOR-i layer keeps, per relation, what LABOR-i over that relation's in-edges alone keeps
    (DGL samples a heterograph relation by relation), with the same importances."""
    from bgl.sampler import labor_ops, ops

    g = random_heterograph()
    arrays = TypedArrays.from_dglgraph(g)
    schema = arrays.schema
    fanout = {"writes": 2, "cites": 3, "by": 1}
    seeds = np.arange(schema.num_nodes)
    block, = LocalSampler(arrays).sample_typed_blocks(seeds, [relation_fanouts(fanout, schema.canonical_etypes)],
                                                      seed=4, labor=Labor(importance_sampling=2))
    ptr, idx, et = block.indptr.numpy(), block.indices.numpy(), block.etypes.numpy()
    src_ids, eids, w = block.src_ids.numpy(), block.edge_ids.numpy(), block.edata["edge_weights"].numpy()
    dst_of = np.repeat(np.arange(seeds.size), np.diff(ptr))
    for r, c in enumerate(schema.canonical_etypes):
        s_off, d_off = schema.node_type(c[0]).offset, schema.node_type(c[2]).offset
        u, v, e = g.edges(etype=c, form="all", order="srcdst")
        order = np.argsort(v.numpy(), kind="stable")  # rows in dst order, as a CSC holds them
        u, v, e = u.numpy()[order] + s_off, v.numpy()[order] + d_off, e.numpy()[order]
        src, local = np.unique(u, return_inverse=True)
        keep, imp = labor_ops.labor_importance(np.bincount(v, minlength=seeds.size), src, local, fanout[c[1]], 2,
                                               ops.layer_seed(4, 0), ops.layer_seed(0, 0), -1.0)
        mine = et == r
        got = {(int(d), int(a)): float(x) for d, a, x in zip(dst_of[mine], eids[mine], w[mine])}  # the graph's ids
        kept_pairs = set(zip(v[keep].tolist(), u[keep].tolist()))
        assert set(zip(dst_of[mine].tolist(), src_ids[idx[mine]].tolist())) == kept_pairs
        want = {(int(d), int(a)): float(x) for d, a, x in zip(v[keep], e[keep], imp[keep])}
        assert got.keys() == want.keys(), c
        assert all(abs(got[k] - want[k]) <= 1e-6 * max(1.0, abs(want[k])) for k in want), c


def test_typed_labor_frames():
    from bgl.errors import ProtocolError
    from bgl.sampler import protocol as P
    from bgl.sampler.typed.remote import typed_sample_request

    frames = typed_sample_request(1, np.array([0, 5]), np.array([1, -1]), False, 3, exclude=np.array([2]),
                                  labor=(9, 0.25))
    req = P.parse_request(frames, num_relations=2)
    assert req.labor == (9, 0.25) and req.exclude.tolist() == [2] and req.fanouts.tolist() == [1, -1]
    with pytest.raises(ProtocolError, match="LABOR with edge weights \\('w'\\) is not supported"):
        P.parse_request(typed_sample_request(1, np.array([0]), np.array([1, 1]), False, 3, prob="w", labor=(0, -1.0)), 2)
    with pytest.raises(ProtocolError, match="LABOR samples without replacement"):
        P.parse_request(typed_sample_request(1, np.array([0]), np.array([1, 1]), True, 3, labor=(0, -1.0)), 2)
