"""DGL 2.1's graphs built from point coordinates: ``dgl.knn_graph``, ``dgl.segmented_knn_graph`` and
``dgl.radius_graph`` (``bgl.dgl`` re-exports them; the modules ``KNNGraph``, ``SegmentedKNNGraph`` and
``RadiusGraph`` of ``bgl.dgl.nn`` call them).  Brute force in blocks of rows with torch: every point is
compared with every point of its set, but only a bounded block of the distance matrix exists at a time.
"""
from bgl.dgl.point_cloud.knn import knn_graph, segmented_knn_graph
from bgl.dgl.point_cloud.radius import radius_graph

__all__ = ["knn_graph", "segmented_knn_graph", "radius_graph"]
