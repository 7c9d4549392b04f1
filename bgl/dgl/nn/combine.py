"""Combining representations, as DGL's modules do: the layers' outputs of each node
(``JumpingKnowledge``: concatenation, element-wise max or LSTM attention over the layers), the two
ends of each edge (``EdgePredictor``: dot product, cosine, element-wise product or concatenation,
then an optional linear map; ``TransE`` / ``TransR``: a knowledge graph's translation scores
``-||h + r - t||_p``, TransR's in a per-relation projected space), and layers run one after another on a
graph (``Sequential``).

Pure tensor code, no graph op; parameter names and shapes are DGL's (``lstm.*`` / ``att.*``,
``linear.*``, ``rel_emb`` / ``rel_project``), so DGL's state dicts load unchanged.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

JK_MODES = ("cat", "max", "lstm")
PAIR_OPS = ("dot", "cos", "ele", "cat")



class Identity(nn.Module):
    """The input, unchanged (DGL's ``dgl.nn.pytorch.utils.Identity``, a placeholder layer in its examples)."""

    def forward(self, x):
        return x

class JumpingKnowledge(nn.Module):
    """A list of ``num_layers`` tensors ``[N, in_feats]`` -> one ``[N, *]`` (Xu et al., 2018):
    ``"cat"`` -> ``[N, sum of widths]``, ``"max"`` -> ``[N, in_feats]``, ``"lstm"`` -> ``[N, in_feats]``
    weighted by attention scores from a bidirectional LSTM over the layers (``in_feats`` and
    ``num_layers`` then required)."""

    def __init__(self, mode: str = "cat", in_feats=None, num_layers=None):
        super().__init__()
        if mode not in JK_MODES:
            raise ValueError(f"Expect mode to be 'cat', or 'max' or 'lstm', got {mode}")
        self.mode = mode
        if mode == "lstm":
            if in_feats is None or num_layers is None:
                raise ValueError("JumpingKnowledge(mode='lstm') needs in_feats and num_layers")
            hidden = (num_layers * in_feats) // 2
            self.lstm = nn.LSTM(in_feats, hidden, bidirectional=True, batch_first=True)
            self.att = nn.Linear(2 * hidden, 1)

    def reset_parameters(self) -> None:
        if self.mode == "lstm":
            self.lstm.reset_parameters()
            self.att.reset_parameters()

    def forward(self, feat_list) -> torch.Tensor:
        if self.mode == "cat":
            return torch.cat(feat_list, dim=-1)
        if self.mode == "max":
            return torch.stack(feat_list, dim=-1).max(dim=-1)[0]  # DGL's: the gradient to one layer on a tie
        layers = torch.stack(feat_list, dim=1)  # [N, num_layers, in_feats]
        scores = self.att(self.lstm(layers)[0]).squeeze(-1).softmax(dim=-1)  # [N, num_layers]
        return (layers * scores.unsqueeze(-1)).sum(dim=1)


class EdgePredictor(nn.Module):
    """``(h_src, h_dst)`` of the same edges, ``[E, D]`` each -> a score per edge: ``"dot"`` / ``"cos"`` ->
    ``[E, 1]``, ``"ele"`` -> ``[E, D]``, ``"cat"`` -> ``[E, 2D]``; with ``in_feats`` and ``out_feats`` a
    linear map to ``[E, out_feats]`` after."""

    def __init__(self, op: str, in_feats=None, out_feats=None, bias: bool = False):
        super().__init__()
        if op not in PAIR_OPS:
            raise ValueError(f"Expect op to be in ['dot', 'cos', 'ele', 'cat'], got {op}")
        self.op = op
        self.linear = None
        if in_feats is not None and out_feats is not None:
            width = {"dot": 1, "cos": 1, "ele": in_feats, "cat": 2 * in_feats}[op]
            self.linear = nn.Linear(width, out_feats, bias=bias)

    def reset_parameters(self) -> None:
        if self.linear is not None:
            self.linear.reset_parameters()

    def forward(self, h_src: torch.Tensor, h_dst: torch.Tensor) -> torch.Tensor:
        if self.op == "dot":
            h = (h_src * h_dst).sum(dim=-1, keepdim=True)
        elif self.op == "cos":
            h = F.cosine_similarity(h_src, h_dst).unsqueeze(-1)
        elif self.op == "ele":
            h = h_src * h_dst
        else:
            h = torch.cat([h_src, h_dst], dim=-1)
        return h if self.linear is None else self.linear(h)


class TransE(nn.Module):
    """``dgl.nn.TransE`` (Bordes et al., 2013): score ``-||h_head + r - h_tail||_p`` of each (head, relation, tail).

    Parameters
    ----------
    num_rels : int, number of relation types
    feats : int, embedding width of nodes and relations
    p : norm order (1 by default)
    """

    def __init__(self, num_rels: int, feats: int, p=1):
        super().__init__()
        self.rel_emb = nn.Embedding(num_rels, feats)
        self.p = p

    def reset_parameters(self) -> None:
        self.rel_emb.reset_parameters()

    def forward(self, h_head: torch.Tensor, h_tail: torch.Tensor, rels: torch.Tensor) -> torch.Tensor:
        """h_head, h_tail : float [E, feats]; rels : int [E] relation ids.  Returns float [E]."""
        return -torch.norm(h_head + self.rel_emb(rels) - h_tail, p=self.p, dim=-1)


class TransR(nn.Module):
    """``dgl.nn.TransR`` (Lin et al., 2015): TransE's score after projecting both ends by the relation's
    ``nfeats x rfeats`` matrix (``rel_project`` row ``r``, row-major).

    Parameters
    ----------
    num_rels : int
    rfeats : int, relation-space width
    nfeats : int, node embedding width
    p : norm order (1 by default)
    """

    def __init__(self, num_rels: int, rfeats: int, nfeats: int, p=1):
        super().__init__()
        self.rel_emb = nn.Embedding(num_rels, rfeats)
        self.rel_project = nn.Embedding(num_rels, nfeats * rfeats)
        self.rfeats, self.nfeats, self.p = rfeats, nfeats, p

    def reset_parameters(self) -> None:
        self.rel_emb.reset_parameters()
        self.rel_project.reset_parameters()

    def forward(self, h_head: torch.Tensor, h_tail: torch.Tensor, rels: torch.Tensor) -> torch.Tensor:
        """h_head, h_tail : float [E, nfeats]; rels : int [E].  Returns float [E]."""
        projection = self.rel_project(rels).reshape(-1, self.nfeats, self.rfeats)
        head = (h_head.unsqueeze(1) @ projection).squeeze(1)
        tail = (h_tail.unsqueeze(1) @ projection).squeeze(1)
        return -torch.norm(head + self.rel_emb(rels) - tail, p=self.p, dim=-1)


class Sequential(nn.Sequential):
    """DGL's ``dgl.nn.Sequential``: ``forward(graph, *feats)`` runs each module on ``graph`` (or, given a list
    of graphs, module ``i`` on graph ``i``: one block per layer) with the previous module's output; a module
    that returns a tuple hands every element on."""

    def forward(self, graph, *feats):
        from ..heterograph import DGLGraph

        if isinstance(graph, list):
            pairs = zip(graph, self)
        elif isinstance(graph, DGLGraph):
            pairs = ((graph, module) for module in self)
        else:
            raise TypeError("The first argument of forward must be a DGLGraph or a list of DGLGraph s")
        for g, module in pairs:
            if not isinstance(feats, tuple):
                feats = (feats,)
            feats = module(g, *feats)
        return feats
