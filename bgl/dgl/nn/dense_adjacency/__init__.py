"""DGL's convolutions on a dense adjacency matrix instead of a graph: ``DenseGraphConv``, ``DenseSAGEConv``,
``DenseChebConv`` (the layers DGL's DiffPool example pools with).  ``adj`` is ``[num_dst, num_src]``
(``adj[v, u]`` weighs the edge u -> v), as DGL reads it; ``bgl.dgl.nn`` re-exports them.
"""
from .convs import DenseChebConv, DenseGraphConv, DenseSAGEConv

__all__ = ["DenseGraphConv", "DenseSAGEConv", "DenseChebConv"]
