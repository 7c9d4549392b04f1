"""The DGL face on real DGL 2.1: what needs the ``dgl`` package itself, imported inside functions only.

``import bgl.dgl.real_dgl`` (and each module here) works without DGL installed; a function that builds
or reads a DGL object imports ``dgl`` when called.  The core (:mod:`bgl.loader`) never imports these
modules: it gets a :class:`~bgl.dgl.real_dgl.frontend.DGLBatchFrontend` and a
:class:`~bgl.dgl.real_dgl.graph_reader.DGLGraphReader` from the edge (:mod:`bgl.dgl.frontend_choice`).

==================  =========================================================
``blocks``          bgl blocks -> ``dgl.Block`` (typed: heterogeneous), pair graphs -> ``DGLGraph``
``batch_objects``   typed pair graphs, each block's CSR, the block list of a batch
``graph_reader``    a DGLGraph read in place (its GraphArrays), edge endpoints, type names; CSC -> DGLGraph
``frontend``        ``DGLBatchFrontend``: the batch frontend ``bgl.DataLoader`` hands DGL objects through
==================  =========================================================
"""
