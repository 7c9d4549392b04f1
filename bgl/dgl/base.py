"""Names every part of :mod:`bgl.dgl` shares: DGL's reserved field names, ``ALL``, ``DGLError``.

Kept apart so the graph, the frames and the ops can import them without importing each other.
"""
from __future__ import annotations

NID = "_ID"  # original node ids of a subgraph or block (``block.srcdata[NID]``)
EID = "_ID"  # original edge ids
NTYPE = "_TYPE"  # node type ids of a homogenised heterograph
ETYPE = "_TYPE"  # edge type ids of a homogenised heterograph
ALL = slice(None)  # "every node / edge", as DGL's ``dgl.base.ALL``

DEFAULT_NTYPE = "_N"
DEFAULT_ETYPE = "_E"


class DGLError(Exception):
    """Bad input to a DGL-compatible call, worded as DGL words it (DGL raises its own ``DGLError``)."""


def is_all(arg) -> bool:
    """Whether ``arg`` means "every node / edge" (DGL's ``ALL`` or ``None``)."""
    return arg is None or (isinstance(arg, slice) and arg == ALL)


class DGLWarning(UserWarning):
    """DGL's warning category (``dgl.base.DGLWarning``): an input DGL accepts after adjusting it."""


class NotBuiltAttribute(NotImplementedError, AttributeError):
    """A DGL module attribute bgl.dgl lacks: also an AttributeError, so ``hasattr`` is False and
    ``from bgl.dgl import submodule`` still finds submodules not yet imported."""


def not_built(name: str, instead: str, attribute: bool = False) -> NotImplementedError:
    """The one-line refusal for a DGL feature bgl.dgl does not have (no silent fallback)."""
    kind = NotBuiltAttribute if attribute else NotImplementedError
    return kind(f"bgl.dgl does not implement {name}; {instead}")
