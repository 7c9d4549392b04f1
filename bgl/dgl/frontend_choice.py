"""Which frontend reads a ``bgl.DataLoader``'s graph and builds its batches: decided here, at the edge.

The core loader never imports a frontend (:mod:`bgl.loader.batch_frontend`); ``bgl/__init__.py`` installs
:class:`EdgeFrontends` there, and the loader asks it once per loader.  The choice is a function of the
input's type: a DGLGraph (or a DGL sampler) gets real DGL's reader and ``dgl.Block`` s
(:mod:`bgl.dgl.real_dgl`); a store, a partition or graph servers get bgl's own objects unless
``blocks="dgl"`` asks for DGL's.  A second DGL face (``bgl.dgl``'s own graph, later) is one more case
here: its reader and its batch frontend, chosen by its graph type.
"""
from __future__ import annotations

from typing import Optional


def is_real_dgl_object(obj) -> bool:
    """True for an object of real DGL's (a ``dgl.DGLGraph``, a DGL sampler), by its type's module: DGL is
    not imported to ask."""
    return type(obj).__module__.split(".")[0] == "dgl"


class EdgeFrontends:
    """:class:`bgl.loader.batch_frontend.Frontends` of this installation (no state)."""

    def reader(self, graph):
        """Real DGL's reader for a ``dgl.DGLGraph``; None for anything else (the core reads those itself)."""
        if is_real_dgl_object(graph):
            from .real_dgl.graph_reader import DGLGraphReader

            return DGLGraphReader()
        return None

    def batches(self, graph, blocks: Optional[str], from_frontend: bool):
        """``dgl.Block`` s (:class:`~bgl.dgl.real_dgl.frontend.DGLBatchFrontend`) for ``blocks="dgl"``, or
        by default when the graph or the sampler came from DGL; None (bgl's Blocks) otherwise.
        ImportError naming DGL when DGL's objects are asked for and DGL is missing."""
        if not (blocks == "dgl" or (blocks is None and from_frontend)):
            return None
        from .real_dgl.blocks import require_dgl
        from .real_dgl.frontend import DGLBatchFrontend

        try:
            require_dgl()  # import check only; DGL is imported by bgl.dgl.real_dgl alone
        except ImportError as e:
            raise ImportError(f"blocks='dgl' needs DGL installed: {e}") from None
        return DGLBatchFrontend()
