"""``dgl.sort_csr_by_tag`` / ``sort_csc_by_tag`` and ``dgl.sampling.sample_neighbors_biased`` in ``bgl.dgl`` against
real DGL 2.1 (skipped without it; bgl's side still runs): the sorted adjacency, its edge ids and the tag offsets
exactly; the deterministic draws (every positive-bias edge with fanout -1 or a fanout above the row's positive
edges, zero-bias tags never, fanout draws with replacement) edge for edge; and the distribution: the inclusion
frequency of each tag, fixed seeds, 2400 independent rows, within 0.05 of the exact successive-sampling
probability (about 5 standard deviations) for both libraries."""
from __future__ import annotations

import pytest
import torch

import bgl.dgl as bdgl

try:
    import dgl
except ImportError:  # the current lane: bgl's side only
    dgl = None

LIBS = [bdgl] if dgl is None else [bdgl, dgl]
SRC = torch.tensor([0, 0, 0, 0, 0, 1, 1, 1, 3])
DST = torch.tensor([0, 1, 2, 3, 4, 0, 1, 2, 1])


def _sorted(lib, direction, tag_type, idtype=torch.int64):
    g = lib.graph((SRC, DST) if direction == "csr" else (DST, SRC), num_nodes=5, idtype=idtype)
    g.edata["w"] = torch.arange(9.0)
    g.ndata["h"] = torch.arange(5.0)
    tag = torch.tensor([1, 1, 0, 2, 0]) if tag_type == "node" else torch.tensor([1, 1, 0, 2, 0, 1, 1, 0, 3])
    sort = lib.sort_csr_by_tag if direction == "csr" else lib.sort_csc_by_tag
    return g, sort(g, tag, tag_type=tag_type)


@pytest.mark.parametrize("direction,tag_type,idtype", [("csr", "node", torch.int64), ("csc", "edge", torch.int32)])
def test_sort_by_tag_is_dgls(direction, tag_type, idtype):
    seen = []
    for lib in LIBS:
        g, gs = _sorted(lib, direction, tag_type, idtype)
        offsets = gs.ndata["_TAG_OFFSET"]
        assert offsets.dtype == idtype and torch.equal(gs.edata["w"], g.edata["w"])
        assert [t.tolist() for t in gs.edges()] == [t.tolist() for t in g.edges()]
        seen.append(([t.tolist() for t in gs.adj_tensors(direction)], offsets.tolist()))
    # node 0's row: tags [1, 1, 0, 2, 0] -> 2, 4 (tag 0), 0, 1 (tag 1), 3 (tag 2); ties in edge-id order
    assert seen[0][0][1][:5] == [2, 4, 0, 1, 3] and seen[0][1][0][:4] == [0, 2, 4, 5]
    assert all(s == seen[0] for s in seen)


def test_sort_by_tag_bipartite_and_errors():
    for lib in LIBS:
        b = lib.heterograph({("u", "e", "v"): (torch.tensor([0, 0, 1, 2]), torch.tensor([1, 0, 2, 1]))})
        assert lib.sort_csr_by_tag(b, torch.tensor([1, 0, 2])).nodes["u"].data["_TAG_OFFSET"].tolist() == \
            [[0, 1, 2, 2], [0, 0, 0, 1], [0, 1, 1, 1]]
        assert lib.sort_csc_by_tag(b, torch.tensor([1, 0, 1])).nodes["v"].data["_TAG_OFFSET"].tolist() == \
            [[0, 0, 1], [0, 0, 2], [0, 1, 1]]
        two = lib.heterograph({("a", "x", "a"): ([0], [1]), ("a", "y", "a"): ([0], [1])})
        with pytest.raises(lib.DGLError):
            lib.sort_csr_by_tag(two, torch.tensor([0, 1]))
        with pytest.raises(AssertionError):
            lib.sort_csr_by_tag(b, torch.tensor([1, 0, 2]), tag_type="dst")


