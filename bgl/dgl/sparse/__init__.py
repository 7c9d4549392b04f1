"""``bgl.dgl.sparse``: DGL 2.1's ``dgl.sparse`` (``import dgl.sparse as dglsp``) in plain PyTorch.

A :class:`SparseMatrix` of torch tensors (COO / CSR / CSC, each built on first use and cached; see
:mod:`.matrix` for the cost per nonzero), its constructors (:mod:`.creation`), elementwise operators
(:mod:`.elementwise`), products with dense and sparse operands (:mod:`.products`, on bgl.dgl's fused
SpMM / SDDMM) and reductions (:mod:`.reduction`).  Values, nonzero order, coalescing, shapes, dtypes,
gradients and errors follow real DGL's (tests/bgl/dgl/test_sparse_vs_dgl.py); the differences kept are
listed in docs/from-dgl.md.
"""
from __future__ import annotations

from bgl.dgl.sparse.creation import (diag, from_coo, from_csc, from_csr, from_torch_sparse, identity, spmatrix,
                                     to_torch_sparse_coo, to_torch_sparse_csc, to_torch_sparse_csr, val_like)
from bgl.dgl.sparse.elementwise import (Scalar, add, div, inv, is_scalar, mul, neg, power, sp_add, sp_add_v,
                                        sp_broadcast_v, sp_div, sp_div_v, sp_mul, sp_mul_v, sp_power, sp_sub,
                                        sp_sub_v, sub)
from bgl.dgl.sparse.matrix import SparseMatrix
from bgl.dgl.sparse.products import bsddmm, bspmm, matmul, sddmm, spmm, spspmm
from bgl.dgl.sparse.reduction import reduce, smax, smean, smin, softmax, sprod, sum  # noqa: A004 (DGL's names)

__all__ = ["SparseMatrix", "spmatrix", "from_coo", "from_csr", "from_csc", "val_like", "diag", "identity",
           "from_torch_sparse", "to_torch_sparse_coo", "to_torch_sparse_csr", "to_torch_sparse_csc",
           "add", "sub", "mul", "div", "power", "neg", "inv", "sp_add", "sp_sub", "sp_mul", "sp_div", "sp_power",
           "sp_broadcast_v", "sp_add_v", "sp_sub_v", "sp_mul_v", "sp_div_v", "is_scalar", "Scalar",
           "spmm", "bspmm", "spspmm", "matmul", "sddmm", "bsddmm",
           "reduce", "sum", "smax", "smin", "smean", "sprod", "softmax"]
