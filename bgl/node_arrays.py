"""Named per-node arrays of a graph store (``ndata/<name>.npy``): node times for temporal sampling.

A node array has one row per row of the store, in row order: a whole store's rows are the global
ids (a typed store's too: node type ``t`` owns ``[offset_t, offset_t + count_t)``, so one array
holds every type's values), a partition part's are its own nodes, as the partition numbered them.
``meta.json``'s ``ndata`` lists each array's dtype and shape, like ``edata`` for edge arrays
(:mod:`bgl.schema`); the format version is not raised for them: an older bgl ignores the key and
reads every other array as before.

A part's neighbours live on other parts, so a part also keeps, per node array that it was given
one of, the value of each in-edge's *source* (``ndata/<name>.source.npy``, ``[num_edges]`` in the
part's CSC order, written by ``bgl partition`` in one chunked pass): what a graph server filters
by when a temporal request names node times (a source is a candidate at ``t`` when its time is
<= ``t``), with no round to the part that owns the neighbour.

Cost: ``itemsize`` bytes per node per array (8 B a node for int64 times), memory-mapped like
every other store array; in a part, ``itemsize`` bytes per part edge more for the source copy.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from .errors import StoreFormatError
from .schema import edge_spec

NDATA_DIR = "ndata"
SOURCE_SUFFIX = ".source"  # ndata/<name>.source.npy: each in-edge's source value (a part's)


def node_spec(name: str, shape, dtype, num_nodes: int, source: bool = False) -> dict[str, Any]:
    """The ``meta.json`` entry of a node array (``source``: a part keeps its in-edges' source values);
    ValueError for a bad name (the rule of edge array names), row count or dtype."""
    return {**edge_spec(name, shape, dtype, num_nodes, kind="node"), "source": bool(source)}


def load_node_arrays(meta_path: Path, ndata: Any, num_nodes: int, num_edges: int,
                     load: Callable[[str, tuple, np.dtype], np.ndarray]) -> tuple[dict, dict]:
    """``(arrays, sources)``: the memmaps of every node array ``meta.json`` lists, and of the per-edge
    source copies a part keeps; StoreFormatError naming a bad entry.  ``load`` is the store's checked
    ``.npy`` loader."""
    if not isinstance(ndata, dict):
        raise StoreFormatError(f"{meta_path}: ndata must be an object, got {type(ndata).__name__}")
    arrays, sources = {}, {}
    for name, spec in ndata.items():
        if not isinstance(spec, dict) or "dtype" not in spec or not isinstance(spec.get("shape"), list):
            raise StoreFormatError(f"{meta_path}: ndata[{name!r}] must be {{'dtype': ..., 'shape': [...]}}, "
                                   f"got {spec!r}")
        try:
            spec = node_spec(name, spec["shape"], spec["dtype"], num_nodes, spec.get("source", False))
        except (TypeError, ValueError) as e:
            raise StoreFormatError(f"{meta_path}: ndata: {e}") from None
        dtype = np.dtype(spec["dtype"])
        arrays[name] = load(f"{NDATA_DIR}/{name}", tuple(spec["shape"]), dtype)
        if spec["source"]:
            sources[name] = load(f"{NDATA_DIR}/{name}{SOURCE_SUFFIX}", (num_edges,) + tuple(spec["shape"][1:]), dtype)
    return arrays, sources


def missing_node_array(where, name, have) -> KeyError:
    """The KeyError for a node array ``name`` that ``where`` (a store, a graph) lacks."""
    return KeyError(f"{where} has no node array {name!r}; it has {sorted(have) or 'none'}")


class NodeArrays:
    """Read side, mixed into :class:`~bgl.store.GraphStore`: ``self.ndata`` maps names to
    ``[num_nodes, ...]`` arrays in row order, ``self.ndata_source`` to a part's per-edge source copies."""

    ndata: dict[str, np.ndarray]
    ndata_source: dict[str, np.ndarray]

    def node_array(self, name: str) -> np.ndarray:
        """The node array ``name`` ([num_nodes, ...], row order); KeyError listing the names there are."""
        if name not in self.ndata:
            raise missing_node_array(f"graph store {self.path}", name, self.ndata)
        return self.ndata[name]

    def source_values(self, name: str) -> np.ndarray:
        """``[num_edges]``: node array ``name``'s value of each in-edge's source, in CSC order: a part's
        stored copy, or, for a whole store (its rows are the global ids), gathered here (``itemsize`` B
        per edge in memory).  KeyError listing the node arrays there are; ValueError for a part without
        a copy (partitioned before the store had the array)."""
        if name in self.ndata_source:
            return self.ndata_source[name]
        values = self.node_array(name)
        if self.node_offset != 0 or self.num_nodes != self.global_num_nodes:
            raise ValueError(f"part store {self.path} keeps node array {name!r} of its own nodes only, not its "
                             f"in-edges' sources' (ndata/{name}{SOURCE_SUFFIX}.npy, written by bgl partition)")
        return np.asarray(values)[np.asarray(self.indices)]


class NodeArrayWriter:
    """Write side, mixed into :class:`~bgl.store.StoreWriter` (uses its ``tmp`` dir and ``_meta``)."""

    tmp: Path
    _meta: dict[str, Any]

    def save_node_array(self, name: str, array, source=None) -> None:
        """Write node array ``name`` ([num_nodes, ...], row order) and, for a part, ``source``: its value
        at each in-edge's source ([num_edges, ...], CSC order, the same dtype)."""
        array = np.ascontiguousarray(array)
        written = name in getattr(self, "_node_sources", ())  # by create_node_source, in chunks
        spec = node_spec(name, array.shape, array.dtype, self._meta["num_nodes"], source is not None or written)
        (self.tmp / NDATA_DIR).mkdir(exist_ok=True)
        np.save(self.tmp / NDATA_DIR / f"{name}.npy", array, allow_pickle=False)
        if source is not None:
            source = np.asarray(source)
            if source.shape != (self._meta["num_edges"],) + array.shape[1:] or source.dtype != array.dtype:
                raise ValueError(f"node array {name!r}: source values must be {array.dtype} "
                                 f"[{self._meta['num_edges']}] (one per edge), got {source.dtype} {source.shape}")
            np.save(self.tmp / NDATA_DIR / f"{name}{SOURCE_SUFFIX}.npy", source, allow_pickle=False)
        self._meta.setdefault("ndata", {})[name] = spec

    def create_node_source(self, name: str, shape: tuple[int, ...], dtype) -> np.memmap:
        """A writable ``ndata/<name>.source.npy`` memmap ([num_edges, ...]), filled in chunks by the
        partition writer; call :meth:`save_node_array` for the node array itself too."""
        (self.tmp / NDATA_DIR).mkdir(exist_ok=True)
        self.__dict__.setdefault("_node_sources", set()).add(name)
        return np.lib.format.open_memmap(self.tmp / NDATA_DIR / f"{name}{SOURCE_SUFFIX}.npy", mode="w+",
                                         dtype=dtype, shape=tuple(shape))

    def save_node_arrays(self, ndata: Mapping[str, Any] | None, sources: Mapping[str, Any] | None = None) -> None:
        """:meth:`save_node_array` for each of ``ndata`` (with ``sources[name]`` where given)."""
        sources = sources or {}
        for name, values in (ndata or {}).items():
            self.save_node_array(name, values, sources.get(name))
