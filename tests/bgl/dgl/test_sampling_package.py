"""``bgl.dgl.sampling`` without DGL (both lanes): the package keeps every import path; node2vec's two-step law is
the formula's; SAINT's subgraphs are induced and within budget; ClusterGCN's batches cover every node once and
its cache is a safe file written atomically; global negatives are never edges; DeepWalk's and MetaPath2Vec's pairs
are those of DGL's loops (written out here)."""
from __future__ import annotations

import os
import pickle

import numpy as np
import pytest
import torch

import bgl.dgl as dgl


def test_every_import_path_of_the_sampling_names_works():
    from bgl.dgl.sampling import PinSAGESampler, RandomWalkNeighborSampler, pack_traces, random_walk  # noqa: F401
    from bgl.dgl.sampling import node2vec_random_walk, sample_neighbors, select_topk  # noqa: F401
    from bgl.dgl.dataloading import ClusterGCNSampler, SAINTSampler  # noqa: F401
    from bgl.dgl.nn import DeepWalk, MetaPath2Vec  # noqa: F401
    from bgl.dgl.nn.pytorch.network_emb import DeepWalk as Alias  # noqa: F401
    assert dgl.sampling.random_walk is random_walk and issubclass(SAINTSampler, dgl.dataloading.Sampler)
    with pytest.raises(NotImplementedError, match="dgl.sampling.sample_neighbors_fused"):
        dgl.sampling.sample_neighbors_fused


SRC = [0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 1, 5, 0, 2, 4]
DST = [1, 2, 3, 0, 2, 0, 4, 0, 4, 2, 5, 3, 4, 5, 5, 0]


def _law(p: float, q: float, w: torch.Tensor) -> torch.Tensor:
    """Exact share of each (first, second) step of node2vec walks from node 0 (6 x 6, flattened)."""
    out = torch.zeros(36)
    edges = list(zip(SRC, DST))
    first = [(e, d) for e, (s, d) in enumerate(edges) if s == 0]
    total = sum(float(w[e]) for e, _ in first)
    for e, v in first:
        nexts = [(f, x) for f, (s, x) in enumerate(edges) if s == v]
        bias = [1 / p if x == 0 else 1.0 if (x, 0) in edges else 1 / q for _, x in nexts]
        weights = [float(w[f]) * b for (f, _), b in zip(nexts, bias)]
        for (f, x), wt in zip(nexts, weights):
            out[v * 6 + x] += float(w[e]) / total * wt / sum(weights)
    return out


@pytest.mark.parametrize("p,q,weighted", [(0.25, 4.0, False), (4.0, 0.25, True)])
def test_node2vec_two_steps_follow_the_formula(p, q, weighted):
    g = dgl.graph((torch.tensor(SRC), torch.tensor(DST)), num_nodes=6)
    w = torch.arange(1, 17, dtype=torch.float32) if weighted else torch.ones(16)
    g.edata["w"] = w
    torch.manual_seed(0)
    traces = dgl.sampling.node2vec_random_walk(g, torch.zeros(8000, dtype=torch.int64), p, q, 2,
                                               prob="w" if weighted else None)
    seen = torch.bincount(traces[:, 1] * 6 + traces[:, 2], minlength=36).float() / 8000
    assert (seen - _law(p, q, w)).abs().max() < 0.025
    torch.manual_seed(0)
    again = dgl.sampling.node2vec_random_walk(g, torch.zeros(8000, dtype=torch.int64), p, q, 2,
                                              prob="w" if weighted else None)
    assert torch.equal(traces, again)


def _graph():
    gen = torch.Generator().manual_seed(0)
    g = dgl.graph((torch.randint(0, 30, (120,), generator=gen), torch.randint(0, 30, (120,), generator=gen)),
                  num_nodes=32)
    g.ndata["x"] = torch.arange(32.0).view(-1, 1)
    return g


@pytest.mark.parametrize("mode,budget", [("node", 10), ("edge", 6), ("walk", (3, 4))])
def test_saint_subgraphs_are_induced_and_within_budget(mode, budget):
    g = _graph()
    edges = set(zip(*[t.tolist() for t in g.edges()]))
    loader = dgl.dataloading.DataLoader(g, torch.arange(20), dgl.dataloading.SAINTSampler(mode, budget))
    assert len(loader) == 20
    for sg in loader:
        nid = sg.ndata[dgl.NID]
        inside = {(a, b) for a, b in edges if a in set(nid.tolist()) and b in set(nid.tolist())}
        s, d = sg.edges()
        assert set(zip(nid[s].tolist(), nid[d].tolist())) == inside and torch.equal(sg.ndata["x"].view(-1), nid.float())
        assert nid.shape[0] <= {"node": 10, "edge": 12, "walk": 15}[mode]
    with pytest.raises(dgl.DGLError, match="Expect mode to be 'node', 'edge' or 'walk'"):
        dgl.dataloading.SAINTSampler("nodes", 3)


