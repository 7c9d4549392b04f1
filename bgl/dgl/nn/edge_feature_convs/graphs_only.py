"""The refusal of layers that DGL runs on whole graphs only (they store node data, ``ndata``, which a block lacks)."""
from __future__ import annotations

from ...base import DGLError


def refuse_block(graph, layer: str) -> None:
    """DGLError naming ``layer`` when ``graph`` is a block (DGL fails there storing node data)."""
    if graph.is_block:
        raise DGLError(f"{layer} runs on a graph, not a block: DGL's stores node data (g.ndata), "
                       f"which a block's separate src / dst nodes do not have")
