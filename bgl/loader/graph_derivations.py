"""What loaders derive from a DGLGraph's tensors, derived once per graph and tensor version.

A loader over a DGLGraph with ``prob=`` / ``mask=`` checks every weight (finite, >= 0: one pass over
the edges) and permutes the weights into CSC order (the sampling kernels read them by CSC position):
one ``take`` of ``E`` rows.  Done per loader, a script that builds a loader per repetition, or a
notebook re-running a cell, paid both every time: with 40 loaders of 10 batches over a weighted graph
of a few hundred thousand edges, 1.5x DGL's time, the profile led by ``first_bad_weight`` and ``take``.

:func:`derivations_of` keeps one :class:`GraphDerivations` per DGLGraph object (weakly: it goes with
the graph), and each result is tied to the exact tensor it came from: the same Python object, the same
in-place version (``Tensor._version`` counts in-place writes), storage and shape.  ``g.edata['w'] =
new`` or ``g.edata['w'][i] = x`` derive again at the next loader; nothing else does.  The CSC edge
ids are recognised by their storage (DGL keeps the graph's CSC once built and hands out views of it).
Labels that are not int64 are widened, and their class count taken, the same way (one pass each).

A heterogeneous graph's fused CSC (:func:`bgl.sources.hetero.fused_csc`, ~1 s for 21M edges) is kept
the same way, tied to where its per-relation edge arrays live and their shapes (:meth:`GraphDerivations.kept`;
``add_edges`` and the like give new arrays): 9 B an edge (17 where ids need int64) and 8 B a node while the
graph lives, as DGL keeps the CSC it builds (16-24 B an edge).

Cost: the permuted copies are kept while the graph lives (``itemsize * width`` B/edge per edge
array used in a permuted CSC), as one loader kept them while it lived; verdicts cost nothing.
"""
from __future__ import annotations

import threading
import weakref
from typing import Any, Callable, Optional

import numpy as np
import torch

_BY_GRAPH: "weakref.WeakKeyDictionary[Any, GraphDerivations]" = weakref.WeakKeyDictionary()
_REGISTRY_LOCK = threading.Lock()


def derivations_of(graph: Any) -> Optional["GraphDerivations"]:
    """The :class:`GraphDerivations` of ``graph`` (made on first use), or None for an object that
    cannot be weakly referenced (then nothing is kept and every loader derives again)."""
    with _REGISTRY_LOCK:
        try:
            found = _BY_GRAPH.get(graph)
            if found is None:
                found = _BY_GRAPH[graph] = GraphDerivations()
        except TypeError:
            return None
    return found


class _TensorKey:
    """Which tensor, and which state of it, a result was derived from (holds the tensor weakly)."""

    __slots__ = ("ref", "state")

    def __init__(self, tensor: torch.Tensor):
        self.ref = weakref.ref(tensor)
        self.state = _state(tensor)

    def matches(self, tensor: torch.Tensor) -> bool:
        return self.ref() is tensor and self.state == _state(tensor)


def _state(tensor: torch.Tensor) -> tuple:
    return tensor._version, tensor.data_ptr(), tuple(tensor.shape), tuple(tensor.stride()), tensor.dtype


def storage_key(array: np.ndarray) -> tuple:
    """An array recognised by where its data lives, its shape and dtype (for views made afresh each time)."""
    return array.__array_interface__["data"][0], array.shape, array.dtype.str


class GraphDerivations:
    """One graph's derived edge arrays and weight verdicts; thread-safe.

    ``validations`` / ``permutations`` count the work actually done (the tests read them).
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._results: dict[tuple, tuple[_TensorKey, Any, Any]] = {}
        self._identity: Optional[tuple[tuple, bool]] = None
        self.validations = 0
        self.permutations = 0

    def derived(self, kind: str, name: str, tensor: torch.Tensor, extra: Any, make: Callable[[], Any]) -> Any:
        """``make()``'s result for (``kind``, ``name``), made again only when ``tensor`` or ``extra`` differ."""
        with self._lock:
            held = self._results.get((kind, name))
            if held is not None and held[0].matches(tensor) and held[1] == extra:
                return held[2]
        value = make()  # outside the lock: an O(E) pass; two threads may both make it, both right
        with self._lock:
            self._results[(kind, name)] = (_TensorKey(tensor), extra, value)
        return value

    def kept(self, kind: str, key: tuple, make: Callable[[], Any]) -> Any:
        """``make()``'s result while ``key`` (where the arrays it reads live, their shapes) is unchanged."""
        with self._lock:
            held = self._results.get((kind, ""))
            if held is not None and held[0] == key:
                return held[2]
        value = make()
        with self._lock:
            self._results[(kind, "")] = (key, None, value)
        return value

    def check_weights(self, name: str, tensor: torch.Tensor, num_edges: int) -> None:
        """:func:`bgl.sampler.ops.check_weights` of ``tensor`` (the graph's ``edata[name]``), once per
        version of it; ValueError naming ``name`` and the first bad edge, every time it is asked."""
        from ..sampler.ops import check_weights

        def check():
            self.validations += 1
            try:
                check_weights(tensor, num_edges, name)
            except ValueError as e:
                return e.args  # not the exception: its traceback's frames would hold the tensor
            return None

        bad = self.derived("valid", name, tensor, num_edges, check)
        if bad is not None:
            raise ValueError(*bad)

    def csc_order(self, name: str, tensor: torch.Tensor, edge_ids: np.ndarray) -> np.ndarray:
        """``tensor``'s rows in CSC order (``edge_ids[p]``: the id of the edge at CSC position ``p``),
        read-only; a view of ``tensor`` itself when the CSC's edge ids are ``0..E-1``."""
        if self.is_identity(edge_ids):
            view = tensor.numpy()
            view.flags.writeable = False
            return view  # a view holds the tensor: never kept here (the graph's tensor would never go)

        def permute():
            self.permutations += 1
            rows = np.take(tensor.numpy(), edge_ids, axis=0)
            rows.flags.writeable = False
            return rows

        return self.derived("csc", name, tensor, storage_key(edge_ids), permute)

    def is_identity(self, edge_ids: np.ndarray) -> bool:
        """True when ``edge_ids`` is ``0..E-1`` (one pass, once per CSC)."""
        key = storage_key(edge_ids)
        with self._lock:
            if self._identity is not None and self._identity[0] == key:
                return self._identity[1]
        same = bool(np.array_equal(edge_ids, np.arange(edge_ids.shape[0], dtype=edge_ids.dtype)))
        with self._lock:
            self._identity = (key, same)
        return same
