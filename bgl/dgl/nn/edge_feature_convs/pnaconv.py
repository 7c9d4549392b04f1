"""``dgl.nn.PNAConv`` (Corso et al., 2020): principal neighbourhood aggregation.

Each of ``num_towers`` towers takes its slice of the features, computes per-edge messages
``M([x_u, x_v, e_uv])``, reduces them with every aggregator (mean, sum, max, min, std, var, moment3-5),
scales the results with every degree scaler (identity, ``log(D+1)/delta``, ``delta/log(D+1)``), and maps
``[x_v, scaled]`` through ``U``, times ``1/sqrt(nodes of its graph)``, then batch norm and dropout; the
towers' outputs go through ``Linear + LeakyReLU`` (plus the input when widths agree).

DGL reduces with a Python function over in-degree buckets; here every aggregator is a segment
reduction over the in-edges (one SpMM each; the moments need the neighbourhood mean sent back to the
edges), so nothing is bucketed.  ``M`` is applied as three slices of its weight (sources, destinations,
edges) to the nodes before gathering: the same map as DGL's on the concatenation, without its
``E x (2 d + edge)`` input.  A node without in-edges gets zeros for the aggregated part, as in DGL.
DGL's module layout (``towers.i.M``, ``.U``, ``.batchnorm``, ``mixing_layer.0``), so its state dicts load.
On graphs only, as DGL's (it stores node data, which a block refuses).
"""
from __future__ import annotations

import torch
from torch import Tensor, nn

from ...ops import gsddmm, gspmm
from ..dropout import Dropout
from ..graph_inputs import refuse_block

MOMENTS = {"moment3": 3, "moment4": 4, "moment5": 5}
AGGREGATORS = ("mean", "sum", "max", "min", "std", "var") + tuple(MOMENTS)
SCALERS = ("identity", "amplification", "attenuation")


def _edge_sum(graph, values: Tensor) -> Tensor:
    return gspmm(graph, "copy_rhs", "sum", None, values)


def neighbour_statistics(graph, msg: Tensor, aggregators, degrees: Tensor) -> Tensor:
    """Each aggregator over each node's in-edge messages, side by side: [num_nodes, len(aggregators) * d].

    ``degrees`` is the in-degree clamped to 1 (rows without in-edges are zeroed by the caller).
    DGL's formulas: ``var = relu(mean(m^2) - mean(m)^2)``, ``std = sqrt(var + 1e-30)``,
    ``moment_n = sign(c) |c|^(1/n)`` with ``c = mean((m - mean(m))^n)`` (``+1e-30`` inside the root).
    """
    scale = degrees.to(msg.dtype).unsqueeze(-1)
    done = {}

    def mean() -> Tensor:
        if "mean" not in done:
            done["mean"] = _edge_sum(graph, msg) / scale
        return done["mean"]

    def var() -> Tensor:
        if "var" not in done:
            done["var"] = torch.relu(_edge_sum(graph, msg * msg) / scale - mean() * mean())
        return done["var"]

    out = []
    for name in aggregators:
        if name == "mean":
            out.append(mean())
        elif name == "sum":
            out.append(_edge_sum(graph, msg))
        elif name in ("max", "min"):
            extreme = gspmm(graph, "copy_rhs", name, None, msg)
            out.append(torch.where(torch.isinf(extreme), torch.zeros_like(extreme), extreme))
        elif name == "var":
            out.append(var())
        elif name == "std":
            out.append(torch.sqrt(var() + 1e-30))
        else:
            n = MOMENTS[name]
            centred = msg - gsddmm(graph, "copy_rhs", None, mean(), "u", "v")
            moment = _edge_sum(graph, torch.pow(centred, n)) / scale
            out.append(torch.sign(moment) * torch.pow(torch.abs(moment) + 1e-30, 1.0 / n))
    return torch.cat(out, dim=1)


