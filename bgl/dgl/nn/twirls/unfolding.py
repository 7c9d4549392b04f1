"""``dgl.nn.TWIRLSUnfoldingAndAttention``: ``prop_step`` propagation steps, with IRLS attention before them
and / or after step ``attn_aft``.

Each step (``precond``, the preconditioned form): ``Y <- (1 - a) Y + a lam D~^-1/2 A_w D~^-1/2 Y + a D~^-1 X``
with ``D~ = lam D + (1 - lam) I``; without it: ``Y <- (1 - a lam - a) Y + a lam D^-1/2 A_w D^-1/2 Y + a X``.
``A_w`` weighs each edge by ``w`` (1 at first) and ``D`` holds each node's sum of in-edge weights (its
in-degree at first).  Attention sets ``w_uv = 1 / max(tau, (||y_u - y_v||^2 + 1e-7)^(1 - p/2))`` (0 above
``T`` when ``T > 0``), plus 1e-9, from the current ``Y`` (times ``etas`` when ``use_eta``), recomputes ``D``,
then drops edge weights with ``attn_dropout``.  Each product with ``A_w`` is one SpMM; the weights and
degrees live in local tensors, so, unlike DGL's, the caller's graph gets no ``w`` / ``deg`` fields.
"""
from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ...ops import gsddmm, gspmm


class Attention(nn.Module):
    """TWIRLS's IRLS reweighting: new edge weights [E] and node degrees [N] from the features (module doc)."""

    def __init__(self, tau: float, T: float, p: float, attn_dropout: float = 0.0):
        super().__init__()
        self.tau, self.T, self.p, self.attn_dropout = tau, T, p, attn_dropout

    def forward(self, graph, Y: Tensor, etas: Optional[Tensor] = None):
        if etas is not None:
            Y = Y * etas.view(-1)
        norms = (Y ** 2).sum(-1)
        distance = gsddmm(graph, "add", norms, norms, "u", "v").view(-1) \
            - 2 * gsddmm(graph, "dot", Y, Y, "u", "v").view(-1)
        w = torch.pow(F.relu(distance) + 1e-7, 1 - 0.5 * self.p)  # relu: rounding can make a distance < 0
        w = torch.where(w < self.tau, torch.full_like(w, self.tau), w)
        if self.T > 0:
            w = torch.where(w > self.T, torch.full_like(w, float("inf")), w)
        w = 1 / w + 1e-9  # no zero degree
        degrees = gspmm(graph, "copy_rhs", "sum", None, w)
        if self.attn_dropout > 0:  # after the degrees: they keep their expectation
            w = F.dropout(w, self.attn_dropout, training=self.training)
        return w, degrees


def _scale_rows(x: Tensor, degrees: Tensor, power: float, coeff: float = 1.0, bias: float = 0.0) -> Tensor:
    """``x * (coeff * degrees + bias)^power`` row by row (DGL's ``D_power_bias_X``)."""
    return x * torch.pow(coeff * degrees + bias, power).view(x.size(0), 1)


class TWIRLSUnfoldingAndAttention(nn.Module):
    """``dgl.nn.TWIRLSUnfoldingAndAttention``: output [N, d], the features after ``prop_step`` steps.

    Parameters
    ----------
    d : int, feature width (of ``etas``)
    alp : float, step size ``a``; 0 or less picks ``1 / (lam + 1)``
    lam : float, weight of the graph term
    prop_step : int
    attn_aft : int, attention after this many steps (-1: none)
    tau, T, p : attention's lower clip, upper cut (none when <= 0) and norm order
    use_eta : learnable per-dimension weight ``etas`` [d] inside attention
    init_att : attention before the first step too
    attn_dropout : dropout on the attention weights
    precond : the preconditioned step (module doc)
    """

    def __init__(self, d: int, alp: float, lam: float, prop_step: int, attn_aft: int = -1, tau: float = 0.2,
                 T: float = -1, p: float = 1, use_eta: bool = False, init_att: bool = False,
                 attn_dropout: float = 0, precond: bool = True):
        super().__init__()
        self.d = d
        self.alp = alp if alp > 0 else 1 / (lam + 1)
        self.lam, self.tau, self.p = lam, tau, p
        self.prop_step, self.attn_aft = prop_step, attn_aft
        self.use_eta, self.init_att, self.precond = use_eta, init_att, precond
        self.init_attn = Attention(tau, T, p, attn_dropout) if init_att else None
        self.attn_layer = Attention(tau, T, p, attn_dropout) if attn_aft >= 0 else None
        self.etas = nn.Parameter(torch.ones(d)) if use_eta else None

    def _step(self, graph, Y: Tensor, X: Tensor, w: Tensor, degrees: Tensor) -> Tensor:
        alp, lam = self.alp, self.lam
        if self.precond:
            spread = _scale_rows(Y, degrees, -0.5, lam, 1 - lam)
            spread = _scale_rows(gspmm(graph, "mul", "sum", spread, w), degrees, -0.5, lam, 1 - lam)
            return (1 - alp) * Y + alp * lam * spread + alp * _scale_rows(X, degrees, -1, lam, 1 - lam)
        spread = _scale_rows(gspmm(graph, "mul", "sum", _scale_rows(Y, degrees, -0.5), w), degrees, -0.5)
        return (1 - alp * lam - alp) * Y + alp * lam * spread + alp * X

    def forward(self, g, X: Tensor) -> Tensor:
        """
        Parameters
        ----------
        g : bgl.dgl graph (TWIRLSConv adds self-loops first; without them a node of in-degree 0 divides by 0,
            as in DGL)
        X : float [N, d]
        """
        Y = X
        w = torch.ones(g.num_edges(), 1, device=X.device, dtype=X.dtype)
        degrees = g.in_degrees().to(X)
        if self.init_att:
            w, degrees = self.init_attn(g, Y, self.etas)
        for k in range(self.prop_step):
            Y = self._step(g, Y, X, w.view(-1, 1), degrees)
            if k == self.attn_aft - 1:
                w, degrees = self.attn_layer(g, Y, self.etas)
        return Y
