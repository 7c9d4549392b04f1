"""Graphormer's structural encoders (DGL's ``DegreeEncoder``, ``SpatialEncoder``, ``SpatialEncoder3d``,
``PathEncoder``): node degrees to node features, shortest distances, 3D distances and shortest paths to
one attention bias per node pair and head.  Each is an embedding lookup or a small MLP per node pair:
O(N^2) per graph for the pair encoders.
"""
from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

_DIRECTIONS = ("in", "out", "both")


class DegreeEncoder(nn.Module):
    """A learned embedding of each node's degree (Graphormer's centrality encoding).

    Parameters
    ----------
    max_degree : int
        Degrees above it share ``max_degree``'s embedding; degree 0 embeds to zeros (padding).
    embedding_dim : int
    direction : str
        ``"in"`` or ``"out"`` (one table, ``encoder``) or ``"both"`` (in- and out-degree tables
        ``encoder1`` / ``encoder2``, summed).
    """

    def __init__(self, max_degree, embedding_dim, direction="both"):
        super().__init__()
        self.direction = direction
        if direction == "both":
            self.encoder1 = nn.Embedding(max_degree + 1, embedding_dim, padding_idx=0)
            self.encoder2 = nn.Embedding(max_degree + 1, embedding_dim, padding_idx=0)
        else:
            self.encoder = nn.Embedding(max_degree + 1, embedding_dim, padding_idx=0)
        self.max_degree = max_degree

    def forward(self, degrees):
        """``degrees``: int [batch, N] (``"in"`` / ``"out"``) or [2, batch, N] (``"both"``: in, out);
        returns float [batch, N, embedding_dim]."""
        if self.direction not in _DIRECTIONS:
            raise ValueError(f'Supported direction options: "in", "out" and "both", but got {self.direction}')
        degrees = degrees.clamp(min=0, max=self.max_degree)
        if self.direction != "both":
            if degrees.dim() != 2:
                raise AssertionError(f"degrees must be [batch, N] for direction {self.direction!r}, "
                                     f"got shape {tuple(degrees.shape)}")
            return self.encoder(degrees)
        if degrees.dim() != 3 or degrees.shape[0] != 2:
            raise AssertionError(f"degrees must be [2, batch, N] for direction 'both', got shape {tuple(degrees.shape)}")
        return self.encoder1(degrees[0]) + self.encoder2(degrees[1])


class SpatialEncoder(nn.Module):
    """A learned bias per shortest distance and head: distance -1 (unreachable) embeds to zeros, distances
    above ``max_dist`` share ``max_dist``'s row.

    Parameters
    ----------
    max_dist : int
    num_heads : int
    """

    def __init__(self, max_dist, num_heads=1):
        super().__init__()
        self.max_dist, self.num_heads = max_dist, num_heads
        self.embedding_table = nn.Embedding(max_dist + 2, num_heads, padding_idx=0)

    def forward(self, dist):
        """``dist``: int [batch, N, N] (``dgl.shortest_dist``'s, -1 unreachable); returns float
        [batch, N, N, num_heads]."""
        return self.embedding_table(dist.clamp(min=-1, max=self.max_dist) + 1)


# DGL's Gaussian basis uses pi rounded to 3.14159; kept so the kernels equal DGL's to the last bits
_SQRT_2PI = (2 * 3.14159) ** 0.5


class SpatialEncoder3d(nn.Module):
    """A bias per node pair and head from their 3D distance: the distance, scaled and shifted per pair of
    node types, through ``num_kernels`` Gaussian kernels and a two-layer MLP (Graphormer 3D).

    Parameters
    ----------
    num_kernels : int
        Number of Gaussian kernels (learned means and standard deviations).
    num_heads : int
    max_node_type : int
        Node types are ``0 .. max_node_type``; ``gamma`` / ``beta`` have a row per source type, per
        destination type, and row 0 for untyped graphs.
    """

    def __init__(self, num_kernels, num_heads=1, max_node_type=100):
        super().__init__()
        self.num_kernels, self.num_heads, self.max_node_type = num_kernels, num_heads, max_node_type
        self.means = nn.Parameter(torch.empty(num_kernels))
        self.stds = nn.Parameter(torch.empty(num_kernels))
        self.linear_layer_1 = nn.Linear(num_kernels, num_kernels)
        self.linear_layer_2 = nn.Linear(num_kernels, num_heads)
        # rows: 0 untyped, 1 .. max_node_type + 2 source types (1: padding), then destination types
        self.gamma = nn.Embedding(2 * max_node_type + 3, 1, padding_idx=0)
        self.beta = nn.Embedding(2 * max_node_type + 3, 1, padding_idx=0)
        nn.init.uniform_(self.means, 0, 3)
        nn.init.uniform_(self.stds, 0, 3)
        nn.init.constant_(self.gamma.weight, 1)
        nn.init.constant_(self.beta.weight, 0)

    def forward(self, coord, node_type=None):
        """``coord``: float [batch, N, 3]; ``node_type``: int [batch, N] or None.  Returns float
        [batch, N, N, num_heads]."""
        bsz, n = coord.shape[:2]
        dist = torch.cdist(coord, coord, p=2.0).unsqueeze(-1)  # [b, N, N, 1]
        if node_type is None:
            src_t = dst_t = torch.zeros(1, 1, dtype=torch.long, device=coord.device)
        else:
            src_t, dst_t = node_type + 2, node_type + self.max_node_type + 3
        # a pair's scale / shift: its source type's row plus its destination type's row
        gamma = self.gamma(src_t).unsqueeze(2) + self.gamma(dst_t).unsqueeze(1)
        beta = self.beta(src_t).unsqueeze(2) + self.beta(dst_t).unsqueeze(1)
        x = (gamma * dist + beta).expand(-1, -1, -1, self.num_kernels)
        std = self.stds.abs() + 1e-2
        kernels = torch.exp(-0.5 * ((x - self.means) / std) ** 2) / (_SQRT_2PI * std)
        return self.linear_layer_2(F.gelu(self.linear_layer_1(kernels)))


class PathEncoder(nn.Module):
    """A bias per node pair and head: the mean over a shortest path's edges of the edge feature's dot
    product with a learned vector per path position and head (Graphormer's edge encoding).

    Parameters
    ----------
    max_len : int
        Longest path (in edges) encoded; ``path_data``'s path axis has this length.
    feat_dim : int
        Edge feature size.
    num_heads : int
    """

    def __init__(self, max_len, feat_dim, num_heads=1):
        super().__init__()
        self.max_len, self.feat_dim, self.num_heads = max_len, feat_dim, num_heads
        self.embedding_table = nn.Embedding(max_len * num_heads, feat_dim)

    def forward(self, dist, path_data):
        """``dist``: int [batch, N, N]; ``path_data``: float [batch, N, N, max_len, feat_dim] (the
        features of each path's edges, zero-padded).  Returns float [batch, N, N, num_heads]."""
        length = dist.clamp(min=1, max=self.max_len).unsqueeze(-1)
        table = self.embedding_table.weight.view(self.max_len, self.num_heads, -1)
        return torch.einsum("bxyld,lhd->bxyh", path_data, table) / length
