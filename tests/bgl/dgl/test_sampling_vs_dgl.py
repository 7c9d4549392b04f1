"""``dgl.sampling.sample_neighbors``, ``dgl.to_block`` and a user's own ``BlockSampler`` in ``bgl.dgl`` against
real DGL 2.1 on the same graphs: what is deterministic must be equal (``to_block`` whole, full-neighbour frontiers,
counts per seed, fields, errors); a random draw must be a valid draw of the same size (its edges real, never an
excluded or zero-weight one, no repeats without replacement).  Two differences, both DGL's quirks: a full
neighbourhood (fanout -1) lists each seed's edges in DGL's internal CSC order, bgl.dgl's in edge-id order (the
same edges); and DGL drops excluded edges after drawing (``fanout`` 4 of a row with half its edges excluded
keeps ~2), where bgl.dgl draws ``fanout`` among the remaining ones, as bgl's loader does."""
from __future__ import annotations

import pytest
import torch

dgl = pytest.importorskip("dgl", reason="needs DGL (pinned lane) to compare against")

import bgl.dgl as bdgl  # noqa: E402


def _homo(lib, hub_edges):
    src, dst = hub_edges(40, 160, seed=3)
    g = lib.graph((src, dst), num_nodes=40)
    gen = torch.Generator().manual_seed(5)
    g.ndata["x"] = torch.randn(40, 3, generator=gen)
    g.edata["w"] = torch.rand(160, generator=gen)
    g.edata["w"][::3] = 0.0
    g.edata["keep"] = torch.rand(160, generator=gen) > 0.3
    return g


def _in_counts(g, seeds, etype=None, edge_dir="in"):
    """Edges of each seed in a frontier (per relation), in the seeds' order."""
    s, d = g.edges(etype=etype)
    end = d if edge_dir == "in" else s
    return [int((end == v).sum()) for v in seeds.tolist()]


def _degree_of(g, seeds, etype=None, edge_dir="in", mask=None):
    s, d = g.edges(etype=etype)
    end = d if edge_dir == "in" else s
    keep = torch.ones_like(end, dtype=torch.bool) if mask is None else mask
    return [int(((end == v) & keep).sum()) for v in seeds.tolist()]


def _check_draw(frontier, g, seeds, fanout, replace, edge_dir="in", etype=None, allowed=None):
    """Every sampled edge real, at its seed, allowed; the count per seed what the draw takes."""
    eids = frontier.edges[etype].data[dgl.EID].long() if etype else frontier.edata[dgl.EID].long()
    fs, fd = frontier.edges(etype=etype)
    gs, gd = g.find_edges(eids, etype=etype)
    assert torch.equal(fs.long(), gs.long()) and torch.equal(fd.long(), gd.long())
    if allowed is not None:
        assert bool(allowed[eids].all())
    counts = _in_counts(frontier, seeds, etype, edge_dir)  # a node's edges: its draw once per time it is a seed
    degs = _degree_of(g, seeds, etype, edge_dir, allowed)
    times = [seeds.tolist().count(v) for v in seeds.tolist()]
    want = [k * (d if fanout < 0 else (fanout if d and replace else min(d, fanout))) for k, d in zip(times, degs)]
    assert counts == want
    if not replace and max(times, default=1) == 1:
        assert eids.unique().shape[0] == eids.shape[0]


