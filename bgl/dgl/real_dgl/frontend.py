"""``DGLBatchFrontend``: the batches of ``bgl.DataLoader`` as real DGL objects.

The loader's transfer stage (:class:`bgl.loader.stages.transfer.TransferStage`) ends a batch with bgl
:class:`~bgl.blocks.Block` s and pair graphs; with this frontend it hands the trainer ``dgl.Block`` s and
``DGLGraph`` pair graphs instead, as DGL 2.1's DataLoader does.  The edge picks it
(:mod:`bgl.dgl.frontend_choice`); it keeps no state, so it pickles by name into the loader's producer
thread or stage processes.
"""
from __future__ import annotations

from typing import Any, Optional


class DGLBatchFrontend:
    """:class:`bgl.loader.batch_frontend.BatchFrontend` building DGL 2.1's objects (DGL imported on use)."""

    name = "dgl"

    def blocks(self, blocks: list, schema, graph, type_names: tuple[str, str], with_csr: bool) -> list:
        """``dgl.Block`` s of one batch (:func:`~bgl.dgl.real_dgl.batch_objects.dgl_blocks`)."""
        from .batch_objects import dgl_blocks

        return dgl_blocks(blocks, schema, graph, type_names, with_csr=with_csr)

    def pair_graph(self, pair, graph=None) -> Any:
        """A ``DGLGraph`` of a bgl pair graph (:func:`~bgl.dgl.real_dgl.blocks.to_dgl_pair_graph`)."""
        from .blocks import to_dgl_pair_graph

        return to_dgl_pair_graph(pair, graph)

    def typed_pair_graph(self, edges: dict, node_ids: dict, edge_ids: Optional[dict], graph=None) -> Any:
        """A heterogeneous ``DGLGraph`` of a typed batch's pairs
        (:func:`~bgl.dgl.real_dgl.batch_objects.to_dgl_hetero_pair_graph`)."""
        from .batch_objects import to_dgl_hetero_pair_graph

        return to_dgl_hetero_pair_graph(edges, node_ids, edge_ids, graph)

    def __eq__(self, other) -> bool:  # stateless: any two are the same (the stage dataclasses holding one compare equal)
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))
