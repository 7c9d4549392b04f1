"""``bgl.pyg``: the PyG drop-in -- ``from bgl.pyg import NeighborLoader, LinkNeighborLoader``.

Thin public names for :mod:`bgl.loader.pyg_loader` and :mod:`bgl.loader.pyg_link_loader`
(see there for the batch layouts).  PyG itself is optional (``pip install 'bgl[pyg]'``): batches are
``torch_geometric.data.Data`` when it is installed, :class:`PygBatch` otherwise.
"""
from __future__ import annotations

from .loader.pyg_link_loader import LinkNeighborLoader
from .loader.pyg_loader import NeighborLoader, PygBatch, blocks_to_pyg

__all__ = ["NeighborLoader", "LinkNeighborLoader", "PygBatch", "blocks_to_pyg"]
