"""``dgl.nn.PGExplainer`` / ``HeteroPGExplainer`` in ``bgl.dgl`` against real DGL 2.1 (skipped without it; bgl's
side still runs): with the same model and explanation-network weights and the same ``torch.manual_seed``, the
concrete samples draw DGL's noise, so three training steps give DGL's losses and the explanations that follow
(probabilities, edge masks, batched subgraphs, centre ids) match DGL's within 1e-5."""
from __future__ import annotations

import pytest
import torch
from torch import nn

import bgl.dgl as bdgl

try:
    import dgl
except ImportError:  # the current lane: bgl's side only
    dgl = None

LIBS = [bdgl] if dgl is None else [bdgl, dgl]
# an undirected 7-node graph (each edge and its reverse): a triangle 0-1-2 on a path 2-3-4-5-6 with a chord 3-5
_PAIRS = torch.tensor([[0, 1], [1, 2], [2, 0], [2, 3], [3, 4], [4, 5], [5, 6], [3, 5]])
SRC, DST = torch.cat([_PAIRS[:, 0], _PAIRS[:, 1]]), torch.cat([_PAIRS[:, 1], _PAIRS[:, 0]])


class _Model(nn.Module):
    """DGL's contract: node embeddings with ``embed=True``, else logits (a graph's from its mean node state)."""

    def __init__(self, lib, graph_level: bool):
        super().__init__()
        self.lib, self.graph_level = lib, graph_level
        self.conv1 = lib.nn.GraphConv(5, 6)
        self.conv2 = lib.nn.GraphConv(6, 6)
        self.fc = nn.Linear(6, 3)

    def forward(self, graph, feat, embed=False, edge_weight=None):
        h = self.conv2(graph, torch.relu(self.conv1(graph, feat, edge_weight=edge_weight)), edge_weight=edge_weight)
        if embed:
            return h
        if not self.graph_level:
            return self.fc(h)
        with graph.local_scope():
            graph.ndata["h"] = h
            return self.fc(self.lib.mean_nodes(graph, "h"))


def _setup(lib, kind, model, state, **kwargs):
    """The explainer of ``model``: ``state`` (DGL's run copies bgl's) loaded, torch's generator seeded."""
    torch.manual_seed(0)
    explainer = kind(model, 6, **kwargs)
    if state is not None:
        model.load_state_dict(state[0])
        explainer.elayers.load_state_dict(state[1])
    torch.manual_seed(1)
    return explainer


def _initial(model, explainer):
    """The weights before training (a state dict holds the live tensors)."""
    return tuple({k: v.clone() for k, v in m.state_dict().items()} for m in (model, explainer.elayers))


def _train(explainer, step) -> list:
    """Three gradient steps on the explanation network (plain SGD: torch's optimisers leave inductor's
    environment behind on their first step); the losses."""
    losses = []
    for temperature in (5.0, 3.0, 1.0):
        loss = step(temperature)
        loss.backward()
        with torch.no_grad():
            for p in explainer.parameters():
                p -= 0.5 * p.grad
                p.grad = None
        losses.append(loss.detach().reshape(1))
    return losses


def _run(lib, graph_level: bool, state=None):
    g = lib.graph((SRC, DST), num_nodes=7)
    torch.manual_seed(2)
    feat = torch.randn(7, 5)
    model = _Model(lib, graph_level)
    explainer = _setup(lib, lib.nn.PGExplainer, model, state, num_hops=2, explain_graph=graph_level)
    initial = _initial(model, explainer)
    if graph_level:
        losses = _train(explainer, lambda t: explainer.train_step(g, feat, t))
        out = list(explainer.explain_graph(g, feat))
    else:
        losses = _train(explainer, lambda t: explainer.train_step_node(torch.tensor([0, 4]), g, feat, t))
        probs, mask, bg, inverse = explainer.explain_node([6, 2], g, feat)
        out = [probs, mask, *bg.edges(), bg.ndata[lib.NID], bg.edata[lib.EID], bg.batch_num_nodes(), inverse]
    return initial, losses + out


def _close(ours, theirs):
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype and a.shape == b.shape and torch.allclose(a, b, atol=1e-5), (a, b)


