"""Miss sources: where a cache gets the rows it does not hold.

Any ``f(unique_missing_ids: int64 tensor [k]) -> [k, dim]`` works; a
sampling client's ``fetch_features`` is one.  :class:`ArrayMissSource`
gathers from an in-memory or memory-mapped feature array (a graph store's
``feat``), staging rows in pinned memory so the copy to a GPU cache is
asynchronous DMA rather than a pageable copy.
"""
from __future__ import annotations

import numpy as np
import torch

from .base import resolve_device


class ArrayMissSource:
    """Gather rows of a ``[num_nodes, dim]`` array (ndarray / memmap / CPU tensor) for a cache.

    Parameters
    ----------
    feat : [num_nodes, dim] features, indexed by the ids the cache asks for
        (minus ``node_offset``, for a partition part's store).
    device : device of the returned rows (the cache's).
    pin : stage rows in a reusable pinned buffer when ``device`` is CUDA.
    """

    def __init__(self, feat, device: str | torch.device = "cpu", node_offset: int = 0, pin: bool = True):
        self.feat = feat
        self.node_offset = int(node_offset)
        self.device = resolve_device(device)
        self.pin = pin and self.device.type == "cuda"
        self._staging: torch.Tensor | None = None
        self._copy_done = None  # torch.cuda.Event of the last staging -> device copy
        self.calls = 0
        self.rows = 0

    @property
    def dtype(self) -> torch.dtype:
        """torch dtype of the rows this source returns."""
        if isinstance(self.feat, torch.Tensor):
            return self.feat.dtype
        return torch.from_numpy(np.empty(0, dtype=self.feat.dtype)).dtype

    def __call__(self, ids: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        self.rows += int(ids.numel())
        idx = ids.cpu().numpy()
        if self.node_offset:
            idx = idx - self.node_offset
        if isinstance(self.feat, torch.Tensor):
            rows = self.feat.index_select(0, torch.from_numpy(idx))
        else:
            rows = torch.from_numpy(np.asarray(self.feat[idx]))
        if self.device.type != "cuda":
            return rows
        if self.pin:
            if self._copy_done is not None:
                # the previous call's DMA may still read the staging buffer we are about to refill
                self._copy_done.synchronize()
            k = rows.shape[0]
            if (self._staging is None or self._staging.shape[0] < k or self._staging.dtype != rows.dtype
                    or tuple(self._staging.shape[1:]) != tuple(rows.shape[1:])):
                self._staging = torch.empty((max(k, 1024),) + tuple(rows.shape[1:]), dtype=rows.dtype,
                                            pin_memory=True)
            buf = self._staging[:k]
            buf.copy_(rows)
            # asynchronous: later work on the same stream (the cache's inserts) is ordered after it
            out = buf.to(self.device, non_blocking=True)
            self._copy_done = torch.cuda.Event()
            self._copy_done.record(torch.cuda.current_stream(self.device))
            return out
        return rows.to(self.device)
