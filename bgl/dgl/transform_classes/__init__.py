"""DGL 2.1's ``dgl.transforms`` beyond :mod:`bgl.dgl.transform_modules`: the transform objects ``AddEdge``,
``DropNode``, ``FeatMask``, ``NodeShuffle`` (:mod:`.augment`), ``KHopGraph``, ``LineGraph``, ``AddMetaPaths``,
``ToLevi``, ``SVDPE`` with ``svd_pe`` (:mod:`.structural`), ``PPR``, ``HeatKernel``, ``GDC``, ``SIGNDiffusion``
(:mod:`.diffusion`) and ``reorder_graph`` (:mod:`.reorder`); each loads on first use.

It also holds the ``dgl.transforms`` namespace itself: DGL exposes there, besides its transform objects, many
functions that ``dgl`` has at top level (``add_edges``, ``to_block``, ``khop_graph``, ...).
:func:`transforms_getattr` is :mod:`bgl.dgl.transforms`' module ``__getattr__``: any name of DGL 2.1's
``dgl.transforms`` resolves to the same object as ``bgl.dgl.<name>``, so a function added at the top level later
is in the namespace too without a line here; one bgl.dgl lacks raises its one-line refusal.
"""
from __future__ import annotations

import importlib

# Where each name of this package lives (loaded on first use: ``import bgl.dgl`` stays as fast as it was).
_WHERE = {"AddEdge": "augment", "DropNode": "augment", "FeatMask": "augment", "NodeShuffle": "augment",
          "KHopGraph": "structural", "LineGraph": "structural", "AddMetaPaths": "structural", "ToLevi": "structural",
          "SVDPE": "structural", "svd_pe": "structural", "PPR": "diffusion", "HeatKernel": "diffusion",
          "GDC": "diffusion", "SIGNDiffusion": "diffusion", "reorder_graph": "reorder"}
__all__ = sorted(_WHERE)

# The public names of DGL 2.1's ``dgl.transforms`` (``dir(dgl.transforms)``).
DGL_TRANSFORMS = frozenset((
    "AddEdge AddMetaPaths AddReverse AddSelfLoop BaseTransform Compose DropEdge DropNode FeatMask GCNNorm GDC "
    "HeatKernel KHopGraph LapPE LaplacianPE LineGraph NodeShuffle PPR RandomWalkPE RemoveSelfLoop RowFeatNormalizer "
    "SIGNDiffusion SVDPE ToLevi ToSimple add_edges add_nodes add_reverse_edges add_self_loop adj_product_graph "
    "adj_sum_graph compact_graphs double_radius_node_labeling khop_adj khop_graph knn_graph lap_pe "
    "laplacian_lambda_max laplacian_pe line_graph metapath_reachable_graph metis_partition "
    "metis_partition_assignment norm_by_dst partition_graph_with_halo radius_graph random_walk_pe remove_edges "
    "remove_nodes remove_self_loop reorder_graph reverse segmented_knn_graph shortest_dist sort_csc_by_tag "
    "sort_csr_by_tag svd_pe to_bfloat16 to_bidirected to_block to_double to_float to_half to_simple "
    "to_simple_graph").split())


def __getattr__(name: str):
    if name in _WHERE:
        return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def transforms_getattr(name: str):
    """``bgl.dgl.transforms.<name>`` for a name the module does not define: ``bgl.dgl.<name>`` when ``name`` is in
    DGL 2.1's ``dgl.transforms`` (bgl.dgl's refusal if it lacks it), else AttributeError."""
    if name in DGL_TRANSFORMS:
        return getattr(importlib.import_module("bgl.dgl"), name)
    raise AttributeError(f"module 'bgl.dgl.transforms' has no attribute {name!r}")


def _reorder_graph_method(self, *args, **kwargs):
    """``g.reorder_graph(...)``: :func:`bgl.dgl.reorder_graph` of ``g`` (DGL's method alias)."""
    return __getattr__("reorder_graph")(self, *args, **kwargs)


_reorder_graph_method.__name__ = _reorder_graph_method.__qualname__ = "reorder_graph"
