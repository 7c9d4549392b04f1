"""The constructors of ``dgl.sparse``: ``spmatrix``, ``from_coo`` / ``from_csr`` / ``from_csc``, ``val_like``,
``diag``, ``identity`` and the torch sparse tensor conversions.

Each keeps the format it is given (no sort, no coalescing: duplicates stay until ``coalesce``) and
the index dtype it is given; missing values are float32 ones, a missing shape is the smallest that
holds the indices, as DGL's.
"""
from __future__ import annotations

from typing import Optional, Tuple

import torch

from bgl.dgl.sparse.matrix import SparseMatrix


def _check_val(val: torch.Tensor, nnz: int) -> None:
    assert val.dim() <= 2, "The values of a SparseMatrix can only be scalars or vectors."
    if val.shape[0] != nnz:
        raise RuntimeError(f"Expect the values to have {nnz} rows (one per nonzero), got shape {tuple(val.shape)}.")


def _ones(nnz: int, device) -> torch.Tensor:
    return torch.ones(nnz, device=device)


def spmatrix(indices: torch.Tensor, val: Optional[torch.Tensor] = None,
             shape: Optional[Tuple[int, int]] = None) -> SparseMatrix:
    """A sparse matrix from its COO.

    Parameters
    ----------
    indices : int tensor [2, nnz], row ids then column ids (duplicates kept)
    val : tensor [nnz] or [nnz, D], default float32 ones
    shape : (rows, cols), default ``(row.max() + 1, col.max() + 1)``
    """
    nnz = indices.shape[1]
    if shape is None:
        shape = (int(indices[0].max()) + 1, int(indices[1].max()) + 1)
    val = _ones(nnz, indices.device) if val is None else val
    _check_val(val, nnz)
    return SparseMatrix(val, shape, coo=(indices[0], indices[1]))


def from_coo(row: torch.Tensor, col: torch.Tensor, val: Optional[torch.Tensor] = None,
             shape: Optional[Tuple[int, int]] = None) -> SparseMatrix:
    """A sparse matrix from row ids [nnz] and column ids [nnz] (see :func:`spmatrix`)."""
    assert row.shape[0] == col.shape[0]
    return spmatrix(torch.stack([row, col]), val, shape)


def _compressed(indptr, indices, val, shape, by_rows: bool) -> SparseMatrix:
    if shape is None:
        other = int(indices.max()) + 1
        shape = (indptr.shape[0] - 1, other) if by_rows else (other, indptr.shape[0] - 1)
    val = _ones(indices.shape[0], indptr.device) if val is None else val
    _check_val(val, indices.shape[0])
    fmt = (indptr, indices, None)
    return SparseMatrix(val, shape, csr=fmt) if by_rows else SparseMatrix(val, shape, csc=fmt)


def from_csr(indptr: torch.Tensor, indices: torch.Tensor, val: Optional[torch.Tensor] = None,
             shape: Optional[Tuple[int, int]] = None) -> SparseMatrix:
    """A sparse matrix from its CSR: row ``i``'s column ids at ``indices[indptr[i]:indptr[i + 1]]``, values
    in that order; shape default ``(len(indptr) - 1, indices.max() + 1)``."""
    return _compressed(indptr, indices, val, shape, by_rows=True)


def from_csc(indptr: torch.Tensor, indices: torch.Tensor, val: Optional[torch.Tensor] = None,
             shape: Optional[Tuple[int, int]] = None) -> SparseMatrix:
    """A sparse matrix from its CSC: column ``j``'s row ids at ``indices[indptr[j]:indptr[j + 1]]``, values
    in that order; shape default ``(indices.max() + 1, len(indptr) - 1)``."""
    return _compressed(indptr, indices, val, shape, by_rows=False)


def val_like(mat: SparseMatrix, val: torch.Tensor) -> SparseMatrix:
    """``mat``'s nonzeros (same order, formats shared) with values ``val`` [nnz] or [nnz, D].

    Raises
    ------
    RuntimeError : ``val`` does not have one row per nonzero
    """
    assert val.dim() <= 2, "The values of a SparseMatrix can only be scalars or vectors."
    if val.shape[0] != mat.nnz:
        raise RuntimeError("The first dimension of the old values and the new values must be the same.")
    return mat._derive(val)


def diag(val: torch.Tensor, shape: Optional[Tuple[int, int]] = None) -> SparseMatrix:
    """A diagonal matrix with ``val`` [n] or [n, D] on its diagonal; ``shape`` default (n, n), else
    ``min(shape) == n``."""
    assert val.dim() <= 2, "The values of a DiagMatrix can only be scalars or vectors."
    n = len(val)
    if shape is not None:
        assert n == min(shape), (f"Expect len(val) to be min(shape) for a diagonal matrix, got"
                                 f"{n} for len(val) and {shape} for shape.")
    else:
        shape = (n, n)
    ids = torch.arange(n, device=val.device)

    def fmt(size: int):
        indptr = torch.cat([torch.arange(n + 1, device=val.device), torch.full((size - n,), n, device=val.device)])
        return indptr, ids, None

    return SparseMatrix(val, shape, coo=(ids, ids), csr=fmt(shape[0]), csc=fmt(shape[1]), is_diag=True)


def identity(shape: Tuple[int, int], d: Optional[int] = None, dtype: Optional[torch.dtype] = None,
             device: Optional[torch.device] = None) -> SparseMatrix:
    """The ``shape`` matrix with ones on its diagonal (vectors of ``d`` ones when ``d`` is given)."""
    n = min(shape)
    return diag(torch.ones((n,) if d is None else (n, d), dtype=dtype, device=device), shape)


def from_torch_sparse(torch_sparse_tensor: torch.Tensor) -> SparseMatrix:
    """A sparse matrix from a torch COO (uncoalesced entries kept), CSR or CSC tensor."""
    t = torch_sparse_tensor
    assert t.layout in (torch.sparse_coo, torch.sparse_csr, torch.sparse_csc), (
        f"Cannot convert Pytorch sparse tensor with layout {t.layout} to DGL sparse.")
    if t.layout == torch.sparse_coo:
        return spmatrix(t._indices(), t._values(), t.shape[:2])
    if t.layout == torch.sparse_csr:
        return from_csr(t.crow_indices(), t.col_indices(), t.values(), t.shape[:2])
    return from_csc(t.ccol_indices(), t.row_indices(), t.values(), t.shape[:2])


def _full_shape(spmat: SparseMatrix) -> tuple:
    return spmat.shape + tuple(spmat.val.shape[1:])


def to_torch_sparse_coo(spmat: SparseMatrix) -> torch.Tensor:
    """The matrix as a torch COO tensor [rows, cols, *D] (nonzeros in the matrix's order)."""
    return torch.sparse_coo_tensor(spmat.indices(), spmat.val, _full_shape(spmat))


def _ordered(spmat: SparseMatrix, ids) -> torch.Tensor:
    return spmat.val if ids is None else spmat.val[ids.long()]


def to_torch_sparse_csr(spmat: SparseMatrix) -> torch.Tensor:
    """The matrix as a torch CSR tensor (values reordered into CSR order)."""
    indptr, indices, ids = spmat.csr()
    return torch.sparse_csr_tensor(indptr, indices, _ordered(spmat, ids), _full_shape(spmat))


def to_torch_sparse_csc(spmat: SparseMatrix) -> torch.Tensor:
    """The matrix as a torch CSC tensor (values reordered into CSC order)."""
    indptr, indices, ids = spmat.csc()
    return torch.sparse_csc_tensor(indptr, indices, _ordered(spmat, ids), _full_shape(spmat))
