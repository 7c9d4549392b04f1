"""bgl: partition once, serve samples from graph servers, cache the features the
next batches need, and keep every stage busy in its own process.

Heavy pieces (torch, numba, zmq, dgl) load on first use, so ``import bgl``
is cheap and works on machines without DGL.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from .errors import (BglError, IngestError, PartitionFormatError, PipelineError,
                     ServerError, ServerUnavailable, StoreFormatError)
from .loader.batch_frontend import install as _install_frontends
from .store import GraphStore, open_store, write_store

__version__ = "0.1.0"


def _edge_frontends():
    """The frontends the core loader reads and builds DGL's objects through, chosen here at the edge
    (:mod:`bgl.loader.batch_frontend`); imported on the first loader, not by ``import bgl``."""
    from .dgl.frontend_choice import EdgeFrontends

    return EdgeFrontends()


_install_frontends(_edge_frontends)

# Public names that live in modules with heavy imports: name -> module.
_LAZY = {
    "DataLoader": "bgl.loader.dataloader",
    "NeighborSampler": "bgl.loader.sampler_options",
    "MultiLayerFullNeighborSampler": "bgl.loader.sampler_options",
    "MultiLayerNeighborSampler": "bgl.loader.sampler_options",
    "LaborSampler": "bgl.loader.labor",
    "TemporalNeighborSampler": "bgl.loader.temporal_sampler",
    "Block": "bgl.blocks",
    "as_edge_prediction_sampler": "bgl.loader.edge_prediction",
    "EdgePredictionSampler": "bgl.loader.edge_prediction",
    "reverse_edge_ids": "bgl.loader.seeds.edges",
    "dcp_state": "bgl.loader.state.dcp",
    "load_dcp_state": "bgl.loader.state.dcp",
    "ingest": "bgl.sources.datasets",  # the ingest entry point; readers live in bgl/sources/
}
if TYPE_CHECKING:  # the lazy names above, spelled out for type checkers and the API reference (griffe)
    from . import negative_sampler, rmat
    from .blocks import Block
    from .loader.dataloader import DataLoader
    from .loader.state.dcp import dcp_state, load_dcp_state
    from .loader.edge_prediction import EdgePredictionSampler, as_edge_prediction_sampler
    from .loader.seeds.edges import reverse_edge_ids
    from .loader.labor import LaborSampler
    from .loader.sampler_options import MultiLayerFullNeighborSampler, MultiLayerNeighborSampler, NeighborSampler
    from .loader.temporal_sampler import TemporalNeighborSampler
    from .sources.datasets import ingest

# Public sub-modules reachable as attributes without an explicit import (``bgl.rmat.generate_rmat_store``).
_LAZY_MODULES = ("rmat", "negative_sampler")


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    if name in _LAZY_MODULES:
        return importlib.import_module(f"bgl.{name}")
    raise AttributeError(f"module 'bgl' has no attribute {name!r}")


__all__ = [
    "BglError", "IngestError", "PartitionFormatError", "PipelineError", "ServerError",
    "ServerUnavailable", "StoreFormatError", "GraphStore", "open_store", "write_store",
    *_LAZY,
]
