"""``bgl.dgl``: the DGL face of bgl, one package at the edge (the core never imports it).

Real-DGL-only modules live in :mod:`bgl.dgl.real_dgl` (DGL imported inside functions); the edge's
choice of frontend for ``bgl.DataLoader`` is :mod:`bgl.dgl.frontend_choice`.
"""
