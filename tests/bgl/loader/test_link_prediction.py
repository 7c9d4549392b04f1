"""bgl.DataLoader with edge seeds: DGL's link-prediction tuples, exclusion inside the sampler, negatives.

Checked against real DGL: the pair graphs' fields as DGL's EdgePredictionSampler builds them
(``compact_graphs`` node order, ``NID`` / ``EID``), and DGL's as_edge_prediction_sampler wrapping
a bgl NeighborSampler inside DGL's own DataLoader.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

dgl = pytest.importorskip("dgl")

import bgl  # noqa: E402
from bgl import negative_sampler as ns  # noqa: E402
from bgl.loader.seeds.edges import PairGraph  # noqa: E402
from bgl.store import write_store  # noqa: E402

FANOUTS = [4, 3]
K = 2


@pytest.fixture(scope="module")
def symmetric(tmp_path_factory, random_store):
    """The random store's edges plus their reverses, as a DGLGraph (edge e's reverse is e ± E), and
    as a store (ids = CSC positions) with the same reverse map in store ids."""
    st = random_store
    src = np.asarray(st.indices).astype(np.int64)
    dst = np.repeat(np.arange(st.num_nodes), np.diff(st.indptr))
    keep = src != dst
    src, dst = src[keep], dst[keep]
    e = src.shape[0]
    g = dgl.graph((torch.from_numpy(np.concatenate([src, dst])), torch.from_numpy(np.concatenate([dst, src]))),
                  num_nodes=st.num_nodes)
    g.ndata["feat"] = torch.from_numpy(np.array(st.feat))
    g_rev = np.concatenate([np.arange(e) + e, np.arange(e)])
    indptr, indices, csc_eids = (t.numpy() for t in g.adj_tensors("csc"))
    store = write_store(tmp_path_factory.mktemp("sym") / "store", indptr.astype(np.int64), indices,
                        feat=np.array(st.feat), name="symmetric")
    pos_of = np.empty_like(csc_eids)
    pos_of[csc_eids] = np.arange(csc_eids.shape[0])
    store_rev = pos_of[g_rev[csc_eids]]  # reverse of the edge at position p, as a position
    return g, torch.from_numpy(g_rev), store, torch.from_numpy(store_rev)


def first_batch(loader):
    """The loader's first batch (the loader is kept alive meanwhile: closing it ends its epoch)."""
    return next(iter(loader))


def endpoints(graph, eids):
    """(src, dst) of ``eids`` by brute force: DGL's find_edges, or the store's CSC."""
    if isinstance(graph, dgl.DGLGraph):
        s, d = graph.find_edges(eids)
        return s, d
    indptr = np.asarray(graph.indptr)
    dst = np.repeat(np.arange(graph.num_nodes), np.diff(indptr))
    return torch.from_numpy(np.asarray(graph.indices)[eids.numpy()].astype(np.int64)), torch.from_numpy(dst[eids.numpy()])


def block_edge_ids(graph, block):
    return block.edata[dgl.EID] if not isinstance(block, bgl.Block) else block.edge_ids


def check_batch(graph, batch, exclude, reverse, feat):
    """Every field of one ``(input_nodes, pair_graph, neg_pair_graph, blocks)`` against the graph."""
    input_nodes, pair, neg, blocks = batch
    nid = pair.ndata[dgl.NID]
    eids = pair.edata[dgl.EID]
    s, d = pair.edges()
    src, dst = endpoints(graph, eids)
    assert torch.equal(nid[s], src) and torch.equal(nid[d], dst)
    ns_, nd_ = neg.edges()
    assert torch.equal(nid[ns_], torch.repeat_interleave(src, K))  # DGL's per-source layout
    assert neg.num_nodes() == pair.num_nodes() and torch.equal(neg.ndata[dgl.NID], nid)
    # DGL's compact_graphs order of the same positive and negative edges
    n = graph.num_nodes() if isinstance(graph, dgl.DGLGraph) else graph.num_nodes
    ref_pos = dgl.graph((src, dst), num_nodes=n)
    ref_neg = dgl.graph((nid[ns_], nid[nd_]), num_nodes=n)
    assert torch.equal(dgl.compact_graphs([ref_pos, ref_neg])[0].ndata[dgl.NID], nid)
    last, first = blocks[-1], blocks[0]
    dst_ids = last.dst_ids if isinstance(last, bgl.Block) else last.dstdata[dgl.NID]
    src_ids = first.src_ids if isinstance(first, bgl.Block) else first.srcdata[dgl.NID]
    assert torch.equal(dst_ids, nid) and torch.equal(src_ids, input_nodes)
    assert torch.equal(first.srcdata["feat"], feat[input_nodes])
    banned = set(eids.tolist())
    if exclude == "reverse_id":
        banned |= set(reverse[eids].tolist())
    for b in blocks:
        assert not set(block_edge_ids(graph, b).tolist()) & banned
    return eids


