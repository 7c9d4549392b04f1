"""``dgl.nn.GatedGraphConv`` (Li et al., 2016, gated graph sequence networks): ``n_steps`` rounds of a
per-edge-type linear message summed into each node, then a GRU cell from the node's state.

A round is one linear map of every node's state per edge type and one SpMM per type over that type's
edges (a ``[N, out]`` map per type, nothing per edge), where DGL builds each edge's message (``E x out``);
the sums are the same.  Features narrower than ``out_feats`` are padded with zeros, as DGL's.  DGL's
parameter names (``linears.*``, ``gru.*``), so its state dicts load.
"""
from __future__ import annotations

import torch
from torch import Tensor, nn

from ..base import DGLError
from .graphconv import neighbour_sum


class GatedGraphConv(nn.Module):
    """``h <- GRU(sum_{t} sum_{u -t-> v} W_t h_u + b_t, h)`` for ``n_steps`` rounds (module doc)."""

    def __init__(self, in_feats: int, out_feats: int, n_steps: int, n_etypes: int, bias: bool = True):
        super().__init__()
        if in_feats > out_feats:
            raise DGLError("out_feats must be not less than in_feats")
        self._in_feats, self._out_feats, self._n_steps, self._n_etypes = in_feats, out_feats, n_steps, n_etypes
        self.linears = nn.ModuleList([nn.Linear(out_feats, out_feats) for _ in range(n_etypes)])
        self.gru = nn.GRUCell(out_feats, out_feats, bias=bias)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        gain = nn.init.calculate_gain("relu")
        self.gru.reset_parameters()
        for linear in self.linears:
            nn.init.xavier_normal_(linear.weight, gain=gain)
            nn.init.zeros_(linear.bias)

    def set_allow_zero_in_degree(self, set_value: bool) -> None:
        self._allow_zero_in_degree = set_value

    def forward(self, graph, feat: Tensor, etypes=None) -> Tensor:
        if not graph.is_homogeneous:
            raise DGLError("not a homogeneous graph; convert it with to_homogeneous and pass in the edge type "
                           "as argument")
        typed = not (self._n_etypes == 1 and etypes is None)
        if typed and self._n_etypes != 1 and etypes is not None and etypes.numel() and \
                not (int(etypes.min()) >= 0 and int(etypes.max()) < self._n_etypes):
            raise DGLError(f"edge type indices out of range [0, {self._n_etypes})")
        feat = torch.cat([feat, feat.new_zeros((feat.shape[0], self._out_feats - feat.shape[1]))], -1)
        masks = None
        if typed:
            kinds = torch.zeros(graph.num_edges(), dtype=torch.long, device=feat.device) if etypes is None \
                else torch.as_tensor(etypes, device=feat.device).long()
            masks = [(kinds == t).to(feat.dtype) for t in range(self._n_etypes)]
        for _ in range(self._n_steps):
            if masks is None:
                a = neighbour_sum(graph, self.linears[0](feat))
            else:  # each type's edges weighted 1, the others 0: one SpMM per type present
                a = feat.new_zeros(feat.shape[0], self._out_feats)
                for linear, mask in zip(self.linears, masks):
                    if bool(mask.any()):
                        a = a + neighbour_sum(graph, linear(feat), mask)
            feat = self.gru(a, feat)
        return feat
