"""One weight matrix per row type, a chunk of rows at a time: the kernel under ``TypedLinear`` and
``RelGraphConv``.

R-GCN's messages are ``x[src_e] @ W[type_e]`` summed onto ``dst_e``.  Written with autograd ops,
that gathers E x in source rows and keeps them for the weight gradient, builds E x out messages,
and each per-type slice's backward allocates a zero gradient of the whole E x in (at 10M edges x
128 that is 5 GB per copy; the process passed 20 GB).  :class:`TypedMatmul` does the same sums
in chunks of ``CHUNK_ROWS``-ish rows inside one autograd Function that keeps only its inputs:
forward gathers a chunk, multiplies it by its type's weight and adds it into the output; backward
gathers again (recomputing is cheaper than keeping E x in) for the weight gradient and scatters
the input gradient.  Peak extra memory is a few chunks, whatever E is.
"""
from __future__ import annotations

from typing import Optional, Sequence, Tuple

import torch
from torch.autograd.function import once_differentiable
from torch import Tensor

from bgl.dgl.ops.edge_map import CHUNK_ELEMENTS, index_add


class BlockDiagonal:
    """The "bdd" weight layout: a type's flat weight row [blocks * block_in * block_out] is
    ``blocks`` independent [block_in, block_out] matrices along the feature dims."""

    def __init__(self, blocks: int, block_in: int, block_out: int):
        self.blocks, self.block_in, self.block_out = blocks, block_in, block_out

    def _split(self, w: Tensor) -> Tensor:
        return w.view(self.blocks, self.block_in, self.block_out)

    def _per_block(self, rows: Tensor, width: int) -> Tensor:
        return rows.reshape(rows.shape[0], self.blocks, width).transpose(0, 1)  # [B, n, width]

    def _joined(self, per_block: Tensor) -> Tensor:
        return per_block.transpose(0, 1).reshape(per_block.shape[1], -1)

    def apply(self, rows: Tensor, w: Tensor) -> Tensor:
        return self._joined(torch.bmm(self._per_block(rows, self.block_in), self._split(w)))

    def apply_transposed(self, grad: Tensor, w: Tensor) -> Tensor:
        return self._joined(torch.bmm(self._per_block(grad, self.block_out), self._split(w).transpose(1, 2)))

    def weight_grad(self, rows: Tensor, grad: Tensor) -> Tensor:
        return torch.bmm(self._per_block(rows, self.block_in).transpose(1, 2),
                         self._per_block(grad, self.block_out)).reshape(-1)


class Dense:
    """A type's weight is one [in, out] matrix (no regulariser, or "basis" once combined)."""

    @staticmethod
    def apply(rows: Tensor, w: Tensor) -> Tensor:
        return rows @ w

    @staticmethod
    def apply_transposed(grad: Tensor, w: Tensor) -> Tensor:
        return grad @ w.t()

    @staticmethod
    def weight_grad(rows: Tensor, grad: Tensor) -> Tensor:
        return rows.t() @ grad


def chunk_rows(width: int) -> int:
    """Rows per chunk: about ``CHUNK_ELEMENTS`` values of the wider side (4 MiB of float32)."""
    return max(1, CHUNK_ELEMENTS // max(width, 1))


def _take(t: Optional[Tensor], index: Optional[Tensor], start: int, stop: int) -> Optional[Tensor]:
    """Rows ``start:stop`` of ``t``, through ``index`` when there is one (``t`` None: None)."""
    if t is None:
        return None
    return t[start:stop] if index is None else t.index_select(0, index[start:stop])


def _put(target: Tensor, index: Optional[Tensor], start: int, stop: int, rows: Tensor) -> None:
    if index is None:
        target[start:stop] += rows
    else:
        index_add(target, index[start:stop], rows)


class TypedMatmul(torch.autograd.Function):
    """``out[scatter[i]] += norm[i] * (x[gather[i]] @ W[t])`` for every row ``i`` of type ``t``.

    Parameters (of ``apply``)
    -------------------------
    x : float [num_x, in]
    weight : float [num_types, in, out] (``Dense``) or [num_types, B * in/B * out/B] (``BlockDiagonal``)
    layout : :class:`Dense` or a :class:`BlockDiagonal`
    segments : sequence of (type, start, stop): rows ``start:stop`` all have that type
    gather : int64 [n] rows of ``x`` per row, or None (row i is ``x[i]``)
    scatter : int64 [n] output row per row, or None (row i goes to ``out[i]``)
    norm : float [n, 1] or [n, out] scaling each row's product, or None
    num_out : rows of the output

    Returns
    -------
    float [num_out, out]
    """

    @staticmethod
    def forward(ctx, x, weight, layout, segments: Sequence[Tuple[int, int, int]], gather, scatter, norm,
                num_out: int, out_width: int):
        out = x.new_zeros(num_out, out_width)
        step = chunk_rows(max(x.shape[1], out_width))
        with torch.no_grad():
            for t, begin, end in segments:
                for start in range(begin, end, step):
                    stop = min(start + step, end)
                    message = layout.apply(_take(x, gather, start, stop), weight[t])
                    if norm is not None:
                        message = message * norm[start:stop]
                    _put(out, scatter, start, stop, message)
        ctx.save_for_backward(x, weight, gather, scatter, norm)
        ctx.layout, ctx.segments, ctx.step = layout, segments, step
        return out

    @staticmethod
    @once_differentiable  # the backward runs numba / no-grad kernels: a second derivative is refused, not wrong
    def backward(ctx, grad_out):
        x, weight, gather, scatter, norm = ctx.saved_tensors
        layout, step = ctx.layout, ctx.step
        want_x, want_w, want_norm = ctx.needs_input_grad[0], ctx.needs_input_grad[1], ctx.needs_input_grad[6]
        grad_x = torch.zeros_like(x) if want_x else None
        grad_w = torch.zeros_like(weight) if want_w else None
        grad_norm = torch.zeros_like(norm) if want_norm else None
        for t, begin, end in ctx.segments:
            for start in range(begin, end, step):
                stop = min(start + step, end)
                grad = _take(grad_out, scatter, start, stop)
                rows = _take(x, gather, start, stop) if (want_w or want_norm) else None
                if want_norm:
                    product = layout.apply(rows, weight[t]) * grad
                    grad_norm[start:stop] = product.sum(1, keepdim=True) if norm.shape[1] == 1 else product
                if norm is not None:
                    grad = grad * norm[start:stop]
                if want_x:
                    _put(grad_x, gather, start, stop, layout.apply_transposed(grad, weight[t]))
                if want_w:
                    grad_w[t] += layout.weight_grad(rows, grad)
        return grad_x, grad_w, None, None, None, None, grad_norm, None, None


def type_segments(counts: Sequence[int]) -> list:
    """(type, start, stop) of each type present, from per-type row counts of rows sorted by type."""
    segments, start = [], 0
    for t, count in enumerate(counts):
        if count:
            segments.append((t, start, start + count))
        start += count
    return segments
