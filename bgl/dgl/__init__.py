"""``bgl.dgl``: DGL's graph object and message passing in plain PyTorch (no DGL needed).

A DGL script changes only its imports::

    import bgl.dgl as dgl
    import bgl.dgl.function as fn

and keeps ``dgl.graph``, ``g.ndata``, ``g.update_all(fn.copy_u('h', 'm'), fn.sum('m', 'h'))``,
``dgl.ops.edge_softmax``, blocks, ``local_scope`` and the rest (see docs/from-dgl.md for what
is covered).  A DGL name that bgl.dgl does not provide raises one line naming it and what to
use instead.  Never imports the real ``dgl``, except in :mod:`bgl.dgl.real_dgl` (real DGL's blocks and
DGLGraph reader for ``bgl.DataLoader``, DGL imported inside functions); the edge's choice of frontend
for ``bgl.DataLoader`` is :mod:`bgl.dgl.frontend_choice`.  The core never imports this package.
"""
from __future__ import annotations

import random as _random

from bgl.dgl import function, graph_utils, ops, transform_classes, transforms
from bgl.dgl.base import ALL, EID, ETYPE, NID, NTYPE, DGLError, not_built
from bgl.dgl.batching import (batch, broadcast_edges, broadcast_nodes, max_edges, max_nodes, mean_edges, mean_nodes,
                              readout_edges, readout_nodes, slice_batch, softmax_edges, softmax_nodes, sum_edges,
                              sum_nodes, unbatch)
from bgl.dgl.convert import (bipartite_from_networkx, bipartite_from_scipy, block_from_bgl, create_block, from_networkx,
                             from_scipy, graph, graph_from_pair, heterograph, rand_graph, to_networkx)
from bgl.dgl.derived_graphs import (block_to_graph, init, khop_adj, khop_graph, laplacian_lambda_max, line_graph,
                                    metapath_reachable_graph, to_bfloat16, to_simple_graph)
from bgl.dgl.frames import LazyFeature
from bgl.dgl.graph_encodings import (LapPE, LaplacianPE, RandomWalkPE, lap_pe, laplacian_pe, random_walk_pe,
                                     shortest_dist)
from bgl.dgl.graph_utils import METHODS as _GRAPH_UTIL_METHODS
from bgl.dgl.graph_utils import NAMES as _GRAPH_UTILS
from bgl.dgl.heterograph import DGLGraph
from bgl.dgl.mutation import add_edges, add_nodes, remove_nodes
from bgl.dgl.ops import edge_softmax
from bgl.dgl.ops.ties import is_libxsmm_enabled, use_libxsmm
from bgl.dgl.point_cloud import knn_graph, radius_graph, segmented_knn_graph
from bgl.dgl.selections import edge_type_subgraph, in_subgraph, node_type_subgraph, out_subgraph
from bgl.dgl.to_block import compact_graphs, to_block
from bgl.dgl.transform_modules import (AddReverse, BaseTransform, Compose, DropEdge, GCNNorm, RemoveSelfLoop,
                                       RowFeatNormalizer, ToSimple)
from bgl.dgl.transforms import (AddSelfLoop, add_reverse_edges, add_self_loop, edge_subgraph, node_subgraph,
                                norm_by_dst, remove_edges, remove_self_loop, reverse, to_bidirected, to_heterogeneous,
                                to_double, to_float, to_half, to_homogeneous, to_simple)
from bgl.dgl.udf import EdgeBatch, NodeBatch

Block = DGLGraph  # DGL's blocks are DGLGraphs whose is_block is True
__version__ = "2.1.0"  # the DGL release whose API bgl.dgl mirrors (scripts compare dgl.__version__)
DGLHeteroGraph = DGLGraph  # DGL's older name of the same class

# dgl.transforms.X / `import dgl.transforms as T; T.Compose(...)`: every name of DGL's dgl.transforms that
# bgl.dgl has at top level resolves there to the same object (a name added here later too)
transforms.__getattr__ = transform_classes.transforms_getattr
DGLGraph.reorder_graph = transform_classes._reorder_graph_method

