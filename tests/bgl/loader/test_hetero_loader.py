"""Heterogeneous graphs through the one pipeline: typed store, per-relation fanouts, DGL hetero blocks."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

dgl = pytest.importorskip("dgl")

import bgl  # noqa: E402
import bgl.nn  # noqa: E402,F401
from bgl.errors import StoreFormatError  # noqa: E402
from bgl.sampler.local import LocalSampler  # noqa: E402
from bgl.schema import GraphSchema  # noqa: E402
from bgl.sources.hetero import schema_of, write_typed_store  # noqa: E402
from bgl.store import GraphStore, write_store  # noqa: E402


def paper_word_graph(seed=0, papers=40, words=60):
    """paper-cites-paper, paper-has-word, word-in-paper (the Cora-style bag-of-words graph, random here)."""
    gen = torch.Generator().manual_seed(seed)
    has_p = torch.randint(0, papers, (400,), generator=gen)
    has_w = torch.randint(0, words, (400,), generator=gen)
    g = dgl.heterograph({
        ("paper", "cites", "paper"): (torch.randint(0, papers, (200,), generator=gen),
                                      torch.randint(0, papers, (200,), generator=gen)),
        ("paper", "has", "word"): (has_p, has_w),
        ("word", "in", "paper"): (has_w, has_p),
    }, num_nodes_dict={"paper": papers, "word": words})
    g.nodes["paper"].data["feat"] = torch.randn(papers, 5, generator=gen)
    g.nodes["word"].data["feat"] = torch.randn(words, 3, generator=gen).double()  # own width and dtype
    g.nodes["paper"].data["label"] = torch.randint(0, 4, (papers,), generator=gen)
    g.nodes["paper"].data["train_mask"] = torch.arange(papers) < papers // 2
    return g


FANOUTS = [{"cites": 2, "has": 1, "in": 3}, {("paper", "cites", "paper"): 1, "has": 0, "in": -1}]


def _batches(graph, seeds, fanouts=FANOUTS, seed=7, **kw):
    torch.manual_seed(seed)
    loader = bgl.DataLoader(graph, seeds, dgl.dataloading.NeighborSampler(fanouts), batch_size=10, **kw)
    return list(loader)


@pytest.fixture(scope="module")
def typed_store(tmp_path_factory):
    return bgl.ingest(paper_word_graph(), tmp_path_factory.mktemp("hetero") / "pw")


def test_ingest_writes_a_typed_store_of_version_2(typed_store):
    g = paper_word_graph()
    assert typed_store.is_typed and typed_store.meta.version == 2
    assert typed_store.schema.ntypes == ["paper", "word"]
    assert typed_store.schema.canonical_etypes == g.canonical_etypes
    assert [e.count for e in typed_store.schema.edge_types] == [g.num_edges(c) for c in g.canonical_etypes]
    assert typed_store.type_feat["word"].dtype == np.float64 and typed_store.type_feat["word"].shape == (60, 3)
    assert np.array_equal(typed_store.type_splits["paper"]["train"], np.arange(20))
    # Each row's in-edges are grouped by relation, ascending.
    ip, et = typed_store.indptr, np.asarray(typed_store.etype)
    assert all((np.diff(et[ip[v]:ip[v + 1]].astype(int)) >= 0).all() for v in range(typed_store.num_nodes))


def test_store_of_an_unknown_version_is_refused_naming_it(typed_store, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(typed_store.path, copy)
    meta = json.loads((copy / "meta.json").read_text())
    meta["version"] = 3
    (copy / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(StoreFormatError, match="version 3"):
        GraphStore(copy)


@pytest.mark.parametrize("source", ["dglgraph", "store"])
def test_per_relation_fanouts_are_held_exactly(source, typed_store):
    g = paper_word_graph()
    graph = g if source == "dglgraph" else typed_store
    for _, _, blocks in _batches(graph, {"paper": torch.arange(40)}):
        for layer, b in enumerate(blocks):
            for canon in b.canonical_etypes:
                src_t, rel, dst_t = canon
                fan = FANOUTS[layer].get(rel, FANOUTS[layer].get(canon))
                dst_ids = b.dstnodes[dst_t].data[dgl.NID]
                got = b.in_degrees(etype=canon)
                full = g.in_degrees(dst_ids, etype=canon)
                want = full if fan == -1 else torch.clamp(full, max=fan)
                assert torch.equal(got, want), (layer, canon)
                # every sampled edge is an edge of that relation in g; from the DGLGraph with DGL's
                # own edge ids (a store's edge ids are its CSC positions, as for untyped stores)
                u, v = b.edges(etype=canon)
                su, sv = b.srcnodes[src_t].data[dgl.NID][u], b.dstnodes[dst_t].data[dgl.NID][v]
                assert bool(g.has_edges_between(su, sv, etype=canon).all())
                if source == "dglgraph":
                    gu, gv = g.find_edges(b.edges[canon].data[dgl.EID], etype=canon)
                    assert torch.equal(su, gu) and torch.equal(sv, gv)


def test_typed_blocks_are_equal_from_a_store_and_the_dglgraph_in_place(typed_store):
    g = paper_word_graph()
    a = _batches(g, {"paper": torch.arange(40)})
    b = _batches(typed_store, {"paper": torch.arange(40)})
    assert len(a) == len(b) == 4
    for (ia, oa, ba), (ib, ob, bb) in zip(a, b):
        assert ia.keys() == ib.keys() and all(torch.equal(ia[k], ib[k]) for k in ia)
        assert all(torch.equal(oa[k], ob[k]) for k in oa)
        for x, y in zip(ba, bb):
            for canon in x.canonical_etypes:
                assert all(torch.equal(p, q) for p, q in zip(x.edges(etype=canon), y.edges(etype=canon)))


def test_typed_features_and_labels_are_each_types_own_rows(typed_store):
    g = paper_word_graph()
    for graph in (g, typed_store):
        for input_nodes, output_nodes, blocks in _batches(graph, {"paper": torch.arange(40)}):
            first, last = blocks[0], blocks[-1]
            for nt in ("paper", "word"):
                ids = first.srcnodes[nt].data[dgl.NID]
                assert torch.equal(ids, input_nodes[nt])
                assert torch.equal(first.srcnodes[nt].data["feat"], g.nodes[nt].data["feat"][ids])
            seeds = last.dstnodes["paper"].data[dgl.NID]
            assert torch.equal(seeds, output_nodes["paper"]) and list(output_nodes) == ["paper"]
            assert torch.equal(last.dstnodes["paper"].data["label"], g.nodes["paper"].data["label"][seeds])


def test_an_rgcn_trains_on_the_typed_blocks():
    g = paper_word_graph()
    nn = dgl.nn
    layer0 = nn.HeteroGraphConv({"cites": nn.SAGEConv((5, 5), 8, "mean"), "has": nn.SAGEConv((5, 3), 8, "mean"),
                                 "in": nn.SAGEConv((3, 5), 8, "mean")}, aggregate="sum")
    layer1 = nn.HeteroGraphConv({"cites": nn.SAGEConv(8, 4, "mean"), "has": nn.SAGEConv(8, 4, "mean"),
                                 "in": nn.SAGEConv(8, 4, "mean")}, aggregate="sum")
    opt = torch.optim.Adam([*layer0.parameters(), *layer1.parameters()], lr=0.05)
    for _, _, blocks in _batches(g, {"paper": torch.arange(40)}):
        h = layer0(blocks[0], {k: v.float() for k, v in blocks[0].srcdata["feat"].items()})
        h = {k: torch.relu(v) for k, v in h.items()}
        out = layer1(blocks[1], h)["paper"]
        loss = torch.nn.functional.cross_entropy(out, blocks[1].dstdata["label"]["paper"])
        opt.zero_grad()
        loss.backward()
        opt.step()
        assert torch.isfinite(loss)


def test_one_relation_typed_store_samples_as_the_homogeneous_store(tmp_path):
    """The typed sampler over one relation draws exactly the untyped sampler's edges."""
    rng = np.random.default_rng(3)
    n = 80
    src, dst = rng.integers(0, n, 600), rng.integers(0, n, 600)
    order = np.lexsort((src, dst))
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(dst, minlength=n), out=indptr[1:])
    plain = write_store(tmp_path / "plain", indptr, src[order])
    schema = schema_of({"node": n}, [("node", "link", "node")])
    typed = write_typed_store(tmp_path / "typed", schema, [(src[order], dst[order])])
    seeds = np.arange(0, n, 3)
    for replace in (False, True):
        a = LocalSampler(plain).sample_blocks(seeds, [4, 3], replace=replace, seed=5)
        b = LocalSampler(typed).sample_typed_blocks(seeds, [np.array([4]), np.array([3])], replace=replace, seed=5)
        for x, y in zip(a, b):
            assert torch.equal(x.src_ids, y.src_ids) and torch.equal(x.indices, y.indices)
            assert torch.equal(x.indptr, y.indptr)