@pytest.mark.parametrize("exclude", ["self", "reverse_id"])
@pytest.mark.parametrize("kind", ["dglgraph", "store"])
def test_no_seed_edge_or_reverse_reaches_a_block(symmetric, kind, exclude):
    g, g_rev, store, store_rev = symmetric
    graph, reverse = (g, g_rev) if kind == "dglgraph" else (store, store_rev)
    num_edges = g.num_edges()
    seeds = torch.from_numpy(np.random.default_rng(0).choice(num_edges, 600, replace=False))
    sampler = dgl.dataloading.as_edge_prediction_sampler(
        dgl.dataloading.NeighborSampler(FANOUTS), exclude=exclude, reverse_eids=reverse,
        negative_sampler=dgl.dataloading.negative_sampler.Uniform(K))
    loader = bgl.DataLoader(graph, seeds, sampler, batch_size=64, shuffle=True)
    seen = []
    for batch in loader:
        assert len(batch) == 4 and isinstance(batch[1], dgl.DGLGraph)
        seen.append(check_batch(graph, batch, exclude, reverse, g.ndata["feat"]))
    assert sorted(torch.cat(seen).tolist()) == sorted(seeds.tolist())  # every seed edge once an epoch
    assert len(seen) == len(loader)


def test_a_dense_neighbourhood_keeps_its_fanout_around_excluded_edges(symmetric):
    """Exclusion happens in the draw: a node with enough other in-edges still gets ``fanout`` of them."""
    g, g_rev, _, _ = symmetric
    deg = g.in_degrees()
    v = int(torch.argmax(deg))
    seeds = g.in_edges(v, form="eid")[:2]
    sampler = bgl.as_edge_prediction_sampler(bgl.NeighborSampler([5]), exclude="reverse_id", reverse_eids=g_rev)
    input_nodes, pair, blocks = first_batch(bgl.DataLoader(g, seeds, sampler, batch_size=2))
    nid = pair.ndata[dgl.NID].tolist()
    counts = blocks[-1].in_degrees()
    assert int(counts[nid.index(v)]) == 5  # deg(v) - 2 excluded in-edges >= 5


def test_same_fields_as_dgls_own_loader(symmetric):
    g, _, _, _ = symmetric
    seeds = torch.arange(100)
    make = lambda: dgl.dataloading.as_edge_prediction_sampler(  # noqa: E731
        dgl.dataloading.NeighborSampler(FANOUTS), exclude="self",
        negative_sampler=dgl.dataloading.negative_sampler.Uniform(K))
    ours = first_batch(bgl.DataLoader(g, seeds, make(), batch_size=32))
    theirs = first_batch(dgl.dataloading.DataLoader(g, seeds, make(), batch_size=32))
    assert len(ours) == len(theirs) == 4
    for a, b in zip(ours[1:3], theirs[1:3]):
        assert type(a) is type(b) and a.idtype == b.idtype
        assert set(a.ndata.keys()) == set(b.ndata.keys()) and set(a.edata.keys()) == set(b.edata.keys())
        assert a.num_edges() == b.num_edges()
    assert torch.equal(ours[1].edata[dgl.EID], theirs[1].edata[dgl.EID])  # unshuffled: same seed edges
    assert [type(b) for b in ours[3]] == [type(b) for b in theirs[3]] and len(ours[3]) == len(FANOUTS)
    assert ours[0].dtype == theirs[0].dtype


