"""What every layer checks about its (graph, features) arguments, phrased as DGL phrases it.

Kept apart from the layers so the zero-in-degree refusal, the block's dst-prefix rule and the
edge-weight check read the same in each of them.
"""
from __future__ import annotations

from typing import Mapping, Optional

import torch
from torch import Tensor, nn

from ..base import DGLError

ZERO_IN_DEGREE_MESSAGE = (
    "There are 0-in-degree nodes in the graph, output for those nodes will be invalid. "
    "This is harmful for some applications, causing silent performance regression. "
    "Adding self-loop on the input graph by calling `g = dgl.add_self_loop(g)` will resolve "
    "the issue. Setting ``allow_zero_in_degree`` to be `True` when constructing this module "
    "will suppress the check and let the code run.")


def refuse_zero_in_degree(graph) -> None:
    """Raise DGLError when a destination node has no in-edge (its output would be the bias alone).

    DGL's attention and GCN layers refuse such graphs unless built with ``allow_zero_in_degree``;
    one reduction over the dst nodes' degrees, O(num_dst).
    """
    if bool((graph.in_degrees() == 0).any()):
        raise DGLError(ZERO_IN_DEGREE_MESSAGE)


def split_widths(in_feats) -> tuple:
    """(src width, dst width) of a layer's ``in_feats``: one int serves both ends, a ``(src, dst)``
    pair (a bipartite relation, e.g. users -> items) is kept as it is, as DGL's layers read it."""
    if isinstance(in_feats, tuple):
        if len(in_feats) != 2:
            raise DGLError(f"in_feats must be an int or a (src, dst) pair of ints, got {in_feats!r}")
        return in_feats
    return in_feats, in_feats


def add_head_projections(module: nn.Module, in_feats, width: int) -> None:
    """The attention layers' input maps, DGL's names: ``fc`` for one width, ``fc_src`` / ``fc_dst`` for a
    ``(src, dst)`` pair (``module._in_src_feats`` / ``_in_dst_feats`` already set), no bias."""
    if isinstance(in_feats, tuple):
        module.fc_src = nn.Linear(module._in_src_feats, width, bias=False)
        module.fc_dst = nn.Linear(module._in_dst_feats, width, bias=False)
    else:
        module.fc = nn.Linear(module._in_src_feats, width, bias=False)


def project_heads(module: nn.Module, graph, feat, heads: int, out: int) -> tuple:
    """(h_src, h_dst, z_src, z_dst) of the GAT-style layers: ``feat`` (one tensor or a (src, dst) pair) after
    ``module.feat_drop``, and its ``[*, heads, out]`` projections by ``fc`` (or ``fc_src`` / ``fc_dst``).

    On a block with one tensor the dst rows are its first ``num_dst_nodes()`` (views, no second projection).
    """
    if isinstance(feat, tuple):
        h_src, h_dst = module.feat_drop(feat[0]), module.feat_drop(feat[1])
        fc_src, fc_dst = (module.fc, module.fc) if hasattr(module, "fc") else (module.fc_src, module.fc_dst)
        z_src = fc_src(h_src).view(*h_src.shape[:-1], heads, out)
        z_dst = fc_dst(h_dst).view(*h_dst.shape[:-1], heads, out)
        return h_src, h_dst, z_src, z_dst
    h_src = h_dst = module.feat_drop(feat)
    z_src = z_dst = module.fc(h_src).view(*h_src.shape[:-1], heads, out)
    if graph.is_block:
        z_dst, h_dst = z_src[: graph.num_dst_nodes()], h_dst[: graph.num_dst_nodes()]
    return h_src, h_dst, z_src, z_dst


def add_bias(module: nn.Module, shape, enabled: bool) -> None:
    """``module.bias``: an uninitialised Parameter of ``shape``, or a None buffer (DGL's layers' two forms,
    both in the state dict's terms: the key exists only when the bias does)."""
    if enabled:
        module.bias = nn.Parameter(torch.empty(shape))
    else:
        module.register_buffer("bias", None)


def add_residual(module: nn.Module, in_width: int, out_width: int, enabled: bool, bias: bool = False) -> None:
    """``module.res_fc``: a Linear ``in_width -> out_width`` (the identity when the widths agree), or a None buffer."""
    if not enabled:
        module.register_buffer("res_fc", None)
    elif in_width != out_width:
        module.res_fc = nn.Linear(in_width, out_width, bias=bias)
    else:
        module.res_fc = nn.Identity()


def src_dst_features(feat, graph=None):
    """(src features, dst features) of ``feat``: a pair is kept, one tensor (or dict of tensors)
    serves both ends, and on a block the dst features are its first ``num_dst_nodes()`` rows.

    No copy: the dst features of a block are a view of the src tensor.
    """
    if isinstance(feat, tuple):
        return feat
    if graph is not None and graph.is_block:
        if isinstance(feat, Mapping):
            return feat, {nt: value[: graph.num_dst_nodes(nt)] for nt, value in feat.items()}
        return feat, feat[: graph.num_dst_nodes()]
    return feat, feat


def check_edge_weight(graph, edge_weight: Optional[Tensor], name: str = "edge_weight") -> None:
    """One line naming the mismatch when ``edge_weight`` (an edge input called ``name``) does not have a row per edge."""
    if edge_weight is not None and edge_weight.shape[0] != graph.num_edges():
        raise DGLError(f"{name} has {edge_weight.shape[0]} rows but the graph has "
                       f"{graph.num_edges()} edges")


def check_same_feature_shape(src: Tensor, dst: Tensor) -> None:
    """The "gcn" aggregator adds a node's own feature to its neighbours': both need one shape."""
    if tuple(src.shape[1:]) != tuple(dst.shape[1:]):
        raise DGLError(f"The feature shape of source nodes: {tuple(src.shape[1:])} should be equal "
                       f"to the feature shape of destination nodes: {tuple(dst.shape[1:])}.")


class BlockRefused(DGLError, AssertionError):
    """A whole-graph layer given a block.  DGL's layers fail there storing node data: a DGLError from
    some (PNAConv), an AssertionError from others (GatedGCNConv, LabelPropagation); this is both, so a
    script's ``except`` of either still catches it."""


def refuse_block(graph, layer: str) -> None:
    """:class:`BlockRefused` naming ``layer`` when ``graph`` is a block (it has no ``g.ndata`` to store into)."""
    if graph.is_block:
        raise BlockRefused(f"{layer} runs on a graph, not a block: DGL's stores node data (g.ndata), "
                           f"which a block's separate src / dst nodes do not have")
