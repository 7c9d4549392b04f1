"""``dgl.nn.AtomicConv`` (Gomes et al., 2017, "Atomic Convolutional Networks for Predicting Protein-Ligand
Binding Affinity"): radial pooling of each edge's distance, summed per node against the source atom types.

Each of K radial filters turns an edge's distance d into ``exp(-s_k (d - mu_k)^2) * cutoff_k(d)`` (cutoff:
``(cos(pi d / r_k) + 1) / 2`` within ``r_k``, else 0; DeepChem's order, as DGL).  Node v gets, per atom type t
of its sources, ``sum_{u -> v} [type(u) == t] * filter_k(d_uv)``.  DGL's parameter names
(``radial_pooling.interaction_cutoffs`` / ``rbf_kernel_means`` / ``rbf_kernel_scaling``, ``features_to_use``).
Cost: O(T K) per edge (the messages exist, [E, T * K], as in DGL's).
"""
from __future__ import annotations

import math

import torch
from torch import Tensor, nn


class RadialPooling(nn.Module):
    """K radial filters: distances [E, 1] -> [K, E, 1]; each parameter is stored [K, 1, 1]."""

    def __init__(self, interaction_cutoffs: Tensor, rbf_kernel_means: Tensor, rbf_kernel_scaling: Tensor):
        super().__init__()
        self.interaction_cutoffs = nn.Parameter(interaction_cutoffs.reshape(-1, 1, 1), requires_grad=True)
        self.rbf_kernel_means = nn.Parameter(rbf_kernel_means.reshape(-1, 1, 1), requires_grad=True)
        self.rbf_kernel_scaling = nn.Parameter(rbf_kernel_scaling.reshape(-1, 1, 1), requires_grad=True)

    def forward(self, distances: Tensor) -> Tensor:
        rbf = torch.exp(-self.rbf_kernel_scaling * (distances - self.rbf_kernel_means) ** 2)
        cos_values = 0.5 * (torch.cos(math.pi * distances / self.interaction_cutoffs) + 1)
        cutoff = torch.where(distances <= self.interaction_cutoffs, cos_values, torch.zeros_like(cos_values))
        return rbf * cutoff


class AtomicConv(nn.Module):
    """``dgl.nn.AtomicConv(interaction_cutoffs, rbf_kernel_means, rbf_kernel_scaling, features_to_use=None)``.

    Parameters
    ----------
    interaction_cutoffs, rbf_kernel_means, rbf_kernel_scaling : float [K], the filters' r_k, mu_k, s_k
    features_to_use : float [T], the atom types to count (None: one channel, the input itself)
    """

    def __init__(self, interaction_cutoffs: Tensor, rbf_kernel_means: Tensor, rbf_kernel_scaling: Tensor,
                 features_to_use: Tensor = None):
        super().__init__()
        self.radial_pooling = RadialPooling(interaction_cutoffs=interaction_cutoffs,
                                            rbf_kernel_means=rbf_kernel_means,
                                            rbf_kernel_scaling=rbf_kernel_scaling)
        if features_to_use is None:
            self.num_channels = 1
            self.features_to_use = None
        else:
            self.num_channels = len(features_to_use)
            self.features_to_use = nn.Parameter(features_to_use, requires_grad=False)

    def forward(self, graph, feat: Tensor, distances: Tensor) -> Tensor:
        """
        Parameters
        ----------
        graph : bgl.dgl graph; feat : float [N, 1], each atom's type (or [N, T] features without
        ``features_to_use``); distances : float [E, 1], each edge's length

        Returns
        -------
        float [N, K * T]: per node, type t's filter k at column ``t * K + k`` (DGL's layout)
        """
        from bgl.dgl.ops import copy_u, gspmm

        pooled = self.radial_pooling(distances).to(feat)  # [K, E, 1]
        if self.features_to_use is not None:
            feat = (feat == self.features_to_use).to(feat)  # [N, T]
        he = pooled.transpose(1, 0).squeeze(-1)  # [E, K]
        messages = (copy_u(graph, feat).unsqueeze(-1) * he.unsqueeze(1)).reshape(he.shape[0], -1)
        return gspmm(graph, "copy_rhs", "sum", None, messages).view(graph.num_dst_nodes(), -1)
