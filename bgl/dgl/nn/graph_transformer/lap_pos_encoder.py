"""``LapPosEncoder``: SAN's learned positional encoding from a node's Laplacian eigenvectors and the
eigenvalues (``dgl.lap_pe(..., return_eigval=True)``), each (eigenvector entry, eigenvalue) pair
embedded, mixed by a Transformer or a DeepSet, masked where padded (NaN) and summed.
O(k^2 * dim) per node with the Transformer, O(k * dim^2) with the DeepSet.
"""
from __future__ import annotations

import torch
from torch import nn


def _mlp(dim_in: int, dim: int, num_layer: int, first_relu_only: bool) -> list:
    """DGL's layer lists: with one layer, a lone ReLU (DeepSet) or Linear+ReLU (post MLP); else
    dim_in -> 2*dim hidden layers -> dim, each followed by a ReLU."""
    if num_layer == 1:
        return [nn.ReLU()] if first_relu_only else [nn.Linear(dim_in, dim), nn.ReLU()]
    layers = [nn.ReLU()] if first_relu_only else [nn.Linear(dim_in, 2 * dim), nn.ReLU()]
    for _ in range(num_layer - 2):
        layers += [nn.Linear(2 * dim, 2 * dim), nn.ReLU()]
    return layers + [nn.Linear(2 * dim, dim), nn.ReLU()]


class LapPosEncoder(nn.Module):
    """Laplacian positional encoder (DGL's ``LapPosEncoder``).

    Parameters
    ----------
    model_type : str
        ``"Transformer"`` or ``"DeepSet"``.
    num_layer : int
        Layers of the Transformer encoder or of the DeepSet.
    k : int
        Number of eigenvectors per node.
    dim : int
        Output size.
    n_head : int
        Transformer heads.
    batch_norm : bool
        Batch-normalise the raw (eigenvector, eigenvalue) pairs first.
    num_post_layer : int
        Layers of the MLP after the sum (0: none).
    """

    def __init__(self, model_type, num_layer, k, dim, n_head=1, batch_norm=False, num_post_layer=0):
        super().__init__()
        self.model_type = model_type
        self.linear = nn.Linear(2, dim)
        if model_type == "Transformer":
            layer = nn.TransformerEncoderLayer(d_model=dim, nhead=n_head, batch_first=True)
            self.pe_encoder = nn.TransformerEncoder(layer, num_layers=num_layer)
        elif model_type == "DeepSet":
            if num_layer != 1:
                self.linear = nn.Linear(2, 2 * dim)
            self.pe_encoder = nn.Sequential(*_mlp(2 * dim, dim, num_layer, first_relu_only=True))
        else:
            raise ValueError(f"model_type '{model_type}' is not allowed, must be 'Transformer' or 'DeepSet'.")
        self.raw_norm = nn.BatchNorm1d(k) if batch_norm else None
        self.post_mlp = nn.Sequential(*_mlp(dim, dim, num_post_layer, first_relu_only=False)) \
            if num_post_layer > 0 else None

    def forward(self, eigvals, eigvecs):
        """``eigvals``: float [N, k] (each node's copy of the graph's eigenvalues, NaN-padded);
        ``eigvecs``: float [N, k].  Returns float [N, dim]."""
        pe = torch.cat((eigvecs.unsqueeze(2), eigvals.unsqueeze(2)), dim=2).float()
        empty = torch.isnan(pe)
        pe = pe.masked_fill(empty, 0)
        if self.raw_norm:
            pe = self.raw_norm(pe)
        pe = self.linear(pe)
        padded = empty[:, :, 1]  # a padded eigenvalue marks an eigenvector slot that does not exist
        if self.model_type == "Transformer":
            pe = self.pe_encoder(src=pe, src_key_padding_mask=padded)
        else:
            pe = self.pe_encoder(pe)
        pe = pe.masked_fill(padded.unsqueeze(-1), 0).sum(1)
        return self.post_mlp(pe) if self.post_mlp else pe
