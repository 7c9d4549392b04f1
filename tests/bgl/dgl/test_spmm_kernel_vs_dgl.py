"""The fused CPU SpMM (``copy_u`` / ``u_mul_e`` with ``sum`` / ``mean``; ``copy_u`` with ``max`` /
``min``) against real DGL 2.1 with its rows split over threads: each range's last edges skip the
prefetch, mean's 1 / degree is applied in the kernel's store (zero-in-degree rows stay 0), float32
and float64, one weight per edge or per head, odd and even row lengths (edges go two at a time)."""
from __future__ import annotations

import pytest
import torch

dgl = pytest.importorskip("dgl", reason="needs DGL (pinned lane) to compare against")
import dgl.function as dfn  # noqa: E402

import bgl.dgl as bdgl  # noqa: E402
import bgl.dgl.function as bfn  # noqa: E402
from bgl.dgl.ops import cpu_rows  # noqa: E402

N, E, NUM_DST = 60, 400, 20
TOL = dict(atol=1e-5, rtol=1e-5)
# (x shape after the row dim, edge weight shape after the row dim or None for copy_u)
CASES = {"copy_u": ((5,), None), "u_mul_e-edge": ((5,), (1,)), "u_mul_e-heads": ((3, 4), (3, 1)),
         "copy_u-wide": ((37,), None)}


def _run(lib, fn, src, dst, x, w, reducer):
    block = lib.create_block((src, dst), num_src_nodes=N, num_dst_nodes=NUM_DST)
    leaves = [t.clone().requires_grad_(True) for t in (x, w) if t is not None]
    block.srcdata["x"] = leaves[0]
    if w is None:
        block.update_all(fn.copy_u("x", "m"), getattr(fn, reducer)("m", "h"))
    else:
        block.edata["w"] = leaves[1]
        block.update_all(fn.u_mul_e("x", "w", "m"), getattr(fn, reducer)("m", "h"))
    out = block.dstdata["h"]
    (out * torch.linspace(-1, 2, out.numel(), dtype=out.dtype).view(out.shape)).sum().backward()
    return [out.detach(), *(t.grad for t in leaves)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("reducer", ["sum", "mean", "max", "min"])
@pytest.mark.parametrize("case", list(CASES))
def test_split_rows_match_dgl(case, reducer, dtype, hub_edges, monkeypatch):
    monkeypatch.setattr(cpu_rows, "SPLIT_EDGES", 16)  # many row ranges, each ending short of AHEAD
    threads = torch.get_num_threads()
    torch.set_num_threads(3)
    try:
        src, dst = hub_edges(N, E, seed=3, num_dst=NUM_DST)
        gen = torch.Generator().manual_seed(5)
        xs, ws = CASES[case]
        x = torch.randn(N, *xs, generator=gen).to(dtype)
        w = None if ws is None else torch.rand(E, *ws, generator=gen).to(dtype) + 0.5
        got = _run(bdgl, bfn, src, dst, x, w, reducer)
        want = _run(dgl, dfn, src, dst, x, w, reducer)
    finally:
        torch.set_num_threads(threads)
    assert got[0].dtype == dtype
    assert not got[0][torch.bincount(dst, minlength=NUM_DST) == 0].any()  # rows without in-edges: 0
    for g, d in zip(got, want):
        torch.testing.assert_close(g, d, **TOL)