def _frontier_edges(f, lib):
    src, dst = f.edges()
    return sorted(zip(src.tolist(), dst.tolist(), f.edata[lib.EID].tolist(), f.edata["w"].tolist()))


def test_biased_deterministic_draws_are_dgls():
    seen = []
    for lib in LIBS:
        _, gs = _sorted(lib, "csr", "node")
        lib.seed(0)
        sample = lib.sampling.sample_neighbors_biased
        out = [_frontier_edges(sample(gs, torch.tensor([1, 0, 3]), -1, torch.tensor([1.0, 0.0, 1.0]),
                                      edge_dir="out"), lib),
               _frontier_edges(sample(gs, [0, 1], 4, [0.0, 2.0, 1.0], edge_dir="out"), lib)]
        f = sample(gs, torch.tensor([0, 3]), 3, torch.tensor([0.0, 0.0, 1.0]), edge_dir="out", replace=True)
        out.append(sorted(f.edata[lib.EID].tolist()))
        assert f.num_nodes() == 5 and torch.equal(f.ndata["h"], gs.ndata["h"])
        with pytest.raises(lib.DGLError):
            sample(gs, [0], 2, [1.0, 1.0], edge_dir="out")
        with pytest.raises(lib.DGLError):
            sample(gs, [0], 2, [1.0, 1.0, 1.0], edge_dir="both")
        seen.append(out)
    # tag 1 (bias 0) never drawn; node 3's only edge is tag 1: nothing even with replacement
    assert seen[0][0] == [(0, 2, 2, 2.0), (0, 3, 3, 3.0), (0, 4, 4, 4.0), (1, 2, 7, 7.0)]
    assert [e[2] for e in seen[0][1]] == [0, 1, 3, 5, 6] and seen[0][2] == [3, 3, 3]
    assert all(s == seen[0] for s in seen)


def _inclusion(w: list, k: int = 2) -> torch.Tensor:
    """Each item's probability to be among ``k = 2`` draws without replacement, each in proportion to the weights
    of the items not drawn yet."""
    w = torch.tensor(w, dtype=torch.float64)
    total = w.sum()
    second = torch.stack([(w / total * w[i] / (total - w)).sum() - w[i] / total * w[i] / (total - w[i])
                          for i in range(len(w))])
    return w / total + second


@pytest.mark.parametrize("replace", [False, True])
def test_biased_distribution_is_dgls(replace):
    rows, reps = 400, 6
    src = torch.arange(rows).repeat_interleave(6)
    dst = rows + torch.arange(6).repeat(rows)  # every row: the same six neighbours, tags [0, 0, 1, 1, 2, 2]
    bias = torch.tensor([1.0, 2.0, 5.0])
    exact = _inclusion([1.0, 1.0, 2.0, 2.0, 5.0, 5.0]) if not replace else \
        torch.tensor([1.0, 1.0, 2.0, 2.0, 5.0, 5.0]) / 16 * 2  # expected copies of an edge in 2 draws
    for lib in LIBS:
        g = lib.graph((src, dst), num_nodes=rows + 6)
        gs = lib.sort_csr_by_tag(g, torch.tensor([0] * rows + [0, 0, 1, 1, 2, 2]))
        lib.seed(7)
        torch.manual_seed(7)
        counts = torch.zeros(6, dtype=torch.float64)
        for _ in range(reps):
            f = lib.sampling.sample_neighbors_biased(gs, torch.arange(rows), 2, bias, edge_dir="out",
                                                     replace=replace)
            s, d = f.edges()
            assert torch.equal(torch.bincount(s.long(), minlength=rows), torch.full((rows,), 2))
            if not replace:  # no edge twice in a row
                assert torch.unique(s.long() * 10 + d.long() - rows).numel() == 2 * rows
            counts += torch.bincount(d.long() - rows, minlength=6).double()
        assert (counts / (rows * reps) - exact).abs().max() < 0.05, lib.__name__