def test_without_negatives_the_tuple_has_three_fields(symmetric):
    g, _, _, _ = symmetric
    sampler = bgl.as_edge_prediction_sampler(bgl.NeighborSampler(FANOUTS))
    batch = first_batch(bgl.DataLoader(g, torch.arange(40), sampler, batch_size=16))
    assert len(batch) == 3 and isinstance(batch[1], dgl.DGLGraph) and batch[1].num_edges() == 16


def test_a_store_with_bgls_sampler_gives_bgls_pair_structure(symmetric):
    _, _, store, store_rev = symmetric
    sampler = bgl.as_edge_prediction_sampler(bgl.NeighborSampler(FANOUTS), exclude="reverse_id",
                                             reverse_eids=store_rev, negative_sampler=ns.Uniform(K))
    batches = list(bgl.DataLoader(store, torch.arange(0, 300, 2), sampler, batch_size=50))
    for batch in batches:
        input_nodes, pair, neg, blocks = batch
        assert isinstance(pair, PairGraph) and isinstance(neg, PairGraph)
        assert isinstance(blocks[0], bgl.Block)
        check_batch(store, batch, "reverse_id", store_rev, torch.from_numpy(np.array(store.feat)))


def test_global_uniform_negatives_are_non_edges(symmetric):
    g, _, store, _ = symmetric
    sampler = bgl.as_edge_prediction_sampler(bgl.NeighborSampler([2]), negative_sampler=ns.GlobalUniform(K))
    _, pair, neg, _ = first_batch(bgl.DataLoader(store, torch.arange(64), sampler, batch_size=64))
    nid = neg.ndata["_ID"]
    s, d = neg.edges()
    assert 0 < neg.num_edges() <= 64 * K
    assert not g.has_edges_between(nid[s], nid[d]).any()


@pytest.mark.parametrize("policy", ["presample", "static-degree", "lookahead"])
@pytest.mark.parametrize("graph", ["store", "dglgraph"])
def test_global_uniform_negatives_with_every_cache_policy(symmetric, policy, graph):
    """A cache changes where rows come from, never the batch: the ``presample`` policy's presampled
    epoch draws GlobalUniform's negatives with the graph, as the sample stage does (it once had no
    graph to give them and refused)."""
    g, _, store, _ = symmetric
    source = store if graph == "store" else g
    sampler = bgl.as_edge_prediction_sampler(bgl.NeighborSampler([3, 3]), negative_sampler=ns.GlobalUniform(K))
    runs = []
    for cache in (policy, "none"):
        torch.manual_seed(5)
        loader = bgl.DataLoader(source, torch.arange(300), sampler, batch_size=100, shuffle=True, cache=cache,
                                cache_ratio=0.2)
        runs.append([(input_nodes, pair.edata["_ID"], neg.edges()[0], neg.edges()[1])
                     for input_nodes, pair, neg, _ in loader])
        loader.close()
    assert len(runs[0]) == 3
    for a, b in zip(*runs):
        assert all(torch.equal(x, y) for x, y in zip(a, b))


def batches_of(loader):
    out = []
    for input_nodes, pair, neg, blocks in loader:
        out.append((pair.edata["_ID"], pair.ndata["_ID"], neg.edges()[1], input_nodes,
                    blocks[0].srcdata["feat"]))
    return out


