"""``dgl.nn.TWIRLSConv``: an MLP, TWIRLS's unfolding (``prop_step`` propagation steps, IRLS attention halfway
with ``attention``), another MLP, on the graph with its self-loops replaced by one per node.

As DGL's: with no MLP before the unfolding, no attention and no input dropout, the unfolding's result is
computed once and reused by every later call (whatever graph and features they pass), and the MLPs'
parameter names (``mlp_bef.layers.i``, ``mlp_bef.norms.i``, ``unfolding.etas``, ``mlp_aft...``) are DGL's.
"""
from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from ..graph_inputs import refuse_block
from .unfolding import TWIRLSUnfoldingAndAttention


class MLP(nn.Module):
    """TWIRLS's MLP: Linear layers with ``norm`` ("batch", "layer" or "none"), ReLU and dropout between them
    (and before the first with ``init_activate``); Glorot-normal weights, zero biases."""

    def __init__(self, input_d: int, hidden_d: int, output_d: int, num_layers: int, dropout: float, norm: str,
                 init_activate: bool):
        super().__init__()
        self.init_activate, self.norm, self.dropout = init_activate, norm, dropout
        widths = [input_d] + [hidden_d] * (num_layers - 1) + [output_d] if num_layers > 0 else []
        self.layers = nn.ModuleList([nn.Linear(a, b) for a, b in zip(widths[:-1], widths[1:])])
        self.norm_cnt = num_layers - 1 + int(init_activate)
        if norm == "batch":
            self.norms = nn.ModuleList([nn.BatchNorm1d(hidden_d) for _ in range(self.norm_cnt)])
        elif norm == "layer":
            self.norms = nn.ModuleList([nn.LayerNorm(hidden_d) for _ in range(self.norm_cnt)])
        self.reset_params()

    def reset_params(self) -> None:
        for layer in self.layers:
            nn.init.xavier_normal_(layer.weight)
            nn.init.constant_(layer.bias, 0)

    def forward(self, x: Tensor) -> Tensor:
        norms = iter(self.norms) if self.norm != "none" else None

        def activate(h: Tensor) -> Tensor:
            if norms is not None:
                h = next(norms)(h)
            return F.dropout(F.relu(h), self.dropout, training=self.training)

        if self.init_activate:
            x = activate(x)
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i != len(self.layers) - 1:
                x = activate(x)
        return x


class TWIRLSConv(nn.Module):
    """``dgl.nn.TWIRLSConv``: output [N, output_d].

    Parameters
    ----------
    input_d, output_d, hidden_d : int
    prop_step : int, propagation steps
    num_mlp_before, num_mlp_after : int, Linear layers before / after the unfolding
    norm : "batch", "layer" or "none", inside the MLPs
    precond : the preconditioned step (see :class:`TWIRLSUnfoldingAndAttention`)
    alp, lam : step size (0: ``1 / (lam + 1)``) and graph-term weight
    attention : IRLS attention after ``prop_step // 2`` steps
    tau, T, p, use_eta : attention's settings
    attn_bef : attention before the first step too
    dropout, attn_dropout, inp_dropout : in the MLPs, on attention weights, on the input
    """

    def __init__(self, input_d: int, output_d: int, hidden_d: int, prop_step: int, num_mlp_before: int = 1,
                 num_mlp_after: int = 1, norm: str = "none", precond: bool = True, alp: float = 0, lam: float = 1,
                 attention: bool = False, tau: float = 0.2, T: float = -1, p: float = 1, use_eta: bool = False,
                 attn_bef: bool = False, dropout: float = 0.0, attn_dropout: float = 0.0, inp_dropout: float = 0.0):
        super().__init__()
        self.input_d, self.output_d, self.hidden_d, self.prop_step = input_d, output_d, hidden_d, prop_step
        self.num_mlp_before, self.num_mlp_after, self.norm = num_mlp_before, num_mlp_after, norm
        self.precond, self.attention, self.alp, self.lam = precond, attention, alp, lam
        self.tau, self.T, self.p, self.use_eta, self.init_att = tau, T, p, use_eta, attn_bef
        self.dropout, self.attn_dropout, self.inp_dropout = dropout, attn_dropout, inp_dropout
        self.attn_aft = prop_step // 2 if attention else -1
        self.cacheable = not attention and num_mlp_before == 0 and inp_dropout <= 0
        if self.cacheable:
            self.cached_unfolding = None
        self.size_bef_unf = output_d if num_mlp_after == 0 else hidden_d
        self.size_aft_unf = input_d if num_mlp_before == 0 else hidden_d
        self.mlp_bef = MLP(input_d, hidden_d, self.size_bef_unf, num_mlp_before, dropout, norm,
                           init_activate=False)
        self.unfolding = TWIRLSUnfoldingAndAttention(hidden_d, alp, lam, prop_step, self.attn_aft, tau, T, p,
                                                     use_eta, attn_bef, attn_dropout, precond)
        self.mlp_aft = MLP(self.size_aft_unf, hidden_d, output_d, num_mlp_after, dropout, norm,
                           init_activate=num_mlp_before > 0 and num_mlp_after > 0)

    def forward(self, graph, feat: Tensor) -> Tensor:
        """
        Parameters
        ----------
        graph : bgl.dgl graph (not a block); its self-loops are replaced by one per node
        feat : float [N, input_d]
        """
        from ...transforms import add_self_loop, remove_self_loop

        refuse_block(graph, "TWIRLSConv")
        graph = add_self_loop(remove_self_loop(graph))
        if self.cacheable:
            if self.cached_unfolding is None:
                self.cached_unfolding = self.unfolding(graph, feat)
            x = self.cached_unfolding
        else:
            x = feat
            if self.inp_dropout > 0:
                x = F.dropout(x, self.inp_dropout, training=self.training)
            x = self.unfolding(graph, self.mlp_bef(x))
        return self.mlp_aft(x)
