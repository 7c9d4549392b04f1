"""A user's own sampler through ``bgl.dgl.dataloading.DataLoader`` (both lanes, no DGL): its seeds cut as DGL cuts
them (shuffle per epoch from torch's seed, ``drop_last``, typed seeds split per type), ``BlockSampler``'s prefetch,
and ``sample_neighbors`` / ``to_block`` giving blocks whose edges are the graph's."""
from __future__ import annotations

import pytest
import torch

import bgl.dgl as dgl


def _graph(hub_edges):
    src, dst = hub_edges(40, 160, seed=4)
    g = dgl.graph((src, dst), num_nodes=40)
    g.ndata["x"] = torch.randn(40, 3, generator=torch.Generator().manual_seed(1))
    g.ndata["label"] = torch.arange(40) % 3
    g.edata["w"] = torch.rand(160, generator=torch.Generator().manual_seed(2))
    return g


class LayerSampler(dgl.dataloading.BlockSampler):
    """DGL's documented pattern: a frontier per layer, its block, the frontier's edge ids copied back."""

    def __init__(self, fanouts, **prefetch):
        super().__init__(**prefetch)
        self.fanouts = fanouts

    def sample_blocks(self, g, seed_nodes, exclude_eids=None):
        output_nodes, blocks = seed_nodes, []
        for fanout in reversed(self.fanouts):
            frontier = dgl.sampling.sample_neighbors(g, seed_nodes, fanout, copy_ndata=False, copy_edata=True,
                                                     exclude_edges=exclude_eids)
            block = dgl.to_block(frontier, seed_nodes)
            block.edata[dgl.EID] = frontier.edata[dgl.EID]
            seed_nodes = block.srcdata[dgl.NID]
            blocks.insert(0, block)
        return seed_nodes, output_nodes, blocks


def _check_blocks(g, input_nodes, output_nodes, blocks):
    assert torch.equal(blocks[-1].dstdata[dgl.NID], output_nodes)
    assert torch.equal(blocks[0].srcdata[dgl.NID], input_nodes)
    for lower, upper in zip(blocks[:-1], blocks[1:]):
        assert torch.equal(lower.dstdata[dgl.NID], upper.srcdata[dgl.NID])
    for block in blocks:
        n_dst = block.num_dst_nodes()
        assert torch.equal(block.srcdata[dgl.NID][:n_dst], block.dstdata[dgl.NID])  # dst nodes lead the src nodes
        s, d = block.edges()
        gs, gd = g.find_edges(block.edata[dgl.EID])
        assert torch.equal(block.srcdata[dgl.NID][s.long()], gs) and torch.equal(block.dstdata[dgl.NID][d.long()], gd)


def test_own_block_sampler_batches_are_valid_and_prefetched(hub_edges):
    g = _graph(hub_edges)
    sampler = LayerSampler([4, 3], prefetch_node_feats=["x"], prefetch_labels=["label"], prefetch_edge_feats=["w"])
    loader = dgl.dataloading.DataLoader(g, torch.arange(0, 40, 2), sampler, batch_size=6, shuffle=True)
    assert len(loader) == 4
    seen = []
    for input_nodes, output_nodes, blocks in loader:
        _check_blocks(g, input_nodes, output_nodes, blocks)
        assert torch.equal(blocks[0].srcdata["x"], g.ndata["x"][input_nodes])
        assert torch.equal(blocks[-1].dstdata["label"], g.ndata["label"][output_nodes])
        for block in blocks:
            assert torch.equal(block.edata["w"], g.edata["w"][block.edata[dgl.EID]])
        seen.append(output_nodes)
    assert sorted(torch.cat(seen).tolist()) == list(range(0, 40, 2))


