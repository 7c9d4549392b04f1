"""DGL's layers (``dgl.nn.pytorch``) in pure PyTorch, on ``bgl.dgl`` graphs and blocks.

A DGL script changes ``import dgl.nn as dglnn`` to ``import bgl.dgl.nn as dglnn``.  Each layer
keeps DGL's signature, parameter names, shapes and initialisation, so a state dict saved from
DGL's layer loads here and gives the same outputs.  A DGL layer not built here is refused on
first use with its name and the layers that exist (no half-working stand-in).
"""
import sys as _sys

from . import functional
from .agnnconv import AGNNConv
from .chebconv import ChebConv
# Identity is not in __all__: DGL has it in dgl.nn.pytorch.utils only (reached through the alias below)
from .combine import EdgePredictor, GroupRevRes, Identity, JumpingKnowledge, Sequential, TransE, TransR  # noqa: F401
from .dense_adjacency import DenseChebConv, DenseGraphConv, DenseSAGEConv
from .dotgatconv import DotGatConv
from .edge_feature_convs import CFConv, DGNConv, EdgeGATConv, EGATConv, GatedGCNConv, GMMConv, PNAConv
from .edge_networks import EdgeConv, NNConv
from .embedding_models import DeepWalk, MetaPath2Vec
from .explain import GNNExplainer, HeteroGNNExplainer, HeteroPGExplainer, HeteroSubgraphX, PGExplainer, SubgraphX
from .functional import edge_softmax
from .gatconv import GATConv, GATv2Conv
from .gatedgraphconv import GatedGraphConv
from .geometric import (AtomicConv, EGNNConv, KNNGraph, RadiusGraph, SegmentedKNNGraph, SetTransformerDecoder,
                        SetTransformerEncoder)
from .ginconv import GINConv, GINEConv
from .graph_transformer import (BiasedMHA, DegreeEncoder, EGTLayer, GraphormerLayer, LapPosEncoder, PathEncoder,
                                SpatialEncoder, SpatialEncoder3d)
from .graphconv import EdgeWeightNorm, GraphConv
from .hetero import HeteroGraphConv
from .hgtconv import HGTConv
from .linear import TypedLinear, WeightBasis
from .node_embedding import NodeEmbedding
from .pooling import AvgPooling, GlobalAttentionPooling, MaxPooling, Set2Set, SortPooling, SumPooling, WeightAndSum
from .propagation import APPNPConv, GCN2Conv, LabelPropagation, SGConv, TAGConv
from .pyg_bridge import to_pyg
from .relgraphconv import RelGraphConv
from .sageconv import SAGEConv
from .twirls import TWIRLSConv, TWIRLSUnfoldingAndAttention
from .typed_modules import HeteroEmbedding, HeteroLinear

__all__ = ["GraphConv", "EdgeWeightNorm", "SAGEConv", "GATConv", "GATv2Conv", "GINConv", "GINEConv", "RelGraphConv",
           "TypedLinear", "HeteroGraphConv", "HGTConv", "SGConv", "APPNPConv", "TAGConv", "GCN2Conv", "DotGatConv",
           "HeteroLinear", "HeteroEmbedding", "JumpingKnowledge", "EdgePredictor", "Sequential", "WeightBasis",
           "NodeEmbedding", "GroupRevRes",
           "ChebConv", "NNConv", "EdgeConv", "GatedGraphConv", "AGNNConv",
           "GMMConv", "PNAConv", "DGNConv", "EGATConv", "EdgeGATConv", "GatedGCNConv", "CFConv",
           "DenseGraphConv", "DenseSAGEConv", "DenseChebConv", "LabelPropagation", "TransE", "TransR",
           "TWIRLSConv", "TWIRLSUnfoldingAndAttention", "EGNNConv", "AtomicConv",
           "KNNGraph", "SegmentedKNNGraph", "RadiusGraph", "SetTransformerEncoder", "SetTransformerDecoder",
           "SumPooling", "AvgPooling", "MaxPooling", "GlobalAttentionPooling", "WeightAndSum", "SortPooling", "Set2Set",
           "DeepWalk", "MetaPath2Vec", "GNNExplainer", "HeteroGNNExplainer", "PGExplainer", "HeteroPGExplainer",
           "SubgraphX", "HeteroSubgraphX",
           "BiasedMHA", "GraphormerLayer", "EGTLayer", "DegreeEncoder", "PathEncoder", "SpatialEncoder",
           "SpatialEncoder3d", "LapPosEncoder", "functional", "edge_softmax", "to_pyg"]

# DGL scripts also name the layers dgl.nn.pytorch(.conv / .hetero / .linear): the same module here
for _alias in ("pytorch", "pytorch.conv", "pytorch.hetero", "pytorch.linear", "pytorch.softmax", "pytorch.glob",
               "pytorch.utils", "pytorch.link", "pytorch.network_emb", "pytorch.factory", "pytorch.gt",
               "pytorch.explain"):
    _sys.modules[f"{__name__}.{_alias}"] = _sys.modules[__name__]
pytorch = conv = _sys.modules[__name__]

# DGL 2.1's dgl.nn.pytorch names that bgl does not provide (yet).
NOT_BUILT = frozenset({
    "CuGraphGATConv", "CuGraphRelGraphConv", "CuGraphSAGEConv",
})


def __getattr__(name: str):
    if name in NOT_BUILT:
        raise AttributeError(f"bgl.dgl.nn does not provide DGL's {name}; its layers are "
                             f"{', '.join(n for n in __all__ if n[0].isupper())}")
    raise AttributeError(f"module 'bgl.dgl.nn' has no attribute {name!r}")
