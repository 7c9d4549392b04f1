"""Weighted draws with replacement over any number of categories (DGL's ``dgl.random.choice(..., prob=)``)."""
from __future__ import annotations

import torch

from bgl.dgl.base import DGLError
from bgl.sampler.multilayer import thread_generator


def choice(prob: torch.Tensor, count: int) -> torch.Tensor:
    """``count`` int64 indices drawn with replacement in proportion to ``prob`` (non-negative, float [n]).

    By inverse CDF in float64 from torch's generator (``torch.manual_seed`` repeats it), so any number of
    categories, where ``torch.multinomial`` stops at 2^24.  DGLError when ``prob`` sums to zero.
    """
    count = int(count)
    if count < 0:
        raise DGLError(f"the number of draws must be >= 0, got {count}.")
    cdf = torch.cumsum(prob.detach().cpu().to(torch.float64).view(-1), 0)
    if cdf.numel() == 0 or not float(cdf[-1]) > 0:
        raise DGLError("cannot draw from an empty or all-zero distribution.")
    picks = torch.searchsorted(cdf, torch.rand(count, dtype=torch.float64, generator=thread_generator()) * cdf[-1], right=True)
    return picks.clamp_(max=cdf.numel() - 1)
