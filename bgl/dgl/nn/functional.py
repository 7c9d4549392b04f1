"""``dgl.nn.functional``: the functions DGL's layers share, re-exported from :mod:`bgl.dgl.ops`."""
from ..ops import edge_softmax

__all__ = ["edge_softmax"]
