"""The edge-wise operators DGL re-exports at its top level (``dgl.mpops``): ``dgl.copy_u``, ``dgl.copy_v`` and
``dgl.u_{add,sub,mul,div,dot}_v``, each ``bgl.dgl.ops``' SDDMM of one relation, chosen by ``etype`` (optional
when the graph has one edge type).  One output row per edge, as ``bgl.dgl.ops.gsddmm``."""
from __future__ import annotations

import sys

from bgl.dgl.ops.sddmm import edge_message

__all__ = ["copy_u", "copy_v"]


def copy_u(g, x_node, etype=None):
    """Each edge's source row of ``x_node`` [num_src, *]: [num_edges of ``etype``, *]."""
    return edge_message(g._relation(etype), "copy_lhs", x_node, None, "u", "v")


def copy_v(g, x_node, etype=None):
    """Each edge's destination row of ``x_node`` [num_dst, *]: [num_edges of ``etype``, *]."""
    return edge_message(g._relation(etype), "copy_lhs", x_node, None, "v", "u")


def _u_op_v(op: str):
    def func(g, x_node, y_node, etype=None):
        return edge_message(g._relation(etype), op, x_node, y_node, "u", "v")

    func.__name__ = func.__qualname__ = f"u_{op}_v"
    func.__doc__ = (f"``{op}(x_node[u], y_node[v])`` for each edge ``u -> v`` of ``etype`` (broadcasting as NumPy): "
                    f"[num_edges, *]{'; the last dimension summed (dot), kept as size 1' if op == 'dot' else ''}.")
    return func


for _op in ("add", "sub", "mul", "div", "dot"):
    setattr(sys.modules[__name__], f"u_{_op}_v", _u_op_v(_op))
    __all__.append(f"u_{_op}_v")
