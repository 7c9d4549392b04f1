"""Positional encodings from the graph's spectrum and random walks: ``dgl.lap_pe`` (``laplacian_pe``) and
``dgl.random_walk_pe``.

Both work on the dense N x N matrix (O(N^2) memory): ``lap_pe`` takes a full eigendecomposition, O(N^3)
per graph (DGL calls ARPACK for a few eigenvectors on larger graphs), fine for the small graphs
(molecules, a few hundred nodes) these encodings serve; ``random_walk_pe`` multiplies by the sparse
transition matrix k times, O(k * N * E).
"""
from __future__ import annotations

import warnings

import numpy as np
import torch

from bgl.dgl.derived_graphs import _homogeneous
from bgl.dgl.heterograph import DGLGraph
from bgl.dgl.transforms import _plain


def _counts(g: DGLGraph, what: str, weight=None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(src, dst, value) float64 on the CPU: each edge once, its value 1 or its weight."""
    _plain(g, what)
    _homogeneous(g, what)
    src, dst = (t.long().cpu() for t in g.edges(order="eid"))
    value = torch.ones(src.numel(), dtype=torch.float64) if weight is None else weight.reshape(-1).double().cpu()
    return src, dst, value


def random_walk_pe(g: DGLGraph, k: int, eweight_name=None) -> torch.Tensor:
    """Random-walk positional encoding: the probability of a walk from each node being back at it after
    1 .. k steps (a step follows out-edges in proportion to their count, or weight).

    Parameters
    ----------
    g : DGLGraph
        Homogeneous.
    k : int
        Number of steps.
    eweight_name : str, optional
        Edge field of weights [E] or [E, 1].  As in DGL, a pair of nodes with several edges weighs the
        edge count times the weights' sum.

    Returns
    -------
    float32 tensor [N, k], on the CPU (as DGL's).
    """
    n = g.num_nodes()
    src, dst, ones = _counts(g, "random_walk_pe")
    adj = torch.zeros(n, n, dtype=torch.float64).index_put_((src, dst), ones, accumulate=True)
    if eweight_name is not None:
        w = g.edata[eweight_name].reshape(-1).double().cpu()
        adj = adj * torch.zeros(n, n, dtype=torch.float64).index_put_((src, dst), w, accumulate=True)
    step = adj / (adj.sum(1, keepdim=True) + 1e-30)
    step_t = step.t().to_sparse()  # only the edges' entries are nonzero
    power_t = step.t().contiguous()
    diags = [power_t.diagonal()]
    for _ in range(k - 1):  # a loop over walk lengths; power_t is (step ** t) transposed: same diagonal
        power_t = torch.sparse.mm(step_t, power_t)
        diags.append(power_t.diagonal())
    return torch.stack(diags, dim=-1).float()  # k <= 0 gives one column, as DGL's


def lap_pe(g: DGLGraph, k: int, padding: bool = False, return_eigval: bool = False):
    """Laplacian positional encoding: the eigenvectors of the k smallest non-trivial eigenvalues of
    ``I - D^-1/2 A D^-1/2`` (D: in-degrees, at least 1), each multiplied by a random sign.

    Parameters
    ----------
    g : DGLGraph
        Homogeneous; bidirected for a symmetric Laplacian (otherwise the real parts of a general
        eigendecomposition, as DGL's).
    k : int
    padding : bool
        DGL's flag.  With k >= N, DGL 2.1 pads whatever it is (its check never fires): zero eigenvector
        columns and NaN eigenvalues up to k; so does this.
    return_eigval : bool
        Also return the eigenvalues.

    Returns
    -------
    float32 tensor [N, k] (and float32 [k] eigenvalues), on the CPU (as DGL's).  Signs are drawn from
    NumPy's global generator, as DGL draws them.
    """
    n = g.num_nodes()
    src, dst, ones = _counts(g, "lap_pe")
    adj = torch.zeros(n, n, dtype=torch.float64).index_put_((src, dst), ones, accumulate=True)
    scale = torch.bincount(dst, minlength=n).clamp(min=1).double() ** -0.5
    lap = torch.eye(n, dtype=torch.float64) - scale[:, None] * adj * scale[None, :]
    if torch.equal(lap, lap.t()):
        vals, vecs = torch.linalg.eigh(lap)
    else:
        vals, vecs = torch.linalg.eig(lap)
        order = np.lexsort((vals.imag.numpy(), vals.real.numpy()))  # NumPy's complex order, DGL's
        vals, vecs = vals.real[order], vecs.real[:, order]
    m = min(n - 1, k)
    vals, vecs = vals[1:m + 1], vecs[:, 1:m + 1]
    sign = torch.from_numpy(2 * (np.random.rand(m) > 0.5) - 1.0)
    pe, eigval = (sign * vecs).float(), vals.float()
    if n <= k:
        pe = torch.cat([pe, torch.zeros(n, k - m)], dim=1)
        eigval = torch.cat([eigval, torch.full((k - m,), float("nan"))])
    return (pe, eigval) if return_eigval else pe


def laplacian_pe(g: DGLGraph, k: int, padding: bool = False, return_eigval: bool = False):
    """DGL's older name of :func:`lap_pe` (it warns that the name will go)."""
    warnings.warn("dgl.laplacian_pe will be deprecated. Use dgl.lap_pe please.", UserWarning, stacklevel=2)
    return lap_pe(g, k, padding, return_eigval)
