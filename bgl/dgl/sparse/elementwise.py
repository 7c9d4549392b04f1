"""Elementwise operators of ``dgl.sparse``: ``+ - * / **`` and ``neg``, ``inv``, the ``sp_*_v`` broadcasts.

A scalar operand keeps the matrix's nonzeros and order (``val_like``).  Two sparse operands, as DGL
allows them: ``A + B`` / ``A - B`` is the union, duplicates summed, nonzeros sorted row-major;
``A * B`` the intersection (neither may hold duplicates), sorted row-major; ``A / B`` needs the same
nonzero set and keeps ``A``'s order.  All torch index ops: gradients reach both operands' values.
Cost: one sort of the nonzeros' int64 keys.
"""
from __future__ import annotations

import operator
from numbers import Number
from typing import Union

import torch

from bgl.dgl.sparse.creation import diag, val_like
from bgl.dgl.sparse.matrix import SparseMatrix, linear_keys

Scalar = Union[Number, torch.Tensor]

__all__ = ["add", "sub", "mul", "div", "power", "neg", "inv", "sp_add", "sp_sub", "sp_mul", "sp_div", "sp_power",
           "sp_broadcast_v", "sp_add_v", "sp_sub_v", "sp_mul_v", "sp_div_v", "is_scalar", "Scalar"]


def is_scalar(x) -> bool:
    """A Python number or a 0-d tensor."""
    return isinstance(x, Number) or (torch.is_tensor(x) and x.dim() == 0)


def _check_pair(A: SparseMatrix, B: SparseMatrix) -> None:
    if A.shape != B.shape:
        raise RuntimeError("Elementwise operators do not support two sparse matrices with different shapes.")
    if A.dtype != B.dtype:
        raise RuntimeError("Elementwise operators do not support two sparse matrices with different dtypes.")


def _keys(A: SparseMatrix) -> torch.Tensor:
    row, col = A.coo()
    return linear_keys(row, col, A.shape[1])


def sp_add(A: SparseMatrix, B: SparseMatrix) -> SparseMatrix:
    """``A + B`` of two sparse matrices: the union of their nonzeros, coalesced (sorted row-major)."""
    if not isinstance(B, SparseMatrix):
        return NotImplemented
    _check_pair(A, B)
    row = torch.cat([A.row.long(), B.row.long()])
    col = torch.cat([A.col.long(), B.col.long()])
    both = SparseMatrix(torch.cat([A.val, B.val]), A.shape, coo=(row.to(A.row.dtype), col.to(A.row.dtype)))
    return both.coalesce()


def sp_sub(A: SparseMatrix, B: SparseMatrix) -> SparseMatrix:
    """``A - B`` of two sparse matrices (``A + (-B)``)."""
    return sp_add(A, neg(B)) if isinstance(B, SparseMatrix) else NotImplemented


def _spsp_mul(A: SparseMatrix, B: SparseMatrix) -> SparseMatrix:
    _check_pair(A, B)
    if A.has_duplicate() or B.has_duplicate():
        raise RuntimeError("Only support SpSpMul on sparse matrices without duplicate values")
    a_keys, a_order = torch.sort(_keys(A))
    b_keys = _keys(B)
    pos = torch.searchsorted(a_keys, b_keys).clamp(max=max(a_keys.shape[0] - 1, 0))
    hit = a_keys[pos] == b_keys if a_keys.shape[0] else torch.zeros_like(b_keys, dtype=torch.bool)
    b_idx = hit.nonzero().view(-1)
    b_idx = b_idx[torch.argsort(b_keys[b_idx])]
    a_idx = a_order[pos[b_idx]]
    val = A.val.index_select(0, a_idx) * B.val.index_select(0, b_idx)
    return SparseMatrix(val, A.shape, coo=(A.row[a_idx], A.col[a_idx]))


def sp_mul(A: SparseMatrix, B: Union[SparseMatrix, Scalar]) -> SparseMatrix:
    """``A * B``: a scalar scales the values; a sparse ``B`` gives the intersection (no duplicates allowed)."""
    if is_scalar(B):
        return val_like(A, A.val * B)
    return _spsp_mul(A, B) if isinstance(B, SparseMatrix) else NotImplemented


