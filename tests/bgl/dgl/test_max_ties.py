"""Which of several tied edges a max / min reducer's gradient reaches: DGL 2.1's rule on the machine
it runs on (``bgl.dgl.ops.ties``).  DGL's libxsmm kernel (AVX-512, float32, no broadcasting,
``use_libxsmm`` on) keeps the last tied edge of a row, its plain and typed kernels the first.

bgl's side runs in both lanes, with the CPU's AVX-512 flag patched on and off so both rules run on
any machine; the DGL side (pinned lane) compares bgl with DGL on this machine, libxsmm on and off.
"""
from __future__ import annotations

import pytest
import torch

import bgl.dgl as bdgl
import bgl.dgl.function as bfn
from bgl.dgl.ops import cpu_rows, ties

# node 0 receives x = 2, 5, 5, 5 from nodes 3, 1, 2, 4 (edges 0, 1, 2, 4); node 1 receives x = 1 from node 0
SRC, DST, X = [3, 1, 2, 0, 4], [0, 0, 0, 1, 0], [1.0, 5.0, 5.0, 2.0, 5.0]
FIRST, LAST = [1.0, 1.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0, 1.0]  # x's gradient when the first / last tie wins
KERNELS = pytest.mark.parametrize("kernels", [True, False], ids=["cpu-kernel", "torch-path"])


def _backward(g, x, run) -> list:
    run(g)
    g.ndata["h"].sum().backward()
    return x.grad.reshape(5, -1).sum(1).div(x[0].numel()).tolist()


def _copy_u(lib, fn, dtype=torch.float32, reducer="max", src=SRC):
    sign = 1.0 if reducer == "max" else -1.0  # min over -x ties where max over x does
    x = (sign * torch.tensor(X, dtype=dtype)).view(5, 1).requires_grad_(True)
    g = lib.graph((torch.tensor(src), torch.tensor(DST[:len(src)])), num_nodes=5)
    g.ndata["x"] = x
    return _backward(g, x, lambda g: g.update_all(fn.copy_u("x", "m"), getattr(fn, reducer)("m", "h")))


def _broadcast(lib, fn, on_edges=False):
    """``u_add_v`` of x [5, 2, 1] and y [5, 1, 3] (DGL computes it on the edges, then reduces with
    ``copy_e``: no broadcast in the reduction), or with ``on_edges`` ``u_add_e`` of x and an edge
    feature [5, 1, 3] (DGL's SpMM with use_bcast): a row's ties are x's."""
    x = torch.tensor(X).view(5, 1, 1).repeat(1, 2, 1).requires_grad_(True)
    g = lib.graph((torch.tensor(SRC), torch.tensor(DST)), num_nodes=5)
    g.ndata["x"] = x
    if on_edges:
        g.edata["y"] = torch.zeros(5, 1, 3)
    else:
        g.ndata["y"] = torch.zeros(5, 1, 3)
    message = fn.u_add_e("x", "y", "m") if on_edges else fn.u_add_v("x", "y", "m")
    grad = _backward(g, x, lambda g: g.update_all(message, fn.max("m", "h")))
    return [v / 3 for v in grad]  # each of a node's 2 x 3 outputs sends 1 to one x value of width 2


def _typed(lib, fn, multi=False):
    """Relation ``a`` holds edges 0, 1 of SRC / DST, ``b`` edges 2-4: node 0's 5 from node 1 (``a``)
    ties with ``b``'s two.  ``update_all`` is DGL's typed kernel; ``multi_update_all`` (``b`` first
    in its dict) reduces each relation alone and merges them with torch's max."""
    x = torch.tensor(X).view(5, 1).requires_grad_(True)
    g = lib.heterograph({("n", "a", "n"): ([3, 1], [0, 0]), ("n", "b", "n"): ([2, 0, 4], [0, 1, 0])},
                        num_nodes_dict={"n": 5})
    g.ndata["x"] = x
    pair = (fn.copy_u("x", "m"), fn.max("m", "h"))
    if multi:
        return _backward(g, x, lambda g: g.multi_update_all({"b": pair, "a": pair}, "max"))
    return _backward(g, x, lambda g: g.update_all(*pair))


CASES = {"copy_u-max": _copy_u, "copy_u-min": lambda lib, fn: _copy_u(lib, fn, reducer="min"),
         "float64": lambda lib, fn: _copy_u(lib, fn, torch.float64), "u_add_v-shapes": _broadcast,
         "broadcast": lambda lib, fn: _broadcast(lib, fn, on_edges=True), "typed": _typed}


@KERNELS
@pytest.mark.parametrize("avx512", [True, False], ids=["avx512", "no-avx512"])
def test_tie_rule_follows_the_cpu_dtype_broadcast_typed_and_switch(kernels, avx512, monkeypatch):
    monkeypatch.setattr(cpu_rows, "USE_KERNELS", kernels)
    monkeypatch.setattr(ties, "cpu_flags", lambda: frozenset({"avx2", "avx512f"} if avx512 else {"avx2"}))
    monkeypatch.setattr(ties, "_SWITCH", {})
    assert bdgl.is_libxsmm_enabled()
    want = {"copy_u-max": LAST if avx512 else FIRST, "copy_u-min": LAST if avx512 else FIRST,
            "float64": FIRST, "u_add_v-shapes": LAST if avx512 else FIRST, "broadcast": FIRST, "typed": FIRST}
    assert {name: case(bdgl, bfn) for name, case in CASES.items()} == want
    bdgl.use_libxsmm(False)
    assert not bdgl.is_libxsmm_enabled()
    assert _copy_u(bdgl, bfn) == FIRST


def test_libxsmm_switch_defaults_to_avx2_and_cpu_flags_are_read(monkeypatch):
    monkeypatch.setattr(ties, "_SWITCH", {})
    monkeypatch.setattr(ties, "cpu_flags", lambda: frozenset())
    assert not bdgl.is_libxsmm_enabled()
    assert not ties.last_wins(torch.float32, torch.device("cpu"), False)
    monkeypatch.undo()
    assert isinstance(ties.cpu_flags(), frozenset)  # the real /proc/cpuinfo, or empty off Linux


@KERNELS
def test_max_gradient_among_tied_edges_goes_where_dgl_sends_it(kernels, monkeypatch):
    dgl = pytest.importorskip("dgl", reason="needs DGL (pinned lane) to compare against")
    import dgl.function as dfn

    monkeypatch.setattr(cpu_rows, "USE_KERNELS", kernels)
    cases = {**CASES, "multi_update_all": lambda lib, fn: _typed(lib, fn, multi=True),
             "other-orders": lambda lib, fn: [_copy_u(lib, fn, src=s) for s in ([4, 2, 1, 0, 3], [1, 2, 4, 3])]}
    was = dgl.is_libxsmm_enabled()
    try:
        for flag in (was, False):
            dgl.use_libxsmm(flag)
            bdgl.use_libxsmm(flag)
            for name, case in cases.items():
                assert case(bdgl, bfn) == case(dgl, dfn), f"{name}, libxsmm {flag}"
    finally:
        dgl.use_libxsmm(was)
        ties._SWITCH.clear()
