"""DGL 2.1's layers for point clouds and sets: the graph builders ``KNNGraph``, ``SegmentedKNNGraph`` and
``RadiusGraph`` (over :mod:`bgl.dgl.point_cloud`), the E(n)-equivariant ``EGNNConv``, ``AtomicConv`` and the
Set Transformer readouts ``SetTransformerEncoder`` / ``SetTransformerDecoder``; ``bgl.dgl.nn`` re-exports them.
"""
from .atomicconv import AtomicConv
from .egnnconv import EGNNConv
from .factory import KNNGraph, RadiusGraph, SegmentedKNNGraph
from .set_transformer import SetTransformerDecoder, SetTransformerEncoder

__all__ = ["KNNGraph", "SegmentedKNNGraph", "RadiusGraph", "EGNNConv", "AtomicConv", "SetTransformerEncoder",
           "SetTransformerDecoder"]
