"""Graph encodings for graph transformers (DGL 2.1's ``dgl.shortest_dist``, ``dgl.lap_pe`` /
``dgl.laplacian_pe``, ``dgl.random_walk_pe`` and the ``RandomWalkPE`` / ``LapPE`` / ``LaplacianPE``
transforms), reached as ``bgl.dgl.<name>`` and ``bgl.dgl.transforms.<name>``."""
from bgl.dgl.graph_encodings.shortest_paths import shortest_dist
from bgl.dgl.graph_encodings.spectral import lap_pe, laplacian_pe, random_walk_pe
from bgl.dgl.graph_encodings.transform_objects import LapPE, LaplacianPE, RandomWalkPE

__all__ = ["shortest_dist", "lap_pe", "laplacian_pe", "random_walk_pe", "LapPE", "LaplacianPE", "RandomWalkPE"]