@pytest.mark.parametrize("fanout,replace", [(2, False), (5, True), (-1, False), (0, False)])
@pytest.mark.parametrize("edge_dir", ["in", "out"])
def test_sample_neighbors_draws_as_dgl_does(hub_edges, fanout, replace, edge_dir):
    ours, theirs = _homo(bdgl, hub_edges), _homo(dgl, hub_edges)
    seeds = torch.tensor([0, 1, 2, 5, 7, 0, 33])
    a = bdgl.sampling.sample_neighbors(ours, seeds, fanout, edge_dir=edge_dir, replace=replace)
    b = dgl.sampling.sample_neighbors(theirs, seeds, fanout, edge_dir=edge_dir, replace=replace)
    assert a.num_nodes() == b.num_nodes() and a.idtype == b.idtype
    assert _in_counts(a, seeds, edge_dir=edge_dir) == _in_counts(b, seeds, edge_dir=edge_dir)
    _check_draw(a, ours, seeds, fanout, replace, edge_dir)
    assert sorted(a.edata.keys()) == sorted(b.edata.keys()) and sorted(a.ndata.keys()) == sorted(b.ndata.keys())
    eids = a.edata[dgl.EID].long()
    assert torch.equal(a.edata["w"], ours.edata["w"][eids]) and a.ndata["x"] is ours.ndata["x"]
    if fanout < 0:  # every edge of each seed: the same edges (in edge-id order where DGL's are in its CSC's)
        assert torch.equal(a.edata[dgl.EID].sort().values, b.edata[dgl.EID].sort().values)


@pytest.mark.parametrize("field", ["w", "keep"])
def test_weighted_and_masked_draws_never_take_a_zero(hub_edges, field):
    ours, theirs = _homo(bdgl, hub_edges), _homo(dgl, hub_edges)
    seeds = torch.arange(20)
    allowed = ours.edata[field] > 0
    for _ in range(5):
        a = bdgl.sampling.sample_neighbors(ours, seeds, 3, prob=field)
        b = dgl.sampling.sample_neighbors(theirs, seeds, 3, prob=field)
        _check_draw(a, ours, seeds, 3, False, allowed=allowed)
        assert _in_counts(a, seeds) == _in_counts(b, seeds)


def test_excluded_edges_are_never_drawn(hub_edges):
    ours, theirs = _homo(bdgl, hub_edges), _homo(dgl, hub_edges)
    seeds = torch.tensor([0, 4, 6])
    s, d = ours.edges()
    excluded = torch.nonzero(d == 0).view(-1)[::2]
    allowed = torch.ones(160, dtype=torch.bool)
    allowed[excluded] = False
    a = bdgl.sampling.sample_neighbors(ours, seeds, 4, exclude_edges=excluded)
    b = dgl.sampling.sample_neighbors(theirs, seeds, 4, exclude_edges=excluded)
    _check_draw(a, ours, seeds, 4, False, allowed=allowed)  # fanout among the remaining edges
    assert all(x >= y for x, y in zip(_in_counts(a, seeds), _in_counts(b, seeds)))  # DGL's drop after drawing


def test_a_draw_is_uniform_and_repeats_with_the_seed(hub_edges):
    g = _homo(bdgl, hub_edges)
    s, d = g.edges()
    hub_edges_ids = torch.nonzero(d == 0).view(-1)
    hits = torch.zeros(160)
    for _ in range(3000):
        hits[bdgl.sampling.sample_neighbors(g, torch.tensor([0]), 1).edata[dgl.EID].long()] += 1
    share = hits[hub_edges_ids] / 3000
    assert float((share - 1 / hub_edges_ids.shape[0]).abs().max()) < 0.025
    bdgl.seed(7)
    first = bdgl.sampling.sample_neighbors(g, torch.arange(30), 2).edata[dgl.EID]
    bdgl.seed(7)
    assert torch.equal(first, bdgl.sampling.sample_neighbors(g, torch.arange(30), 2).edata[dgl.EID])


def _typed(lib, user_item):
    g = user_item(lib, seed=2, users=12, items=9, edges=60)
    g.nodes["item"].data["y"] = torch.arange(9.0)
    return g


