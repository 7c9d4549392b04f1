"""Matrix products of ``dgl.sparse``: ``spmm`` / ``bspmm``, ``spspmm``, ``matmul`` (``@``), ``sddmm`` / ``bsddmm``.

A sparse ``A`` [L, M] is read as a bgl.dgl relation from M source nodes (its columns) to L destination
nodes (its rows), one edge per nonzero in ``val``'s order, so ``A @ X`` is bgl.dgl's fused
``u_mul_e`` + ``sum`` SpMM over the matrix's CSR (no nnz x N message tensor; backward over a CSC
the relation builds on first use) and ``sddmm`` its ``u_dot_v`` SDDMM.  ``spspmm`` expands every
pair of nonzeros that meet (A's column = B's row) and sums them per (row, col): memory and one sort
of the number of such pairs.  Gradients reach ``val`` and the dense operands, as DGL's.
"""
from __future__ import annotations

from typing import Union

import torch

from bgl.dgl.ops.sddmm import edge_message
from bgl.dgl.ops.spmm import message_reduce
from bgl.dgl.relation import Compressed, Relation
from bgl.dgl.sparse.matrix import SparseMatrix

__all__ = ["spmm", "bspmm", "spspmm", "matmul", "sddmm", "bsddmm"]


def as_relation(A: SparseMatrix) -> Relation:
    """``A`` as a relation: sources are columns, destinations rows; its CSC is ``A``'s CSR (shared, cached)."""
    if A._relation is None:
        row, col = A.coo()
        indptr, indices, ids = A.csr()
        A._relation = Relation(A.shape[1], A.shape[0], col, row, Compressed(indptr, indices, ids))
    return A._relation


def _shapes(A: SparseMatrix, *dense: torch.Tensor) -> str:
    return ", ".join([f"sparse_mat: {list(A.shape)}", f"sparse_val: {list(A.val.shape)}"] +
                     [f"{name}: {list(t.shape)}" for name, t in zip(("dense_mat",) if len(dense) == 1
                                                                    else ("mat1", "mat2"), dense)])


def spmm(A: SparseMatrix, X: torch.Tensor) -> torch.Tensor:
    """``A @ X``: A [L, M] with scalar values and X [M, N] or [M] -> [L, N] or [L]; with vector values of
    length K (bspmm) X [M, N, K] -> [L, N, K].

    Raises
    ------
    RuntimeError : shapes that do not fit one of those cases, or values and X of different dtypes
    """
    assert isinstance(A, SparseMatrix), f"Expect arg1 to be a SparseMatrix object, got {type(A)}."
    assert isinstance(X, torch.Tensor), f"Expect arg2 to be a torch.Tensor, got {type(X)}."
    scalar = A.val.dim() == 1
    fits = X.shape[0] == A.shape[1] and (X.dim() in (1, 2) if scalar else
                                         (X.dim() == 3 and X.shape[2] == A.val.shape[1]))
    if not fits:
        raise RuntimeError(f"SpMM: Invalid input shapes. {_shapes(A, X)}. Valid input shapes (sparse_mat, "
                           "dense_mat) are: (1) (n, m) and (m, k); (2) (n, m) and (m,); (3) (n, m, b) and (m, k, b).")
    if A.dtype != X.dtype:
        raise RuntimeError("SpMM: the non-zero values does not have the same dtype as the dense matrix.")
    rel = as_relation(A)
    if scalar:
        x = X.view(-1, 1) if X.dim() == 1 else X
        out = message_reduce(rel, "mul", "sum", x, A.val.view(-1, 1), "u", "e")
        return out.view(-1) if X.dim() == 1 else out
    # batch last in DGL, heads second in bgl.dgl's fused SpMM: [M, K, N] times one weight per (nonzero, head)
    out = message_reduce(rel, "mul", "sum", X.permute(0, 2, 1), A.val.unsqueeze(-1), "u", "e")
    return out.permute(0, 2, 1)


def bspmm(A: SparseMatrix, X: torch.Tensor) -> torch.Tensor:
    """Batched ``A @ X``: A [L, M] with values [nnz, K], X [M, N, K] -> [L, N, K] (see :func:`spmm`)."""
    assert isinstance(A, SparseMatrix), f"Expect arg1 to be a SparseMatrix object, got {type(A)}."
    assert isinstance(X, torch.Tensor), f"Expect arg2 to be a torch.Tensor, got {type(X)}."
    return spmm(A, X)