def test_epochs_shuffle_from_torchs_seed_and_drop_last(hub_edges):
    g = _graph(hub_edges)

    def epochs(seed):
        torch.manual_seed(seed)
        loader = dgl.dataloading.DataLoader(g, torch.arange(30), LayerSampler([2]), batch_size=7, shuffle=True,
                                            drop_last=True)
        return [[o.tolist() for _, o, _ in loader] for _ in range(2)]

    first = epochs(3)
    assert first == epochs(3) and first != epochs(4)
    assert first[0] != first[1] and all(len(b) == 7 for e in first for b in e) and len(first[0]) == 4
    loader = dgl.dataloading.DataLoader(g, torch.arange(30), LayerSampler([2]), batch_size=7, shuffle=True)
    loader.set_epoch(5)
    a = [o.tolist() for _, o, _ in loader]
    loader.set_epoch(5)
    assert a == [o.tolist() for _, o, _ in loader] and len(a) == 5


def test_typed_seeds_are_cut_as_dgl_cuts_them(user_item):
    g = user_item(dgl, seed=3, users=10, items=8, edges=50)

    class Seeds(dgl.dataloading.Sampler):
        def sample(self, g, indices):
            return indices

    batches = list(dgl.dataloading.DataLoader(g, {"item": torch.tensor([5, 6, 7]), "user": torch.tensor([0, 1])},
                                              Seeds(), batch_size=2))
    keys = [sorted(b) for b in batches]
    assert keys == [["item"], ["item", "user"], ["user"]]
    assert torch.equal(batches[1]["item"], torch.tensor([7])) and torch.equal(batches[1]["user"], torch.tensor([0]))


def test_typed_frontiers_become_typed_blocks(user_item):
    g = user_item(dgl, seed=3, users=10, items=8, edges=50)
    seeds = {"item": torch.tensor([1, 4]), "user": torch.tensor([2])}
    frontier = dgl.sampling.sample_neighbors(g, seeds, {"rates": 2, "rated-by": -1})
    block = dgl.to_block(frontier, seeds)
    for c in g.canonical_etypes:
        s, d = block.edges(etype=c)
        eids = block.edges[c].data[dgl.EID]  # positions in the frontier
        fs, fd = frontier.edges(etype=c)
        assert torch.equal(block.srcnodes[c[0]].data[dgl.NID][s.long()], fs[eids.long()])
        assert torch.equal(block.dstnodes[c[2]].data[dgl.NID][d.long()], fd[eids.long()])
    assert torch.equal(block.dstnodes["item"].data[dgl.NID], seeds["item"])


def test_what_the_own_sampler_path_refuses(hub_edges):
    g = _graph(hub_edges)
    with pytest.raises(ValueError, match="pipeline.*own sampler"):
        dgl.dataloading.DataLoader(g, torch.arange(5), LayerSampler([2]), pipeline="thread")
    with pytest.raises(dgl.DGLError, match="1-D integer"):
        dgl.dataloading.DataLoader(g, torch.rand(5), LayerSampler([2]))
    loader = dgl.dataloading.DataLoader(g, torch.arange(5), LayerSampler([2]), num_workers=0, batch_size=5)
    assert len(list(loader)) == 1  # DGL's worker arguments are taken and need nothing


def test_method_alias_and_a_repeated_destination(hub_edges):
    g = _graph(hub_edges)
    torch.manual_seed(1)
    a = g.sample_neighbors(torch.tensor([0, 5]), 2)
    torch.manual_seed(1)
    assert torch.equal(a.edata[dgl.EID], dgl.sampling.sample_neighbors(g, torch.tensor([0, 5]), 2).edata[dgl.EID])
    with pytest.raises(dgl.DGLError, match="dst_nodes must not repeat a node"):
        dgl.to_block(a, torch.tensor([0, 5, 0]))


