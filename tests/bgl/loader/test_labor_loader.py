"""bgl.DataLoader with DGL's LaborSampler and bgl.LaborSampler: DGL's options, its input-row savings."""
from __future__ import annotations

import numpy as np
import pytest

import bgl

dgl = pytest.importorskip("dgl")
torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def graph():
    torch.manual_seed(0)
    g = dgl.rand_graph(2000, 40000)
    g.ndata["feat"] = torch.randn(2000, 4)
    g.edata["ef"] = torch.randn(40000)
    return g


def mean_inputs(loader):
    return float(np.mean([inp.numel() for inp, _, _ in loader]))


@pytest.mark.parametrize("kwargs", [{}, {"layer_dependency": True}, {"batch_dependency": 4}])
def test_distinct_inputs_match_dgls_labor_and_beat_neighbour_sampling(graph, kwargs):
    ids = torch.arange(1000)
    labor = dgl.dataloading.LaborSampler([5, 5], **kwargs)
    ours = mean_inputs(bgl.DataLoader(graph, ids, labor, batch_size=200))
    theirs = mean_inputs(dgl.dataloading.DataLoader(graph, ids, labor, batch_size=200))
    neighbour = mean_inputs(bgl.DataLoader(graph, ids, dgl.dataloading.NeighborSampler([5, 5]), batch_size=200))
    assert abs(ours - theirs) < 0.05 * theirs
    assert ours < 0.75 * neighbour


def test_bgl_labor_sampler_with_edge_features(graph):
    sampler = bgl.LaborSampler([4, 4], prefetch_edge_feats=["ef"])
    for _, _, blocks in bgl.DataLoader(graph, torch.arange(100), sampler, batch_size=50):
        for b in blocks:
            assert torch.equal(b.edata["ef"], graph.edata["ef"][b.edata[dgl.EID]])


@pytest.mark.parametrize("make, match", [
    (lambda: dgl.dataloading.LaborSampler([5], importance_sampling=-1), "importance_sampling=-1 .* not supported"),
    (lambda: dgl.dataloading.LaborSampler([5], prob="ef"), "LaborSampler\\(prob='ef'\\) is not supported"),
    (lambda: bgl.LaborSampler([5], batch_dependency=0), "batch_dependency must be an int >= 1, got 0"),
])
def test_unsupported_labor_options_are_named(graph, make, match):
    with pytest.raises(ValueError, match=match):
        bgl.DataLoader(graph, torch.arange(10), make(), batch_size=5)
