"""``bgl.pyg``: the PyG drop-in -- ``from bgl.pyg import NeighborLoader, LinkNeighborLoader``.

The PyG face of bgl, one package at the edge: PyG's loader signatures and batch layouts over
``bgl.DataLoader`` (:mod:`bgl.loader`), which never imports this package.  PyG itself is optional
(``pip install 'bgl[pyg]'``): batches are ``torch_geometric.data.Data`` when it is installed,
:class:`PygBatch` otherwise.

=========================  =====================================================
``loader``                 ``NeighborLoader``: PyG's node loader over a ``Data``, store, partition or servers
``link_loader``            ``LinkNeighborLoader``: PyG's link loader over given node pairs
``base``                   ``PygLoaderBase``: what every homogeneous PyG loader shares
``layout``                 ``blocks_to_pyg``: PyG's ``n_id`` / ``edge_index`` / ``e_id`` from bgl blocks
``_kernels``               ``write_hop_edges``: one hop's CSC slice in PyG's ``edge_index`` layout
``batches``                ``PygDataBuilder``: a batch's ``Data`` filled by one dict update
``fields``                 what a batch takes from its input beyond the sampled structure
``options``                ``pyg_options``: PyG's extra loader arguments, answered once
``negatives``              PyG's negative-sampling arguments as a bgl pair sampler
``hetero``                 ``HeteroNeighborLoader``: the node loader on a ``HeteroData``
``hetero_link``            the link loader on a ``HeteroData``
``temporal``               PyG's disjoint temporal batch layout from plain sample arrays
``temporal_loader``        ``TemporalNeighborLoader`` / ``TemporalLinkNeighborLoader`` (``time_attr=``)
``hetero_temporal``        the temporal node loader on a ``HeteroData``
``hetero_temporal_link``   the temporal link loader on a ``HeteroData``
=========================  =====================================================
"""
from __future__ import annotations

from .link_loader import LinkNeighborLoader
from .loader import NeighborLoader, PygBatch, blocks_to_pyg

__all__ = ["NeighborLoader", "LinkNeighborLoader", "PygBatch", "blocks_to_pyg"]
