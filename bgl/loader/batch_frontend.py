"""What the loader asks of a frontend, without importing one: a graph reader and a batch frontend.

The core (``bgl.loader``, ``bgl.sampler``, ``bgl.cache``, ``bgl.sources``, ``bgl.store``) makes
frontend-neutral batches: bgl :class:`~bgl.blocks.Block` s, seed ids, pair graphs.  Two things it cannot
do by itself belong to a frontend (DGL's face today, :mod:`bgl.dgl`; a second DGL face later):

* read a graph object of the frontend's in place (a DGLGraph's arrays as the core's ``GraphArrays``, its
  edges' endpoints, its type names):
  a :class:`GraphReader`;
* hand the trainer the frontend's own objects (``dgl.Block`` s, DGL pair graphs) instead of bgl's:
  a :class:`BatchFrontend`, applied last, in the transfer stage.

Which frontend reads a graph and builds a loader's batches is decided at the edge: the root package
(``bgl/__init__.py``) installs the edge's :class:`Frontends` with :func:`install` before any core module
runs (every ``import bgl.loader...`` imports ``bgl`` first), and the loader asks it once per loader.
No core module imports a frontend (the import contract in ``pyproject.toml``, tested by
``tests/test_import_contract.py``); this module imports nothing of bgl's.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Protocol


class GraphReader(Protocol):
    """Reads a frontend's graph object in place (a DGLGraph, a ``bgl.dgl`` graph), for
    :mod:`bgl.loader.graph_arrays`.  The object has DGL's graph API (``ndata``, ``edata``, ``ntypes``,
    ``canonical_etypes``, ``nodes[nt].data``), which the core reads by duck type."""

    def arrays(self, graph, feat_key: Optional[str], label_key: Optional[str]) -> Any:
        """The graph as the core's :class:`~bgl.loader.graph_arrays.GraphArrays`, sharing its memory: in-edge
        CSC (``indptr`` int64 [num_nodes + 1], ``indices`` [num_edges] source ids, ``edge_ids`` the graph's
        own id of each CSC position), features ``feat_key`` [num_nodes, dim], labels ``label_key``
        int64 [num_nodes] (None: not read), every edge array."""

    def find_edges(self, graph, eids) -> tuple:
        """``(src, dst)`` int64 NumPy arrays [len(eids)] of the graph's edges ``eids`` (its own edge ids)."""

    def type_names(self, graph) -> tuple[str, str]:
        """(node type, edge type) of a one-type graph, the names its blocks carry."""

    def structure(self, graph) -> Any:
        """An identity of the graph's nodes and edges now, O(1): it differs after any edit that adds or removes
        nodes or edges in place (``g.add_edges``, ``g.remove_edges``, ...), so a loader sees the edit."""


class BatchFrontend(Protocol):
    """Turns one batch's bgl objects into the frontend's (on the batch's device, in the transfer stage)."""

    name: str

    def blocks(self, blocks: list, schema, graph, type_names: tuple[str, str], with_csr: bool) -> list:
        """The frontend's blocks of bgl ``blocks`` (typed when ``schema`` is a GraphSchema); ``graph`` is the
        frontend graph read in place (its other fields may be attached) or None; ``with_csr`` builds each
        block's backward structure now (the producer thread does it off the trainer's thread)."""

    def pair_graph(self, pair, graph=None) -> Any:
        """The frontend's graph of one :class:`~bgl.loader.seeds.edges.PairGraph`; ``graph``, the graph
        read in place (positive pairs only), whose other fields it carries, as DGL's pair graph does."""

    def typed_pair_graph(self, edges: dict, node_ids: dict, edge_ids: Optional[dict], graph=None) -> Any:
        """The frontend's heterogeneous pair graph: ``edges`` ``{canonical etype: (src, dst)}`` type-local,
        ``node_ids`` ``{ntype: ids}``, ``edge_ids`` ``{canonical etype: ids}`` (the positive pairs) or None;
        ``graph``, the graph read in place, whose other fields the positive pairs carry, as DGL's do."""


class Frontends(Protocol):
    """The edge's choice, installed once: which frontend reads a graph, which builds a loader's batches."""

    def reader(self, graph) -> Optional[GraphReader]:
        """The reader of ``graph``, or None when it is not a frontend's graph object."""

    def batches(self, graph, blocks: Optional[str], from_frontend: bool) -> Optional[BatchFrontend]:
        """The batch frontend for a loader over ``graph`` with option ``blocks`` (``"dgl"``, ``"bgl"`` or
        None: the frontend's objects when ``from_frontend``, i.e. the graph or sampler came from it);
        None: bgl's own objects.  ImportError naming the frontend's library when it is asked for and
        missing."""


_factory: Optional[Callable[[], Frontends]] = None
_installed: Optional[Frontends] = None


def install(factory: Callable[[], Frontends]) -> None:
    """Install the edge's frontends: ``factory()`` builds them on first use (it may import heavy modules)."""
    global _factory, _installed
    _factory, _installed = factory, None


def _frontends() -> Frontends:
    global _installed
    if _installed is None:
        if _factory is None:
            raise RuntimeError("no frontends installed; bgl/__init__.py installs them on `import bgl`")
        _installed = _factory()
    return _installed


def frontend_reader(graph) -> Optional[GraphReader]:
    """The installed reader of ``graph``, or None when it is no frontend's graph object."""
    return _frontends().reader(graph)


def graph_reader(graph) -> GraphReader:
    """The installed reader of ``graph``; TypeError naming its type when no frontend reads it."""
    reader = frontend_reader(graph)
    if reader is None:
        raise TypeError(f"no frontend reads a {type(graph).__module__}.{type(graph).__name__} in place")
    return reader


def batch_frontend(graph, blocks: Optional[str], from_frontend: bool) -> Optional[BatchFrontend]:
    """The installed choice of batch frontend (:meth:`Frontends.batches`); None: bgl's own objects."""
    return _frontends().batches(graph, blocks, from_frontend)
