"""``dgl.nn.TypedLinear``: one weight matrix per type (plain, basis or block-diagonal decomposed).

RelGraphConv's relation transform.  Parameter names and shapes are DGL's (``W``, ``coeff``).
"""
from __future__ import annotations

import math
from typing import Optional

import torch
from torch import Tensor, nn

from .typed_matmul import BlockDiagonal, Dense, TypedMatmul, type_segments

REGULARIZERS = (None, "basis", "bdd")


class TypedLinear(nn.Module):
    """``y_i = x_i W[type_i]`` with W of shape [num_types, in, out] (or its decomposition).

    Parameters
    ----------
    in_size, out_size, num_types : int
    regularizer : None (a full W per type), "basis" (W_t = sum_b coeff[t, b] V_b) or
        "bdd" (W_t block-diagonal with ``num_bases`` blocks of [in/num_bases, out/num_bases])
    num_bases : int, required for "basis" and "bdd"

    Rows are multiplied per type over the rows sorted by type, a chunk at a time inside one autograd
    Function (:class:`~.typed_matmul.TypedMatmul`); "bdd" batches the blocks of a type in one bmm.
    Nothing of size rows x in x out is built, nor a per-type copy of the rows.
    """

    def __init__(self, in_size: int, out_size: int, num_types: int, regularizer: Optional[str] = None,
                 num_bases: Optional[int] = None):
        super().__init__()
        if regularizer not in REGULARIZERS:
            raise ValueError(f'Supported regularizer options: "basis", "bdd", but got {regularizer}')
        if regularizer is not None and num_bases is None:
            raise ValueError(f'Missing "num_bases" for {regularizer} regularization.')
        self.in_size, self.out_size, self.num_types = in_size, out_size, num_types
        self.regularizer = regularizer
        if regularizer is None:
            self.W = nn.Parameter(torch.empty(num_types, in_size, out_size))
        elif regularizer == "basis":
            self.W = nn.Parameter(torch.empty(num_bases, in_size, out_size))
            self.coeff = nn.Parameter(torch.empty(num_types, num_bases))
            self.num_bases = num_bases
        else:
            if in_size % num_bases != 0 or out_size % num_bases != 0:
                raise ValueError(f"Input and output sizes must be divisible by num_bases: "
                                 f"{in_size} and {out_size} by {num_bases}.")
            self.submat_in, self.submat_out = in_size // num_bases, out_size // num_bases
            self.W = nn.Parameter(torch.empty(num_types, num_bases * self.submat_in * self.submat_out))
            self.num_bases = num_bases
        self._layout = Dense() if regularizer != "bdd" else \
            BlockDiagonal(num_bases, self.submat_in, self.submat_out)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Uniform(+-1/sqrt(fan_in)) weights; Glorot-uniform (ReLU gain) basis coefficients (DGL's)."""
        with torch.no_grad():
            fan_in = self.submat_in if self.regularizer == "bdd" else self.in_size
            nn.init.uniform_(self.W, -1 / math.sqrt(fan_in), 1 / math.sqrt(fan_in))
            if self.regularizer == "basis":
                nn.init.xavier_uniform_(self.coeff, gain=nn.init.calculate_gain("relu"))

    def get_weight(self) -> Tensor:
        """The per-type weights: [num_types, in, out] ("bdd": the flat blocks [num_types, ...])."""
        if self.regularizer == "basis":
            flat = self.W.view(self.num_bases, self.in_size * self.out_size)
            return (self.coeff @ flat).view(self.num_types, self.in_size, self.out_size)
        return self.W

    def forward(self, x: Tensor, x_type: Tensor, sorted_by_type: bool = False) -> Tensor:
        """
        Parameters
        ----------
        x : float [N, in_size]
        x_type : int [N], each in [0, num_types)
        sorted_by_type : ``x_type`` is already non-decreasing (saves a sort)

        Returns
        -------
        float [N, out_size]
        """
        return self.typed_sum(x, x_type, num_out=x.shape[0], sorted_by_type=sorted_by_type)

    def typed_sum(self, x: Tensor, row_type: Tensor, gather: Optional[Tensor] = None,
                  scatter: Optional[Tensor] = None, norm: Optional[Tensor] = None, num_out: int = 0,
                  sorted_by_type: bool = False) -> Tensor:
        """``out[scatter[i]] += norm[i] * x[gather[i]] @ W[row_type[i]]`` over every row i: R-GCN's
        gather, transform and sum without an [n, in] or [n, out] tensor (see :mod:`.typed_matmul`).

        Parameters
        ----------
        x : float [num_x, in_size]
        row_type : int [n], each in [0, num_types)
        gather : int [n] row of ``x`` per row, or None (row i reads ``x[i]``; then n = num_x)
        scatter : int [n] output row per row, or None (row i writes ``out[i]``)
        norm : float [n, 1] or [n, out_size] scaling each row's product, or None
        num_out : rows of the output
        sorted_by_type : ``row_type`` is already non-decreasing (saves a sort)

        Returns
        -------
        float [num_out, out_size]
        """
        row_type = row_type.to(x.device)
        if row_type.numel() and (int(row_type.min()) < 0 or int(row_type.max()) >= self.num_types):
            raise ValueError(f"types must lie in [0, {self.num_types}), got "
                             f"[{int(row_type.min())}, {int(row_type.max())}]")
        if not sorted_by_type:
            order = torch.sort(row_type, stable=True).indices
            gather = order if gather is None else gather.index_select(0, order)
            scatter = order if scatter is None else scatter.index_select(0, order)
            norm = None if norm is None else norm.index_select(0, order)
        segments = type_segments(torch.bincount(row_type, minlength=self.num_types).tolist())
        gather = None if gather is None else gather.long()
        scatter = None if scatter is None else scatter.long()
        return TypedMatmul.apply(x, self.get_weight(), self._layout, segments, gather, scatter, norm,
                                 num_out, self.out_size)

    def __repr__(self) -> str:
        extra = "" if self.regularizer is None else \
            f", regularizer={self.regularizer}, num_bases={self.num_bases}"
        return (f"TypedLinear(in_size={self.in_size}, out_size={self.out_size}, "
                f"num_types={self.num_types}{extra})")


class WeightBasis(nn.Module):
    """``num_outputs`` weights of ``shape``, each a learned combination of ``num_bases`` shared ones (DGL's
    ``WeightBasis``, R-GCN's basis decomposition): ``forward()`` returns ``w_comp @ weight`` as
    ``(num_outputs, *shape)``.  Parameters ``weight`` [num_bases, *shape] and ``w_comp`` [num_outputs,
    num_bases], Glorot-uniform with ReLU gain, as DGL's (so its state dict loads)."""

    def __init__(self, shape, num_bases: int, num_outputs: int):
        super().__init__()
        self.shape, self.num_bases, self.num_outputs = tuple(shape), num_bases, num_outputs
        if num_outputs <= num_bases:
            import warnings

            warnings.warn("The number of weight outputs should be larger than the number of bases.")
        self.weight = nn.Parameter(torch.empty(num_bases, *self.shape))
        nn.init.xavier_uniform_(self.weight, gain=nn.init.calculate_gain("relu"))
        self.w_comp = nn.Parameter(torch.empty(num_outputs, num_bases))
        nn.init.xavier_uniform_(self.w_comp, gain=nn.init.calculate_gain("relu"))

    def forward(self) -> Tensor:
        return torch.matmul(self.w_comp, self.weight.view(self.num_bases, -1)).view(self.num_outputs, *self.shape)
