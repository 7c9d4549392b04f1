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
``npz_formats``        gnn-benchmark ``.npz`` and ``data/indices/indptr`` npz
``planetoid``          Planetoid ``ind.*`` files (standard split kept)
``edgelist``           SNAP-style text edge lists, streamed in chunks
``ogb``                OGB node-property raw layout (and its heterogeneous one, ogbn-mag)
``dgl_source``         an in-memory ``DGLGraph``
``rmat``               Graph500 R-MAT generator (public as ``bgl.rmat``)
``csc_build``          chunked COO -> CSC builder (two passes, bounded memory)
``hetero``             heterographs / per-relation arrays: in-memory fused CSC, ``write_typed_store``
``typed_source``       the ``TypedSource`` every typed reader returns, its writer, ``add_reverse``
``typed_csc``          chunked builder of the fused typed CSC (bounded memory, same bytes)
``typed_edgelist``     a directory of typed edge lists plus per-type arrays
``rmat_hetero``        typed R-MAT generator (papers, authors, fields)
``paper_word``         the paper-word typed graph of a bag-of-words store
``splits``             seeded, label-stratified train/val/test split
``synthetic``          synthetic features and labels for feature-less graphs
``_*_kernels``         numba kernels of ``csc_build``, ``typed_csc``, ``edgelist`` and ``rmat``
=====================  =====================================================

Nothing here is imported by ``import bgl``; a reader loads only when used.
"""