# ------------------------------------------------------------------ bad input
def test_bad_typed_input_is_named(typed_store):
    g = paper_word_graph()
    with pytest.raises(ValueError, match="'cite'"):
        bgl.DataLoader(g, {"paper": torch.arange(4)}, dgl.dataloading.NeighborSampler([{"cite": 1, "has": 1, "in": 1}]))
    with pytest.raises(ValueError, match="every edge type"):
        bgl.DataLoader(g, {"paper": torch.arange(4)}, dgl.dataloading.NeighborSampler([{"cites": 1}]))
    with pytest.raises(ValueError, match="'paper'.*40"):
        bgl.DataLoader(typed_store, {"paper": torch.tensor([3, 40])}, dgl.dataloading.NeighborSampler([2]))
    with pytest.raises(ValueError, match="unknown node type 'author'"):
        bgl.DataLoader(g, {"author": torch.arange(4)}, dgl.dataloading.NeighborSampler([2]))
    with pytest.raises(TypeError, match="ntype"):
        bgl.DataLoader(typed_store, torch.arange(4), dgl.dataloading.NeighborSampler([2]))


def test_bad_typed_store_input_is_named_and_nothing_is_written(tmp_path):
    schema = schema_of({"user": 5, "item": 4}, [("user", "buys", "item")])
    with pytest.raises(ValueError, match=r"\('user', 'buys', 'item'\).*destination id 4.*'item'"):
        write_typed_store(tmp_path / "a", schema, [(np.array([0, 1]), np.array([2, 4]))])
    with pytest.raises(ValueError, match="'user' has 5 nodes but its features have 3 rows"):
        write_typed_store(tmp_path / "b", schema, [(np.array([0]), np.array([1]))], feats={"user": np.zeros((3, 2))})
    assert not any(tmp_path.iterdir())
    with pytest.raises(ValueError, match="names node type 'shop'"):
        GraphSchema(schema.node_types, (*schema.edge_types, type(schema.edge_types[0])("user", "in", "shop")))


