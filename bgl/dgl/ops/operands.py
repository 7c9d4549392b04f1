"""Shape rules shared by :mod:`.spmm` and :mod:`.sddmm`: DGL's scalar expansion and broadcasting.

A 1-D operand counts as one feature per row (and the result is squeezed back when every used
operand was 1-D); operands of different rank are left-padded with size-1 dims after their row
dim, then broadcast like NumPy.  ``dot`` needs equal last dims and keeps a last dim of 1.
"""
from __future__ import annotations

from typing import Optional

import torch

from bgl.dgl.base import DGLError


class Operands:
    """Two operands ready for :mod:`.edge_map` (padded views, no copy) and the output shape.

    Attributes
    ----------
    lhs, rhs : padded tensors or None; out_shape : feature shape of the result (without its rows);
    squeeze : whether the caller drops the result's last dim (every used operand was 1-D)
    """

    def __init__(self, op: str, lhs: Optional[torch.Tensor], rhs: Optional[torch.Tensor]):
        if lhs is not None and rhs is not None and lhs.dtype != rhs.dtype:
            raise DGLError(f"The node features' data type {lhs.dtype} doesn't match edge features' data type "
                           f"{rhs.dtype}, please convert them to the same type.")
        used = [t for t in (lhs, rhs) if t is not None]
        self.squeeze = all(t.dim() == 1 for t in used)
        lhs = None if lhs is None else (lhs.unsqueeze(-1) if lhs.dim() == 1 else lhs)
        rhs = None if rhs is None else (rhs.unsqueeze(-1) if rhs.dim() == 1 else rhs)
        if lhs is not None and rhs is not None:
            rank = max(lhs.dim(), rhs.dim())
            # only the lower-rank one is reshaped: a same-shape view would keep its gradient's base alive
            lhs = lhs if lhs.dim() == rank else lhs.reshape(lhs.shape[0], *(1,) * (rank - lhs.dim()), *lhs.shape[1:])
            rhs = rhs if rhs.dim() == rank else rhs.reshape(rhs.shape[0], *(1,) * (rank - rhs.dim()), *rhs.shape[1:])
        self.lhs, self.rhs = lhs, rhs
        self.out_shape = broadcast_shape(op, None if lhs is None else tuple(lhs.shape[1:]),
                                         None if rhs is None else tuple(rhs.shape[1:]))

    def finish(self, out: torch.Tensor) -> torch.Tensor:
        return out.squeeze(-1) if self.squeeze else out


def broadcast_shape(op: str, lshape, rshape) -> tuple:
    """The result's feature shape, or DGLError naming the two shapes that do not broadcast."""
    if op == "copy_lhs":
        return lshape
    if op == "copy_rhs":
        return rshape
    if op == "dot" and lshape[-1] != rshape[-1]:
        raise DGLError("Dot operator is only available for arrays with the same size on last dimension, "
                       f"but got {lshape} and {rshape}.")
    for a, b in zip(lshape, rshape):
        if a != b and a != 1 and b != 1:
            raise DGLError(f"Feature shapes {lshape} and {rshape} are not valid for broadcasting.")
    out = tuple(max(a, b) for a, b in zip(lshape, rshape))
    return out[:-1] + (1,) if op == "dot" else out


def check_rows(data: torch.Tensor, expected: int, what: str) -> None:
    """One line when an operand's first dim does not match the nodes / edges it is read for."""
    if data.shape[0] != expected:
        raise DGLError(f"Expect {what} data with {expected} rows, got a tensor of shape {tuple(data.shape)}.")