@pytest.mark.parametrize("graph_level", [True, False])
def test_pgexplainer_is_dgls(graph_level):
    state, ours = _run(bdgl, graph_level)
    mask = ours[4]
    assert bool(((mask > 0) & (mask < 1)).all())
    if graph_level:  # one mask value per edge, the same on an edge and its reverse
        assert ours[3].shape == (1, 3) and torch.allclose(mask[:8], mask[8:])
    else:  # centres 6 and 2: their 2-hop in-subgraphs {3, 4, 5, 6} and {0, 1, 2, 3, 4, 5}, batched
        assert ours[-2].tolist() == [4, 6] and ours[-1].tolist() == [3, 6]
    if dgl is not None:
        _close(ours, _run(dgl, graph_level, state)[1])


def test_pgexplainer_refusals_are_dgls():
    for lib in LIBS:
        model = _Model(lib, True)
        g = lib.graph((torch.tensor([0, 1, 1, 2]), torch.tensor([1, 0, 2, 2])), num_nodes=3)
        with pytest.raises(AssertionError, match='"explain_graph" must be False'):
            lib.nn.PGExplainer(model, 6).train_step_node(0, g, torch.randn(3, 5), 1.0)
        with pytest.raises(AssertionError, match='"num_hops" must be provided'):
            lib.nn.PGExplainer(model, 6, explain_graph=False).explain_node(0, g, torch.randn(3, 5))
        with pytest.raises(lib.DGLError):  # edge 1 -> 2 has no reverse
            lib.nn.PGExplainer(model, 6).explain_graph(g, torch.randn(3, 5))


class _HeteroModel(nn.Module):
    def __init__(self, lib, graph_level: bool):
        super().__init__()
        self.lib, self.graph_level = lib, graph_level
        self.conv = lib.nn.HeteroGraphConv({r: lib.nn.GraphConv(4, 6, allow_zero_in_degree=True)
                                            for r in ("follows", "buys", "bought-by")})
        self.fc = nn.Linear(6, 2)

    def forward(self, graph, feat, embed=False, edge_weight=None):
        kwargs = None if edge_weight is None else {c[1]: {"edge_weight": w} for c, w in edge_weight.items()}
        h = self.conv(graph, feat, mod_kwargs=kwargs)
        if embed:
            return h
        if not self.graph_level:
            return {nt: self.fc(x) for nt, x in h.items()}
        with graph.local_scope():
            graph.ndata["h"] = h
            return self.fc(sum(self.lib.mean_nodes(graph, "h", ntype=nt) for nt in graph.ntypes))


def _hetero_run(lib, graph_level: bool, state=None):
    buys = (torch.tensor([0, 1, 3, 2, 0]), torch.tensor([0, 1, 1, 2, 2]))
    g = lib.heterograph({("user", "follows", "user"): (torch.tensor([0, 1, 1, 3]), torch.tensor([1, 0, 3, 1])),
                         ("user", "buys", "item"): buys, ("item", "bought-by", "user"): buys[::-1]})
    torch.manual_seed(2)
    feat = {"item": torch.randn(3, 4), "user": torch.randn(4, 4)}
    model = _HeteroModel(lib, graph_level)
    explainer = _setup(lib, lib.nn.HeteroPGExplainer, model, state, num_hops=1, explain_graph=graph_level)
    initial = _initial(model, explainer)
    rels = g.canonical_etypes
    if graph_level:
        losses = _train(explainer, lambda t: explainer.train_step(g, feat, t))
        probs, mask = explainer.explain_graph(g, feat)
        out = [probs, *(mask[c] for c in rels)]
    else:
        losses = _train(explainer, lambda t: explainer.train_step_node({"user": [0, 2]}, g, feat, t))
        probs, mask, bg, inverse = explainer.explain_node({"item": torch.tensor([1]), "user": [3]}, g, feat)
        out = [*(probs[nt] for nt in g.ntypes), *(mask[c] for c in rels), *(inverse[nt] for nt in g.ntypes),
               *(bg.ndata[lib.NID][nt] for nt in g.ntypes), *(bg.edges(etype=c)[1] for c in rels)]
    return initial, losses + out


@pytest.mark.parametrize("graph_level", [True, False])
def test_hetero_pgexplainer_is_dgls(graph_level):
    state, ours = _hetero_run(bdgl, graph_level)
    masks = ours[4:7] if graph_level else ours[5:8]  # after 3 losses and the probabilities (per node type)
    assert all(bool(((m > 0) & (m < 1)).all()) for m in masks)
    if dgl is not None:
        _close(ours, _hetero_run(dgl, graph_level, state)[1])
