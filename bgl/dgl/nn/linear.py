"""``dgl.nn.TypedLinear``: one weight matrix per type (plain, basis or block-diagonal decomposed).

RelGraphConv's relation transform.  Parameter names and shapes are DGL's (``W``, ``coeff``).
"""
from __future__ import annotations

import math
from typing import Optional

import torch
from torch import Tensor, nn

REGULARIZERS = (None, "basis", "bdd")


class TypedLinear(nn.Module):
    """``y_i = x_i W[type_i]`` with W of shape [num_types, in, out] (or its decomposition).

    Parameters
    ----------
    in_size, out_size, num_types : int
    regularizer : None (a full W per type), "basis" (W_t = sum_b coeff[t, b] V_b) or
        "bdd" (W_t block-diagonal with ``num_bases`` blocks of [in/num_bases, out/num_bases])
    num_bases : int, required for "basis" and "bdd"

    Rows are multiplied per type over the rows sorted by type (one matmul per type present);
    "bdd" batches the blocks of a type in one bmm.  Nothing of size rows x in x out is built.
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
        x_type = x_type.to(x.device)
        if x_type.numel() and (int(x_type.min()) < 0 or int(x_type.max()) >= self.num_types):
            raise ValueError(f"types must lie in [0, {self.num_types}), got "
                             f"[{int(x_type.min())}, {int(x_type.max())}]")
        order = None if sorted_by_type else torch.sort(x_type, stable=True).indices
        rows = x if order is None else x.index_select(0, order)
        counts = torch.bincount(x_type, minlength=self.num_types).tolist()
        weight = self.get_weight()
        parts, start = [], 0
        for t, count in enumerate(counts):
            if count:
                parts.append(self._apply_type(rows[start:start + count], weight[t]))
            start += count
        # no rows: still one (empty) product, so the weights get zero gradients as DGL's do, not None
        out = torch.cat(parts) if parts else self._apply_type(rows, weight[0])
        if order is None:
            return out
        return torch.empty_like(out).index_copy_(0, order, out)

    def _apply_type(self, rows: Tensor, weight: Tensor) -> Tensor:
        if self.regularizer != "bdd":
            return rows @ weight
        blocks = weight.view(self.num_bases, self.submat_in, self.submat_out)
        per_block = rows.view(-1, self.num_bases, self.submat_in).transpose(0, 1)  # [B, n, si]
        return torch.bmm(per_block, blocks).transpose(0, 1).reshape(-1, self.out_size)

    def __repr__(self) -> str:
        extra = "" if self.regularizer is None else \
            f", regularizer={self.regularizer}, num_bases={self.num_bases}"
        return (f"TypedLinear(in_size={self.in_size}, out_size={self.out_size}, "
                f"num_types={self.num_types}{extra})")
