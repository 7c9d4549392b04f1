"""The loader's seeds: what one epoch iterates over, resolved once into one item kind.

``items`` picks the kind (nodes or edges, typed or not, temporal or not); ``edges`` and
``typed_edges`` carry link prediction's seed edges, negatives and exclusion through the node
pipeline's stages; ``temporal`` and ``temporal_edges`` add a time to each seed;
``duplicates``, ``typed_callables`` and ``typed_located`` (a DGLGraph's seed edges found in its CSC per
batch) serve the edge kinds.
"""
