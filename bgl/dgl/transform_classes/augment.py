"""DGL's random graph augmentations (``dgl.transforms.AddEdge``, ``DropNode``, ``FeatMask``, ``NodeShuffle``;
``DropEdge`` is in :mod:`bgl.dgl.transform_modules`), from Graph Contrastive Learning with Augmentations.

Each draws from torch's global generator the same tensors in the same order as DGL 2.1's (one Bernoulli sample,
``randperm`` or ``randint`` per type or feature), so under the same ``torch.manual_seed`` the result is DGL's
exactly.  Costs: one draw per node / edge / feature column and one pass over the edges (a keep-mask or a
concatenation); no Python loop over nodes or edges.
"""
from __future__ import annotations

import torch

from bgl.dgl.heterograph import DGLGraph
from bgl.dgl.mutation import add_edges_in_place, remove_nodes_in_place
from bgl.dgl.transform_modules import BaseTransform, _RandomDrop
from bgl.dgl.transforms import clone


class DropNode(_RandomDrop):
    """A copy of the graph with each node removed with probability ``p`` (with its edges), type by type.

    Parameters
    ----------
    p : probability that a node is dropped (one Bernoulli draw per node, in ``g.ntypes`` order)
    """

    def _types(self, g: DGLGraph) -> list:
        return [(nt, g.num_nodes(nt)) for nt in g.ntypes]

    def _remove(self, g: DGLGraph, kind, drop: torch.Tensor) -> None:
        remove_nodes_in_place(g, g.nodes(kind)[drop], ntype=kind)


class AddEdge(BaseTransform):
    """A copy of the graph with ``int(num_edges * ratio)`` edges of each type added between uniformly drawn
    end nodes (``torch.randint`` of the graph's id type, sources then destinations), appended after the edges
    there; ``ratio == 0`` returns ``g`` itself, as DGL's does.

    Parameters
    ----------
    ratio : edges added per existing edge, per edge type
    """

    def __init__(self, ratio: float = 0.2):
        self.ratio = ratio

    def __call__(self, g: DGLGraph) -> DGLGraph:
        if self.ratio == 0.0:
            return g
        g = clone(g)
        for c in g.canonical_etypes:
            num = int(g.num_edges(c) * self.ratio)
            src = torch.randint(0, g.num_nodes(c[0]), [num], dtype=g.idtype, device=g.device)
            dst = torch.randint(0, g.num_nodes(c[2]), [num], dtype=g.idtype, device=g.device)
            add_edges_in_place(g, src, dst, etype=c)
        return g


class NodeShuffle(BaseTransform):
    """A copy of the graph whose node features are shuffled, one ``torch.randperm`` per node type (the
    structure and edge features stay)."""

    def __call__(self, g: DGLGraph) -> DGLGraph:
        g = clone(g)
        for ntype in g.ntypes:
            perm = torch.randperm(g.num_nodes(ntype))
            data = g.nodes[ntype].data
            for key in list(data.keys()):
                data[key] = data[key][perm.to(data[key].device)]
        return g


class FeatMask(BaseTransform):
    """Each column of the named node / edge features zeroed with probability ``p`` (one Bernoulli draw per
    column, per feature and per type holding it); writes into the graph's tensors in place and returns ``g``,
    as DGL's does.

    Parameters
    ----------
    p : probability that a column is masked
    node_feat_names, edge_feat_names : the features to mask (default none); a name absent raises KeyError
    """

    def __init__(self, p: float = 0.5, node_feat_names=None, edge_feat_names=None):
        self.p = p
        self.node_feat_names = [] if node_feat_names is None else node_feat_names
        self.edge_feat_names = [] if edge_feat_names is None else edge_feat_names
        self.dist = torch.distributions.Bernoulli(p)

    def _mask(self, feat: torch.Tensor, device) -> None:
        mask = self.dist.sample(torch.Size([feat.shape[-1]]))
        feat[:, mask.bool().to(device)] = 0

    def __call__(self, g: DGLGraph) -> DGLGraph:
        if self.p == 0:
            return g
        for names, view in ((self.node_feat_names, g.ndata), (self.edge_feat_names, g.edata)):
            for name in names:
                feats = view[name]
                for feat in [feats] if isinstance(feats, torch.Tensor) else feats.values():
                    self._mask(feat, g.device)
        return g