def test_batches_are_reproducible_and_the_same_in_every_pipeline_mode(symmetric):
    _, _, store, store_rev = symmetric
    sampler = bgl.as_edge_prediction_sampler(bgl.NeighborSampler(FANOUTS), exclude="reverse_id",
                                             reverse_eids=store_rev, negative_sampler=ns.Uniform(K))
    runs = {}
    for mode in ("inline", "thread", "processes"):
        torch.manual_seed(3)
        loader = bgl.DataLoader(store, torch.arange(400), sampler, batch_size=100, shuffle=True,
                                pipeline=mode, cache="lookahead", cache_ratio=0.2)
        runs[mode] = batches_of(loader)
        loader.close()
    for mode in ("thread", "processes"):
        for a, b in zip(runs["inline"], runs[mode]):
            assert all(torch.equal(x, y) for x, y in zip(a, b)), mode
    torch.manual_seed(4)
    other = batches_of(bgl.DataLoader(store, torch.arange(400), sampler, batch_size=100, shuffle=True))
    assert not torch.equal(other[0][2], runs["inline"][0][2])  # another epoch seed: other negatives


def test_proximity_order_cuts_edges_by_their_destination_bfs_position(symmetric):
    _, _, store, _ = symmetric
    sampler = bgl.as_edge_prediction_sampler(bgl.NeighborSampler([2]), negative_sampler=ns.Uniform(1))
    seeds = torch.arange(0, 2000, 3)
    loader = bgl.DataLoader(store, seeds, sampler, batch_size=100, order="proximity")
    eids = torch.cat([pair.edata["_ID"] for _, pair, _, _ in loader])
    assert sorted(eids.tolist()) == seeds.tolist()
    dst = np.searchsorted(np.asarray(store.indptr), eids.numpy(), side="right") - 1
    # the order groups each destination's edges together: a node's edges are one run
    runs = np.count_nonzero(np.diff(dst) != 0) + 1
    assert runs == np.unique(dst).shape[0]


def test_dgls_wrapper_around_bgls_sampler_runs_in_both_loaders(symmetric):
    g, _, _, _ = symmetric
    sampler = dgl.dataloading.as_edge_prediction_sampler(
        bgl.NeighborSampler(FANOUTS), exclude="self", negative_sampler=dgl.dataloading.negative_sampler.Uniform(K))
    for loader_cls in (bgl.DataLoader, dgl.dataloading.DataLoader):
        input_nodes, pair, neg, blocks = first_batch(loader_cls(g, torch.arange(64), sampler, batch_size=32))
        assert pair.num_edges() == 32 and neg.num_edges() == 32 * K
        banned = set(pair.edata[dgl.EID].tolist())
        assert not any(banned & set(b.edata[dgl.EID].tolist()) for b in blocks)
        assert torch.equal(blocks[0].srcdata["feat"], g.ndata["feat"][input_nodes])


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("make,indices,error,match", [
    (lambda r: bgl.as_edge_prediction_sampler(bgl.NeighborSampler([2])), [0, 10**7], ValueError, "10000000"),
    (lambda r: bgl.as_edge_prediction_sampler(bgl.NeighborSampler([2])), [3, 3], ValueError, "duplicate edge ids"),
    (lambda r: bgl.as_edge_prediction_sampler(bgl.NeighborSampler([2])), [0.5], TypeError, "integer"),
    (lambda r: bgl.as_edge_prediction_sampler(bgl.NeighborSampler([2]), exclude="reverse_id",
                                              reverse_eids=r[:-1]), [0], ValueError, "one entry per edge"),
    (lambda r: dgl.dataloading.as_edge_prediction_sampler(dgl.dataloading.NeighborSampler([2]),
                                                          exclude="reverse_id"), [0], ValueError, "reverse_eids"),
    (lambda r: dgl.dataloading.as_edge_prediction_sampler(dgl.dataloading.NeighborSampler([2]),
                                                          exclude="both"), [0], ValueError, "'both'"),
    (lambda r: dgl.dataloading.as_edge_prediction_sampler(
        dgl.dataloading.NeighborSampler([2]), negative_sampler=dgl.dataloading.negative_sampler.Uniform(0)),
     [0], ValueError, "k must be an int >= 1"),
])
def test_bad_edge_input_fails_before_anything_starts(spawned_children, symmetric, make, indices, error, match):
    _, _, store, store_rev = symmetric
    with pytest.raises(error, match=match):
        bgl.DataLoader(store, np.array(indices), make(store_rev), batch_size=4, pipeline="processes")
    assert not spawned_children()


