"""DGL 2.1's graph-transformer blocks (``dgl.nn.pytorch.gt``): attention with a per-pair bias, the
Graphormer and EGT layers, and the encoders that turn degrees, shortest distances, shortest paths, 3D
coordinates and Laplacian eigenvectors into node features or attention biases.

They work on dense, padded batches (``[batch, N, ...]``, ``[batch, N, N, ...]``), as DGL's do: a graph's
cost is O(N^2) per head in memory and time, which is what a full-attention transformer pays.  Parameter
names, shapes and initialisation are DGL's, so a DGL checkpoint loads.
"""
from .attention import BiasedMHA, GraphormerLayer
from .egt import EGTLayer
from .encoders import DegreeEncoder, PathEncoder, SpatialEncoder, SpatialEncoder3d
from .lap_pos_encoder import LapPosEncoder

__all__ = ["BiasedMHA", "GraphormerLayer", "EGTLayer", "DegreeEncoder", "PathEncoder", "SpatialEncoder",
           "SpatialEncoder3d", "LapPosEncoder"]
