"""A heterogeneous DGLGraph's seed edges are located in its fused CSC per batch, not held (issue #57).

:mod:`bgl.loader.seeds.typed_located`: destinations, CSC positions and ``reverse_types`` partners cost
12 B a seed edge held for the loader's life (110 MiB on the recommendation benchmark's power-law
graph, alive at its peak); the loader now holds ids and relations only (5 B) and finds the rest per batch.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import bgl
import bgl.dgl as bdgl
from bgl.loader.seeds._typed_edge_kernels import ids_to_positions
from bgl.sources.hetero import fused_csc, schema_of

REVERSE = {"rates": "rated-by", "rated-by": "rates"}


def rating_graph(users=40, items=60, n=500, seed=0):
    """user-rates-item and its reverse (same ids), plus user-follows-user: rows mix three relations."""
    gen = torch.Generator().manual_seed(seed)
    u, i = torch.randint(0, users, (n,), generator=gen), torch.randint(0, items, (n,), generator=gen)
    return bdgl.heterograph({("user", "rates", "item"): (u, i), ("item", "rated-by", "user"): (i, u),
                             ("user", "follows", "user"): (torch.randint(0, users, (90,), generator=gen),
                                                           torch.randint(0, users, (90,), generator=gen))},
                            num_nodes_dict={"user": users, "item": items})


@pytest.mark.parametrize("items,n", [(60, 500), (3, 3000)])  # rows of ~8 edges; of ~1000
def test_ids_to_positions_finds_every_edge_as_a_brute_force_search_does(items, n):
    g = rating_graph(items=items, n=n)
    schema = schema_of({nt: g.num_nodes(nt) for nt in g.ntypes}, g.canonical_etypes)
    rel_edges = [tuple(t.numpy() for t in g.edges(etype=c, order="eid")) for c in g.canonical_etypes]
    indptr, _, etype, edge_ids = fused_csc(schema, rel_edges)
    dst_t = schema.relation_ends()[1]
    rel = np.concatenate([np.full(d.shape[0], r, np.int64) for r, (_, d) in enumerate(rel_edges)])
    ids = np.concatenate([np.arange(d.shape[0], dtype=np.int64) for _, d in rel_edges])
    rows = np.concatenate([d + schema.offsets[dst_t[r]] for r, (_, d) in enumerate(rel_edges)]).astype(np.int64)
    out = np.empty(ids.shape[0], np.int64)
    ids_to_positions(indptr, etype, edge_ids, rows, rel, ids, out)
    for j in range(ids.shape[0]):  # brute force: the one position of (relation, id) in the row
        lo, hi = indptr[rows[j]], indptr[rows[j] + 1]
        want = [p for p in range(lo, hi) if etype[p] == rel[j] and edge_ids[p] == ids[j]]
        assert [out[j]] == want
    ids_to_positions(indptr, etype, edge_ids, (rows + 1) % (indptr.shape[0] - 1), rel, ids, out)
    assert (out == -1).all()  # looked for in another row: absent, never a neighbour's edge


@pytest.mark.parametrize("exclude", ["self", "reverse_types"])
def test_a_dglgraph_loader_holds_only_ids_and_relations_of_its_seed_edges(exclude):
    g = rating_graph()
    kw = {"reverse_etypes": REVERSE} if exclude == "reverse_types" else {}
    sampler = bgl.as_edge_prediction_sampler(bgl.NeighborSampler([3, 3]), exclude=exclude,
                                             negative_sampler=bgl.negative_sampler.Uniform(1), **kw)
    seeds = {"rates": torch.arange(500), "follows": torch.arange(90)}
    loader = bgl.DataLoader(g, seeds, sampler, batch_size=64, shuffle=True)
    edges = loader._sample_stage.edges
    assert edges.positions is None and edges.dst is None and edges.reverse is None and edges.src is None
    held = sum(a.nbytes for a in (edges.eids, edges.rel))
    assert held <= 5 * 590  # int32 ids, 1-byte relations
    assert loader._order_stage.order_nodes is None  # a random order reads no destinations


def test_reverse_id_on_a_dglgraph_excludes_each_seed_and_its_given_reverse():
    g = rating_graph()
    n = g.num_edges("rates")
    reverse = {"rates": torch.arange(n).flip(0), "rated-by": torch.arange(n).flip(0)}  # any id map will do
    sampler = bgl.as_edge_prediction_sampler(bgl.NeighborSampler([-1, -1]), exclude="reverse_id",
                                             reverse_eids=reverse)
    seen = 0
    for _, pair, blocks in bgl.DataLoader(g, {"rates": torch.arange(n)}, sampler, batch_size=50, shuffle=True):
        ids = pair.edges[("user", "rates", "item")].data["_ID"]
        banned = set(ids.tolist()) | set(reverse["rates"][ids].tolist())
        for b in blocks:  # every in-neighbour is drawn: only the excluded edges of "rates" are missing
            got = set(b.edges[("user", "rates", "item")].data["_ID"].tolist())
            assert not banned & got
            seen += len(got)
    assert seen > 0


def test_destinations_of_a_batch_over_many_relations_are_each_relations_own():
    """Grouped by one sort, not a mask per relation: every edge gets its own relation's destination
    plus that relation's offset, in the batch's order, whatever the relations' count and order."""
    from bgl.loader.seeds.typed_located import LocatedSeeds

    rng = np.random.default_rng(5)
    num_rels = 300
    rel_dst = {r: rng.integers(0, 50, 20).astype(np.int32 if r % 2 else np.int64) for r in range(num_rels)}
    offsets = np.arange(num_rels, dtype=np.int64) * (1 << 31)  # past int32: the sums need int64
    located = LocatedSeeds(rel_dst, offsets)
    rel = rng.integers(0, num_rels, 4000)
    ids = rng.integers(0, 20, 4000)
    expected = np.array([int(rel_dst[r][i]) + int(offsets[r]) for r, i in zip(rel, ids)], np.int64)
    assert np.array_equal(located.destinations(rel, ids), expected)
    assert located.destinations(rel[:0], ids[:0]).shape == (0,)
