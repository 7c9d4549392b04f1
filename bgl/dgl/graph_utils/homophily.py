"""Homophily and label informativeness of a node labelling, as DGL 2.1 measures them (``dgl.node_homophily``,
``dgl.edge_homophily``, ``dgl.linkx_homophily``, ``dgl.adjusted_homophily``, ``dgl.edge_label_informativeness``,
``dgl.node_label_informativeness``).

``y`` : int64 [num_nodes], classes ``0..y.max()``.  Each measure is one pass over the edges (gathers and
``index_add`` / ``bincount``, no loop over nodes or classes): O(E) time, 4-8 B per edge.  The last four measure
the graph made undirected first (:func:`bgl.dgl.to_bidirected`, parallel edges merged), as DGL does.
Each returns a Python float.
"""
from __future__ import annotations

import torch

from bgl.dgl.heterograph import DGLGraph


def _same_class(graph: DGLGraph, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(float 1/0 per edge: its ends share a class, int64 destination per edge)."""
    src, dst = (t.long() for t in graph.edges(order="eid"))
    return (y[src] == y[dst]).float(), dst


def _bidirected(graph: DGLGraph, y: torch.Tensor) -> DGLGraph:
    from bgl.dgl.transforms import to_bidirected

    return to_bidirected(graph.cpu()).to(y.device)


def node_homophily(graph: DGLGraph, y: torch.Tensor) -> float:
    """The mean over nodes of the share of a node's in-edges that come from its own class (0 for a node without
    in-edges)."""
    same, dst = _same_class(graph, y)
    n = graph.num_nodes()
    share = torch.zeros(n, device=same.device).index_add_(0, dst, same)
    deg = torch.bincount(dst, minlength=n).to(share.dtype)
    return torch.where(deg > 0, share / deg.clamp(min=1), share).mean(dim=0).item()


def edge_homophily(graph: DGLGraph, y: torch.Tensor) -> float:
    """The share of edges whose two ends share a class."""
    return _same_class(graph, y)[0].mean(dim=0).item()


def linkx_homophily(graph: DGLGraph, y: torch.Tensor) -> float:
    """LINKX's class-insensitive homophily: the mean over classes ``k`` of ``max(0, h_k - |C_k| / N)``, where
    ``h_k`` is the share of in-edges into class ``k`` that come from class ``k`` (a class without in-edges
    counts 0), divided by ``num_classes - 1`` (``ZeroDivisionError`` for one class, as DGL's)."""
    same, dst = _same_class(graph, y)
    n = graph.num_nodes()
    num_classes = int(y.max(dim=0).values.item()) + 1
    cls = y.long()
    same_k = torch.zeros(num_classes, device=same.device).index_add_(0, cls[dst], same)
    deg_k = torch.zeros(num_classes, device=same.device).index_add_(0, cls[dst], torch.ones_like(same))
    count_k = torch.bincount(cls, minlength=num_classes).to(same.dtype)
    gap = same_k / deg_k - count_k / n
    value = torch.where(gap > 0, gap, torch.zeros_like(gap)).sum()  # NaN (no in-edges) counts 0, as max(0, nan)
    return value.item() / (num_classes - 1)


def adjusted_homophily(graph: DGLGraph, y: torch.Tensor) -> float:
    """Edge homophily corrected for the classes' degree shares: ``(h_edge - a) / (1 - a)`` with
    ``a = sum_k D_k^2 / (2|E|)^2`` (``D_k`` the degree sum of class ``k``), on the undirected graph."""
    graph = _bidirected(graph, y)
    h_edge = edge_homophily(graph, y)
    degrees = graph.in_degrees().float()
    num_classes = int(y.max().item()) + 1
    degree_sums = torch.zeros(num_classes, device=y.device).index_add_(0, y, degrees)
    adjust = (degree_sums ** 2).sum() / graph.num_edges() ** 2
    return ((h_edge - adjust) / (1 - adjust)).item()


def _class_degree_probs(graph: DGLGraph, y: torch.Tensor, num_classes: int) -> torch.Tensor:
    probs = torch.zeros(num_classes, device=y.device).index_add_(0, y, graph.in_degrees().float())
    return probs / probs.sum()


def edge_label_informativeness(graph: DGLGraph, y: torch.Tensor, eps: float = 1e-8) -> float:
    """How much an edge's one end label tells of the other's (Platonov et al. 2023), on the undirected graph:
    ``2 - sum p(c1, c2) log p(c1, c2) / sum p̄(c) log p̄(c)``, ``p`` the class pairs' edge shares (``+ eps``),
    ``p̄`` the classes' degree-weighted shares."""
    graph = _bidirected(graph, y)
    num_classes = int(y.max()) + 1
    weighted = _class_degree_probs(graph, y, num_classes)
    src, dst = (t.long() for t in graph.edges(order="eid"))
    edge_probs = torch.zeros(num_classes, num_classes, device=y.device)
    edge_probs.index_put_((y[src], y[dst]), torch.ones(src.shape[0], device=y.device), accumulate=True)
    edge_probs = edge_probs / edge_probs.sum() + eps
    numerator = (edge_probs * torch.log(edge_probs)).sum()
    denominator = (weighted * torch.log(weighted)).sum()
    return (2 - numerator / denominator).item()


def node_label_informativeness(graph: DGLGraph, y: torch.Tensor, eps: float = 1e-8) -> float:
    """:func:`edge_label_informativeness` with every node weighted equally (each edge ``1 / (n' deg(u))``, ``n'``
    the nodes with an edge): ``-sum p log(p / (p_c p̄_c')) / sum p_c log p_c``."""
    graph = _bidirected(graph, y)
    degrees = graph.in_degrees().float()
    num_classes = int(y.max()) + 1
    class_probs = torch.zeros(num_classes, device=y.device).index_add_(
        0, y, torch.ones(graph.num_nodes(), device=y.device))
    class_probs = class_probs / class_probs.sum()
    weighted = _class_degree_probs(graph, y, num_classes)
    src, dst = (t.long() for t in graph.edges(order="eid"))
    edge_probs = torch.zeros(num_classes, num_classes, device=y.device)
    edge_probs.index_put_((y[src], y[dst]), 1 / ((degrees > 0).sum() * degrees[src]), accumulate=True)
    edge_probs = edge_probs + eps
    log = torch.log(edge_probs / (class_probs[:, None] * weighted[None, :]))
    return (-(edge_probs * log).sum() / (class_probs * torch.log(class_probs)).sum()).item()
