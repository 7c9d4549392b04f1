"""``dgl.nn.GNNExplainer`` / ``HeteroGNNExplainer`` in ``bgl.dgl`` against real DGL 2.1 (skipped without it; bgl's
side still runs): the same model weights and ``torch.manual_seed`` give the same initial masks (torch's ``randn``
in DGL's order), so the returned subgraph, node position, feature mask and edge mask match DGL's after 10 Adam
steps (within 1e-5)."""
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


def _first_adam_step() -> None:
    """Recent torch's first Adam step writes TORCHINDUCTOR_CACHE_DIR into os.environ: taken here, at collection,
    so that the explainers' own steps leave the process as they found it when this file runs alone."""
    p = nn.Parameter(torch.zeros(1))
    p.grad = torch.zeros(1)
    torch.optim.Adam([p]).step()


_first_adam_step()
SRC = torch.tensor([0, 1, 2, 3, 4, 5, 1, 2, 6, 0, 3])
DST = torch.tensor([1, 2, 3, 4, 5, 0, 3, 0, 2, 4, 1])


class _Model(nn.Module):
    """Two GraphConvs whose messages ``eweight`` scales; a graph's logits from its mean node state."""

    def __init__(self, lib, graph_level: bool = False):
        super().__init__()
        self.lib, self.graph_level = lib, graph_level
        self.conv1 = lib.nn.GraphConv(5, 8, allow_zero_in_degree=True)
        self.conv2 = lib.nn.GraphConv(8, 3, allow_zero_in_degree=True)

    def forward(self, graph, feat, eweight=None):
        h = self.conv2(graph, torch.relu(self.conv1(graph, feat, edge_weight=eweight)), edge_weight=eweight)
        if not self.graph_level:
            return h
        with graph.local_scope():
            graph.ndata["h"] = h
            return self.lib.mean_nodes(graph, "h")


def _explainer(model, state, kind, num_hops: int):
    """``(model, explainer)``: the model with DGL's weights ``state`` (when given), its explainer of 10 steps, and
    torch's generator seeded for the masks."""
    if state is not None:
        model.load_state_dict(state)
    explainer = kind(model, num_hops=num_hops, lr=0.1, num_epochs=10, log=False)
    torch.manual_seed(1)
    return model, explainer


def _explain(lib, graph_level: bool, state=None):
    g = lib.graph((SRC, DST), num_nodes=8)
    torch.manual_seed(0)
    feat = torch.randn(8, 5)
    model, explainer = _explainer(_Model(lib, graph_level), state, lib.nn.GNNExplainer, 2)
    if graph_level:
        return model.state_dict(), explainer.explain_graph(g, feat)
    node, sg, feat_mask, edge_mask = explainer.explain_node(3, g, feat)
    return model.state_dict(), (node, sg.ndata[lib.NID], sg.edata[lib.EID], *sg.edges(), feat_mask, edge_mask)


@pytest.mark.parametrize("graph_level", [False, True])
def test_gnnexplainer_masks_are_dgls(graph_level):
    state, ours = _explain(bdgl, graph_level)
    feat_mask, edge_mask = ours[-2:]
    assert feat_mask.shape == (5,) and bool(((feat_mask > 0) & (feat_mask < 1)).all())
    assert edge_mask.shape == ((11,) if graph_level else (ours[2].shape[0],))
    if not graph_level:  # node 3 and its 2-hop in-neighbours 0, 1, 2, 6 (node 5 reaches it in 3 hops)
        assert ours[0].tolist() == [3] and ours[1].tolist() == [0, 1, 2, 3, 6]
    if dgl is None:
        return
    _, theirs = _explain(dgl, graph_level, state)
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype and torch.allclose(a, b, atol=1e-5), (a, b)


class _HeteroModel(nn.Module):
    def __init__(self, lib, graph_level: bool = False):
        super().__init__()
        self.lib, self.graph_level = lib, graph_level
        self.conv = lib.nn.HeteroGraphConv({r: lib.nn.GraphConv(4, 3, allow_zero_in_degree=True)
                                            for r in ("follows", "buys", "bought-by")})

    def forward(self, graph, feat, eweight=None):
        kwargs = None if eweight is None else {c[1]: {"edge_weight": w} for c, w in eweight.items()}
        out = self.conv(graph, feat, mod_kwargs=kwargs)
        if not self.graph_level:
            return out
        with graph.local_scope():
            graph.ndata["h"] = out
            return sum(self.lib.mean_nodes(graph, "h", ntype=nt) for nt in graph.ntypes)


def _hetero_explain(lib, graph_level: bool, state=None):
    g = lib.heterograph({("user", "follows", "user"): (torch.tensor([0, 1, 2, 3]), torch.tensor([1, 2, 0, 0])),
                         ("user", "buys", "item"): (torch.tensor([0, 1, 3, 2]), torch.tensor([0, 1, 1, 2])),
                         ("item", "bought-by", "user"): (torch.tensor([0, 1, 1, 2]), torch.tensor([0, 1, 3, 2]))})
    torch.manual_seed(0)
    feat = {"user": torch.randn(4, 4), "item": torch.randn(3, 4)}
    model, explainer = _explainer(_HeteroModel(lib, graph_level), state, lib.nn.HeteroGNNExplainer, 1)
    if graph_level:
        feat_mask, edge_mask = explainer.explain_graph(g, feat)
        return model.state_dict(), [feat_mask[nt] for nt in g.ntypes] + [edge_mask[c] for c in g.canonical_etypes]
    node, sg, feat_mask, edge_mask = explainer.explain_node("user", 0, g, feat)
    return model.state_dict(), [node, *(sg.ndata[lib.NID][nt] for nt in sg.ntypes),
                                *(feat_mask[nt] for nt in sg.ntypes), *(edge_mask[c] for c in sg.canonical_etypes)]


@pytest.mark.parametrize("graph_level", [False, True])
def test_hetero_gnnexplainer_masks_are_dgls(graph_level):
    state, ours = _hetero_explain(bdgl, graph_level)
    assert all(bool(((m > 0) & (m < 1)).all()) for m in ours[-5:])
    if dgl is None:
        return
    _, theirs = _hetero_explain(dgl, graph_level, state)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype and a.shape == b.shape and torch.allclose(a, b, atol=1e-5), (a, b)
