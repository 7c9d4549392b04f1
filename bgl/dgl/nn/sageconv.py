"""GraphSAGE (``dgl.nn.SAGEConv``) for ``bgl.dgl`` graphs: mean, gcn, pool and lstm aggregators.

Names, shapes and initialisation follow DGL (``fc_self``, ``fc_neigh``, ``fc_pool``, ``lstm``,
``bias`` for "gcn"), so DGL checkpoints load.  mean/gcn/pool are one fused gspmm each; "lstm"
runs the LSTM once per distinct in-degree over a (nodes, degree, feat) batch, as DGL does.
"""
from __future__ import annotations

from typing import Callable, Optional

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from ..base import DGLError
from .dropout import Dropout
from .graph_inputs import check_edge_weight, check_same_feature_shape, split_widths
from .graphconv import neighbour_sum

AGGREGATORS = ("mean", "gcn", "pool", "lstm")


def in_edge_batches(graph):
    """Yield (dst ids [B], edge ids [B, d]) for each distinct in-degree d > 0.

    Within a dst node the edges keep edge-id order (what a DGL reduce UDF's mailbox sees).
    One stable sort of the edges by dst, then one gather per distinct degree: the Python loop
    runs over degrees, not nodes.
    """
    _, dst = graph.edges()
    by_dst = torch.sort(dst, stable=True).indices
    degrees = graph.in_degrees().to(dst.device).long()
    starts = torch.cumsum(degrees, 0) - degrees
    for degree in torch.unique(degrees).tolist():
        if degree == 0:
            continue
        nodes = torch.nonzero(degrees == degree).squeeze(1)
        positions = starts.index_select(0, nodes).unsqueeze(1) + torch.arange(degree, device=dst.device)
        yield nodes, by_dst[positions]


