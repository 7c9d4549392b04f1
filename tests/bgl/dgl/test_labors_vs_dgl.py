"""``dgl.sampling.sample_labors`` in ``bgl.dgl`` against real DGL 2.1: under LABOR-0, LABOR-1 and LABOR-* both keep
each edge at LABOR's inclusion probability (within 0.12 on 300 draws; edges that share a source are kept together,
so fewer independent draws than it seems), with the same mean importances (within 0.1), DGL's frontier fields and
its empty importances for LABOR-0."""
from __future__ import annotations

import pytest
import torch

dgl = pytest.importorskip("dgl", reason="needs DGL (pinned lane) to compare against")

import bgl.dgl as bdgl  # noqa: E402


@pytest.mark.parametrize("rounds", [0, 1, -1])
def test_labor_keeps_edges_as_dgls(rounds):
    stats = []
    for lib in (dgl, bdgl):
        g = lib.graph((torch.tensor([0, 1, 2, 3, 4, 0, 1, 2, 6]), torch.tensor([5, 5, 5, 5, 5, 6, 6, 6, 0])),
                      num_nodes=7)
        g.edata["w"] = torch.arange(9.0)
        g.ndata["x"] = torch.arange(7.0)
        kept, weight = torch.zeros(9), torch.zeros(9)
        torch.manual_seed(0)
        dgl.seed(0)
        for _ in range(300):
            frontier, imp = lib.sampling.sample_labors(g, torch.tensor([5, 6]), 2, importance_sampling=rounds)
            eids = frontier.edata[lib.EID]
            assert frontier.num_nodes() == 7 and torch.equal(frontier.edata["w"], eids.float())
            assert torch.equal(frontier.ndata["x"], g.ndata["x"]) and len(imp) == 1
            s, d = frontier.edges()
            gs, gd = g.find_edges(eids)
            assert torch.equal(s, gs) and torch.equal(d, gd) and bool((d != 0).all())
            kept[eids] += 1
            if rounds == 0:
                assert imp[0].numel() == 0 and imp[0].dtype == torch.int64
            else:
                assert imp[0].dtype == torch.float32 and imp[0].shape == eids.shape
                weight[eids] += imp[0]
        stats.append((kept / 300, weight / kept.clamp(min=1)))
    # seeds 5 (5 in-edges) and 6 (3, from three of 5's sources), fanout 2: LABOR's fixed points
    exact = {0: [0.4] * 5 + [2 / 3] * 3, 1: [0.507] * 3 + [0.304] * 2 + [2 / 3] * 3, -1: [2 / 3] * 3 + [0.25] * 2
             + [2 / 3] * 3}[rounds] + [0.0]
    for kept, _ in stats:
        assert (kept - torch.tensor(exact)).abs().max() < 0.12
    assert (stats[0][1] - stats[1][1]).abs().max() < 0.1
