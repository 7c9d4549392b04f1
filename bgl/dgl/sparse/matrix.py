"""``dgl.sparse.SparseMatrix``: a sparse matrix whose nonzero values are a torch tensor (autograd flows through it).

Storage, as DGL's C++ matrix keeps it: the format the matrix was made from (COO, CSR or CSC), the
other two built on first use and cached, shared by every matrix ``val_like`` / ``transpose`` derive
from it.  Costs per nonzero: the values, plus two ids (the index dtype given, int64 by default) per
format built, plus one more id (the value position) in a CSR / CSC built from another format.  The
order of the nonzeros is the order of ``val``: the COO given, or the CSR / CSC position order;
a CSR / CSC built later is a stable sort of it (DGL's order too).
"""
from __future__ import annotations

from typing import Optional, Tuple

import torch

from bgl.dgl.relation import row_positions

Compressed = Tuple[torch.Tensor, torch.Tensor, Optional[torch.Tensor]]  # (indptr, indices, value ids or None)


def expand_indptr(indptr: torch.Tensor) -> torch.Tensor:
    """The row (or column) id of every position of a compressed format, in the indptr's dtype."""
    counts = (indptr[1:] - indptr[:-1]).long()
    return torch.repeat_interleave(torch.arange(counts.shape[0], device=indptr.device, dtype=indptr.dtype), counts)


def compress_by(major: torch.Tensor, minor: torch.Tensor, num_major: int) -> Compressed:
    """(indptr, minor ids, value ids) of COO entries grouped by ``major``, stable within a group."""
    order = torch.sort(major, stable=True).indices
    counts = torch.bincount(major.long(), minlength=num_major)
    indptr = torch.zeros(num_major + 1, dtype=major.dtype, device=major.device)
    torch.cumsum(counts, 0, out=indptr[1:])
    return indptr, minor[order], order.to(major.dtype)


def linear_keys(row: torch.Tensor, col: torch.Tensor, num_cols: int) -> torch.Tensor:
    """One int64 key per entry, ordered row-major: what coalescing and set operations sort on."""
    return row.long() * num_cols + col.long()