@pytest.mark.parametrize("fanout", [2, {"rates": 3, "rated-by": 1}, -1])
def test_typed_sample_neighbors_and_to_block_match_dgl(user_item, fanout):
    ours, theirs = _typed(bdgl, user_item), _typed(dgl, user_item)
    seeds = {"item": torch.tensor([0, 3, 8]), "user": torch.tensor([1, 2])}
    a = bdgl.sampling.sample_neighbors(ours, seeds, fanout)
    b = dgl.sampling.sample_neighbors(theirs, seeds, fanout)
    for c in theirs.canonical_etypes:
        assert _in_counts(a, seeds[c[2]], c) == _in_counts(b, seeds[c[2]], c)
        f = fanout[c[1]] if isinstance(fanout, dict) else fanout
        _check_draw(a, ours, seeds[c[2]], f, False, etype=c)
    if fanout == -1:  # the same edges and fields (DGL lists a node's edges in its CSC's order)
        a_ids = {c: a.edges[c].data[dgl.EID].sort() for c in a.canonical_etypes}
        for c in theirs.canonical_etypes:
            theirs_ids, ours_ids = b.edges[c].data[dgl.EID].sort().values, a_ids[c].values
            assert torch.equal(ours_ids, theirs_ids)
    _same_block(bdgl.to_block(a, seeds), dgl.to_block(b, seeds), exact=False)


def _same_block(ours, theirs, exact: bool):
    assert sorted(ours.canonical_etypes) == sorted(theirs.canonical_etypes)
    for nt in theirs.ntypes:
        assert ours.num_dst_nodes(nt) == theirs.num_dst_nodes(nt)
        assert torch.equal(ours.dstnodes[nt].data[dgl.NID], theirs.dstnodes[nt].data[dgl.NID])
        if exact:
            assert torch.equal(ours.srcnodes[nt].data[dgl.NID], theirs.srcnodes[nt].data[dgl.NID])
        for key in theirs.srcnodes[nt].data.keys():
            rows = ours.srcnodes[nt].data[dgl.NID].long()
            parent = ours.srcnodes[nt].data[key]
            assert parent.shape[0] == rows.shape[0]
    for c in theirs.canonical_etypes:
        assert ours.num_edges(c) == theirs.num_edges(c)
        assert torch.equal(ours.edges[c].data[dgl.EID], theirs.edges[c].data[dgl.EID])
        if exact:
            assert all(torch.equal(x, y) for x, y in zip(ours.edges(etype=c), theirs.edges(etype=c)))
            for key in theirs.edges[c].data.keys():
                assert torch.equal(ours.edges[c].data[key], theirs.edges[c].data[key])


@pytest.mark.parametrize("kwargs", [{}, {"dst_nodes": "seeds"}, {"dst_nodes": "seeds", "include_dst_in_src": False}])
def test_to_block_matches_dgl(hub_edges, kwargs):
    ours, theirs = _homo(bdgl, hub_edges), _homo(dgl, hub_edges)
    keep = torch.arange(0, 160, 2)  # the same frontier in both: every other edge
    fa, fb = bdgl.edge_subgraph(ours, keep, relabel_nodes=False), dgl.edge_subgraph(theirs, keep, relabel_nodes=False)
    args = dict(kwargs)
    if args.get("dst_nodes") == "seeds":
        _, d = fb.edges()
        args["dst_nodes"] = torch.unique(d).flip(0)  # not sorted: the given order is kept
    a, b = bdgl.to_block(fa, **args), dgl.to_block(fb, **args)
    assert a.is_block and (a.num_src_nodes(), a.num_dst_nodes(), a.num_edges()) == \
        (b.num_src_nodes(), b.num_dst_nodes(), b.num_edges())
    assert torch.equal(a.srcdata[dgl.NID], b.srcdata[dgl.NID]) and torch.equal(a.dstdata[dgl.NID], b.dstdata[dgl.NID])
    assert all(torch.equal(x, y) for x, y in zip(a.edges(), b.edges()))
    for key in b.srcdata.keys():
        assert torch.equal(a.srcdata[key], b.srcdata[key])
    for key in b.edata.keys():
        assert torch.equal(a.edata[key], b.edata[key])