def test_cluster_gcn_covers_each_node_once_and_keeps_a_safe_cache(tmp_path):
    g, path = _graph(), str(tmp_path / "cluster_gcn.pkl")
    sampler = dgl.dataloading.ClusterGCNSampler(g, 4, cache_path=path)
    assert os.listdir(tmp_path) == ["cluster_gcn.pkl"]  # no temporary file left
    with np.load(path, allow_pickle=False) as data:  # a plain .npz: no object is unpickled to read it
        assert data["partition_offset"].tolist() == sampler.partition_offset.tolist()
    seen = [sg.ndata[dgl.NID] for sg in dgl.dataloading.DataLoader(g, torch.arange(4), sampler, batch_size=3)]
    assert sorted(torch.cat(seen).tolist()) == list(range(32)) and len(seen) == 2
    again = dgl.dataloading.ClusterGCNSampler(g, 4, cache_path=path)
    assert torch.equal(again.partition_node_ids, sampler.partition_node_ids)
    with pytest.raises(dgl.DGLError, match="Number of partitions in the cache does not match"):
        dgl.dataloading.ClusterGCNSampler(g, 5, cache_path=path)
    with open(path, "wb") as f:
        pickle.dump((torch.tensor([0, 32]), torch.arange(32)), f)
    with pytest.raises(dgl.DGLError, match="is invalid"):
        dgl.dataloading.ClusterGCNSampler(g, 1, cache_path=path)


def test_global_negatives_are_never_edges_and_sorted_by_destination():
    g = _graph()
    edges = set(zip(*[t.tolist() for t in g.edges()]))
    u, v = dgl.sampling.global_uniform_negative_sampling(g, 50)
    pairs = list(zip(u.tolist(), v.tolist()))
    assert len(pairs) == 50 and not set(pairs) & edges and all(a != b for a, b in pairs)
    assert [(b, a) for a, b in pairs] == sorted({(b, a) for a, b in pairs})
    u, v = dgl.sampling.global_uniform_negative_sampling(g, 50, replace=True, exclude_self_loops=False)
    assert len(u) == 50 and not set(zip(u.tolist(), v.tolist())) & edges


def test_deepwalk_and_metapath2vec_pairs_are_dgls_loops():
    walk_length, window = 7, 3
    src, dst = [], []
    for i in range(walk_length):  # DGL's DeepWalk.__init__ loops
        for j in list(range(max(0, i - window), i)) + list(range(i + 1, min(walk_length, i + 1 + window))):
            src.append(j), dst.append(i)
    ring = dgl.graph((torch.arange(8), (torch.arange(8) + 1) % 8))
    model = dgl.nn.DeepWalk(ring, emb_dim=4, walk_length=walk_length, window_size=window)
    assert model.idx_list_src.tolist() == src and model.idx_list_dst.tolist() == dst
    assert model(model.sample(torch.arange(8))).dim() == 0
    from bgl.dgl.nn.embedding_models.metapath2vec import metapath_window_pairs

    length, window = 5, 2
    pairs = [(i, start + j) for i in range(length) for start in [max(i - window, 0)]  # DGL's sample loop
             for j in range(len(range(start, min(i + window, length)))) if j != i]
    centre, context = metapath_window_pairs(length, window)
    assert list(zip(centre.tolist(), context.tolist())) == pairs


def test_labor_seeds_sharing_neighbours_keep_them_together():
    g = dgl.graph((torch.tensor([0, 1, 2, 3, 0, 1, 2, 3]), torch.tensor([4, 4, 4, 4, 5, 5, 5, 5])), num_nodes=6)
    counts = []
    for seed in range(40):  # one variate per neighbour: seeds of equal neighbourhoods keep the same ones
        frontier, imp = dgl.sampling.sample_labors(g, torch.tensor([4, 5]), 2, random_seed=seed)
        s, d = frontier.edges()
        assert s[d == 4].tolist() == s[d == 5].tolist() and imp[0].numel() == 0
        counts.append(int((d == 4).sum()))
    assert abs(sum(counts) / 40 - 2) < 0.5  # fanout / degree each: 2 a seed on average
    again, _ = dgl.sampling.sample_labors(g, torch.tensor([4, 5]), 2, random_seed=39)
    assert torch.equal(again.edata[dgl.EID], frontier.edata[dgl.EID])


def test_etype_neighbors_draw_each_types_fanout_among_its_edges():
    src, dst = torch.tensor([0, 1, 2, 3, 0, 1, 2, 3, 0]), torch.tensor([4, 4, 4, 4, 4, 4, 4, 4, 5])
    g = dgl.graph((src, dst), num_nodes=6)
    for _ in range(20):
        fr = dgl.sampling.sample_etype_neighbors(g, torch.tensor([5, 4]), [0, 4, 9], torch.tensor([1, 3]))
        eids, (_, d) = fr.edata[dgl.EID], fr.edges()
        assert d.tolist() == [5, 4, 4, 4, 4] and (eids[1:] >= 4).tolist() == [False, True, True, True]
        assert eids[2:].unique().numel() == 3
