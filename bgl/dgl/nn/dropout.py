"""The layers' dropout (``feat_drop``, ``attn_drop``, ``dropout``): ``nn.Dropout`` with a faster CPU mask.

DGL's layers hold ``nn.Dropout`` modules; so do bgl's, under the same attribute names (a state dict
has no entry for them either way).  What differs is how a training step draws the mask of a CPU
tensor.  ``nn.Dropout`` draws it with ``bernoulli_``, and on the torch versions a DGL user moves to,
that draw is the largest single cost of a GAT step: DGL's GAT example on Cora (feature and attention
dropout 0.6 in both layers) spent 56 % of its step in ``aten::bernoulli_`` on torch 2.14, whose
dropout of a 2708 x 1433 input (forward + backward, one thread) took ~50 ms against ~15 ms on
torch 2.2.1 (DGL's stack).

Here each element's keep-or-drop comes from a counter-based hash (splitmix64 of the step's seed and
the element's index; its top 24 bits, as a float32 ``torch.rand`` has, against ``p``): one pass
writes ``x * scale`` or 0, on the kernel threads, whatever their count.  Nothing is kept for the
backward pass but the seed: it hashes the same indices again (``nn.Dropout`` keeps a byte an
element).  The seed is drawn from torch's default generator, so ``torch.manual_seed`` decides the
masks; only the stream differs from ``nn.Dropout``'s (other elements dropped, same distribution).
Elsewhere (a GPU or half tensor, evaluation, ``p`` 0 or 1, ``inplace=True``) it is ``nn.Dropout``'s
own forward.

Only where no DGL runs: on a torch that a DGL release supports (DGL 2.4, the last, supports torch up
to 2.4; PyPI's DGL 2.1 wheels need torch 2.2.1) the layers draw exactly ``nn.Dropout``'s masks, so a
DGL script and its bgl.dgl copy, seeded alike, run the same arithmetic side by side (the pinned
lane's example tests compare them to the digit).  From torch 2.5 on (:data:`HASHED`) there is no DGL
to agree with, and the faster draw is taken.
"""
from __future__ import annotations

import numpy as np
import torch
from torch import Tensor, nn

from ..ops._kernels import dropout_pairs
from ..ops.cpu_rows import kernels_for, run_edges

HASHED = tuple(int(v) for v in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 5)  # no DGL runs there
BITS = 24  # uniform bits compared with p (float32's mantissa, as torch.rand)


def _masked_scale(x: Tensor, seed: int, p: float) -> Tensor:
    """One dropout pass of a contiguous CPU float tensor (seed and p decide which elements stay)."""
    flat = x.reshape(-1)
    out = torch.empty_like(flat)
    n = flat.numel()
    run_edges(dropout_pairs, (n + 1) // 2, n, np.uint64(seed), np.uint64(round(p * (1 << BITS))), 1.0 / (1.0 - p),
              flat.numpy(), out.numpy())
    return out.view(x.shape)


class _HashedDropout(torch.autograd.Function):
    """Forward and backward apply the same hashed mask (from the seed), so nothing per element is saved;
    the backward is this same op on the gradient, so it can be differentiated again."""

    @staticmethod
    def forward(ctx, x: Tensor, seed: int, p: float) -> Tensor:
        ctx.seed, ctx.p = seed, p
        return _masked_scale(x.contiguous(), seed, p)

    @staticmethod
    def backward(ctx, grad: Tensor):
        return _HashedDropout.apply(grad, ctx.seed, ctx.p), None, None


class Dropout(nn.Dropout):
    """``nn.Dropout`` (same ``p``, ``inplace``, ``repr`` and expectation) with a cheaper CPU training mask."""

    def forward(self, x: Tensor) -> Tensor:
        if not HASHED or not self.training or self.p in (0.0, 1.0) or self.inplace or not kernels_for(x):
            return super().forward(x)
        seed = int(torch.randint(0, 2**62, (1,), dtype=torch.int64))
        return _HashedDropout.apply(x, seed, self.p)