def test_bad_input_is_refused_in_one_line(hub_edges, user_item):
    g, typed = _homo(bdgl, hub_edges), _typed(bdgl, user_item)
    for call in (lambda: bdgl.sampling.sample_neighbors(typed, torch.tensor([0]), 2),
                 lambda: bdgl.sampling.sample_neighbors(typed, {"item": torch.tensor([0])}, {"rates": 2}),
                 lambda: bdgl.sampling.sample_neighbors(g, torch.tensor([40]), 2),
                 lambda: bdgl.to_block(g, torch.tensor([0, 1])),
                 lambda: bdgl.to_block(typed, torch.tensor([0]))):
        with pytest.raises(bdgl.DGLError) as err:
            call()
        assert "\n" not in str(err.value)
    # DGL refuses the first two too
    theirs = _typed(dgl, user_item)
    for call in (lambda: dgl.sampling.sample_neighbors(theirs, torch.tensor([0]), 2),
                 lambda: dgl.sampling.sample_neighbors(theirs, {"item": torch.tensor([0])}, {"rates": 2})):
        with pytest.raises(dgl.DGLError):
            call()


class _LayerSampler:
    """The custom sampler DGL's docs write (a frontier per layer, then ``to_block``), for either library."""

    @staticmethod
    def make(lib, fanouts):
        class LayerSampler(lib.dataloading.BlockSampler):
            def __init__(self):
                super().__init__(prefetch_node_feats=["x"])

            def sample_blocks(self, g, seed_nodes, exclude_eids=None):
                output_nodes, blocks = seed_nodes, []
                for fanout in reversed(fanouts):
                    frontier = lib.sampling.sample_neighbors(g, seed_nodes, fanout, exclude_edges=exclude_eids)
                    block = lib.to_block(frontier, seed_nodes)
                    block.edata[lib.EID] = frontier.edata[lib.EID]
                    seed_nodes = block.srcdata[lib.NID]
                    blocks.insert(0, block)
                return seed_nodes, output_nodes, blocks

        return LayerSampler()


def test_own_block_sampler_in_the_dataloader_batches_as_dgls(hub_edges):
    ours, theirs = _homo(bdgl, hub_edges), _homo(dgl, hub_edges)
    seeds = torch.arange(0, 40, 3)
    make = dict(batch_size=4, shuffle=False)
    a = list(bdgl.dataloading.DataLoader(ours, seeds, _LayerSampler.make(bdgl, [-1, -1]), **make))
    b = list(dgl.dataloading.DataLoader(theirs, seeds, _LayerSampler.make(dgl, [-1, -1]), **make))
    assert len(a) == len(b) == 4
    for (ia, oa, ba), (ib, ob, bb) in zip(a, b):  # full neighbourhoods: the same nodes and edges of each block
        assert torch.equal(oa, ob) and torch.equal(ia.sort().values, ib.sort().values)
        for x, y in zip(ba, bb):
            assert torch.equal(x.dstdata[dgl.NID].sort().values, y.dstdata[dgl.NID].sort().values)
            assert torch.equal(x.edata[dgl.EID].sort().values, y.edata[dgl.EID].sort().values)
            s, d = x.edges()
            assert torch.equal(x.srcdata[dgl.NID][s.long()], ours.find_edges(x.edata[dgl.EID])[0])
            assert torch.equal(x.dstdata[dgl.NID][d.long()], ours.find_edges(x.edata[dgl.EID])[1])
        assert torch.equal(ba[0].srcdata["x"], ours.ndata["x"][ia])
    shuffled = bdgl.dataloading.DataLoader(ours, seeds, _LayerSampler.make(bdgl, [3, 2]), batch_size=4, shuffle=True,
                                           drop_last=True)
    outs = [o for _, o, _ in shuffled]
    assert len(outs) == len(shuffled) == 3 and all(o.shape[0] == 4 for o in outs)
    assert set(torch.cat(outs).tolist()) < set(seeds.tolist())


