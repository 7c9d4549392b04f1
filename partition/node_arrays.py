"""A partition's node array over its new ids, read where it lies: each part store keeps its own nodes' rows.

A loader over graph servers sometimes needs node values on its own side, not only on the servers: PyG's
temporal loaders take a seed's own node time when no ``input_time`` is given, and redraw a negative
newer than its pair's time (:mod:`bgl.pyg.temporal`).  Part ``k``'s store holds
``ndata/<name>.npy`` for new ids ``[bounds[k], bounds[k+1])`` (``bgl partition``, the distributed
writer), so a gather by new id is one ``searchsorted`` over the part bounds and one read per part:
nothing is copied up front, and a sample-stage process gets the path and name (a few bytes), not the
values, when the view is pickled.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import numpy as np

from .format import open_partition


class PartitionNodeArray:
    """Node array ``name`` of the partition at ``path``, indexed by new (server) id.

    ``view[ids]`` (int array of new ids) -> the values, shaped like ``ids``; :meth:`argmin` -> the new id
    of the smallest value (read part by part).  KeyError when a part store lacks the array, listing the
    ones it has.
    """

    def __init__(self, path: str | os.PathLike, name: str):
        self.path, self.name = Path(path), str(name)
        self._open()

    def _open(self) -> None:
        book = open_partition(self.path)
        self.bounds = book.bounds
        self._parts = [book.part_store(k).node_array(self.name) for k in range(book.num_parts)]
        self.dtype = self._parts[0].dtype if self._parts else np.dtype(np.int64)

    def __getstate__(self) -> dict:
        return {"path": self.path, "name": self.name}

    def __setstate__(self, state: dict) -> None:
        self.path, self.name = state["path"], state["name"]
        self._open()

    def __len__(self) -> int:
        return int(self.bounds[-1])

    @property
    def shape(self) -> tuple:
        return (len(self),) + tuple(self._parts[0].shape[1:]) if self._parts else (0,)

    def __getitem__(self, ids) -> np.ndarray:
        ids = np.asarray(ids, np.int64)
        n = len(self)
        if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= n):
            bad = ids[(ids < 0) | (ids >= n)].flat[0]
            raise IndexError(f"node id {int(bad)} outside [0, {n}) of partition {self.path}")
        flat = ids.reshape(-1)
        owner = np.searchsorted(self.bounds, flat, side="right") - 1
        out = np.empty((flat.shape[0],) + self.shape[1:], self.dtype)
        for k in np.unique(owner):
            at = np.flatnonzero(owner == k)
            out[at] = self._parts[k][flat[at] - self.bounds[k]]
        return out.reshape(ids.shape + self.shape[1:])

    def argmin(self, axis: Optional[int] = None, out=None, **_) -> int:
        """The new id holding the smallest value (the first such), as ``np.argmin`` of the whole array."""
        if axis is not None or out is not None:
            raise ValueError("PartitionNodeArray.argmin takes no axis or out")
        best, where = None, -1
        for k, part in enumerate(self._parts):
            if part.shape[0] == 0:
                continue
            i = int(np.argmin(part))
            if best is None or part[i] < best:
                best, where = part[i], int(self.bounds[k]) + i
        return where