__all__ = ["ALL", "EID", "ETYPE", "NID", "NTYPE", "DGLError", "DGLGraph", "DGLHeteroGraph", "Block",
           "EdgeBatch", "NodeBatch", "LazyFeature", "block_from_bgl", "create_block", "edge_softmax", "function",
           "graph", "graph_from_pair", "heterograph", "from_scipy", "from_networkx", "to_networkx",
           "bipartite_from_scipy", "bipartite_from_networkx", "norm_by_dst", "ops",
           "random", "seed", "transforms", "use_libxsmm", "is_libxsmm_enabled",
           # graph edits and transforms
           "add_edges", "add_nodes", "add_reverse_edges", "add_self_loop", "edge_subgraph", "edge_type_subgraph",
           "in_subgraph", "out_subgraph", "rand_graph", "to_float", "to_double", "to_half",
           "node_subgraph", "node_type_subgraph", "remove_edges", "remove_nodes", "remove_self_loop", "reverse",
           "to_bidirected", "to_heterogeneous", "to_homogeneous", "to_simple", "to_block", "compact_graphs", "sampling", "optim",
           "line_graph", "khop_adj", "khop_graph", "metapath_reachable_graph", "laplacian_lambda_max", "block_to_graph",
           "to_bfloat16", "to_simple_graph", "init",
           # graphs of point sets
           "knn_graph", "segmented_knn_graph", "radius_graph",
           # graph-transformer encodings
           "shortest_dist", "lap_pe", "laplacian_pe", "random_walk_pe", "LapPE", "LaplacianPE", "RandomWalkPE",
           # batches of graphs and their readouts
           "batch", "unbatch", "slice_batch", "readout_nodes", "readout_edges", "sum_nodes", "mean_nodes", "max_nodes",
           "sum_edges", "mean_edges", "max_edges", "softmax_nodes", "softmax_edges", "broadcast_nodes",
           "broadcast_edges",
           # transform objects
           "AddReverse", "AddSelfLoop", "BaseTransform", "Compose", "DropEdge", "GCNNorm", "RemoveSelfLoop",
           "RowFeatNormalizer", "ToSimple",
           # graph utilities loaded on first use (bgl.dgl.graph_utils): k-hop subgraphs, top-k, merges, edge ops,
           # homophily, traversals and propagation, encodings
           *graph_utils.__all__, *transform_classes.__all__]


def seed(val: int) -> None:
    """Seed the random generators bgl.dgl's callers draw from (torch, NumPy, ``random``), as
    ``dgl.seed`` seeds DGL's."""
    import numpy as np
    import torch

    torch.manual_seed(val)
    np.random.seed(val)
    _random.seed(val)


class _RandomModule:
    """``dgl.random``: ``dgl.random.seed(val)`` is :func:`seed`, as DGL's two names are one."""

    seed = staticmethod(seed)


random = _RandomModule()


def _sample_neighbors(self, nodes, fanout, **kwargs) -> DGLGraph:
    """``g.sample_neighbors(...)``: :func:`bgl.dgl.sampling.sample_neighbors` of ``g`` (DGL's method alias;
    the sampler loads on first use, as ``dgl.sampling`` does)."""
    import importlib

    return importlib.import_module("bgl.dgl.sampling").sample_neighbors(self, nodes, fanout, **kwargs)


DGLGraph.sample_neighbors = _sample_neighbors


def _lazy_method(name: str, module: str, func: str):
    """A DGLGraph method whose module (in bgl.dgl.graph_utils) loads on its first call."""
    def method(self, *args, **kwargs):
        import importlib

        return getattr(importlib.import_module(f"bgl.dgl.graph_utils.{module}"), func)(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"DGL's ``g.{name}``: :func:`bgl.dgl.graph_utils.{module}.{func}` of this graph."
    return method


for _name, (_module, _func) in _GRAPH_UTIL_METHODS.items():
    setattr(DGLGraph, _name, _lazy_method(_name, _module, _func))


_INSTEAD = {
    "distributed": "use bgl's servers (bgl serve / bgl.DataLoader over a partition)",
    "graphbolt": "use bgl.DataLoader",
}


# Loaded on first use: ``import bgl.dgl`` stays free of the loader (numba, the pipeline).
_LAZY_MODULES = {"data": "bgl.dgl.data", "dataloading": "bgl.dgl.dataloading", "sampling": "bgl.dgl.sampling",
                 "optim": "bgl.dgl.optim", "sparse": "bgl.dgl.sparse", "frame": "bgl.dgl.frames"}
_LAZY_NAMES = {"load_graphs": "bgl.dgl.data", "save_graphs": "bgl.dgl.data",
               "sort_csr_by_tag": "bgl.dgl.sampling.biased", "sort_csc_by_tag": "bgl.dgl.sampling.biased",
               **dict.fromkeys(["set_node_lazy_features", "set_edge_lazy_features", "set_src_lazy_features",
                                "set_dst_lazy_features"], "bgl.dgl.dataloading"),
               **dict.fromkeys(transform_classes.__all__, "bgl.dgl.transform_classes"),
               **{name: f"bgl.dgl.graph_utils.{module}" for name, module in _GRAPH_UTILS.items()}}


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    if name in _LAZY_MODULES or name in _LAZY_NAMES or name == "nn":
        import importlib

        if name == "nn":  # `import dgl; dgl.nn.GraphConv` works in DGL: the layers load on first use
            return importlib.import_module("bgl.dgl.nn")
        if name in _LAZY_MODULES:
            return importlib.import_module(_LAZY_MODULES[name])
        return getattr(importlib.import_module(_LAZY_NAMES[name]), name)
    instead = _INSTEAD.get(name, "see docs/from-dgl.md for what bgl.dgl covers")
    raise not_built(f"dgl.{name}", instead, attribute=True)


def __dir__() -> list:
    """The module's names and those loaded on first use (:func:`__getattr__`), as ``dir(dgl)`` lists DGL's: tab
    completion and ``hasattr`` scans see them all."""
    return sorted({*globals(), *_LAZY_MODULES, *_LAZY_NAMES, "nn"})
