"""Typed (per-relation) sampling over a store's fused CSC (see :mod:`bgl.schema`).

``sampling`` samples a layer per relation (shared by ``LocalSampler``, servers and co-located
reads) over the numba kernels of ``_kernels``; ``frames`` holds the wire protocol's typed frames (a
leaf module the protocol imports); ``remote`` is the client's typed view and the loader's id maps.
"""
