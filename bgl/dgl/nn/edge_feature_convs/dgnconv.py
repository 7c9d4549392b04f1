"""``dgl.nn.DGNConv`` (Beaini et al., ICML '21): PNAConv plus directional aggregators that weigh each
in-edge by how much a Laplacian eigenvector changes along it.

For eigenvector ``k`` (1..3) the edge ``u -> v`` has ``w = eig[u, k-1] - eig[v, k-1]``, normalised by the
sum of ``|w|`` over v's in-edges (``+1e-30``): ``dir{k}-av`` sums the messages weighted by ``|w|``
(directional smoothing), ``dir{k}-dx`` is ``|sum(w * m) - sum(w) * x_v|`` (a directional derivative).
Each is a few SDDMM / SpMM passes over the edges, beside PNA's segment reductions (no degree buckets).
"""
from __future__ import annotations

import torch
from torch import Tensor

from ...ops import gsddmm, gspmm
from .pnaconv import AGGREGATORS, PNAConv, PNAConvTower, neighbour_statistics

DIRECTIONAL = tuple(f"dir{k}-{kind}" for k in range(1, 4) for kind in ("av", "dx"))


def _edge_sum(graph, values: Tensor) -> Tensor:
    return gspmm(graph, "copy_rhs", "sum", None, values)


class DGNConvTower(PNAConvTower):
    """A PNA tower whose aggregators may also be directional (reads ``graph.ndata["eig"]``)."""

    def aggregate(self, graph, msg: Tensor, degrees: Tensor, node_feat: Tensor) -> Tensor:
        out, weights = [], {}
        for name in self.aggregators:
            if name not in DIRECTIONAL:
                out.append(neighbour_statistics(graph, msg, [name], degrees))
                continue
            k = int(name[3]) - 1
            if k not in weights:  # w / (sum over the in-edges of |w| + 1e-30), per edge [E, 1]
                eig = graph.ndata["eig"][:, k:k + 1]
                w = gsddmm(graph, "sub", eig, eig, "u", "v")
                total = _edge_sum(graph, w.abs()) + 1e-30
                weights[k] = w / gsddmm(graph, "copy_rhs", None, total, "u", "v")
            w = weights[k]
            if name.endswith("av"):
                out.append(_edge_sum(graph, msg * w.abs()))
            else:
                out.append((_edge_sum(graph, msg * w) - _edge_sum(graph, w) * node_feat).abs())
        return torch.cat(out, dim=1)


class DGNConv(PNAConv):
    """``dgl.nn.DGNConv``: :class:`PNAConv`'s arguments; ``aggregators`` may also name ``dir1-av`` ..
    ``dir3-dx``, which read ``eig_vec`` [num_nodes, >= k] in :meth:`forward`."""

    aggregator_names, tower_class = AGGREGATORS + DIRECTIONAL, DGNConvTower

    def __init__(self, in_size, out_size, aggregators, scalers, delta, dropout=0.0, num_towers=1, edge_feat_size=0,
                 residual=True):
        super().__init__(in_size, out_size, aggregators, scalers, delta, dropout, num_towers, edge_feat_size,
                         residual)
        self.use_eig_vec = any(name.startswith("dir") for name in aggregators)

    def forward(self, graph, node_feat: Tensor, edge_feat=None, eig_vec=None) -> Tensor:
        """As :meth:`PNAConv.forward`, with ``eig_vec`` float [num_nodes, k] when a directional aggregator
        is used (the graph's Laplacian eigenvectors, e.g. ``dgl.lap_pe``)."""
        with graph.local_scope():
            if self.use_eig_vec:
                graph.ndata["eig"] = eig_vec
            return super().forward(graph, node_feat, edge_feat)