def test_bgl_wrapper_checks_its_arguments_at_once():
    with pytest.raises(ValueError, match="reverse_eids"):
        bgl.as_edge_prediction_sampler(bgl.NeighborSampler([2]), exclude="reverse_id")
    with pytest.raises(ValueError, match="'bogus'"):
        bgl.as_edge_prediction_sampler(bgl.NeighborSampler([2]), exclude="bogus")
    with pytest.raises(ValueError, match="k must be"):
        ns.Uniform(0)


def test_negatives_of_a_one_node_graph_are_refused(tmp_path, spawned_children):
    store = write_store(tmp_path / "one", np.array([0, 1], np.int64), np.array([0], np.int64), name="one")
    sampler = bgl.as_edge_prediction_sampler(bgl.NeighborSampler([1]), negative_sampler=ns.Uniform(1))
    with pytest.raises(ValueError, match="at least 2 nodes, got 1"):
        bgl.DataLoader(store, [0], sampler, pipeline="processes")
    assert not spawned_children()


def test_reverse_edge_ids_of_a_store(symmetric):
    _, _, store, _ = symmetric
    rev = torch.from_numpy(bgl.reverse_edge_ids(store))
    eids = torch.arange(store.num_edges)
    src, dst = endpoints(store, eids)
    rsrc, rdst = endpoints(store, rev)
    assert torch.equal(rsrc, dst) and torch.equal(rdst, src)  # (a duplicated edge may pick either copy)
    one_way = write_store(store.path.parent / "one-way", np.array([0, 0, 1, 2], np.int64),
                          np.array([0, 1], np.int64), name="one-way")  # 0->1, 1->2: no reverses
    assert bgl.reverse_edge_ids(one_way).tolist() == [0, 1]


EDGE_DDP_WORKER = '''
import numpy as np
import torch.distributed as dist


def run(rank, world, init_file, store_path, out_q):
    import bgl
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        sampler = bgl.as_edge_prediction_sampler(bgl.NeighborSampler([2]), exclude="self",
                                                 negative_sampler=bgl.negative_sampler.Uniform(1))
        loader = bgl.DataLoader(store_path, np.arange(100, 141), sampler, batch_size=8, shuffle=True,
                                use_ddp=True, ddp_seed=3)
        out_q.put((rank, len(loader), [pair.edata["_ID"].tolist() for _, pair, _, _ in loader]))
    finally:
        dist.destroy_process_group()
'''


def test_ddp_splits_seed_edges_across_ranks_like_dgl(symmetric, tmp_path):
    """41 seed edges over 2 ranks: contiguous chunks of 21 (rank 1 padded with one repeat), as DGL cuts nodes."""
    import multiprocessing as mp
    import sys

    _, _, store, _ = symmetric
    (tmp_path / "bgl_edge_ddp_worker.py").write_text(EDGE_DDP_WORKER)
    sys.path.insert(0, str(tmp_path))
    try:
        import bgl_edge_ddp_worker

        ctx = mp.get_context("spawn")
        out_q = ctx.Queue()
        procs = [ctx.Process(target=bgl_edge_ddp_worker.run,
                             args=(r, 2, str(tmp_path / "ddp_init"), str(store.path), out_q)) for r in range(2)]
        for p in procs:
            p.start()
        results = {rank: (length, batches) for rank, length, batches in (out_q.get(timeout=180) for _ in procs)}
        for p in procs:
            p.join(timeout=30)
            assert p.exitcode == 0
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("bgl_edge_ddp_worker", None)
    chunks = {0: set(range(100, 121)), 1: set(range(121, 141))}
    for rank in (0, 1):
        length, batches = results[rank]
        seen = [e for b in batches for e in b]
        assert length == len(batches) == 3 and len(seen) == 21
        assert set(seen) == chunks[rank]
