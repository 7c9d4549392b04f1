"""DGL's ``dgl.ops``: ``gspmm``, ``gsddmm``, their named shortcuts and ``edge_softmax``.

Shortcut names follow DGL: SpMM ``copy_u_sum``, ``copy_e_max``, ``u_mul_e_sum``, ... (message
``copy_u`` / ``copy_e`` / ``u_{add,sub,mul,div}_e``, reducer ``sum/max/min/mean``) and SDDMM
``u_add_v``, ``u_dot_v``, ``e_div_v``, ``copy_u``, ``copy_v``, ... (``{u,v,e}_{op}_{u,v,e}``);
and the segment operators ``segment_reduce``, ``segment_softmax``, ``segment_mm``, ``gather_mm``.
"""
from __future__ import annotations

import sys

import torch

from bgl.dgl.ops.edge_softmax import edge_softmax
from bgl.dgl.ops.sddmm import edge_message
from bgl.dgl.ops.segment import gather_mm, segment_mm, segment_reduce, segment_softmax
from bgl.dgl.ops.spmm import SPMM_OPS, message_reduce

__all__ = ["gspmm", "gsddmm", "edge_softmax", "copy_u", "copy_v", "copy_e", "segment_reduce", "segment_softmax",
           "segment_mm", "gather_mm"]


def gspmm(g, op, reduce_op, lhs_data, rhs_data):
    """Reduce ``op(lhs_data[src], rhs_data[edge])`` over each destination's in-edges.

    Parameters
    ----------
    g : one-relation graph or block; op : add/sub/mul/div/copy_lhs/copy_rhs
    reduce_op : sum/max/min/mean; lhs_data : [num_src, *] or None; rhs_data : [num_edges, *] or None

    Returns
    -------
    tensor [num_dst, *broadcast shape]; max / min give -inf / inf at nodes without in-edges
    (as DGL's; ``update_all`` turns those into 0), and 0 everywhere on a graph without edges
    (DGL's kernel is not run then, so its zero-filled output stays)
    """
    if op not in SPMM_OPS:
        from bgl.dgl.base import DGLError

        raise DGLError(f"gspmm does not support op {op!r}; use one of {SPMM_OPS}.")
    rel = g._relation(None)
    out = message_reduce(rel, op, reduce_op, lhs_data, rhs_data, "u", "e")
    if rel.num_edges == 0 and reduce_op in ("max", "min"):
        out = out.masked_fill(torch.isinf(out), 0.0)
    return out


def gsddmm(g, op, lhs_data, rhs_data, lhs_target="u", rhs_target="v"):
    """``op(lhs_data[lhs_target], rhs_data[rhs_target])`` per edge, [num_edges, *broadcast shape]."""
    return edge_message(g._relation(None), op, lhs_data, rhs_data, lhs_target, rhs_target)


def _spmm_shortcut(message: str, reduce_op: str):
    if message == "copy_u":
        def func(g, x):
            return gspmm(g, "copy_lhs", reduce_op, x, None)
    elif message == "copy_e":
        def func(g, x):
            return gspmm(g, "copy_rhs", reduce_op, None, x)
    else:
        op = message.split("_")[1]

        def func(g, x, y):
            return gspmm(g, op, reduce_op, x, y)
    func.__name__ = func.__qualname__ = f"{message}_{reduce_op}"
    func.__doc__ = f"``gspmm`` with message ``{message}`` and reducer ``{reduce_op}``."
    return func


def _sddmm_shortcut(lhs: str, op: str, rhs: str):
    def func(g, x, y):
        return gsddmm(g, op, x, y, lhs, rhs)

    func.__name__ = func.__qualname__ = f"{lhs}_{op}_{rhs}"
    func.__doc__ = f"``gsddmm`` computing ``{lhs} {op} {rhs}`` per edge."
    return func


def copy_u(g, x):
    """Each edge's source feature, [num_edges, *]."""
    return gsddmm(g, "copy_lhs", x, None, "u", "v")


def copy_v(g, x):
    """Each edge's destination feature, [num_edges, *]."""
    return gsddmm(g, "copy_lhs", x, None, "v", "u")


def copy_e(g, x):
    """The edge feature itself, [num_edges, *] (DGL's ``dgl.ops.copy_e``: ``x`` returned as it is)."""
    return x


def _register() -> None:
    module = sys.modules[__name__]
    messages = ["copy_u", "copy_e"] + [f"u_{op}_e" for op in ("add", "sub", "mul", "div")]
    for message in messages:
        for reduce_op in ("sum", "max", "min", "mean"):
            setattr(module, f"{message}_{reduce_op}", _spmm_shortcut(message, reduce_op))
            __all__.append(f"{message}_{reduce_op}")
    for lhs in "uve":
        for rhs in "uve":
            if lhs != rhs:
                for op in ("add", "sub", "mul", "div", "dot"):
                    setattr(module, f"{lhs}_{op}_{rhs}", _sddmm_shortcut(lhs, op, rhs))
                    __all__.append(f"{lhs}_{op}_{rhs}")


_register()
