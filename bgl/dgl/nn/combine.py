"""Combining representations, as DGL's modules do: the layers' outputs of each node
(``JumpingKnowledge``: concatenation, element-wise max or LSTM attention over the layers), the two
ends of each edge (``EdgePredictor``: dot product, cosine, element-wise product or concatenation,
then an optional linear map; ``TransE`` / ``TransR``: a knowledge graph's translation scores
``-||h + r - t||_p``, TransR's in a per-relation projected space), layers run one after another on a
graph (``Sequential``), and copies of a layer run as a reversible residual chain over feature groups
(``GroupRevRes``).

Pure tensor code, no graph op of their own; parameter names and shapes are DGL's (``lstm.*`` / ``att.*``,
``linear.*``, ``rel_emb`` / ``rel_project``), so DGL's state dicts load unchanged.
"""
from __future__ import annotations

import copy

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


class _ReversibleCheckpoint(torch.autograd.Function):
    """Runs ``module._forward`` without keeping its activations and frees the input's storage; the
    backward pass rebuilds the input from the output with ``module._inverse``, puts it back into the
    input's storage, and runs the forward again with gradients (DGL's InvertibleCheckpoint scheme:
    one layer's activations alive at a time, whatever the depth)."""

    @staticmethod
    def forward(ctx, module, graph, x, num_args, *args_and_params):
        args = args_and_params[:num_args]
        ctx.module, ctx.graph, ctx.args = module, graph, args
        ctx.params = args_and_params[num_args:]
        ctx.x_requires_grad = x.requires_grad
        with torch.no_grad():
            y = module._forward(graph, x.detach(), *(a.detach() for a in args)).detach_()
        # the input is rebuilt in backward, so its memory goes now (when x owns all of it, not a view's)
        if x.is_contiguous() and x.storage_offset() == 0 and x.untyped_storage().nbytes() == x.numel() * x.element_size():
            x.untyped_storage().resize_(0)
        ctx.x, ctx.y = x, [y]
        return y

    @staticmethod
    def backward(ctx, grad_y):
        if not ctx.y:
            raise RuntimeError("Trying to perform backward on the InvertibleCheckpoint for more than once.")
        y, x, module = ctx.y.pop(), ctx.x, ctx.module
        with torch.no_grad():
            rebuilt = module._inverse(ctx.graph, y, *ctx.args)
            y.untyped_storage().resize_(0)
            if x.untyped_storage().nbytes() == 0:
                x.untyped_storage().resize_(rebuilt.numel() * rebuilt.element_size())
                x.copy_(rebuilt)  # in place: every view of the caller's input sees its values again
        x_in = x.detach().requires_grad_(ctx.x_requires_grad)
        args = tuple(a.detach().requires_grad_(a.requires_grad) for a in ctx.args)
        with torch.enable_grad():
            out = module._forward(ctx.graph, x_in, *args)
        wanted = [t for t in (x_in, *args) if t.requires_grad] + list(ctx.params)
        grads = iter(torch.autograd.grad(out, wanted, grad_y, allow_unused=True))
        x_grad = next(grads) if x_in.requires_grad else None
        arg_grads = [next(grads) if a.requires_grad else None for a in args]
        return (None, None, x_grad, None, *arg_grads, *grads)


class GroupRevRes(nn.Module):
    """``dgl.nn.GroupRevRes`` (Li et al., "Training Graph Neural Networks with 1000 Layers"): the features
    split into ``groups`` slices ``x_1 .. x_G``; with ``y_0 = x_2 + .. + x_G``, ``y_i = x_i + f_i(g, y_{i-1})``
    and the output the ``y_i`` side by side.  ``f_1`` is ``gnn_module``, the others deep copies of it.

    When gradients are wanted, the input's memory is released after the forward pass and rebuilt from
    the output in the backward pass (as DGL's: the tensor passed in is empty until backward runs; a
    view of a larger tensor keeps its memory), and the backward pass releases the output's memory once
    it has rebuilt the input (as DGL's: read the output before ``backward``), so a stack keeps one
    layer's activations at a time.  Extra tensor arguments of ``forward`` are split into groups too.
    The rebuilt input differs from the original by float rounding, as DGL's.
    """

    def __init__(self, gnn_module, groups=2):
        super().__init__()
        self.gnn_modules = nn.ModuleList([gnn_module] + [copy.deepcopy(gnn_module) for _ in range(groups - 1)])
        self.groups = groups

    def _split(self, args):
        return list(zip(*(torch.chunk(a, self.groups, dim=-1) for a in args))) if args else [()] * self.groups

    def _forward(self, g, x, *args):
        xs, arg_groups = torch.chunk(x, self.groups, dim=-1), self._split(args)
        y, ys = sum(xs[1:]), []
        for i, f in enumerate(self.gnn_modules):
            y = xs[i] + f(g, y, *arg_groups[i])
            ys.append(y)
        return torch.cat(ys, dim=-1)

    def _inverse(self, g, y, *args):
        ys, arg_groups = torch.chunk(y, self.groups, dim=-1), self._split(args)
        xs = []  # x_G first: x_1's input is their sum in that order, DGL's
        for i in range(self.groups - 1, -1, -1):
            y_in = ys[i - 1] if i else sum(xs)
            xs.append(ys[i] - self.gnn_modules[i](g, y_in, *arg_groups[i]))
        return torch.cat(xs[::-1], dim=-1)

    def forward(self, g, x, *args):
        """``x`` float [N, in]: in divisible by ``groups`` (each group's slice feeds a copy of the module);
        returns float [N, out * groups]."""
        params = [p for p in self.parameters() if p.requires_grad]
        if not torch.is_grad_enabled() or not (params or any(t.requires_grad for t in (x, *args))):
            return self._forward(g, x, *args)  # no backward to come: nothing to rebuild, the input is kept
        return _ReversibleCheckpoint.apply(self, g, x, len(args), *args, *params)
