"""Typed (heterogeneous) inputs on their way to one fused CSC with relation ids (see :mod:`bgl.schema`).

``source`` is the ``TypedSource`` every typed reader returns and its writer; ``csc`` builds the fused
CSC in chunks (its numba kernels in ``_csc_kernels``); ``edgelist`` reads a directory of typed edge
lists, ``rmat`` generates a typed R-MAT graph, and ``edata`` reads an in-memory typed graph's edge
arrays over the fused CSC.  In-memory heterographs are :mod:`bgl.sources.hetero`.
"""
