"""DGL's segment operators: reductions, softmax and matmuls over consecutive row segments.

``seglen[i]`` rows of ``value`` form segment ``i`` (a graph of a batch, the edges of a type).
Reductions are torch's ``segment_reduce`` (empty segments give 0, as DGL's); ``segment_mm``
multiplies each segment by its own matrix (one matmul per segment: segments are types, a few);
``gather_mm`` sorts its rows by matrix, runs ``segment_mm`` and puts the rows back.
"""
from __future__ import annotations

import torch

from bgl.dgl.base import DGLError
from bgl.dgl.ops.edge_softmax import _EdgeSoftmax


def _lengths(seglen, value: torch.Tensor) -> torch.Tensor:
    seglen = torch.as_tensor(seglen, device=value.device).long()
    if int(seglen.sum()) != value.shape[0]:
        raise DGLError(f"seglen sums to {int(seglen.sum())}, but value has {value.shape[0]} rows.")
    return seglen


def segment_reduce(seglen, value: torch.Tensor, reducer: str = "sum") -> torch.Tensor:
    """``reducer`` (sum / mean / max / min) of each segment's rows: [len(seglen), *value.shape[1:]]."""
    if reducer not in ("sum", "mean", "max", "min"):
        raise DGLError(f"reducer {reducer} not recognized.")
    lengths = _lengths(seglen, value)
    how = "sum" if reducer == "mean" else reducer
    out = torch.segment_reduce(value, how, lengths=lengths, unsafe=True)
    if reducer == "mean":
        return out / lengths.clamp(min=1).to(out.dtype).view(-1, *(1,) * (out.dim() - 1))
    if reducer in ("max", "min"):
        out = torch.where(torch.isinf(out), torch.zeros_like(out), out)
    return out


def segment_softmax(seglen, value: torch.Tensor) -> torch.Tensor:
    """Softmax of ``value``'s rows within each segment (shape of ``value``)."""
    lengths = _lengths(seglen, value)
    group = torch.repeat_interleave(torch.arange(lengths.shape[0], device=value.device), lengths)
    return _EdgeSoftmax.apply(value, group, int(lengths.shape[0]))


def segment_mm(a: torch.Tensor, b: torch.Tensor, seglen_a) -> torch.Tensor:
    """``a[seg i] @ b[i]`` for each segment, concatenated: a [N, D1], b [R, D1, D2] -> [N, D2]."""
    lengths = _lengths(seglen_a, a)
    if lengths.shape[0] != b.shape[0]:
        raise DGLError(f"segment_mm needs one matrix per segment: {lengths.shape[0]} segments, {b.shape[0]} matrices.")
    parts = torch.split(a, lengths.tolist())
    return torch.cat([part @ b[i] for i, part in enumerate(parts)]) if parts else a.new_zeros((0, b.shape[-1]))


def gather_mm(a: torch.Tensor, b: torch.Tensor, *, idx_b: torch.Tensor) -> torch.Tensor:
    """``a[i] @ b[idx_b[i]]`` for each row: a [N, D1], b [R, D1, D2], idx_b int [N] -> [N, D2]."""
    idx_b = idx_b.long()
    if idx_b.shape[0] != a.shape[0]:
        raise DGLError(f"idx_b has {idx_b.shape[0]} entries for {a.shape[0]} rows of a.")
    order = torch.argsort(idx_b, stable=True)
    seglen = torch.bincount(idx_b, minlength=b.shape[0])
    out = segment_mm(a[order], b, seglen)
    return torch.empty_like(out).index_copy(0, order, out)
