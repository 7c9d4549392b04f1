"""bgl.dgl.ops.cpu_alloc: kernel outputs on huge pages are ordinary tensors with torch's values."""
from __future__ import annotations

import torch

from bgl.dgl.ops import cpu_alloc


def test_huge_page_tensors_equal_torch_ones():
    shape = (3 * cpu_alloc.HUGE_PAGE_BYTES // 4 // 8 + 5, 8)  # several huge pages of float32, ragged end
    for made, want in ((cpu_alloc.zeros(shape, torch.float32), torch.zeros(shape)),
                       (cpu_alloc.full(shape, -1, torch.int32), torch.full(shape, -1, dtype=torch.int32)),
                       (cpu_alloc.full(shape, float("-inf"), torch.float64), torch.full(shape, float("-inf"),
                                                                                        dtype=torch.float64))):
        assert made.dtype == want.dtype and made.shape == want.shape and made.is_contiguous()
        torch.testing.assert_close(made, want)
    out = cpu_alloc.empty(shape, torch.float32)
    out.copy_(torch.arange(out.numel(), dtype=torch.float32).view(shape))  # writable end to end
    assert out[-1, -1] == out.numel() - 1


def test_small_tensors_are_left_alone():
    t = torch.empty(10)
    assert cpu_alloc.advise_huge_pages(t) is t
    assert cpu_alloc.zeros((2, 3), torch.float64).equal(torch.zeros(2, 3, dtype=torch.float64))


def test_touch_rows_writes_every_page_of_its_rows_and_nothing_else():
    """The SpMM kernel's page pre-fault (``_kernels.touch_rows``) may only write inside its own rows:
    two threads touch disjoint row ranges of one output."""
    import numpy as np

    from bgl.dgl.ops._kernels import touch_rows

    for dtype, feats in ((np.float32, 24), (np.float64, 3000)):  # narrow rows, and rows wider than a page
        out = np.ones((700, feats), dtype)
        touch_rows(out, 100, 650)
        zero = out == 0
        assert not zero[:100].any() and not zero[650:].any()
        flat_hits = np.flatnonzero(zero.reshape(-1))
        step = 4096 // out.itemsize
        assert flat_hits[0] == 100 * feats and np.all(np.diff(flat_hits) == step)  # one value a page, in order
        assert flat_hits[-1] + step >= 650 * feats  # up to the range's end