def test_bgl_relational_layer_equals_dgl_heterographconv_on_the_same_batch():
    """bgl.nn.HeteroGraphConv of bgl.nn.SAGEConv on bgl typed blocks == dgl.nn's on DGL's blocks."""
    g = paper_word_graph()
    dims = {"cites": (5, 5), "has": (5, 3), "in": (3, 5)}
    ours = bgl.nn.HeteroGraphConv({r: bgl.nn.SAGEConv(d, 4, "mean") for r, d in dims.items()})
    theirs = dgl.nn.HeteroGraphConv({r: dgl.nn.SAGEConv(d, 4, "mean") for r, d in dims.items()}, aggregate="sum")
    for r in dims:
        ours.mods[r].load_state_dict(theirs.mods[r].state_dict())
    (_, _, bb), = _batches(g, {"paper": torch.arange(10)}, blocks="bgl")[:1]
    (_, _, db), = _batches(g, {"paper": torch.arange(10)}, blocks="dgl")[:1]
    feats = {k: v.float() for k, v in bb[0].srcdata["feat"].items()}
    a = ours(bb[0], feats)
    b = theirs(db[0], {k: v.float() for k, v in db[0].srcdata["feat"].items()})
    assert a.keys() == b.keys()
    for k in a:
        assert torch.allclose(a[k], b[k], atol=1e-5), k


# ------------------------------------------------------------------ PyG HeteroData
def _hetero_data():
    pyg_data = pytest.importorskip("torch_geometric.data")
    g = paper_word_graph()
    d = pyg_data.HeteroData()
    for nt in g.ntypes:
        d[nt].x = g.nodes[nt].data["feat"]
    d["paper"].y = g.nodes["paper"].data["label"]
    for c in g.canonical_etypes:
        d[c].edge_index = torch.stack(g.edges(etype=c, order="eid"))
    return d


def test_pyg_heterodata_batches_have_pygs_layout():
    from bgl.pyg import NeighborLoader

    d = _hetero_data()
    loader = NeighborLoader(d, num_neighbors={et: [2, 3] for et in d.edge_types},
                            input_nodes=("paper", torch.arange(24)), batch_size=8)
    assert len(loader) == 3 and len(loader.dataset) == 24
    seen = []
    for batch in loader:
        bs = batch["paper"].batch_size
        seeds = batch["paper"].n_id[:bs]
        seen.append(seeds)
        assert torch.equal(batch["paper"].y, d["paper"].y[batch["paper"].n_id])  # PyG's: every n_id
        for nt in ("paper", "word"):
            assert torch.equal(batch[nt].x, d[nt].x[batch[nt].n_id])
            assert batch[nt].n_id.unique().numel() == batch[nt].n_id.numel()
        for et in d.edge_types:
            src_t, _, dst_t = et
            ei = batch[et].edge_index
            pairs = set(map(tuple, d[et].edge_index.t().tolist()))
            glob = torch.stack([batch[src_t].n_id[ei[0]], batch[dst_t].n_id[ei[1]]])
            assert all(tuple(p) in pairs for p in glob.t().tolist()), et
            # hop 1 draws at most 2 in-edges of each relation per seed
            if dst_t == "paper":
                per_seed = torch.bincount(ei[1][ei[1] < bs], minlength=bs)
                assert int(per_seed.max()) <= 2
    assert torch.equal(torch.cat(seen), torch.arange(24))


