"""``bgl.dgl_adapter``: the DGL adapter's old public name, kept for scripts that import it.

The adapter is now part of the DGL face, :mod:`bgl.dgl.real_dgl` (blocks and pair graphs in
:mod:`bgl.dgl.real_dgl.blocks`, a DGLGraph read in place in :mod:`bgl.dgl.real_dgl.graph_reader`);
this module only re-exports its names.  Like them, it imports DGL on use, not here.
"""
from __future__ import annotations

from .dgl.real_dgl.blocks import (ALL_FORMATS, int64_index, require_dgl, to_dgl_block, to_dgl_blocks,
                                  to_dgl_hetero_block, to_dgl_pair_graph, with_index_and_frames)
from .dgl.real_dgl.graph_reader import (csc_to_dglgraph, dglgraph_csc_tensors, dglgraph_to_csc, find_edges,
                                        graph_type_names)

__all__ = ["ALL_FORMATS", "csc_to_dglgraph", "dglgraph_csc_tensors", "dglgraph_to_csc", "find_edges",
           "graph_type_names", "int64_index", "require_dgl", "to_dgl_block", "to_dgl_blocks", "to_dgl_hetero_block",
           "to_dgl_pair_graph", "with_index_and_frames"]
