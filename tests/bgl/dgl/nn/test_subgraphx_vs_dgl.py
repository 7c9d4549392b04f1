"""``dgl.nn.SubgraphX`` / ``HeteroSubgraphX`` in ``bgl.dgl`` against real DGL 2.1 (skipped without it; bgl's side
still runs): with the same model weights and ``np.random.seed``, the search draws DGL's coalitions, so it books
DGL's subgraphs (nodes, visits and Shapley values within 1e-5) and returns DGL's explanation.  A few
rollouts and Shapley steps keep it short; the typed search runs down to single nodes (``node_min=1``), where
DGL draws a node of a graph left without edges with ``np.random.choice``."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import bgl.dgl as bdgl

try:
    import dgl
except ImportError:  # the current lane: bgl's side only
    dgl = None

# DGL 2.1's SubgraphX reads its split point with int() of a 1-element array (numpy >= 1.25 warns)
pytestmark = pytest.mark.filterwarnings("ignore:Conversion of an array with ndim > 0:DeprecationWarning")

# a 4-cycle 0-1-2-3 (the motif) joined by 3-4 to a path 4-5-6-7, undirected; node features mark the cycle
_PAIRS = torch.tensor([[0, 1], [1, 2], [2, 3], [3, 0], [3, 4], [4, 5], [5, 6], [6, 7]])
SRC, DST = torch.cat([_PAIRS[:, 0], _PAIRS[:, 1]]), torch.cat([_PAIRS[:, 1], _PAIRS[:, 0]])


class _Model(nn.Module):
    def __init__(self, lib, hetero: bool = False):
        super().__init__()
        self.lib, self.hetero = lib, hetero
        if hetero:
            self.conv = lib.nn.HeteroGraphConv({r: lib.nn.GraphConv(3, 4, allow_zero_in_degree=True)
                                                for r in ("follows", "buys", "bought-by")})
        else:
            self.conv = lib.nn.GraphConv(3, 4, allow_zero_in_degree=True)
        self.fc = nn.Linear(4, 2)

    def forward(self, graph, feat):
        h = self.conv(graph, feat)
        with graph.local_scope():
            graph.ndata["h"] = h
            if self.hetero:
                return self.fc(sum(self.lib.mean_nodes(graph, "h", ntype=nt) for nt in graph.ntypes))
            return self.fc(self.lib.mean_nodes(graph, "h"))


def _model(lib, state, hetero=False):
    torch.manual_seed(0)
    model = _Model(lib, hetero)
    if state is not None:
        model.load_state_dict(state)
    return model


def _booked(explainer) -> list:
    return [(str(node), node.immediate_reward, node.num_visit) for node in explainer.mcts_node_maps.values()]


def _run(lib, state=None):
    g = lib.graph((SRC, DST), num_nodes=8)
    feat = torch.zeros(8, 3)
    feat[:4, 0], feat[4:, 1], feat[:, 2] = 1.0, 1.0, torch.arange(8) / 8
    model = _model(lib, state)
    explainer = lib.nn.SubgraphX(model, num_hops=2, num_child=3, num_rollouts=3, node_min=3, shapley_steps=3)
    np.random.seed(0)
    nodes = explainer.explain_graph(g, feat, target_class=1)
    return model.state_dict(), nodes, _booked(explainer)


def _same(ours, theirs):
    assert len(ours) == len(theirs)
    for (key, reward, visits), (key2, reward2, visits2) in zip(ours, theirs):
        assert key == key2 and visits == visits2 and abs(reward - reward2) < 1e-5, (key, key2, reward, reward2)


def test_subgraphx_is_dgls():
    state, nodes, booked = _run(bdgl)
    assert nodes.dtype == torch.int64 and 0 < nodes.shape[0] <= 3 and nodes.tolist() == sorted(nodes.tolist())
    assert len(booked) > 4
    if dgl is not None:
        _, their_nodes, their_booked = _run(dgl, state)
        assert torch.equal(nodes, their_nodes)
        _same(booked, their_booked)


def _hetero_run(lib, state=None):
    buys = (torch.tensor([0, 1, 3, 2]), torch.tensor([0, 1, 1, 2]))
    g = lib.heterograph({("user", "follows", "user"): (torch.tensor([0, 1, 1, 3]), torch.tensor([1, 0, 3, 1])),
                         ("user", "buys", "item"): buys, ("item", "bought-by", "user"): buys[::-1]})
    feat = {"item": torch.eye(3), "user": torch.ones(4, 3)}
    model = _model(lib, state, hetero=True)
    explainer = lib.nn.HeteroSubgraphX(model, num_hops=2, num_child=4, num_rollouts=2, node_min=1, shapley_steps=3)
    np.random.seed(0)
    nodes = explainer.explain_graph(g, feat, target_class=0)
    return model.state_dict(), {nt: ids.tolist() for nt, ids in nodes.items()}, _booked(explainer)


def test_hetero_subgraphx_is_dgls():
    state, nodes, booked = _hetero_run(bdgl)
    assert set(nodes) <= {"item", "user"} and len(booked) > 3
    if dgl is not None:
        _, their_nodes, their_booked = _hetero_run(dgl, state)
        assert nodes == their_nodes
        _same(booked, their_booked)


def test_subgraphx_refuses_a_graph_of_node_min_nodes():
    for lib in [bdgl] if dgl is None else [bdgl, dgl]:
        g = lib.graph((torch.tensor([0, 1]), torch.tensor([1, 2])), num_nodes=3)
        with pytest.raises(AssertionError, match="should be bigger than 3"):
            lib.nn.SubgraphX(_model(lib, None), num_hops=1).explain_graph(g, torch.ones(3, 3), 0)