class PNAConvTower(nn.Module):
    """One tower of :class:`PNAConv`: messages ``M``, aggregators and scalers, update ``U``, batch norm, dropout."""

    def __init__(self, in_size: int, out_size: int, aggregators, scalers, delta: float, dropout: float = 0.0,
                 edge_feat_size: int = 0):
        super().__init__()
        self.in_size, self.out_size = in_size, out_size
        self.aggregators, self.scalers = aggregators, scalers
        self.delta = delta
        self.edge_feat_size = edge_feat_size
        self.M = nn.Linear(2 * in_size + edge_feat_size, in_size)
        self.U = nn.Linear((len(aggregators) * len(scalers) + 1) * in_size, out_size)
        self.dropout = Dropout(dropout)
        self.batchnorm = nn.BatchNorm1d(out_size)

    def messages(self, graph, node_feat: Tensor, edge_feat) -> Tensor:
        """``M([x_u, x_v, e_uv])`` per edge, [num_edges, in_size], from M's weight slices (module doc)."""
        d = self.in_size
        weight = self.M.weight
        msg = gsddmm(graph, "add", node_feat @ weight[:, :d].T, node_feat @ weight[:, d:2 * d].T, "u", "v")
        if self.edge_feat_size > 0:
            msg = msg + edge_feat @ weight[:, 2 * d:].T
        return msg + self.M.bias

    def aggregate(self, graph, msg: Tensor, degrees: Tensor, node_feat: Tensor) -> Tensor:
        """Every aggregator over each node's in-edge messages, side by side (DGNConv adds its own)."""
        return neighbour_statistics(graph, msg, self.aggregators, degrees)

    def forward(self, graph, node_feat: Tensor, edge_feat=None) -> Tensor:
        counts = graph.batch_num_nodes().to(node_feat.device)
        snorm_n = torch.repeat_interleave((1.0 / counts.to(node_feat.dtype)).sqrt(), counts).unsqueeze(-1)
        if self.edge_feat_size > 0 and edge_feat is None:
            raise AssertionError("Edge features must be provided.")
        msg = self.messages(graph, node_feat, edge_feat)
        in_degrees = graph.in_degrees().to(node_feat.device)
        degrees = in_degrees.clamp(min=1)
        h = self.aggregate(graph, msg, degrees, node_feat)
        log_degree = torch.log(degrees.to(torch.float64) + 1)
        factors = {"amplification": log_degree / self.delta, "attenuation": self.delta / log_degree}
        h = torch.cat([h if s == "identity" else h * factors[s].to(h.dtype).unsqueeze(-1) for s in self.scalers],
                      dim=1)
        h = torch.where((in_degrees > 0).unsqueeze(-1), h, torch.zeros_like(h))
        h = self.U(torch.cat([node_feat, h], dim=-1)) * snorm_n
        return self.dropout(self.batchnorm(h))


class PNAConv(nn.Module):
    """``dgl.nn.PNAConv``: output [num_nodes, out_size].

    Parameters
    ----------
    in_size, out_size : int (both divisible by ``num_towers``; AssertionError otherwise, as DGL)
    aggregators : list of "mean", "sum", "max", "min", "std", "var", "moment3", "moment4", "moment5"
    scalers : list of "identity", "amplification", "attenuation"
    delta : float, the training graphs' mean of ``log(in-degree + 1)``
    dropout : dropout in each tower
    num_towers : int
    edge_feat_size : int, width of the edge features (0: none)
    residual : add the input (only when ``in_size == out_size``)
    """

    aggregator_names, tower_class = AGGREGATORS, PNAConvTower  # DGNConv's: its directional ones too

    def __init__(self, in_size: int, out_size: int, aggregators, scalers, delta: float, dropout: float = 0.0,
                 num_towers: int = 1, edge_feat_size: int = 0, residual: bool = True):
        super().__init__()
        for name in aggregators:
            if name not in self.aggregator_names:
                raise KeyError(name)
        for name in scalers:
            if name not in SCALERS:
                raise KeyError(name)
        self.in_size, self.out_size = in_size, out_size
        if in_size % num_towers != 0:
            raise AssertionError("in_size must be divisible by num_towers")
        if out_size % num_towers != 0:
            raise AssertionError("out_size must be divisible by num_towers")
        self.tower_in_size, self.tower_out_size = in_size // num_towers, out_size // num_towers
        self.edge_feat_size = edge_feat_size
        self.residual = residual and in_size == out_size
        self.towers = nn.ModuleList([
            self.tower_class(self.tower_in_size, self.tower_out_size, aggregators, scalers, delta, dropout=dropout,
                         edge_feat_size=edge_feat_size) for _ in range(num_towers)])
        self.mixing_layer = nn.Sequential(nn.Linear(out_size, out_size), nn.LeakyReLU())

    def forward(self, graph, node_feat: Tensor, edge_feat=None) -> Tensor:
        """
        Parameters
        ----------
        graph : bgl.dgl graph (a ``dgl.batch`` of graphs too; not a block)
        node_feat : float [num_nodes, in_size]
        edge_feat : float [num_edges, edge_feat_size], required when ``edge_feat_size > 0``

        Returns
        -------
        float [num_nodes, out_size]
        """
        refuse_block(graph, "PNAConv")
        width = self.tower_in_size
        h_cat = torch.cat([tower(graph, node_feat[:, i * width:(i + 1) * width], edge_feat)
                           for i, tower in enumerate(self.towers)], dim=1)
        h_out = self.mixing_layer(h_cat)
        return h_out + node_feat if self.residual else h_out