def test_pyg_heterodata_bad_input_is_named():
    from bgl.pyg import NeighborLoader

    d = _hetero_data()
    with pytest.raises(ValueError, match="every edge type"):
        NeighborLoader(d, num_neighbors={("paper", "cites", "paper"): [2]}, input_nodes=("paper", None))
    with pytest.raises(ValueError, match="unknown node type 'author'"):
        NeighborLoader(d, num_neighbors=[2], input_nodes=("author", None))
    d["paper", "cites", "paper"].edge_index = torch.tensor([[0, 1], [2, 40]])
    with pytest.raises(ValueError, match="destination id 40"):
        NeighborLoader(d, num_neighbors=[2], input_nodes=("paper", None))


@pytest.mark.parametrize("source", ["store", "dglgraph"])
def test_proximity_order_walks_the_target_types_seeds_over_the_typed_graph(source, typed_store):
    """BGL's proximity order on a typed graph: a BFS over the one fused CSC from the seeds (global ids),
    each seed once per epoch, reproducible, and the order the ordering code gives those global ids."""
    from bgl.cache.ordering.store_order import proximity_order

    graph = typed_store if source == "store" else paper_word_graph()
    seeds = torch.arange(3, 20)

    def epoch_order(order):
        torch.manual_seed(11)  # the epoch's seed comes from torch's generator, as DGL's shuffle does
        loader = bgl.DataLoader(graph, {"paper": seeds}, dgl.dataloading.NeighborSampler(FANOUTS), batch_size=4,
                                shuffle=True, order=order)
        return torch.cat([out["paper"] for _, out, _ in loader]).tolist()

    first = epoch_order("proximity")
    assert sorted(first) == seeds.tolist() and first == epoch_order("proximity")
    assert first != epoch_order("random")  # the same draws, another order
    if source == "store":
        offset = typed_store.schema.node_type("paper").offset
        gids = seeds.numpy() + offset
        want = np.asarray(proximity_order(typed_store, gids, 1, 0)) - offset
        assert sorted(want.tolist()) == seeds.tolist()
        assert first != sorted(first)  # a BFS order, not the ids as given


def _same_typed_rows(a, b):
    assert len(a) == len(b) > 0
    for (ia, oa, ba), (ib, ob, bb) in zip(a, b):
        assert all(torch.equal(ia[k], ib[k]) for k in ia)
        for nt in ("paper", "word"):
            assert torch.equal(ba[0].srcnodes[nt].data["feat"], bb[0].srcnodes[nt].data["feat"])
        assert torch.equal(ba[-1].dstnodes["paper"].data["label"], bb[-1].dstnodes["paper"].data["label"])


@pytest.mark.parametrize("kw", [dict(cache="lookahead", cache_ratio=0.3), dict(cache="fifo", pipeline="processes"),
                                dict(cache=True, cache_lookahead="auto"), dict(cache="presample", cache_ratio=0.3)])
def test_each_node_type_has_its_own_cache_and_batches_are_unchanged(typed_store, kw):
    seeds = {"paper": torch.arange(40)}
    plain = _batches(typed_store, seeds)
    torch.manual_seed(7)
    loader = bgl.DataLoader(typed_store, seeds, dgl.dataloading.NeighborSampler(FANOUTS), batch_size=10, **kw)
    _same_typed_rows(plain, list(loader))
    stats = loader.cache_stats()
    assert set(stats["by_type"]) == {"paper", "word"}  # each type's rows in its own cache
    assert stats["hits"] > 0 and stats["requests"] == sum(s["requests"] for s in stats["by_type"].values())


