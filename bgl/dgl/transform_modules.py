"""DGL's transform objects (``dgl.transforms`` / ``dgl.Compose(...)``) that training scripts pass as a
dataset's ``transform=`` or apply once to the loaded graph: ``AddReverse``, ``ToSimple``,
``RemoveSelfLoop``, ``RowFeatNormalizer``, ``GCNNorm``, ``DropEdge`` and ``Compose`` (``AddSelfLoop``
lives with its function in :mod:`bgl.dgl.transforms`).

Each is the matching function of :mod:`bgl.dgl.transforms` applied as DGL's object applies it, with
DGL's outputs: new edge types named ``rev_<etype>``, features copied or zero-filled as DGL does,
``RowFeatNormalizer`` dividing the tensors in place as DGL's does.  A pass over the edges or feature
rows each, no Python loop over a graph.
"""
from __future__ import annotations

import torch

from bgl.dgl.convert import heterograph
from bgl.dgl.heterograph import DGLGraph
from bgl.dgl.mutation import remove_edges_in_place
from bgl.dgl.transforms import _plain, clone, remove_self_loop, to_simple


class BaseTransform:
    """What a transform object is: called on a graph, returns a graph."""

    def __call__(self, g: DGLGraph) -> DGLGraph:
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.__class__.__name__ + "()"


class Compose(BaseTransform):
    """The ``transforms`` applied in order."""

    def __init__(self, transforms):
        self.transforms = list(transforms)

    def __call__(self, g: DGLGraph) -> DGLGraph:
        for transform in self.transforms:
            g = transform(g)
        return g

    def __repr__(self) -> str:
        return self.__class__.__name__ + "([\n" + ",\n".join("  " + str(t) for t in self.transforms) + "\n])"


class AddReverse(BaseTransform):
    """Every edge type gets its reverse: ``(u, e, v)`` with ``u != v`` (or any with ``sym_new_etype``) a new
    type ``(v, "rev_e", u)``, one joining a type to itself its reversed edges appended.  Node features
    are kept; edge features too, and on the reversed edges copied (``copy_edata``) or zero."""

    def __init__(self, copy_edata: bool = False, sym_new_etype: bool = False):
        self.copy_edata, self.sym_new_etype = copy_edata, sym_new_etype

    def __call__(self, g: DGLGraph) -> DGLGraph:
        _plain(g, "AddReverse")
        data = {}
        for c in g.canonical_etypes:
            src, dst = g.edges(etype=c)
            if c[0] == c[2] and not self.sym_new_etype:
                data[c] = (torch.cat([src, dst]), torch.cat([dst, src]))
            else:
                data[c] = (src, dst)
                data[(c[2], f"rev_{c[1]}", c[0])] = (dst, src)
        out = heterograph(data, num_nodes_dict={nt: g.num_nodes(nt) for nt in g.ntypes}, idtype=g.idtype,
                          device=g.device)
        for nt in g.ntypes:
            for key, value in g.nodes[nt].data.items():
                out.nodes[nt].data[key] = value
        for c in g.canonical_etypes:
            appended = c[0] == c[2] and not self.sym_new_etype
            for key, value in g.edges[c].data.items():
                back = value if self.copy_edata else torch.zeros_like(value)
                if appended:
                    out.edges[c].data[key] = torch.cat([value, back])
                else:
                    out.edges[c].data[key] = value
                    if self.copy_edata:
                        out.edges[(c[2], f"rev_{c[1]}", c[0])].data[key] = value
        return out


class ToSimple(BaseTransform):
    """Parallel edges merged (:func:`~bgl.dgl.transforms.to_simple` with ``copy_edata=True``)."""

    def __init__(self, return_counts="count", aggregator="arbitrary"):
        self.return_counts, self.aggregator = return_counts, aggregator

    def __call__(self, g: DGLGraph) -> DGLGraph:
        return to_simple(g, return_counts=self.return_counts, copy_edata=True, aggregator=self.aggregator)