def test_typed_link_prediction_over_an_own_sampler(user_item):
    g = user_item(dgl, seed=5, users=15, items=10, edges=70)
    sampler = dgl.dataloading.as_edge_prediction_sampler(
        LayerSampler([-1, -1]), exclude="reverse_types", reverse_etypes={"rates": "rated-by", "rated-by": "rates"},
        negative_sampler=dgl.dataloading.negative_sampler.Uniform(2))
    loader = dgl.dataloading.DataLoader(g, {"rates": torch.arange(0, 70, 2)}, sampler, batch_size=8, shuffle=True)
    assert len(loader) == 5
    for input_nodes, pair, neg, blocks in loader:
        c = ("user", "rates", "item")
        eids = pair.edges[c].data[dgl.EID]
        ps, pd = pair.edges(etype=c)
        gs, gd = g.find_edges(eids, etype=c)
        assert torch.equal(pair.nodes["user"].data[dgl.NID][ps.long()], gs)
        assert torch.equal(pair.nodes["item"].data[dgl.NID][pd.long()], gd)
        ns, nd = neg.edges(etype=c)
        assert neg.num_edges(c) == 2 * pair.num_edges(c) and torch.equal(ns, ps.repeat_interleave(2))
        for nt in g.ntypes:
            assert torch.equal(blocks[-1].dstnodes[nt].data[dgl.NID], pair.nodes[nt].data[dgl.NID])
        for block in blocks:  # the seed edges (and their reverses: the same ids of rated-by) never in a block
            for rel in ("rates", "rated-by"):
                assert not set(block.edges[rel].data[dgl.EID].tolist()) & set(eids.tolist())
    with pytest.raises(TypeError, match="exclude"):
        class NoExclude(dgl.dataloading.Sampler):
            def sample(self, g, indices):
                return indices

        dgl.dataloading.DataLoader(g, {"rates": torch.arange(4)}, dgl.dataloading.as_edge_prediction_sampler(
            NoExclude()))


def test_negative_samplers_call_form_on_a_typed_graph(user_item):
    g = user_item(dgl, seed=6, users=9, items=4, edges=30)
    torch.manual_seed(0)
    pairs = dgl.dataloading.negative_sampler.Uniform(3)(g, {"rates": torch.tensor([0, 5])})
    s, d = pairs[("user", "rates", "item")]
    assert torch.equal(s, g.find_edges(torch.tensor([0, 5]), etype="rates")[0].repeat_interleave(3))
    assert d.shape == (6,) and int(d.max()) < 4  # destinations among the items
    with pytest.raises(ValueError, match="GlobalUniform called on a typed graph"):
        dgl.dataloading.negative_sampler.GlobalUniform(1)(g, {"rates": torch.tensor([0])})


def test_shadow_khop_batches_train_a_layer_and_missing_samplers_are_named(hub_edges):
    g = _graph(hub_edges)
    loader = dgl.dataloading.DataLoader(g, torch.arange(12), dgl.dataloading.ShaDowKHopSampler([4, 3]), batch_size=4)
    conv = dgl.nn.GraphConv(3, 2, allow_zero_in_degree=True)
    for input_nodes, output_nodes, subg in loader:
        h = conv(subg, subg.ndata["x"])[: output_nodes.shape[0]]  # the seeds lead the subgraph's nodes
        assert h.shape == (4, 2) and torch.equal(subg.ndata[dgl.NID][:4], output_nodes)
        h.sum().backward()
    assert conv.weight.grad is not None
    with pytest.raises(NotImplementedError, match="dgl.dataloading.SpotTarget"):
        dgl.dataloading.SpotTarget
    assert not hasattr(dgl.dataloading, "DistDataLoader")


def test_random_walks_repeat_with_torchs_seed_and_pinsage_builds_a_neighbour_graph(user_item):
    g = user_item(dgl, seed=8, users=12, items=7, edges=60)
    path = ["rated-by", "rates"]

    def walks(seed):
        torch.manual_seed(seed)
        return dgl.sampling.random_walk(g, torch.arange(7), metapath=path * 2, restart_prob=0.2, return_eids=True)

    first = walks(1)
    assert all(torch.equal(x, y) for x, y in zip(first, walks(1)))
    assert not torch.equal(first[0], walks(2)[0])
    traces, eids, types = first
    assert traces.shape == (7, 5) and types.tolist() == [0, 1, 0, 1, 0]  # item, user, ... (ntypes sorted)
    for i, etype in enumerate(path * 2):
        moved = traces[:, i + 1] != -1
        s, d = g.find_edges(eids[moved, i], etype=etype)
        assert torch.equal(s, traces[moved, i]) and torch.equal(d, traces[moved, i + 1])
    neighbours = dgl.sampling.PinSAGESampler(g, "item", "user", 2, 0.5, 10, 3)(torch.tensor([0, 4]))
    s, d = neighbours.edges()
    assert neighbours.ntypes == ["item"] and neighbours.num_nodes() == 7
    assert set(d.tolist()) <= {0, 4} and all(int((d == v).sum()) <= 3 for v in (0, 4))
    assert bool((neighbours.edata["weights"] > 0).all())


