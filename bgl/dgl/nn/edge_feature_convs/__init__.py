"""DGL's convolutions whose messages read a per-edge input besides the node features.

``GMMConv`` (pseudo-coordinates weighted by Gaussian kernels), ``CFConv`` (SchNet's continuous
filters), ``EGATConv`` / ``EdgeGATConv`` (attention scored with edge features), ``GatedGCNConv``
(edge gates, updated edge features) and ``PNAConv`` (several aggregators and degree scalers,
edge features optional) and ``DGNConv`` (PNA plus directional aggregators along
Laplacian eigenvectors).  Each keeps DGL 2.1's signature, parameter names and initialisation, so
a DGL state dict loads strictly and gives DGL's outputs; ``bgl.dgl.nn`` re-exports them.
"""
from .cfconv import CFConv
from .dgnconv import DGNConv
from .egatconv import EdgeGATConv, EGATConv
from .gatedgcnconv import GatedGCNConv
from .gmmconv import GMMConv
from .pnaconv import PNAConv

__all__ = ["GMMConv", "PNAConv", "DGNConv", "EGATConv", "EdgeGATConv", "GatedGCNConv", "CFConv"]