@pytest.mark.parametrize("preserve", [None, torch.tensor([39, 4])])
def test_compact_graphs_matches_dgl(hub_edges, user_item, preserve):
    ours, theirs = _homo(bdgl, hub_edges), _homo(dgl, hub_edges)
    picks = (torch.tensor([7, 3, 150]), torch.tensor([0, 99, 3, 12]))
    a = bdgl.compact_graphs([bdgl.edge_subgraph(ours, p, relabel_nodes=False) for p in picks], always_preserve=preserve)
    b = dgl.compact_graphs([dgl.edge_subgraph(theirs, p, relabel_nodes=False) for p in picks], always_preserve=preserve)
    for x, y in zip(a, b):
        assert x.num_nodes() == y.num_nodes() and torch.equal(x.ndata[dgl.NID], y.ndata[dgl.NID])
        assert all(torch.equal(p, q) for p, q in zip(x.edges(), y.edges()))
        assert torch.equal(x.ndata["x"], y.ndata["x"]) and torch.equal(x.edata["w"], y.edata["w"])
    ta, tb = _typed(bdgl, user_item), _typed(dgl, user_item)
    sa = bdgl.compact_graphs(bdgl.edge_subgraph(ta, {"rates": torch.tensor([4, 9]), "rated-by": torch.tensor([1])},
                                                relabel_nodes=False))
    sb = dgl.compact_graphs(dgl.edge_subgraph(tb, {"rates": torch.tensor([4, 9]), "rated-by": torch.tensor([1])},
                                              relabel_nodes=False))
    for nt in tb.ntypes:
        assert torch.equal(sa.nodes[nt].data[dgl.NID], sb.nodes[nt].data[dgl.NID])
    for c in tb.canonical_etypes:
        assert all(torch.equal(p, q) for p, q in zip(sa.edges(etype=c), sb.edges(etype=c)))


@pytest.mark.parametrize("exclude", [None, "self", "reverse_id"])
def test_link_prediction_over_an_own_sampler_matches_dgls(exclude):
    gen = torch.Generator().manual_seed(11)
    src, dst = torch.randint(0, 30, (80,), generator=gen), torch.randint(0, 30, (80,), generator=gen)
    both = (torch.cat([src, dst]), torch.cat([dst, src]))  # edge i and i + 80 are each other's reverse
    reverse = torch.cat([torch.arange(80, 160), torch.arange(0, 80)])
    graphs = bdgl.graph(both, num_nodes=30), dgl.graph(both, num_nodes=30)
    for g in graphs:
        g.ndata["x"] = torch.arange(30.0)
    batches = []
    for lib, g in zip((bdgl, dgl), graphs):
        sampler = lib.dataloading.as_edge_prediction_sampler(
            _LayerSampler.make(lib, [-1]), exclude=exclude, reverse_eids=reverse,
            negative_sampler=lib.dataloading.negative_sampler.Uniform(2))
        batches.append(list(lib.dataloading.DataLoader(g, torch.arange(0, 80, 3), sampler, batch_size=9)))
    assert len(batches[0]) == len(batches[1]) == 3
    for (ia, pa, na, ba), (ib, pb, nb, bb) in zip(*batches):
        n_pos = int(torch.unique(torch.cat(pb.edges())).shape[0])  # the positive pairs' nodes lead
        assert torch.equal(pa.ndata[dgl.NID][:n_pos], pb.ndata[dgl.NID][:n_pos])
        assert all(torch.equal(x, y) for x, y in zip(pa.edges(), pb.edges()))
        assert torch.equal(pa.edata[dgl.EID], pb.edata[dgl.EID])
        assert torch.equal(na.edges()[0], nb.edges()[0]) and na.num_edges() == nb.num_edges()  # Uniform: k per source
        assert pa.num_nodes() == na.num_nodes() == ba[-1].num_dst_nodes()
        seeds = pa.edata[dgl.EID].long()
        banned = {None: [], "self": seeds, "reverse_id": torch.cat([seeds, reverse[seeds]])}[exclude]
        assert not set(ba[0].edata[dgl.EID].tolist()) & set(torch.as_tensor(banned).tolist())
        kept = set(bb[0].edata[dgl.EID].tolist())  # DGL's exclude the same edges (full neighbourhoods)
        assert not kept & set(torch.as_tensor(banned).tolist())


