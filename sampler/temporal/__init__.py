"""Temporal sampling: no sampled edge or node is newer than its subgraph's seed time.

``sampling`` validates and samples one layer (``TemporalLayer``, the time index); ``typed`` does the
same per relation of a typed graph; ``frames`` is the wire protocol's temporal request and a
server's answer; ``remote`` is the client side.  Their numba kernels sit beside them:
``_kernels`` (uniform), ``_weighted_kernels``, ``_typed_kernels``.
"""