def test_a_typed_cache_splits_its_bytes_over_the_types_by_their_rows(typed_store):
    from bgl.cache import make_cache
    from bgl.loader.graph_info import resolve_graph
    from bgl.loader.cache_choice import resolve_cache_spec

    info = resolve_graph(typed_store, "feat", "label", 30.0, False)
    # paper 40 x 5 float32 (800 B), word 60 x 3 float64 (1440 B): a quarter of the bytes, a quarter of each
    spec = resolve_cache_spec("lookahead", None, 560, info, "inline", torch.device("cpu"))
    assert {nt: s.capacity for nt, s in spec.specs.items()} == {"paper": 10, "word": 15}
    assert spec.specs["word"].dtype == "float64" and spec.specs["word"].dim == 3
    assert np.array_equal(spec.specs["word"].degrees, typed_store.in_degrees()[40:])
    with pytest.raises(TypeError, match="TypedFeatureCache"):
        bgl.DataLoader(typed_store, {"paper": torch.arange(4)}, dgl.dataloading.NeighborSampler([2]),
                       cache=make_cache("fifo", 4, 100, 5))
    # presample: each type's cache gets its slice of the presampled epoch's input counts, by type-local id
    loader = bgl.DataLoader(typed_store, {"paper": torch.arange(40)}, dgl.dataloading.NeighborSampler([2]),
                            batch_size=10, cache="presample")
    specs = loader._fetch.cache.specs
    assert {nt: s.presample_counts.shape for nt, s in specs.items()} == {"paper": (40,), "word": (60,)}
    assert (specs["paper"].presample_counts >= 1).all()  # every seed paper is an input of its own batch
    words = typed_store.schema.node_type("word").offset
    indices = np.asarray(typed_store.indices)[: int(np.asarray(typed_store.indptr)[40])]
    seen = np.unique(indices[indices >= words]) - words  # words that reach a paper: the only ones sampled
    assert set(np.flatnonzero(specs["word"].presample_counts).tolist()) <= set(seen.tolist())
    assert specs["word"].presample_counts.sum() > 0


def _column(block, ntype: str, key: str):
    """The DGL column behind ``block.srcnodes[ntype].data[key]``, read without materialising it."""
    return block._node_frames[block.get_ntype_id_from_src(ntype)]._columns[key]


def test_a_dglgraphs_rows_are_read_when_the_model_reads_them_as_with_dgls_loader():
    g = paper_word_graph()
    g.nodes["paper"].data["year"] = torch.arange(40) + 1990  # a field DGL's blocks carry too
    g.edges["cites"].data["w"] = torch.rand(200)
    seeds = {"paper": torch.arange(30)}
    loader = bgl.DataLoader(g, seeds, dgl.dataloading.NeighborSampler(FANOUTS), batch_size=10)
    g.nodes["word"].data["feat"] *= 2  # edited after the loader was built: seen, as DGL sees it
    _, _, blocks = next(iter(loader))
    first = blocks[0]
    assert _column(first, "paper", "feat").index is not None  # not gathered before the model reads it
    for nt in ("paper", "word"):
        nid = first.srcnodes[nt].data[dgl.NID]
        assert torch.equal(first.srcnodes[nt].data["feat"], g.nodes[nt].data["feat"][nid])
    assert torch.equal(first.srcnodes["paper"].data["year"], g.nodes["paper"].data["year"][first.srcnodes["paper"].data[dgl.NID]])
    cites = blocks[-1].edges["cites"]
    assert torch.equal(cites.data["w"], g.edges["cites"].data["w"][cites.data[dgl.EID]])
    last = blocks[-1]
    assert torch.equal(last.dstnodes["paper"].data["label"], g.nodes["paper"].data["label"][last.dstnodes["paper"].data[dgl.NID]])
    _, _, ref = next(iter(dgl.dataloading.DataLoader(g, seeds, dgl.dataloading.NeighborSampler(FANOUTS), batch_size=10)))
    for b, r in zip(blocks, ref):  # the same fields per type as DGL's own blocks
        for nt in g.ntypes:
            assert sorted(b.srcnodes[nt].data.keys()) == sorted(r.srcnodes[nt].data.keys())
    # asked for by name (DGL prefetches too) or bgl's own sampler: gathered by the loader
    eager = dgl.dataloading.NeighborSampler(FANOUTS, prefetch_node_feats={"paper": ["feat"], "word": ["feat"]})
    for sampler in (eager, bgl.NeighborSampler(FANOUTS)):
        _, _, blocks = next(iter(bgl.DataLoader(g, seeds, sampler, batch_size=10)))
        assert _column(blocks[0], "paper", "feat").index is None
        nid = blocks[0].srcnodes["word"].data[dgl.NID]
        assert torch.equal(blocks[0].srcnodes["word"].data["feat"], g.nodes["word"].data["feat"][nid])