class RemoveSelfLoop(BaseTransform):
    """The self-loops of every edge type joining a node type to itself removed."""

    def __call__(self, g: DGLGraph) -> DGLGraph:
        for c in g.canonical_etypes:
            if c[0] == c[2]:
                g = remove_self_loop(g, etype=c)
        return g


class RowFeatNormalizer(BaseTransform):
    """Each row of the named node / edge features divided by its sum (at least 1), after subtracting the
    tensor's minimum with ``subtract_min``; divides the graph's tensors in place, as DGL's does."""

    def __init__(self, subtract_min: bool = False, node_feat_names=None, edge_feat_names=None):
        self.node_feat_names = [] if node_feat_names is None else list(node_feat_names)
        self.edge_feat_names = [] if edge_feat_names is None else list(edge_feat_names)
        self.subtract_min = subtract_min

    def row_normalize(self, feat: torch.Tensor) -> torch.Tensor:
        if self.subtract_min:
            feat = feat - feat.min()
        return feat.div_(feat.sum(dim=-1, keepdim=True).clamp_(min=1.0))

    def __call__(self, g: DGLGraph) -> DGLGraph:
        for names, space, types in ((self.node_feat_names, g.nodes, g.ntypes),
                                    (self.edge_feat_names, g.edges, g.canonical_etypes)):
            for name in names:
                for t in types:
                    data = space[t].data
                    if name in data:
                        data[name] = self.row_normalize(data[name])
        return g


class GCNNorm(BaseTransform):
    """Each edge of a type joining a node type to itself weighted ``1 / sqrt(deg(src) deg(dst))`` (in-degrees;
    weighted in-degrees and times the edge's weight when ``edata[eweight_name]`` is there), into
    ``edata[eweight_name]``; 0 where a degree is 0."""

    def __init__(self, eweight_name: str = "w"):
        self.eweight_name = eweight_name

    def _weights(self, g: DGLGraph, c) -> torch.Tensor:
        src, dst = (t.long() for t in g.edges(etype=c))
        n = g.num_nodes(c[0])
        old = g.edges[c].data[self.eweight_name] if self.eweight_name in g.edges[c].data else None
        if old is None:
            deg = torch.bincount(dst, minlength=n).to(torch.float32)
        else:
            deg = torch.zeros((n, *old.shape[1:]), dtype=old.dtype, device=old.device).index_add_(0, dst, old)
        inv = 1.0 / torch.sqrt(deg)
        inv = torch.where(torch.isinf(inv), torch.zeros_like(inv), inv)
        out = inv[src] * inv[dst]
        return out if old is None else inv[src] * old * inv[dst]

    def __call__(self, g: DGLGraph) -> DGLGraph:
        weights = {c: self._weights(g, c) for c in g.canonical_etypes if c[0] == c[2]}
        for c, w in weights.items():
            g.edges[c].data[self.eweight_name] = w
        return g


class _RandomDrop(BaseTransform):
    """A copy of the graph with each item (edge, or node with its edges) removed with probability ``p``: one
    Bernoulli draw per item from torch's generator, type by type, as DGL's ``DropEdge`` / ``DropNode`` draw."""

    def __init__(self, p: float = 0.5):
        self.p = p
        self.dist = torch.distributions.Bernoulli(p)

    def _types(self, g: DGLGraph) -> list:
        raise NotImplementedError

    def _remove(self, g: DGLGraph, kind, drop: torch.Tensor) -> None:
        raise NotImplementedError

    def __call__(self, g: DGLGraph) -> DGLGraph:
        g = clone(g)
        if self.p == 0:
            return g
        for kind, count in self._types(g):
            self._remove(g, kind, self.dist.sample(torch.Size([count])).bool().to(g.device))
        return g


class DropEdge(_RandomDrop):
    """A copy of the graph with each edge removed with probability ``p`` (one Bernoulli draw per edge
    from torch's generator, type by type)."""

    def _types(self, g: DGLGraph) -> list:
        return [(c, g.num_edges(c)) for c in g.canonical_etypes]

    def _remove(self, g: DGLGraph, kind, drop: torch.Tensor) -> None:
        remove_edges_in_place(g, g.edges(form="eid", etype=kind)[drop], etype=kind)