class ThreadNoting(LayerSampler):
    """LayerSampler noting which thread sampled each batch (a list append: safe across threads)."""

    def __init__(self, fanouts, **prefetch):
        super().__init__(fanouts, **prefetch)
        self.threads = []

    def sample_blocks(self, g, seed_nodes, exclude_eids=None):
        import threading

        self.threads.append(threading.current_thread().name)
        return super().sample_blocks(g, seed_nodes, exclude_eids)


def test_num_workers_samples_in_a_producer_thread_the_same_batches_every_run(hub_edges):
    """``num_workers > 0``: the user's sampler runs in one producer thread ahead of the trainer (the first batch in
    the trainer's), its draws from a generator of its own: the same batches every run whatever the trainer draws
    meanwhile, valid blocks, and the trainer's RNG stream as without the loader's draws."""
    import threading

    g = _graph(hub_edges)

    def run(trainer_draws: bool):
        torch.manual_seed(11)
        sampler = ThreadNoting([4, 3], prefetch_node_feats=["x"])
        loader = dgl.dataloading.DataLoader(g, torch.arange(40), sampler, batch_size=6, shuffle=True, num_workers=2)
        epochs, trainer = [], []
        for _ in range(2):
            batches = []
            for input_nodes, output_nodes, blocks in loader:
                _check_blocks(g, input_nodes, output_nodes, blocks)
                assert torch.equal(blocks[0].srcdata["x"], g.ndata["x"][input_nodes])
                batches.append([b.edata[dgl.EID].tolist() for b in blocks])
                if trainer_draws:
                    trainer.append(torch.rand(3).tolist())  # the model's dropout, say
            epochs.append(batches)
        return epochs, trainer, sampler.threads

    first, trainer, threads = run(True)
    again, _, _ = run(False)
    assert first == again and first[0] != first[1] and len(first[0]) == 7
    assert threads[0] == threading.current_thread().name and set(threads[1:7]) == {"bgl-own-sampler"}
    torch.manual_seed(11)
    loader = dgl.dataloading.DataLoader(g, torch.arange(40), LayerSampler([4, 3]), batch_size=6, shuffle=True,
                                        num_workers=2)  # built, as in run(): the trainer's stream starts here
    assert trainer[:3] == [torch.rand(3).tolist() for _ in range(3)]
    assert not [t for t in threading.enumerate() if t.name == "bgl-own-sampler" and t.is_alive()]


def test_a_producer_threads_error_reaches_the_trainer_and_a_break_stops_it(hub_edges):
    import threading

    g = _graph(hub_edges)

    class Failing(LayerSampler):
        def sample_blocks(self, g, seed_nodes, exclude_eids=None):
            if int(seed_nodes[0]) == 24:
                raise RuntimeError("bad seed 24")
            return super().sample_blocks(g, seed_nodes, exclude_eids)

    loader = dgl.dataloading.DataLoader(g, torch.arange(40), Failing([2]), batch_size=6, num_workers=1)
    with pytest.raises(RuntimeError, match="bad seed 24"):
        list(loader)
    loader = dgl.dataloading.DataLoader(g, torch.arange(40), LayerSampler([2]), batch_size=6, num_workers=1)
    for _ in loader:
        break
    loader = None
    import gc

    gc.collect()
    assert not [t for t in threading.enumerate() if t.name == "bgl-own-sampler" and t.is_alive()]