class SAGEConv(nn.Module):
    """``dgl.nn.SAGEConv``: ``h_v = fc_self(h_v) + fc_neigh(agg_{u -> v} h_u)`` (then activation, norm).

    Parameters
    ----------
    in_feats : int, or (src, dst) widths
    out_feats : int
    aggregator_type : "mean" | "gcn" | "pool" | "lstm"
    feat_drop : dropout on the input features
    bias : learnable bias (inside ``fc_self``; a separate ``bias`` for "gcn")
    norm, activation : callables applied to the output (activation first), or None
    """

    def __init__(self, in_feats, out_feats: int, aggregator_type: str, feat_drop: float = 0.0,
                 bias: bool = True, norm: Optional[Callable] = None,
                 activation: Optional[Callable] = None):
        super().__init__()
        if aggregator_type not in AGGREGATORS:
            raise DGLError(f"Invalid aggregator_type. Must be one of {set(AGGREGATORS)}. "
                           f"But got {aggregator_type!r} instead.")
        self._in_src_feats, self._in_dst_feats = split_widths(in_feats)
        self._out_feats = out_feats
        self._aggre_type = aggregator_type
        self.norm = norm
        self.feat_drop = Dropout(feat_drop)
        self.activation = activation
        width = self._in_src_feats
        if aggregator_type == "pool":
            self.fc_pool = nn.Linear(width, width)
        if aggregator_type == "lstm":
            self.lstm = nn.LSTM(width, width, batch_first=True)
        self.fc_neigh = nn.Linear(width, out_feats, bias=False)
        if aggregator_type != "gcn":
            self.fc_self = nn.Linear(self._in_dst_feats, out_feats, bias=bias)
        elif bias:
            self.bias = nn.Parameter(torch.zeros(out_feats))
        else:
            self.register_buffer("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Glorot-uniform with ReLU gain on the linear maps, torch's default for the LSTM (DGL's)."""
        gain = nn.init.calculate_gain("relu")
        if self._aggre_type == "pool":
            nn.init.xavier_uniform_(self.fc_pool.weight, gain=gain)
        if self._aggre_type == "lstm":
            self.lstm.reset_parameters()
        if self._aggre_type != "gcn":
            nn.init.xavier_uniform_(self.fc_self.weight, gain=gain)
        nn.init.xavier_uniform_(self.fc_neigh.weight, gain=gain)

    def forward(self, graph, feat, edge_weight: Optional[Tensor] = None) -> Tensor:
        """
        Parameters
        ----------
        graph : bgl.dgl graph or block
        feat : float [num_src, in_feats], or a (src [num_src, d_src], dst [num_dst, d_dst]) pair
        edge_weight : float [num_edges] multiplying each message, or None

        Returns
        -------
        float [num_dst, out_feats]
        """
        check_edge_weight(graph, edge_weight)
        if isinstance(feat, tuple):
            feat_src, feat_dst = self.feat_drop(feat[0]), self.feat_drop(feat[1])
        else:
            feat_src = feat_dst = self.feat_drop(feat)
            if graph.is_block:
                feat_dst = feat_src[: graph.num_dst_nodes()]
        # the neighbour map is linear, so it may run before aggregation when that shrinks the width
        transform_first = self._in_src_feats > self._out_feats
        kind = self._aggre_type
        if kind == "mean":
            h = self.fc_neigh(feat_src) if transform_first else feat_src
            h_neigh = neighbour_sum(graph, h, edge_weight, "mean")
            if not transform_first:
                h_neigh = self.fc_neigh(h_neigh)
        elif kind == "gcn":
            if isinstance(feat, tuple):
                check_same_feature_shape(feat[0], feat[1])
            h = self.fc_neigh(feat_src) if transform_first else feat_src
            if isinstance(feat, tuple):
                h_self = self.fc_neigh(feat_dst) if transform_first else feat_dst
            else:
                h_self = h[: graph.num_dst_nodes()] if graph.is_block else h
            degrees = graph.in_degrees().to(feat_dst).unsqueeze(-1)
            h_neigh = (neighbour_sum(graph, h, edge_weight) + h_self) / (degrees + 1)
            if not transform_first:
                h_neigh = self.fc_neigh(h_neigh)
        elif kind == "pool":
            h = F.relu(self.fc_pool(feat_src))
            h_neigh = self.fc_neigh(neighbour_sum(graph, h, edge_weight, "max"))
        else:
            h_neigh = self.fc_neigh(self._lstm_aggregate(graph, feat_src, edge_weight))
        if kind == "gcn":
            rst = h_neigh if self.bias is None else h_neigh + self.bias
        else:
            rst = self.fc_self(feat_dst) + h_neigh
        if self.activation is not None:
            rst = self.activation(rst)
        if self.norm is not None:
            rst = self.norm(rst)
        return rst

    def _lstm_aggregate(self, graph, feat_src: Tensor, edge_weight: Optional[Tensor]) -> Tensor:
        """Final LSTM state over each dst node's in-neighbours (edge-id order); 0 without in-edges."""
        src, _ = graph.edges()
        src = src.long()
        out = feat_src.new_zeros(graph.num_dst_nodes(), self._in_src_feats)
        parts, rows = [], []
        for nodes, eids in in_edge_batches(graph):
            mailbox = feat_src[src[eids]]  # [B, d, D]
            if edge_weight is not None:
                weight = edge_weight[eids.to(edge_weight.device)]
                mailbox = mailbox * (weight.unsqueeze(-1) if weight.dim() == 2 else weight)
            zeros = mailbox.new_zeros(1, mailbox.shape[0], self._in_src_feats)
            _, (last, _) = self.lstm(mailbox, (zeros, zeros))
            parts.append(last.squeeze(0))
            rows.append(nodes)
        if parts:
            out = out.index_copy(0, torch.cat(rows).to(out.device), torch.cat(parts))
        return out

    def extra_repr(self) -> str:
        return f"{self._in_src_feats} -> {self._out_feats}, aggregator_type={self._aggre_type!r}"