def spspmm(A: SparseMatrix, B: SparseMatrix) -> SparseMatrix:
    """``A @ B`` of two sparse matrices with scalar values and no duplicate nonzeros: [L, M] @ [M, N] ->
    [L, N], nonzeros row by row in the order their columns are first reached, explicit zeros kept (as DGL's).

    Raises
    ------
    RuntimeError : vector values, shapes that do not chain, or duplicate nonzeros
    """
    assert isinstance(A, SparseMatrix), f"Expect A1 to be a SparseMatrix object, got {type(A)}."
    assert isinstance(B, SparseMatrix), f"Expect A2 to be a SparseMatrix object, got {type(B)}."
    if A.val.dim() != 1:
        raise RuntimeError("SpSpMM: the value shape of lhs_mat should be 1-D")
    if B.val.dim() != 1:
        raise RuntimeError("SpSpMM: the value shape of rhs_mat should be 1-D")
    if A.shape[1] != B.shape[0]:
        raise RuntimeError("SpSpMM: the second dim of lhs_mat should be equal to the first dim of the second matrix")
    for name, mat in (("lhs_mat", A), ("rhs_mat", B)):
        if mat.has_duplicate():
            raise RuntimeError(f"SpSpMM does not support {name} with duplicate indices. "
                               "Call A = A.coalesce() to dedup first.")
    if A.is_diag() and A.shape[0] == A.shape[1]:  # a row scaling: B's nonzeros and order, as DGL's
        return B._derive(A.val.index_select(0, B.row.long()) * B.val)
    if B.is_diag() and B.shape[0] == B.shape[1]:
        return A._derive(A.val * B.val.index_select(0, A.col.long()))
    # Gustavson's order, as DGL's: rows of A in turn, A's nonzeros in CSR order, each meeting B's row in its
    # CSR order; within a result row, columns in the order they are first reached
    a_indptr, a_col, a_ids = A.csr()
    a_row = torch.repeat_interleave(torch.arange(A.shape[0], device=A.device),
                                    (a_indptr[1:] - a_indptr[:-1]).long())
    b_indptr, b_col, b_ids = B.csr()
    starts = b_indptr.long()[a_col.long()]
    counts = b_indptr.long()[a_col.long() + 1] - starts
    a_pos = torch.repeat_interleave(torch.arange(A.nnz, device=A.device), counts)
    ends = torch.cumsum(counts, 0)
    b_pos = starts[a_pos] + torch.arange(a_pos.shape[0], device=A.device) - (ends - counts)[a_pos]
    a_val = A.val if a_ids is None else A.val.index_select(0, a_ids.long())
    b_val = B.val if b_ids is None else B.val.index_select(0, b_ids.long())
    products = a_val.index_select(0, a_pos) * b_val.index_select(0, b_pos)
    out_row, out_col = a_row[a_pos], b_col.long()[b_pos]
    keys, inverse = torch.unique(out_row * B.shape[1] + out_col, return_inverse=True)
    ordinal = torch.arange(inverse.shape[0], device=A.device)
    first = torch.full_like(keys, inverse.shape[0]).scatter_reduce(0, inverse, ordinal, "amin")
    order = torch.argsort(first)  # rows come in ascending order, so the first-reached order is row-major
    val = torch.zeros(keys.shape[0], dtype=products.dtype, device=A.device).index_add(0, inverse, products)
    keys = keys[order]
    index_dtype = A.row.dtype
    coo = ((keys // B.shape[1]).to(index_dtype), (keys % B.shape[1]).to(index_dtype))
    return SparseMatrix(val[order], (A.shape[0], B.shape[1]), coo=coo)


def matmul(A: Union[torch.Tensor, SparseMatrix], B: Union[torch.Tensor, SparseMatrix]):
    """``A @ B``: dense @ dense is ``torch.matmul``; sparse @ dense :func:`spmm`; sparse @ sparse
    :func:`spspmm` (dense @ sparse is not supported, as in DGL)."""
    assert isinstance(A, (torch.Tensor, SparseMatrix)), \
        f"Expect arg1 to be a torch.Tensor or SparseMatrix, got {type(A)}."
    assert isinstance(B, (torch.Tensor, SparseMatrix)), \
        f"Expect arg2 to be a torch Tensor or SparseMatrixobject, got {type(B)}."
    if isinstance(A, torch.Tensor) and isinstance(B, torch.Tensor):
        return torch.matmul(A, B)
    assert not isinstance(A, torch.Tensor), \
        f"Expect arg2 to be a torch Tensor if arg 1 is torch Tensor, got {type(B)}."
    return spmm(A, B) if isinstance(B, torch.Tensor) else spspmm(A, B)


def sddmm(A: SparseMatrix, X1: torch.Tensor, X2: torch.Tensor) -> SparseMatrix:
    """``(X1 @ X2) * A`` at ``A``'s nonzeros only: X1 [L, M] and X2 [M, N] (or X1 [L], X2 [N]: their outer
    product); batched (bsddmm) X1 [L, M, K], X2 [M, N, K] -> values [nnz, K]. Same nonzero order as ``A``.

    Raises
    ------
    RuntimeError : shapes that do not fit one of those cases
    """
    L, N = A.shape
    if X1.dim() == 1 and X2.dim() == 1 and (X1.shape[0], X2.shape[0]) == (L, N):
        lhs, rhs, op = X2.view(-1, 1), X1.view(-1, 1), "mul"
    elif X1.dim() == 2 and X2.dim() == 2 and X1.shape[0] == L and X2.shape[1] == N and X1.shape[1] == X2.shape[0]:
        lhs, rhs, op = X2.t(), X1, "dot"
    elif (X1.dim() == 3 and X2.dim() == 3 and X1.shape[0] == L and X2.shape[1] == N and X1.shape[1] == X2.shape[0]
          and X1.shape[2] == X2.shape[2] and (A.val.dim() == 1 or A.val.shape[1] == X1.shape[2])):
        lhs, rhs, op = X2.permute(1, 2, 0), X1.permute(0, 2, 1), "dot"
    else:
        raise RuntimeError(f"SDDMM: Invalid input shapes. {_shapes(A, X1, X2)}. Valid input shapes (sparse_mat, "
                           "mat1, mat2) are: (1) (n, m), (n, k), and (k, m); (2) (n, m), (n,), and (m,); "
                           "(3) (n, m), (n, k, b) and (k, m, b); (4) (n, m, b), (n, k, b) and (k, m, b).")
    products = edge_message(as_relation(A), op, lhs, rhs, "u", "v")
    batched = X1.dim() == 3
    products = products.reshape(A.nnz, X1.shape[2]) if batched else products.reshape(A.nnz)
    val = A.val.unsqueeze(-1) if batched and A.val.dim() == 1 else A.val
    return A._derive(products * val)


def bsddmm(A: SparseMatrix, X1: torch.Tensor, X2: torch.Tensor) -> SparseMatrix:
    """Batched :func:`sddmm` (the batch is the last dim of X1 and X2)."""
    return sddmm(A, X1, X2)


SparseMatrix.__matmul__ = matmul
