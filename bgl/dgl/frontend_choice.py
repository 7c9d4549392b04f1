"""Which frontend reads a ``bgl.DataLoader``'s graph and builds its batches: decided here, at the edge.

The core loader never imports a frontend (:mod:`bgl.loader.batch_frontend`); ``bgl/__init__.py`` installs
:class:`EdgeFrontends` there, and the loader asks it once per loader.  The choice is a function of the
input's type: a DGLGraph (or a DGL sampler) gets real DGL's reader and ``dgl.Block`` s
(:mod:`bgl.dgl.real_dgl`); a store, a partition or graph servers get bgl's own objects unless
``blocks="dgl"`` asks for DGL's; a ``bgl.dgl`` graph gets that face's reader and ``bgl.dgl`` blocks
(:mod:`bgl.dgl.in_place`), so ``bgl.DataLoader`` and ``bgl.dgl.dataloading.DataLoader`` are one loader.
"""
from __future__ import annotations

from typing import Optional


def is_real_dgl_object(obj) -> bool:
    """True for an object of real DGL's (a ``dgl.DGLGraph``, a DGL sampler), by its type's module: DGL is
    not imported to ask."""
    return type(obj).__module__.split(".")[0] == "dgl"


def is_bgl_dgl_object(obj) -> bool:
    """True for an object of ``bgl.dgl``'s (its graph), by its type's module: nothing imported to ask."""
    return type(obj).__module__.startswith("bgl.dgl.")


class EdgeFrontends:
    """:class:`bgl.loader.batch_frontend.Frontends` of this installation (no state)."""

    def reader(self, graph):
        """Real DGL's reader for a ``dgl.DGLGraph``, ``bgl.dgl``'s for a ``bgl.dgl`` graph; None for anything
        else (the core reads those itself)."""
        if is_real_dgl_object(graph):
            from .real_dgl.graph_reader import DGLGraphReader

            return DGLGraphReader()
        if is_bgl_dgl_object(graph):
            from .in_place import BglGraphReader, is_bgl_dgl_graph

            return BglGraphReader() if is_bgl_dgl_graph(graph) else None
        return None

    def batches(self, graph, blocks: Optional[str], from_frontend: bool):
        """``dgl.Block`` s (:class:`~bgl.dgl.real_dgl.frontend.DGLBatchFrontend`) for ``blocks="dgl"``, or
        by default when the graph or the sampler came from DGL; None (bgl's Blocks) otherwise.
        ImportError naming DGL when DGL's objects are asked for and DGL is missing.  A ``bgl.dgl`` graph:
        ``bgl.dgl`` blocks by default, bgl's for ``blocks="bgl"``; ValueError for ``blocks="dgl"``."""
        if is_bgl_dgl_object(graph):
            if blocks == "dgl":
                raise ValueError("blocks='dgl' builds real DGL blocks, which read a dgl.DGLGraph; a bgl.dgl graph's "
                                 "batches are bgl.dgl blocks (blocks=None) or bgl's (blocks='bgl')")
            if blocks is None:
                from .in_place import BglBatchFrontend

                return BglBatchFrontend(graph)
            return None
        if not (blocks == "dgl" or (blocks is None and from_frontend)):
            return None
        from .real_dgl.blocks import require_dgl
        from .real_dgl.frontend import DGLBatchFrontend

        try:
            require_dgl()  # import check only; DGL is imported by bgl.dgl.real_dgl alone
        except ImportError as e:
            raise ImportError(f"blocks='dgl' needs DGL installed: {e}") from None
        return DGLBatchFrontend()
