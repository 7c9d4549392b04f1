"""Named per-edge arrays of a graph store (``edata/<name>.npy``): weights, masks, edge features.

An edge array is row-aligned with the store's CSC: row ``p`` belongs to the
edge at CSC position ``p`` (``indices[p] -> v`` for the row ``v`` holding
``p``), so a sampler that knows the positions it drew reads the data of the
drawn edges with one gather, and a partition part keeps the rows of its own
in-edges.  ``meta.json``'s ``edata`` lists each array's dtype and shape.

Cost: ``itemsize * width`` bytes per edge per array (4 for a float32 weight,
1 for a bool mask, ``4 * d`` for float32 features of width ``d``),
memory-mapped like every other store array.

The store format version is unchanged: an older bgl ignores the ``edata``
key of ``meta.json`` and reads every other array as before.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .errors import StoreFormatError

EDATA_DIR = "edata"
# Edge array names become file names: letters, digits, ``_``, ``-``, ``.``, not starting with ``.``.
EDGE_NAME = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}$")


def check_edge_name(name) -> str:
    """``name`` if it can name an edge array (it becomes ``edata/<name>.npy``); ValueError naming it."""
    if not isinstance(name, str) or not EDGE_NAME.match(name):
        raise ValueError(f"edge data name must be 1-128 letters, digits, '_', '-' or '.' (not starting "
                         f"with '.'), got {name!r}")
    return name


def edge_spec(name: str, shape, dtype, num_edges: int) -> dict[str, Any]:
    """The ``meta.json`` entry of an edge array; ValueError for a bad name, row count or dtype."""
    check_edge_name(name)
    shape = tuple(int(x) for x in shape)
    if not shape or shape[0] != num_edges:
        raise ValueError(f"edge array {name!r} must have num_edges={num_edges} rows, got shape {shape}")
    dtype = np.dtype(dtype)
    if dtype.kind not in "biuf":
        raise ValueError(f"edge array {name!r} must be bool, integer or float, got dtype {dtype}")
    return {"dtype": dtype.name, "shape": list(shape)}


def load_edge_arrays(meta_path: Path, edata: Any, num_edges: int,
                     load: Callable[[str, tuple, np.dtype], np.ndarray]) -> dict[str, np.ndarray]:
    """The memmaps of every edge array ``meta.json`` lists; StoreFormatError naming a bad entry.

    ``load(file stem, shape, dtype)`` is the store's checked ``.npy`` loader.
    """
    if not isinstance(edata, dict):
        raise StoreFormatError(f"{meta_path}: edata must be an object, got {type(edata).__name__}")
    arrays = {}
    for name, spec in edata.items():
        if not isinstance(spec, dict) or "dtype" not in spec or not isinstance(spec.get("shape"), list):
            raise StoreFormatError(f"{meta_path}: edata[{name!r}] must be {{'dtype': ..., 'shape': [...]}}, "
                                   f"got {spec!r}")
        try:
            spec = edge_spec(name, spec["shape"], spec["dtype"], num_edges)
        except (TypeError, ValueError) as e:
            raise StoreFormatError(f"{meta_path}: edata: {e}") from None
        arrays[name] = load(f"{EDATA_DIR}/{name}", tuple(spec["shape"]), np.dtype(spec["dtype"]))
    return arrays


def missing_edge_array(where, name, have) -> KeyError:
    """The KeyError for an edge array ``name`` that ``where`` (a store, a graph) lacks."""
    return KeyError(f"{where} has no edge data {name!r}; it has {sorted(have) or 'none'}")


class EdgeArrays:
    """Read side, shared by :class:`~bgl.store.GraphStore` and in-memory graphs: ``self.edata``
    maps names to ``[num_edges, ...]`` arrays in CSC order; ``self.path`` names the graph."""

    edata: dict[str, np.ndarray]

    def edge_array(self, name: str) -> np.ndarray:
        """The edge array ``name`` ([num_edges, ...], CSC order); KeyError listing the names there are."""
        if name not in self.edata:
            raise missing_edge_array(f"graph {self.path}", name, self.edata)
        return self.edata[name]


class EdgeArrayWriter:
    """Write side, mixed into :class:`~bgl.store.StoreWriter` (uses its ``tmp`` dir and ``_meta``)."""

    tmp: Path
    _meta: dict[str, Any]

    def _edge_file(self, name: str, shape, dtype) -> Path:
        self._meta.setdefault("edata", {})[name] = edge_spec(name, shape, dtype, self._meta["num_edges"])
        (self.tmp / EDATA_DIR).mkdir(exist_ok=True)
        return self.tmp / EDATA_DIR / f"{name}.npy"

    def create_edge_array(self, name: str, shape: tuple[int, ...], dtype) -> np.memmap:
        """A writable ``edata/<name>.npy`` memmap ([num_edges, ...], CSC edge order), filled in chunks."""
        file = self._edge_file(name, shape, dtype)
        return np.lib.format.open_memmap(file, mode="w+", dtype=dtype, shape=tuple(shape))

    def save_edge_array(self, name: str, array) -> None:
        """Write a whole in-memory edge array ``[num_edges, ...]`` (row ``p`` = the edge at CSC position ``p``)."""
        array = np.ascontiguousarray(array)
        np.save(self._edge_file(name, array.shape, array.dtype), array, allow_pickle=False)
