"""bgl.DataLoader with DGL's ``NeighborSampler(prob=/mask=)`` on typed graphs: a heterogeneous DGLGraph's
per-relation ``edata``, a typed store's edge arrays, its partition on real graph servers (same batches)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

dgl = pytest.importorskip("dgl")

import bgl  # noqa: E402
from bgl.partition import partition_graph  # noqa: E402

from ...sampler.conftest import part_args, started_servers, with_edge_arrays  # noqa: E402
from ...sampler.test_typed_weighted import random_heterograph  # noqa: E402
from .test_typed_servers_loader import same_batches  # noqa: E402

FANOUTS = [{"writes": 2, "cites": 3, "in": 1, "by": 1}, {"writes": 1, "cites": 2, "in": 0, "by": 2}]
SEEDS = {"paper": torch.arange(0, 300, 3)}


def batches(graph, seeds, blocks="dgl", **kw):
    torch.manual_seed(7)
    loader = bgl.DataLoader(graph, seeds, dgl.dataloading.NeighborSampler(**kw), batch_size=16, blocks=blocks)
    return list(loader)


@pytest.mark.parametrize("kind", ["prob", "mask"])
def test_heterograph_blocks_hold_only_positive_edges_in_dgls_counts(kind):
    g = random_heterograph()
    fanouts = [{"writes": 2, "cites": 1, "by": 2}, {"writes": 3, "cites": 2, "by": 1}]
    name = "w" if kind == "prob" else "m"
    got = batches(g, {"paper": torch.arange(40)}, fanouts=fanouts, **{kind: name})
    assert got
    for _, _, blocks in got:
        for layer, block in zip(fanouts, blocks):
            for c in block.canonical_etypes:
                if block.num_edges(c) == 0:
                    continue
                eids = block.edges[c].data[dgl.EID]
                src, dst = block.edges(etype=c)
                if "w" in g.edges[c].data:  # never a zero weight / False mask
                    assert (g.edges[c].data[name][eids] > 0).all(), c
                # each dst takes min(fanout, its positive in-edges of c), as DGL's sample_neighbors
                dst_ids = block.dstnodes[c[2]].data[dgl.NID]
                for j in range(block.num_dst_nodes(c[2])):
                    into = g.in_edges(int(dst_ids[j]), form="eid", etype=c)
                    positive = int((g.edges[c].data["w"][into] > 0).sum()) if "w" in g.edges[c].data else len(into)
                    assert int((dst == j).sum()) == min(layer[c[1]], positive), (c, j)


def test_weighted_heterograph_differs_from_uniform_and_bad_names_are_refused():
    g = random_heterograph()
    fanouts = [{"writes": 2, "cites": 1, "by": 2}]
    seeds = {"paper": torch.arange(40)}
    weighted = batches(g, seeds, fanouts=fanouts, prob="w")
    uniform = batches(g, seeds, fanouts=fanouts)
    assert any(a[2][0].num_edges() != b[2][0].num_edges() for a, b in zip(weighted, uniform))
    with pytest.raises(ValueError, match="prob / mask names edge data 'nope'.*'m', 'w'"):
        batches(g, seeds, fanouts=fanouts, prob="nope")
    with pytest.raises(ValueError, match="mask='w' must name a bool edge array, got dtype float32"):
        bgl.DataLoader(g, seeds, bgl.NeighborSampler(fanouts, mask="w"), batch_size=8)  # DGL's keeps no mask=
    bad = random_heterograph()
    bad.edges["cites"].data["w"][3] = -1.0
    with pytest.raises(ValueError, match="edge weights 'w' must be finite and >= 0"):
        batches(bad, seeds, fanouts=fanouts, prob="w")


@pytest.fixture(scope="module")
def weighted_served(hetero_store, tmp_path_factory):
    work = tmp_path_factory.mktemp("typed_weighted_loader")
    rng = np.random.default_rng(5)
    w = rng.random(hetero_store.num_edges).astype(np.float32)
    w[rng.random(hetero_store.num_edges) < 0.5] = 0
    store = with_edge_arrays(hetero_store, work / "store", {"w": w, "m": w > 0.3})
    book = partition_graph(store, "random", 2, work / "p", measure_samples=False)
    with started_servers(part_args(book), work) as addresses:
        yield store, book, ",".join(addresses)


def test_partition_on_servers_gives_the_weighted_stores_batches(weighted_served, monkeypatch):
    store, book, servers = weighted_served
    monkeypatch.setenv("BGL_SERVERS", servers)
    for kw in ({"prob": "w"}, {"mask": "m"}):
        want = batches(store, SEEDS, fanouts=FANOUTS, blocks="bgl", **kw)
        array = np.asarray(store.edge_array(next(iter(kw.values()))))
        for _, _, blocks in want:
            assert all((array[b.edge_ids.numpy()] > 0).all() for b in blocks)
        same_batches(want, batches(str(book.path), SEEDS, fanouts=FANOUTS, blocks="bgl", **kw))
    with pytest.raises(ValueError, match="prob / mask names edge data 'nope'"):
        batches(str(book.path), SEEDS, fanouts=FANOUTS, prob="nope")
