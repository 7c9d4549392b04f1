"""``dgl.dataloading.SAINTSampler`` / ``ClusterGCNSampler`` and ``dgl.sampling.global_uniform_negative_sampling``
in ``bgl.dgl`` against real DGL 2.1: subgraphs through ``DataLoader`` with DGL's fields, ``dgl.NID`` / ``dgl.EID``
and induced edges; node and edge modes' node-inclusion frequencies (both libraries') within 0.1 of the exact law on 300 draws,
the walk mode's within 0.25 of DGL's on 120; ClusterGCN's batches
equal to DGL's sampler's over the same clusters, its cut of four cliques the cliques (as METIS's), its cache
errors DGL's; negative pairs of DGL's law (including its cut, without replacement, to the pairs first in (dst, src) order)."""
from __future__ import annotations

import pytest
import torch

dgl = pytest.importorskip("dgl", reason="needs DGL (pinned lane) to compare against")

import bgl.dgl as bdgl  # noqa: E402


def _hubby(lib):
    gen = torch.Generator().manual_seed(0)
    src, dst = torch.randint(0, 30, (120,), generator=gen), torch.randint(0, 30, (120,), generator=gen)
    src[:30] = 0  # a hub with many out-edges: the node mode favours it
    g = lib.graph((src, dst), num_nodes=32)  # 30, 31: isolated
    g.ndata["x"] = torch.arange(32.0).view(-1, 1)
    g.edata["w"] = torch.arange(120.0)
    return g


def _check_induced(lib, g, sg):
    nid = sg.ndata[lib.NID]
    ref = dgl.node_subgraph(dgl.graph(g.edges(), num_nodes=g.num_nodes()), nid)
    assert sorted(sg.edata[lib.EID].tolist()) == sorted(ref.edata[dgl.EID].tolist())
    assert torch.equal(sg.ndata["x"].view(-1), nid.float()) and torch.equal(sg.edata["w"], sg.edata[lib.EID].float())
    s, d = sg.edges()
    gs, gd = g.find_edges(sg.edata[lib.EID])
    assert torch.equal(nid[s.long()], gs) and torch.equal(nid[d.long()], gd)


@pytest.mark.parametrize("mode,budget,draws,tol", [("node", 12, 300, 0.1), ("edge", 8, 300, 0.1),
                                                    ("walk", (3, 3), 120, 0.25)])
def test_saint_subgraphs_through_the_loader_as_dgls(mode, budget, draws, tol):
    freq, mean_size = [], []
    for lib in (dgl, bdgl):
        torch.manual_seed(0)
        dgl.seed(0)
        g = _hubby(lib)
        sampler = lib.dataloading.SAINTSampler(mode, budget, prefetch_ndata=["x"], prefetch_edata=["w"])
        loader = lib.dataloading.DataLoader(g, torch.arange(draws), sampler)
        hits, sizes = torch.zeros(32), []
        for i, sg in enumerate(loader):
            nid = sg.ndata[lib.NID]
            assert torch.equal(nid, nid.unique()) and sg.idtype == g.idtype
            if i < 3:
                _check_induced(lib, g, sg)
            hits[nid.long()] += 1
            sizes.append(sg.num_nodes())
        if mode == "node":
            assert max(sizes) <= budget
        freq.append(hits / draws)
        mean_size.append(sum(sizes) / draws)
    if mode == "walk":  # no closed form: against DGL's
        assert (freq[0] - freq[1]).abs().max() < tol
    else:  # both against the exact law
        exact = _inclusion(_hubby(dgl), mode, budget)
        assert (freq[0] - exact).abs().max() < tol and (freq[1] - exact).abs().max() < tol
    assert abs(mean_size[0] - mean_size[1]) < 0.1 * mean_size[0]


def _inclusion(g, mode: str, budget: int) -> torch.Tensor:
    """Each node's chance to be in a node- or edge-mode draw: 1 - (1 - its share of the draw law)^budget."""
    src, dst = g.edges()
    out_deg, in_deg = g.out_degrees().float().clamp(min=1), g.in_degrees().float().clamp(min=1)
    if mode == "node":
        share = out_deg / out_deg.sum()
    else:
        p = 1 / in_deg[dst] + 1 / out_deg[src]
        p /= p.sum()
        share = torch.zeros(g.num_nodes()).index_add_(0, src, p)
        share.index_add_(0, dst, torch.where(src == dst, 0.0, p))  # a self loop touches its node once
    return 1 - (1 - share) ** budget


