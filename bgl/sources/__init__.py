"""bgl.sources: where a graph comes from, and how it becomes a graph store.

Every input format has its own reader module that turns the input into a
:class:`~bgl.sources.graph_source.GraphSource` (a re-iterable stream of edge
chunks plus node data), or for typed inputs a
:class:`~bgl.sources.typed.source.TypedSource` (one stream per relation); :mod:`bgl.sources.csc_build` turns the stream into the
store's CSC in chunked passes.  The public entry point is ``bgl.ingest``
(:func:`bgl.sources.datasets.ingest`), which detects the format and dispatches.

=====================  =====================================================
``datasets``           ``ingest()``: format detection, dispatch, atomic write
``graph_source``       the ``GraphSource`` stream every reader returns
``planetoid``          Planetoid ``ind.*`` files (standard split kept)
``readers/``           one reader per format: ``.npz``, edge lists, OGB, a ``DGLGraph``, a PyG ``Data``
``rmat``               Graph500 R-MAT generator (public as ``bgl.rmat``)
``csc_build``          chunked COO -> CSC builder (two passes, bounded memory)
``hetero``             heterographs / per-relation arrays: in-memory fused CSC, ``write_typed_store``
``typed/``             typed inputs: ``TypedSource`` and its writer, the chunked fused-CSC builder,
                       typed edge lists, typed R-MAT, an in-memory typed graph's edge arrays
``paper_word``         the paper-word typed graph of a bag-of-words store
``splits``             seeded, label-stratified train/val/test split
``synthetic``          synthetic features and labels for feature-less graphs
``_*_kernels``         numba kernels of ``csc_build``, the edge-list parsers and ``rmat``
=====================  =====================================================

Nothing here is imported by ``import bgl``; a reader loads only when used.
"""
