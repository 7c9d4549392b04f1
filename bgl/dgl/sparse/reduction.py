"""Reductions and softmax of ``dgl.sparse``: ``reduce`` / ``sum`` / ``smax`` / ``smin`` / ``smean`` / ``sprod``
and ``softmax``, over the nonzeros only.

``dim=0`` reduces each column's nonzeros (a result per column), ``dim=1`` each row's, ``None`` all of
them; a row or column without nonzeros gets 0.  One torch ``scatter_reduce`` / ``index_add`` over the
nonzeros (ties of smax / smin share the gradient evenly, as DGL's do); softmax is bgl.dgl's
``edge_softmax`` grouped by row (``dim=1``, over the cached CSR) or column (``dim=0``, the CSC).
"""
from __future__ import annotations

from typing import Optional

import torch

from bgl.dgl.ops.cpu_rows import kernels_for
from bgl.dgl.ops.edge_map import flat_rows
from bgl.dgl.ops.edge_softmax import _CpuEdgeSoftmax, _EdgeSoftmax
from bgl.dgl.relation import Compressed
from bgl.dgl.sparse.creation import val_like
from bgl.dgl.sparse.matrix import SparseMatrix

_SCATTER = {"sum": "sum", "smax": "amax", "smin": "amin", "smean": "mean", "sprod": "prod"}
_WHOLE = {"sum": torch.sum, "smax": torch.amax, "smin": torch.amin, "smean": torch.mean, "sprod": torch.prod}


def reduce(input: SparseMatrix, dim: Optional[int] = None, rtype: str = "sum"):  # noqa: A002 (DGL's name)
    """Reduce the nonzeros along ``dim`` by ``rtype`` (sum / smax / smin / smean / sprod).

    Returns
    -------
    tensor [cols, *D] (``dim=0``), [rows, *D] (``dim=1``) or [*D] (``dim=None``)

    Raises
    ------
    RuntimeError : an unknown ``rtype``; ValueError : ``dim`` not None, 0 or 1 (DGL returns zeros)
    """
    if rtype not in _SCATTER:
        raise RuntimeError(f"unknown reduce function {rtype}")
    val = input.val
    if dim is None:
        return _WHOLE[rtype](val, 0)
    if dim not in (0, 1):
        raise ValueError(f"dim must be None, 0 or 1, got {dim}")
    group = (input.col if dim == 0 else input.row).long()
    out = torch.zeros((input.shape[1 - dim],) + tuple(val.shape[1:]), dtype=val.dtype, device=val.device)
    if rtype == "sum":
        return out.index_add(0, group, val)
    where = group.view(-1, *(1,) * (val.dim() - 1)).expand_as(val)
    return out.scatter_reduce(0, where, val, _SCATTER[rtype], include_self=False)


def sum(input: SparseMatrix, dim: Optional[int] = None):  # noqa: A001,A002 (DGL's names)
    """Sum of the nonzeros along ``dim`` (see :func:`reduce`)."""
    return reduce(input, dim, "sum")


def smax(input: SparseMatrix, dim: Optional[int] = None):  # noqa: A002
    """Largest nonzero along ``dim`` (0 where there is none)."""
    return reduce(input, dim, "smax")


def smin(input: SparseMatrix, dim: Optional[int] = None):  # noqa: A002
    """Smallest nonzero along ``dim`` (0 where there is none)."""
    return reduce(input, dim, "smin")


def smean(input: SparseMatrix, dim: Optional[int] = None):  # noqa: A002
    """Mean of the nonzeros along ``dim`` (0 where there is none)."""
    return reduce(input, dim, "smean")


def sprod(input: SparseMatrix, dim: Optional[int] = None):  # noqa: A002
    """Product of the nonzeros along ``dim`` (0 where there is none)."""
    return reduce(input, dim, "sprod")


def softmax(input: SparseMatrix, dim: int = 1) -> SparseMatrix:  # noqa: A002
    """Softmax of the nonzeros of each row (``dim=1``) or column (``dim=0``), per value column when the
    values are [nnz, D]; same nonzeros and order as ``input``."""
    if dim not in (0, 1):
        raise ValueError(f"dim must be 0 or 1, got {dim}")
    val = input.val
    if kernels_for(val) and input.nnz:  # CPU: one numba pass per row (column) of the cached CSR (CSC)
        adj = Compressed(*(input.csr() if dim == 1 else input.csc()))
        return val_like(input, _CpuEdgeSoftmax.apply(adj, flat_rows(val.contiguous())).view(val.shape))
    group = (input.row if dim == 1 else input.col).long()
    return val_like(input, _EdgeSoftmax.apply(val, group, input.shape[0 if dim == 1 else 1]))


SparseMatrix.reduce = reduce
SparseMatrix.sum = sum
SparseMatrix.smax = smax
SparseMatrix.smin = smin
SparseMatrix.smean = smean
SparseMatrix.sprod = sprod
SparseMatrix.softmax = softmax