def _cliques(lib, size=8, count=4):
    src, dst = [], []
    for c in range(count):
        nodes = torch.arange(size) + c * size
        s, d = torch.meshgrid(nodes, nodes, indexing="ij")
        keep = s != d
        src.append(s[keep]), dst.append(d[keep])
    ring = torch.arange(count) * size
    src.append(ring), dst.append(torch.roll(ring, 1) + 1)  # one edge between neighbouring cliques
    g = lib.graph((torch.cat(src), torch.cat(dst)), num_nodes=size * count)
    g.ndata["x"] = torch.arange(float(size * count)).view(-1, 1)
    g.edata["w"] = torch.arange(float(g.num_edges()))
    return g


def test_cluster_gcn_batches_equal_dgls_sampler_on_the_same_clusters(tmp_path):
    ours_g, theirs_g = _cliques(bdgl), _cliques(dgl)
    ours = bdgl.dataloading.ClusterGCNSampler(ours_g, 4, cache_path=str(tmp_path / "c.pkl"), prefetch_ndata=["x"])
    theirs = dgl.dataloading.ClusterGCNSampler(theirs_g, 4, cache_path=str(tmp_path / "d.pkl"))
    clusters = lambda s: sorted(tuple(sorted(s.partition_node_ids[a:b].tolist()))  # noqa: E731
                                for a, b in zip(s.partition_offset[:-1], s.partition_offset[1:]))
    assert clusters(ours) == clusters(theirs) == [tuple(range(c * 8, c * 8 + 8)) for c in range(4)]
    theirs.partition_offset, theirs.partition_node_ids = ours.partition_offset, ours.partition_node_ids
    part_of = torch.empty(32, dtype=torch.int64)
    for c in range(4):
        part_of[ours.partition_node_ids[ours.partition_offset[c]:ours.partition_offset[c + 1]]] = c
    seen = []
    for batch in bdgl.dataloading.DataLoader(ours_g, torch.arange(4), ours, batch_size=2, shuffle=True):
        ids = batch.ndata[bdgl.NID]
        seen += ids.tolist()
        parts = part_of[ids].tolist()
        ref = theirs.sample(theirs_g, torch.tensor(sorted(set(parts), key=parts.index)))
        assert torch.equal(ids, ref.ndata[dgl.NID]) and torch.equal(batch.edata[bdgl.EID], ref.edata[dgl.EID])
        assert all(torch.equal(a, b) for a, b in zip(batch.edges(), ref.edges()))
        assert torch.equal(batch.ndata["x"], ref.ndata["x"]) and torch.equal(batch.edata["w"], ref.edata["w"])
    assert sorted(seen) == list(range(32))


def test_cluster_gcn_cache_errors_are_dgls(tmp_path):
    path = str(tmp_path / "c.pkl")
    bdgl.dataloading.ClusterGCNSampler(_cliques(bdgl), 4, cache_path=path)
    for lib in (dgl, bdgl):
        with pytest.raises(lib.DGLError, match="Number of partitions in the cache does not match"):
            lib.dataloading.ClusterGCNSampler(_cliques(lib), 3, cache_path=path if lib is bdgl else
                                              str(tmp_path / "d.pkl") if (tmp_path / "d.pkl").exists() else _dgl_cache(tmp_path))
    with pytest.raises(bdgl.DGLError, match="is invalid"):  # DGL's pickle: never unpickled here
        bdgl.dataloading.ClusterGCNSampler(_cliques(bdgl), 4, cache_path=_dgl_cache(tmp_path))


def _dgl_cache(tmp_path) -> str:
    path = str(tmp_path / "d.pkl")
    dgl.dataloading.ClusterGCNSampler(_cliques(dgl), 4, cache_path=path)
    return path


def test_global_uniform_negatives_follow_dgls_law(replace=False):
    freq = []
    for lib in (dgl, bdgl):
        g = lib.graph((torch.tensor([0, 1, 2, 3, 4, 0]), torch.tensor([1, 2, 3, 4, 0, 2])), num_nodes=5)
        edges = set(zip(*[t.tolist() for t in g.edges()]))
        torch.manual_seed(0)
        dgl.seed(0)
        hits = torch.zeros(25)
        for _ in range(400):
            u, v = lib.sampling.global_uniform_negative_sampling(g, 3, replace=replace)
            assert u.dtype == g.idtype and len(u) <= 3
            pairs = list(zip(u.tolist(), v.tolist()))
            assert not set(pairs) & edges and all(a != b for a, b in pairs)
            if not replace:  # DGL sorts them by (dst, src)
                assert [(b, a) for a, b in pairs] == sorted({(b, a) for a, b in pairs})
            hits[u * 5 + v] += 1
        freq.append(hits / 400)
    assert (freq[0] - freq[1]).abs().max() < 0.1