@pytest.mark.parametrize("fanouts", [[-1, -1], [3, 2]])
def test_shadow_khop_sampler_matches_dgls(hub_edges, fanouts):
    ours, theirs = _homo(bdgl, hub_edges), _homo(dgl, hub_edges)
    seeds = torch.tensor([0, 5, 11])
    excluded = torch.arange(0, 160, 4)
    a = bdgl.dataloading.ShaDowKHopSampler(fanouts).sample(ours, seeds, excluded)
    b = dgl.dataloading.ShaDowKHopSampler(fanouts).sample(theirs, seeds, excluded)
    for (inp, out, sub), g in ((a, ours), (b, theirs)):
        assert torch.equal(out, seeds) and torch.equal(inp[:3], seeds)
        assert torch.equal(sub.ndata[dgl.NID], inp) and torch.equal(sub.ndata["x"], g.ndata["x"][inp])
        eids = sub.edata[dgl.EID]
        assert not set(eids.tolist()) & set(excluded.tolist())
        s, d = sub.edges()
        gs, gd = g.find_edges(eids)
        assert torch.equal(inp[s.long()], gs) and torch.equal(inp[d.long()], gd)
        assert torch.equal(sub.edata["w"], g.edata["w"][eids])
        # every edge among the reached nodes, less the excluded: the induced subgraph
        gs_all, gd_all = g.edges()
        inside = torch.isin(gs_all, inp) & torch.isin(gd_all, inp)
        inside[excluded] = False
        assert sorted(eids.tolist()) == inside.nonzero().view(-1).tolist()
    if fanouts == [-1, -1]:  # full neighbourhoods: the same nodes and edges as DGL's
        assert sorted(a[0].tolist()) == sorted(b[0].tolist())
        assert sorted(a[2].edata[dgl.EID].tolist()) == sorted(b[2].edata[dgl.EID].tolist())


def _walk_graph(lib):
    """A node (0) with 4 out-neighbours weighted 0, 1, 1, 2; a dead end (5); a cycle 1 -> 2 -> 3 -> 4 -> 1."""
    src = torch.tensor([0, 0, 0, 0, 1, 2, 3, 4])
    dst = torch.tensor([1, 2, 3, 4, 2, 3, 4, 1])
    g = lib.graph((src, dst), num_nodes=6)
    g.edata["w"] = torch.tensor([0.0, 1.0, 1.0, 2.0, 1.0, 1.0, 1.0, 1.0])
    return g


def _check_traces(g, traces, eids, metapath):
    for i, c in enumerate(metapath):
        here, there, e = traces[:, i], traces[:, i + 1], eids[:, i]
        moved = there != -1
        assert bool(((there != -1) <= (here != -1)).all())  # an ended walk stays ended
        s, d = g.find_edges(e[moved], etype=c)
        assert torch.equal(s, here[moved]) and torch.equal(d, there[moved])
        assert bool((e[~moved] == -1).all())


@pytest.mark.parametrize("prob", [None, "w"])
def test_random_walks_draw_as_dgls(prob):
    ours, theirs = _walk_graph(bdgl), _walk_graph(dgl)
    seeds = torch.cat([torch.zeros(6000, dtype=torch.long), torch.tensor([5, 1])])
    a = bdgl.sampling.random_walk(ours, seeds, length=3, prob=prob, return_eids=True)
    b = dgl.sampling.random_walk(theirs, seeds, length=3, prob=prob, return_eids=True)
    assert a[0].shape == b[0].shape and a[1].shape == b[1].shape and torch.equal(a[2], b[2])
    _check_traces(ours, a[0], a[1], [ours.canonical_etypes[0]] * 3)
    assert torch.equal(a[0][-2], b[0][-2]) and torch.equal(a[0][-2], torch.tensor([5, -1, -1, -1]))  # a dead end
    first_a = torch.bincount(a[0][:6000, 1], minlength=6).float() / 6000
    first_b = torch.bincount(b[0][:6000, 1], minlength=6).float() / 6000
    assert float((first_a - first_b).abs().max()) < 0.035  # the same step distribution
    if prob == "w":
        assert int(first_a[1]) == 0 and abs(float(first_a[4]) - 0.5) < 0.035  # weight 0 never, 2 of 4 half


