"""``dgl.nn.DenseGraphConv``, ``DenseSAGEConv`` and ``DenseChebConv``: GCN, GraphSAGE-mean and Chebyshev
filters as dense matrix products with ``adj`` [num_dst, num_src].

Dense on purpose (DGL's DiffPool coarsens to small dense graphs): the cost is ``num_dst x num_src`` per
product, so these suit graphs of thousands of nodes, not millions; on a sparse graph use the graph layers.
DGL's parameter names (``weight`` / ``bias``, ``fc``, ``W`` / ``bias``) and initialisation, so its state
dicts load and give its outputs.
"""
from __future__ import annotations

from typing import Callable, Optional

import torch
from torch import Tensor, nn

from ..dropout import Dropout
from ..graph_inputs import add_bias, check_same_feature_shape


def _per_row(values: Tensor, feat: Tensor) -> Tensor:
    """``values`` [n] shaped to scale the rows of a ``feat``-like tensor (trailing dims of 1)."""
    return values.reshape(values.shape + (1,) * (feat.dim() - 1)).to(feat.device)


class DenseGraphConv(nn.Module):
    """``dgl.nn.DenseGraphConv``: ``activation(D_dst^-a A D_src^-b X W + bias)``, output [num_dst, out_feats].

    Parameters
    ----------
    in_feats, out_feats : int
    norm : "both" (``a = b = 1/2``), "right" (``a = 1``, ``b = 0``; DGL reads any other name but "none" so)
        or "none"; degrees are ``adj``'s column / row sums clamped to 1
    bias : learnable ``bias`` [out_feats]
    activation : callable applied last, or None
    """

    def __init__(self, in_feats: int, out_feats: int, norm: str = "both", bias: bool = True,
                 activation: Optional[Callable] = None):
        super().__init__()
        self._in_feats, self._out_feats, self._norm = in_feats, out_feats, norm
        self.weight = nn.Parameter(torch.empty(in_feats, out_feats))
        add_bias(self, out_feats, bias)
        self.reset_parameters()
        self._activation = activation

    def reset_parameters(self) -> None:
        """Glorot-uniform ``weight``, zero ``bias`` (DGL's)."""
        nn.init.xavier_uniform_(self.weight)
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def forward(self, adj: Tensor, feat: Tensor) -> Tensor:
        """
        Parameters
        ----------
        adj : [num_dst, num_src] adjacency (cast to ``feat``'s dtype and device)
        feat : float [num_src, in_feats]
        """
        adj = adj.to(feat)
        src_degrees = adj.sum(dim=0).clamp(min=1)
        dst_degrees = adj.sum(dim=1).clamp(min=1)
        feat_src = feat
        if self._norm == "both":
            feat_src = feat_src * _per_row(torch.pow(src_degrees, -0.5), feat)
        if self._in_feats > self._out_feats:  # the narrower side goes through the product with adj
            rst = adj @ torch.matmul(feat_src, self.weight)
        else:
            rst = torch.matmul(adj @ feat_src, self.weight)
        if self._norm != "none":
            norm_dst = torch.pow(dst_degrees, -0.5) if self._norm == "both" else 1.0 / dst_degrees
            rst = rst * _per_row(norm_dst, feat)
        if self.bias is not None:
            rst = rst + self.bias
        if self._activation is not None:
            rst = self._activation(rst)
        return rst


class DenseSAGEConv(nn.Module):
    """``dgl.nn.DenseSAGEConv``: ``norm(activation(fc((A X_src + X_dst) / (in-degree + 1))))``.

    Parameters
    ----------
    in_feats, out_feats : int
    feat_drop : dropout on the inputs
    bias : bias inside ``fc``
    norm : callable applied last (e.g. a normalisation layer), or None
    activation : callable, or None
    """

    def __init__(self, in_feats: int, out_feats: int, feat_drop: float = 0.0, bias: bool = True,
                 norm: Optional[Callable] = None, activation: Optional[Callable] = None):
        super().__init__()
        self._in_feats, self._out_feats, self._norm = in_feats, out_feats, norm
        self.feat_drop = Dropout(feat_drop)
        self.activation = activation
        self.fc = nn.Linear(in_feats, out_feats, bias=bias)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Glorot-uniform (ReLU gain) ``fc.weight``; ``fc.bias`` keeps ``nn.Linear``'s draw (DGL's)."""
        nn.init.xavier_uniform_(self.fc.weight, gain=nn.init.calculate_gain("relu"))

    def forward(self, adj: Tensor, feat) -> Tensor:
        """
        Parameters
        ----------
        adj : [num_dst, num_src] adjacency
        feat : float [num_nodes, in_feats] (square ``adj``), or a (src, dst) pair of one feature shape
        """
        if isinstance(feat, tuple):
            check_same_feature_shape(feat[0], feat[1])
            feat_src, feat_dst = self.feat_drop(feat[0]), self.feat_drop(feat[1])
        else:
            feat_src = feat_dst = self.feat_drop(feat)
        adj = adj.to(feat_src)
        in_degrees = adj.sum(dim=1, keepdim=True)
        rst = self.fc((adj @ feat_src + feat_dst) / (in_degrees + 1))
        if self.activation is not None:
            rst = self.activation(rst)
        if self._norm is not None:
            rst = self._norm(rst)
        return rst


class DenseChebConv(nn.Module):
    """``dgl.nn.DenseChebConv``: ``sum_k T_k(L~) X W_k + bias`` with ``L~ = 2 L / lambda_max - I`` and
    ``L = I - D^-1/2 A D^-1/2`` (in-degrees, clamped to 1), output [num_nodes, out_feats].

    Parameters
    ----------
    in_feats, out_feats : int
    k : int, number of Chebyshev terms
    bias : learnable ``bias`` [out_feats]
    """

    def __init__(self, in_feats: int, out_feats: int, k: int, bias: bool = True):
        super().__init__()
        self._in_feats, self._out_feats, self._k = in_feats, out_feats, k
        self.W = nn.Parameter(torch.empty(k, in_feats, out_feats))
        add_bias(self, out_feats, bias)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Zero ``bias``; each ``W[i]`` Glorot-normal with ReLU gain (DGL's)."""
        if self.bias is not None:
            nn.init.zeros_(self.bias)
        for i in range(self._k):
            nn.init.xavier_normal_(self.W[i], nn.init.calculate_gain("relu"))

    def forward(self, adj: Tensor, feat: Tensor, lambda_max=None) -> Tensor:
        """
        Parameters
        ----------
        adj : [num_nodes, num_nodes] adjacency
        feat : float [num_nodes, in_feats]
        lambda_max : largest eigenvalue of ``L`` (a number or 0-d tensor); None computes it from ``L``'s
            eigenvalues (DGL 2.1 calls the removed ``torch.eig`` there and fails on torch >= 1.9)
        """
        a = adj.to(feat)
        num_nodes = a.shape[0]
        d_invsqrt = torch.diag(1 / a.sum(dim=1).clamp(min=1).sqrt())
        eye = torch.eye(num_nodes).to(a)
        laplacian = eye - d_invsqrt @ a @ d_invsqrt
        if lambda_max is None:
            lambda_max = torch.linalg.eigvals(laplacian).real.max()
        l_hat = 2 * laplacian / lambda_max - eye
        terms = [eye]
        for i in range(1, self._k):
            terms.append(l_hat if i == 1 else 2 * l_hat @ terms[-1] - terms[-2])
        zh = (torch.stack(terms, 0) @ feat.unsqueeze(0) @ self.W).sum(0)
        if self.bias is not None:
            zh = zh + self.bias
        return zh