class SparseMatrix:
    """A sparse matrix of shape ``(rows, cols)`` with scalar (``val`` [nnz]) or vector (``val`` [nnz, D])
    nonzero values.  Built by :func:`bgl.dgl.sparse.spmatrix`, ``from_coo`` / ``from_csr`` / ``from_csc``,
    ``diag``, ``identity``, ``val_like`` or ``g.adj()``, not by hand."""

    def __init__(self, val: torch.Tensor, shape: Tuple[int, int], coo=None, csr: Optional[Compressed] = None,
                 csc: Optional[Compressed] = None, is_diag: bool = False):
        self._val = val
        self._shape = (int(shape[0]), int(shape[1]))
        self._coo, self._csr, self._csc = coo, csr, csc
        self._is_diag = is_diag
        self._relation = None  # the bgl.dgl Relation (cols -> rows) matmul / sddmm read, built on first use

    def _derive(self, val: torch.Tensor) -> "SparseMatrix":
        """The same nonzeros (and cached formats) with new values."""
        out = SparseMatrix(val, self._shape, self._coo, self._csr, self._csc, self._is_diag)
        out._relation = self._relation
        return out

    def __repr__(self) -> str:
        def indent(text: str, by: int) -> str:
            lines = text.split("\n")
            return "\n".join([lines[0]] + [" " * by + line for line in lines[1:]])

        meta = f"shape={self.shape}, nnz={self.nnz}"
        if self.val.dim() > 1:
            meta += f", val_size={tuple(self.val.shape[1:])}"
        body = (f"indices={indent(str(torch.stack(self.coo())), 8)},\n"
                f"values={indent(str(self.val), 7)},\n{meta})")
        return f"{type(self).__name__}(" + indent(body, len(type(self).__name__) + 1)

    # ---- what the matrix is
    @property
    def val(self) -> torch.Tensor:
        """The nonzero values, [nnz] or [nnz, D], in the matrix's nonzero order."""
        return self._val

    @property
    def shape(self) -> Tuple[int, int]:
        return self._shape

    @property
    def nnz(self) -> int:
        return int(self._val.shape[0])

    @property
    def dtype(self) -> torch.dtype:
        return self._val.dtype

    @property
    def device(self) -> torch.device:
        return self._val.device

    @property
    def row(self) -> torch.Tensor:
        return self.coo()[0]

    @property
    def col(self) -> torch.Tensor:
        return self.coo()[1]

    # ---- formats
    def coo(self) -> Tuple[torch.Tensor, torch.Tensor]:
        """(row ids, column ids) [nnz] in the order of ``val``."""
        if self._coo is None:
            if self._csr is not None:
                self._coo = (expand_indptr(self._csr[0]), self._csr[1])
            else:
                self._coo = (self._csc[1], expand_indptr(self._csc[0]))
        return self._coo

    def indices(self) -> torch.Tensor:
        """The COO as one [2, nnz] tensor."""
        return torch.stack(self.coo())

    def csr(self) -> Compressed:
        """(indptr [rows + 1], column ids [nnz], value ids [nnz] or None when ``val`` is already in CSR order)."""
        if self._csr is None:
            row, col = self.coo()
            self._csr = compress_by(row, col, self._shape[0])
        return self._csr

    def csc(self) -> Compressed:
        """(indptr [cols + 1], row ids [nnz], value ids [nnz] or None when ``val`` is already in CSC order)."""
        if self._csc is None:
            row, col = self.coo()
            self._csc = compress_by(col, row, self._shape[1])
        return self._csc

    def to_dense(self) -> torch.Tensor:
        """The dense [rows, cols, *D] tensor (duplicates: one of the values lands, as in DGL)."""
        row, col = self.coo()
        out = torch.zeros(self._shape + tuple(self._val.shape[1:]), dtype=self.dtype, device=self.device)
        out[row.long(), col.long()] = self._val
        return out

    def transpose(self) -> "SparseMatrix":
        """The [cols, rows] matrix, same nonzero order (CSR and CSC swap roles, no copy)."""
        coo = None if self._coo is None else (self._coo[1], self._coo[0])
        return SparseMatrix(self._val, (self._shape[1], self._shape[0]), coo, self._csc, self._csr, self._is_diag)

    def t(self) -> "SparseMatrix":
        return self.transpose()

    @property
    def T(self) -> "SparseMatrix":  # noqa: N802 (DGL's name)
        return self.transpose()

    def coalesce(self) -> "SparseMatrix":
        """Duplicates summed, nonzeros sorted row-major (the values keep their gradient, where DGL's do not)."""
        row, col = self.coo()
        keys, order = torch.sort(linear_keys(row, col, self._shape[1]), stable=True)
        unique, inverse = torch.unique_consecutive(keys, return_inverse=True)
        val = self._val.index_select(0, order)
        first = row.index_select(0, order), col.index_select(0, order)
        if unique.shape[0] != keys.shape[0]:
            val = torch.zeros((unique.shape[0],) + tuple(val.shape[1:]), dtype=val.dtype,
                              device=val.device).index_add(0, inverse, val)
            starts = torch.ones_like(keys, dtype=torch.bool)
            starts[1:] = keys[1:] != keys[:-1]
            first = first[0][starts], first[1][starts]
        return SparseMatrix(val, self._shape, coo=first)

    def has_duplicate(self) -> bool:
        """Whether two nonzeros share a (row, col)."""
        row, col = self.coo()
        return int(torch.unique(linear_keys(row, col, self._shape[1])).shape[0]) != self.nnz

    def is_diag(self) -> bool:
        """Whether the matrix was built as a diagonal one (``diag`` / ``identity``), as DGL keeps it."""
        return self._is_diag

    # ---- devices and dtypes
    def to(self, device=None, dtype=None) -> "SparseMatrix":
        """The matrix on ``device`` with values of ``dtype`` (itself when both already match)."""
        device = self.device if device is None else torch.device(device)
        dtype = self.dtype if dtype is None else dtype
        same_device = device.type == self.device.type and (device.index is None or device == self.device)
        if same_device and dtype == self.dtype:
            return self
        if same_device:
            return self._derive(self._val.to(dtype=dtype))
        row, col = self.coo()
        return SparseMatrix(self._val.to(device=device, dtype=dtype), self._shape,
                            coo=(row.to(device), col.to(device)), is_diag=self._is_diag)

    def cuda(self) -> "SparseMatrix":
        return self.to(device="cuda")

    def cpu(self) -> "SparseMatrix":
        return self.to(device="cpu")

    def float(self) -> "SparseMatrix":
        return self.to(dtype=torch.float)

    def double(self) -> "SparseMatrix":
        return self.to(dtype=torch.double)

    def int(self) -> "SparseMatrix":
        return self.to(dtype=torch.int)

    def long(self) -> "SparseMatrix":
        return self.to(dtype=torch.long)

    # ---- sub-matrices
    def index_select(self, dim: int, index: torch.Tensor) -> "SparseMatrix":
        """Rows (``dim=0``) or columns (``dim=1``) ``index`` (repeats allowed), each in its CSR / CSC order.

        Raises
        ------
        ValueError : ``dim`` not 0 or 1; TypeError : ``index`` not a tensor
        """
        if dim not in (0, 1):
            raise ValueError("The selection dimension should be 0 or 1.")
        if not isinstance(index, torch.Tensor):
            raise TypeError(f"{type(index).__name__} is unsupported input type.")
        indptr, minor, ids = self.csr() if dim == 0 else self.csc()
        index = index.to(indptr.device).long()
        counts = indptr.long()[index + 1] - indptr.long()[index]
        new_indptr = torch.zeros(index.shape[0] + 1, dtype=indptr.dtype, device=indptr.device)
        torch.cumsum(counts, 0, out=new_indptr[1:])
        pos = row_positions(indptr, index)
        val = self._val.index_select(0, pos if ids is None else ids.long()[pos])
        fmt = (new_indptr, minor[pos], None)
        if dim == 0:
            return SparseMatrix(val, (index.shape[0], self._shape[1]), csr=fmt)
        return SparseMatrix(val, (self._shape[0], index.shape[0]), csc=fmt)

    def range_select(self, dim: int, index: slice) -> "SparseMatrix":
        """Rows or columns ``index.start:index.stop`` (step 1), as :meth:`index_select` of that range."""
        if dim not in (0, 1):
            raise ValueError("The selection dimension should be 0 or 1.")
        if not isinstance(index, slice):
            raise TypeError(f"{type(index).__name__} is unsupported input type.")
        if index.step not in (None, 1):
            raise NotImplementedError("Slice with step other than 1 are not supported yet.")
        start = 0 if index.start is None else index.start
        stop = self._shape[dim] if index.stop is None else index.stop
        return self.index_select(dim, torch.arange(start, stop, device=self.device))

    def compact(self, dim: int, leading_indices: Optional[torch.Tensor] = None):
        """Rows (``dim=0``) or columns (``dim=1``) renumbered 0..k-1: ``leading_indices`` first (in their
        order, with or without nonzeros), then every other one that holds a nonzero, ascending; the
        rest dropped (``dgl.to_block``'s relabelling).  Nonzeros keep their order.

        Returns
        -------
        (SparseMatrix, int tensor [k]): the matrix and the old id of each new row / column
        """
        if dim not in (0, 1):
            raise ValueError("The compaction dimension should be 0 or 1.")
        row, col = self.coo()
        ids = (row if dim == 0 else col).long()
        present = torch.unique(ids)
        if leading_indices is None:
            kept = present
        else:
            lead = leading_indices.to(ids.device).long()
            kept = torch.cat([lead, present[~torch.isin(present, lead)]])
        size = max(self._shape[dim], int(kept.max()) + 1 if kept.numel() else 0)
        new_id = torch.full((size,), -1, dtype=torch.int64, device=ids.device)
        new_id[kept.flip(0)] = torch.arange(kept.shape[0] - 1, -1, -1, device=ids.device)  # first place wins
        relabelled = new_id[ids].to(row.dtype)
        shape = (kept.shape[0], self._shape[1]) if dim == 0 else (self._shape[0], kept.shape[0])
        coo = (relabelled, col) if dim == 0 else (row, relabelled)
        return SparseMatrix(self._val, shape, coo=coo), kept.to(row.dtype)

    def sample(self, dim: int, fanout: int, ids: Optional[torch.Tensor] = None, replace: bool = False,
               bias: bool = False):
        """Refused: random row / column sampling of a matrix is not built (one line, no fallback)."""
        from bgl.dgl.base import not_built

        raise not_built("SparseMatrix.sample", "use bgl.dgl.sampling.sample_neighbors on the graph")
