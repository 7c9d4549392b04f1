"""Per-type feature storage: a dict of tensors whose first dim must equal the type's count.

A frame holds references only (no copy of a tensor set into it); ``local_scope`` swaps its
column dict for a shallow copy and puts the original back, which is DGL's semantics: a new
or replaced column inside the scope is gone after it, an in-place edit of a tensor stays.
"""
from __future__ import annotations

from collections.abc import MutableMapping
from typing import Iterator

import torch

from bgl.dgl.base import DGLError, is_all


class Frame(MutableMapping):
    """Columns of one node type (``kind="nodes"``) or one edge type (``kind="edges"``)."""

    def __init__(self, num_rows: int, kind: str = "nodes", columns: dict | None = None):
        self.num_rows, self.kind = int(num_rows), kind
        self._columns: dict[str, torch.Tensor] = {}
        for key, value in (columns or {}).items():
            self[key] = value

    def __getitem__(self, key: str) -> torch.Tensor:
        return self._columns[key]

    def __setitem__(self, key: str, value) -> None:
        if not isinstance(value, torch.Tensor):
            raise DGLError(f"Feature {key!r} must be a tensor, got {type(value).__name__}.")
        if value.dim() == 0 or value.shape[0] != self.num_rows:
            got = "a scalar" if value.dim() == 0 else value.shape[0]
            raise DGLError(f"Expect number of features to match number of {self.kind} (len(u)). "
                           f"Got {got} and {self.num_rows} instead.")
        self._columns[key] = value

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
        old = self._columns.get(key)
        if old is None:
            old = torch.zeros((self.num_rows, *value.shape[1:]), dtype=value.dtype, device=value.device)
        self._columns[key] = old.index_copy(0, ids, value.to(old.dtype))

    def snapshot(self) -> dict:
        return dict(self._columns)

    def restore(self, columns: dict) -> None:
        self._columns = columns

    def to(self, device, **kwargs) -> "Frame":
        return Frame(self.num_rows, self.kind, {k: v.to(device, **kwargs) for k, v in self._columns.items()})

    def subset(self, ids: torch.Tensor) -> "Frame":
        """A frame of rows ``ids`` (a gather per column, as DGL's subgraph features)."""
        ids = ids.long()
        return Frame(int(ids.shape[0]), self.kind, {k: v[ids.to(v.device)] for k, v in self._columns.items()})

    def __repr__(self) -> str:
        return f"Frame({self.num_rows} {self.kind}, columns={list(self._columns)})"
