"""One reader per input format, each turning its input into a :class:`~bgl.sources.graph_source.GraphSource`.

``npz`` (gnn-benchmark and CSR ``.npz``), ``edgelist`` (SNAP-style text, streamed), ``ogb`` (OGB's
raw layout, and ogbn-mag's typed one), ``dgl_graph`` (an in-memory ``DGLGraph``),
``pyg_data`` (an in-memory PyG ``Data``).  ``bgl.ingest`` picks one by format
(:mod:`bgl.sources.datasets`); Planetoid's reader stays beside it in :mod:`bgl.sources.planetoid`.
"""