@pytest.mark.parametrize("restart", [0.3, torch.tensor([0.0, 0.5, 0.0])])
def test_random_walk_restarts_as_dgls(restart):
    ours, theirs = _walk_graph(bdgl), _walk_graph(dgl)
    seeds = torch.full((8000,), 1, dtype=torch.long)  # on the cycle: only restarts end a walk
    a, _ = bdgl.sampling.random_walk(ours, seeds, length=3, restart_prob=restart)
    b, _ = dgl.sampling.random_walk(theirs, seeds, length=3, restart_prob=restart)
    ended_a = (a[:, 1:] == -1).float().mean(0)
    ended_b = (b[:, 1:] == -1).float().mean(0)
    assert float((ended_a - ended_b).abs().max()) < 0.03


def test_metapath_walks_types_and_refusals(user_item):
    ours, theirs = _typed(bdgl, user_item), _typed(dgl, user_item)
    path = ["rated-by", "rates", "rated-by"]
    a = bdgl.sampling.random_walk(ours, torch.arange(9), metapath=path, return_eids=True)
    b = dgl.sampling.random_walk(theirs, torch.arange(9), metapath=path, return_eids=True)
    assert torch.equal(a[2], b[2]) and a[0].shape == b[0].shape
    _check_traces(ours, a[0], a[1], [ours.to_canonical_etype(e) for e in path])
    for lib, g in ((bdgl, ours), (dgl, theirs)):
        with pytest.raises(lib.DGLError, match="metapath not specified"):
            lib.sampling.random_walk(g, torch.arange(3), length=2)
        with pytest.raises(TypeError, match="restart_prob"):
            lib.sampling.random_walk(g, torch.arange(3), metapath=path, restart_prob=1)
    with pytest.raises(ValueError, match="length"):
        bdgl.sampling.random_walk(_walk_graph(bdgl), torch.arange(3))


def test_pinsage_neighbour_selection_and_pack_traces_equal_dgls():
    gen = torch.Generator().manual_seed(3)
    src = torch.randint(-1, 6, (60,), generator=gen)
    dst = torch.arange(6).repeat_interleave(10)
    ours = bdgl.sampling.random_walks.select_top_neighbours(src.clone(), dst, 10, 3)
    theirs = dgl.sampling.pinsage._select_pinsage_neighbors(src.clone(), dst, 10, 3)
    assert all(torch.equal(x, y) for x, y in zip(ours, theirs))
    traces = torch.tensor([[0, 2, -1, -1], [1, 2, 3, 4], [5, -1, -1, -1]])
    types = torch.tensor([0, 1, 0, 1])
    assert all(torch.equal(x, y) for x, y in zip(bdgl.sampling.pack_traces(traces, types),
                                                 dgl.sampling.pack_traces(traces, types)))


def test_pinsage_sampler_finds_dgls_neighbours():
    """Items 0-3; every user of item 0 also bought item 1, one bought item 2: item 0's top neighbours are
    itself and item 1, by a wide margin, in both libraries."""
    users = torch.tensor([0, 1, 2, 3, 0, 1, 2, 3, 3, 4, 4])
    items = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1, 2, 3, 2])
    graphs = []
    for lib in (bdgl, dgl):
        g = lib.heterograph({("user", "buys", "item"): (users, items), ("item", "bought-by", "user"): (items, users)})
        graphs.append(lib.sampling.PinSAGESampler(g, "item", "user", 2, 0.5, 200, 2)(torch.tensor([0, 3])))
    ours, theirs = graphs
    assert ours.num_nodes() == theirs.num_nodes() == 4
    for seed in (0, 3):
        pick = lambda g: sorted(g.edges()[0][g.edges()[1] == seed].tolist())  # noqa: E731
        assert pick(ours) == pick(theirs)
    s, d = ours.edges()
    counts = ours.edata["weights"]
    assert bool((counts > 0).all()) and all(int((d == v).sum()) <= 2 for v in (0, 3))
