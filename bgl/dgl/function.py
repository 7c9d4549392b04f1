"""DGL's built-in message and reduce functions (``import bgl.dgl.function as fn``).

Each builtin is a small description (which operands, which op, which output field); the graph's
``update_all`` / ``apply_edges`` read it and call one fused kernel of :mod:`bgl.dgl.ops`
instead of running Python per edge.  Names and argument names are DGL's: ``copy_u(u, out)``,
``copy_e(e, out)``, ``u_mul_e(lhs_field, rhs_field, out)`` and every ``{u,v,e}_{op}_{u,v,e}``
with op in add/sub/mul/div/dot, the reducers ``sum``/``max``/``min``/``mean(msg, out)``, and
the old aliases ``copy_src``, ``copy_edge``, ``src_mul_edge``.
"""
from __future__ import annotations

import sys

__all__ = ["BuiltinFunction", "MessageFunction", "ReduceFunction", "BinaryMessageFunction",
           "CopyMessageFunction", "copy_u", "copy_e", "copy_src", "copy_edge", "sum", "max", "min", "mean"]

_TARGETS = ("u", "v", "e")
_BINARY_OPS = ("add", "sub", "mul", "div", "dot")


class BuiltinFunction:
    """Base of the builtins; ``name`` is DGL's (e.g. ``"u_mul_e"``, ``"sum"``)."""

    name = "builtin"


class MessageFunction(BuiltinFunction):
    """A builtin that computes one message per edge into ``out_field``."""

    out_field: str


class BinaryMessageFunction(MessageFunction):
    """``out = lhs <op> rhs`` per edge; each side read from ``u`` (source), ``v`` (destination)
    or ``e`` (the edge), features broadcast like NumPy after left-padding their shapes."""

    def __init__(self, binary_op: str, lhs: str, rhs: str, lhs_field: str, rhs_field: str, out_field: str):
        self.binary_op, self.lhs, self.rhs = binary_op, lhs, rhs
        self.lhs_field, self.rhs_field, self.out_field = lhs_field, rhs_field, out_field

    @property
    def name(self) -> str:
        return f"{self.lhs}_{self.binary_op}_{self.rhs}"


class CopyMessageFunction(MessageFunction):
    """``out = u[field]`` (``copy_u``) or ``out = e[field]`` (``copy_e``) per edge."""

    def __init__(self, target: str, in_field: str, out_field: str):
        self.target, self.in_field, self.out_field = target, in_field, out_field

    @property
    def name(self) -> str:
        return f"copy_{self.target}"


class ReduceFunction(BuiltinFunction):
    """Reduce the messages in ``msg_field`` over each node's in-edges into ``out_field``."""

    def __init__(self, reduce_op: str, msg_field: str, out_field: str):
        self.reduce_op, self.msg_field, self.out_field = reduce_op, msg_field, out_field

    @property
    def name(self) -> str:
        return self.reduce_op


def copy_u(u, out):
    """Message = the source node's feature ``u``."""
    return CopyMessageFunction("u", u, out)


def copy_e(e, out):
    """Message = the edge's feature ``e``."""
    return CopyMessageFunction("e", e, out)


def copy_src(src, out):
    """DGL's old name of :func:`copy_u`."""
    return copy_u(src, out)


def copy_edge(edge, out):
    """DGL's old name of :func:`copy_e`."""
    return copy_e(edge, out)


def _reducer(op):
    def reduce(msg, out):
        return ReduceFunction(op, msg, out)

    reduce.__name__ = reduce.__qualname__ = op
    reduce.__doc__ = f"Reduce the messages ``msg`` of each node's in-edges by {op} into ``out`` " \
                     "(0 for a node without in-edges)."
    return reduce


def _binary(lhs, op, rhs):
    def message(lhs_field, rhs_field, out):
        return BinaryMessageFunction(op, lhs, rhs, lhs_field, rhs_field, out)

    message.__name__ = message.__qualname__ = f"{lhs}_{op}_{rhs}"
    message.__doc__ = f"Message = ``{lhs}[lhs_field] {op} {rhs}[rhs_field]`` per edge."
    return message


def _register() -> None:
    """Put every reducer and ``{lhs}_{op}_{rhs}`` builtin (and DGL's ``src_*_edge`` aliases) into
    this module's namespace, as DGL's ``dgl.function`` does."""
    module = sys.modules[__name__]
    for op in ("sum", "max", "min", "mean"):
        setattr(module, op, _reducer(op))
    old_names = {"u": "src", "v": "dst", "e": "edge"}
    for lhs in _TARGETS:
        for rhs in _TARGETS:
            if lhs == rhs:
                continue
            for op in _BINARY_OPS:
                func = _binary(lhs, op, rhs)
                setattr(module, func.__name__, func)
                __all__.append(func.__name__)
                if op != "dot":
                    setattr(module, f"{old_names[lhs]}_{op}_{old_names[rhs]}", func)
                    __all__.append(f"{old_names[lhs]}_{op}_{old_names[rhs]}")


_register()