def sp_div(A: SparseMatrix, B: Union[SparseMatrix, Scalar]) -> SparseMatrix:
    """``A / B``: by a scalar, or by a sparse matrix with the same nonzeros (result in ``A``'s order)."""
    if is_scalar(B):
        return val_like(A, A.val / B)
    if not isinstance(B, SparseMatrix):
        return NotImplemented
    _check_pair(A, B)
    b_keys, b_order = torch.sort(_keys(B))
    a_keys = _keys(A)
    pos = torch.searchsorted(b_keys, a_keys).clamp(max=max(b_keys.shape[0] - 1, 0))
    if A.nnz != B.nnz or (A.nnz and not bool((b_keys[pos] == a_keys).all())):
        raise RuntimeError("Cannot divide two COO matrices with different sparsities.")
    return val_like(A, A.val / B.val.index_select(0, b_order[pos]))


def sp_power(A: SparseMatrix, scalar: Scalar) -> SparseMatrix:
    """``A ** scalar`` on the nonzeros."""
    return val_like(A, A.val ** scalar) if is_scalar(scalar) else NotImplemented


def neg(A: SparseMatrix) -> SparseMatrix:
    """``-A``."""
    return val_like(A, -A.val)


def inv(A: SparseMatrix) -> SparseMatrix:
    """The inverse of a square diagonal matrix with scalar values."""
    assert A.is_diag(), "Non-diagonal sparse matrix does not support inversion."
    assert A.shape[0] == A.shape[1], f"Expect a square matrix, got shape {A.shape}"
    assert A.val.dim() == 1, "inv only supports 1D nonzero val"
    return diag(1.0 / A.val, A.shape)


def add(A: SparseMatrix, B: SparseMatrix) -> SparseMatrix:
    """``A + B``."""
    return A + B


def sub(A: SparseMatrix, B: SparseMatrix) -> SparseMatrix:
    """``A - B``."""
    return A - B


def mul(A: Union[SparseMatrix, Scalar], B: Union[SparseMatrix, Scalar]) -> SparseMatrix:
    """``A * B`` (either may be the scalar)."""
    return A * B


def div(A: SparseMatrix, B: Union[SparseMatrix, Scalar]) -> SparseMatrix:
    """``A / B``."""
    return A / B


def power(A: SparseMatrix, scalar: Scalar) -> SparseMatrix:
    """``A ** scalar``."""
    return A ** scalar


def sp_broadcast_v(A: SparseMatrix, v: torch.Tensor, op: str) -> SparseMatrix:
    """``op`` (add / sub / mul / truediv) of each nonzero with ``v`` broadcast over the matrix: ``v`` of shape
    [cols] or [1, cols] is read at each nonzero's column, [rows, 1] at its row."""
    func = getattr(operator, op)
    v = v.view(1, -1) if v.dim() == 1 else v
    message = f"Dimension mismatch for broadcasting. Got A.shape = {A.shape} andv.shape = {v.shape}."
    assert v.dim() <= 2 and 1 in v.shape, message
    along = None
    for d, (size_a, size_v) in enumerate(zip(A.shape, v.shape)):
        assert size_v in (1, size_a), message
        if size_a != size_v:
            assert along is None, message
            along = d
    if along is None:
        along = 0 if A.shape[0] == 1 else 1
    picked = v.view(-1)[(A.col if along == 0 else A.row).long()]
    if A.val.dim() > 1:
        picked = picked.view(-1, 1)
    return val_like(A, func(A.val, picked))


def sp_add_v(A: SparseMatrix, v: torch.Tensor) -> SparseMatrix:
    return sp_broadcast_v(A, v, "add")


def sp_sub_v(A: SparseMatrix, v: torch.Tensor) -> SparseMatrix:
    return sp_broadcast_v(A, v, "sub")


def sp_mul_v(A: SparseMatrix, v: torch.Tensor) -> SparseMatrix:
    return sp_broadcast_v(A, v, "mul")


def sp_div_v(A: SparseMatrix, v: torch.Tensor) -> SparseMatrix:
    return sp_broadcast_v(A, v, "truediv")


SparseMatrix.__add__ = sp_add
SparseMatrix.__sub__ = sp_sub
SparseMatrix.__mul__ = sp_mul
SparseMatrix.__rmul__ = sp_mul
SparseMatrix.__truediv__ = sp_div
SparseMatrix.__pow__ = sp_power
SparseMatrix.neg = neg
SparseMatrix.__neg__ = neg
SparseMatrix.inv = inv
