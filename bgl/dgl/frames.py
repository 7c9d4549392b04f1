"""Per-type feature storage: a dict of tensors whose first dim must equal the type's count.

A frame holds references only (no copy of a tensor set into it); ``local_scope`` swaps its
column dict for a shallow copy and puts the original back, which is DGL's semantics: a new
or replaced column inside the scope is gone after it, an in-place edit of a tensor stays.

A column may also be rows of another tensor read when first used (:class:`RowsOnRead`, DGL's
lazy ``Column``): a loader's batch gets every field of the graph it samples this way, so a field
the model never reads (or one the script indexes itself, as layer-wise inference does with
``h[input_nodes]``) costs no gather and no batch-sized array in flight.
"""
from __future__ import annotations

from collections.abc import MutableMapping
from typing import Iterator

import torch

from bgl.dgl.base import DGLError, is_all


class RowsOnRead:
    """Rows ``ids`` of ``storage`` on ``device``, gathered at the first read of the column."""

    __slots__ = ("storage", "ids", "device")

    def __init__(self, storage: torch.Tensor, ids: torch.Tensor, device):
        self.storage, self.ids, self.device = storage, ids, device

    def read(self) -> torch.Tensor:
        return self.storage[self.ids.to(self.storage.device).long()].to(self.device)


class LazyFeature:
    """DGL's ``dgl.LazyFeature``: a placeholder column a user's sampler puts into a subgraph's or block's
    ``ndata`` / ``edata`` / ``srcdata`` / ``dstdata`` (``dgl.dataloading.set_src_lazy_features`` and friends)
    for the loader to fill: ``dgl.dataloading.DataLoader`` replaces it with the loader graph's field ``name``
    (the column's own key when None) at ids ``id_`` (the frame's ``dgl.NID`` / ``dgl.EID`` when None), read on
    first use (:func:`bgl.dgl.own_sampler.fill_lazy_features`).  Until then reading the column gives this
    object, as in DGL."""

    __slots__ = ("name", "id_")

    def __init__(self, name=None, id_=None):
        self.name, self.id_ = name, id_

    def to(self, *args, **kwargs) -> "LazyFeature":
        """No-op (a frame moved to a device keeps its placeholders)."""
        return self

    @property
    def data(self) -> "LazyFeature":
        return self

    def pin_memory_(self):
        """No-op, as DGL's."""

    def unpin_memory_(self):
        """No-op, as DGL's."""

    def record_stream(self, stream):
        """No-op, as DGL's."""

    def __repr__(self) -> str:
        return f"LazyFeature(name={self.name!r})"


class Frame(MutableMapping):
    """Columns of one node type (``kind="nodes"``) or one edge type (``kind="edges"``)."""

    def __init__(self, num_rows: int, kind: str = "nodes", columns: dict | None = None):
        self.num_rows, self.kind = int(num_rows), kind
        self._columns: dict[str, torch.Tensor] = {}
        for key, value in (columns or {}).items():
            self[key] = value

    def __getitem__(self, key: str) -> torch.Tensor:
        value = self._columns[key]
        if type(value) is RowsOnRead:  # read once, then kept as a plain column
            value = self._columns[key] = value.read()
        return value

    def __setitem__(self, key: str, value) -> None:
        if isinstance(value, LazyFeature):  # a placeholder the loader fills (no rows to check yet, as DGL)
            self._columns[key] = value
            return
        if not isinstance(value, torch.Tensor):
            raise DGLError(f"Feature {key!r} must be a tensor, got {type(value).__name__}.")
        if value.dim() == 0 or value.shape[0] != self.num_rows:
            got = "a scalar" if value.dim() == 0 else value.shape[0]
            raise DGLError(f"Expect number of features to match number of {self.kind} (len(u)). "
                           f"Got {got} and {self.num_rows} instead.")
        self._columns[key] = value

    def set_rows_on_read(self, key: str, storage: torch.Tensor, ids: torch.Tensor) -> None:
        """Column ``key`` = ``storage[ids]`` on ``ids``' device, gathered when first read (module doc)."""
        if ids.shape[0] != self.num_rows:
            raise DGLError(f"Expect number of features to match number of {self.kind} (len(u)). "
                           f"Got {ids.shape[0]} and {self.num_rows} instead.")
        self._columns[key] = RowsOnRead(storage, ids, ids.device)

    def __delitem__(self, key: str) -> None:
        del self._columns[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._columns)

    def __len__(self) -> int:
        return len(self._columns)

    def set_rows(self, key: str, ids: torch.Tensor, value: torch.Tensor) -> None:
        """Write ``value`` into rows ``ids`` of column ``key`` out of place (autograd keeps both);
        a new column starts as zeros, as DGL's frame initializer gives."""
        if is_all(ids):
            self[key] = value
            return
        ids = torch.as_tensor(ids, device=value.device).long().view(-1)
        if value.shape[0] != ids.shape[0]:
            raise DGLError(f"Expect number of features to match number of {self.kind} (len(u)). "
                           f"Got {value.shape[0]} and {ids.shape[0]} instead.")
        old = self[key] if key in self._columns else None  # a column not read yet is read first
        if old is None:
            old = torch.zeros((self.num_rows, *value.shape[1:]), dtype=value.dtype, device=value.device)
        self._columns[key] = old.index_copy(0, ids, value.to(old.dtype))

    def shared_copy(self) -> "Frame":
        """A new frame of the same columns (the same tensors; a column not read yet stays unread): a graph
        made from another keeps its fields without reading or copying them."""
        out = Frame(self.num_rows, self.kind)
        out._columns = dict(self._columns)
        return out

    def snapshot(self) -> dict:
        return dict(self._columns)

    def restore(self, columns: dict) -> None:
        self._columns = columns

    def to(self, device, **kwargs) -> "Frame":
        """The frame on ``device``; a column not read yet stays unread (it will be read onto ``device``)."""
        out = Frame(self.num_rows, self.kind)
        for k, v in self._columns.items():
            out._columns[k] = RowsOnRead(v.storage, v.ids, torch.device(device)) if type(v) is RowsOnRead \
                else v.to(device, **kwargs)
        return out

    def subset(self, ids: torch.Tensor) -> "Frame":
        """A frame of rows ``ids`` (a gather per column, as DGL's subgraph features); a column not read yet
        stays unread, its rows composed (``storage[ids_read[ids]]`` when read), as DGL's lazy columns do."""
        ids = ids.long()
        out = Frame(int(ids.shape[0]), self.kind)
        for k, v in self._columns.items():
            out._columns[k] = RowsOnRead(v.storage, v.ids[ids.to(v.ids.device)], v.device) \
                if type(v) is RowsOnRead else v if type(v) is LazyFeature else v[ids.to(v.device)]
        return out

    def rows_on_read(self, ids: torch.Tensor) -> "Frame":
        """A frame of rows ``ids`` whose every column is gathered at its first read (DGL's lazy subframe:
        what ``to_block`` gives each block, so a layer's features cost nothing until the model reads them)."""
        ids = ids.long()
        out = Frame(int(ids.shape[0]), self.kind)
        for k, v in self._columns.items():
            if type(v) is RowsOnRead:
                out._columns[k] = RowsOnRead(v.storage, v.ids[ids.to(v.ids.device)], v.device)
            elif type(v) is LazyFeature:
                out._columns[k] = v
            else:
                out._columns[k] = RowsOnRead(v, ids.to(v.device), v.device)
        return out

    def __repr__(self) -> str:
        return f"Frame({self.num_rows} {self.kind}, columns={list(self._columns)})"
