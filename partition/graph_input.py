"""The views of a graph store that every partitioner reads."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bgl.store import GraphStore

from . import _kernels


@dataclass(frozen=True)
class GraphInput:
    """CSC adjacency plus the training mask of a whole-graph store.

    ``indptr`` int64 [n+1] and ``indices`` int32/int64 [e] are the store's
    memmaps (paged in on demand, never copied); ``is_train`` float64 [n] is 1.0
    on training nodes (float so kernels add it straight into loads).
    """

    num_nodes: int
    num_edges: int
    indptr: np.ndarray
    indices: np.ndarray
    is_train: np.ndarray

    @classmethod
    def from_store(cls, store: GraphStore) -> "GraphInput":
        """View a whole-graph store: its memmapped CSC and a float64 [n] training mask."""
        n = store.num_nodes
        is_train = np.zeros(n, np.float64)
        if "train" in store.splits:
            is_train[np.asarray(store.splits["train"])] = 1.0
        return cls(n, store.num_edges, np.asarray(store.indptr), np.asarray(store.indices), is_train)

    @property
    def num_train(self) -> int:
        """Number of training nodes."""
        return int(self.is_train.sum())

    def out_edges(self) -> tuple[np.ndarray, np.ndarray]:
        """The transposed adjacency (CSR of out-neighbours): ``(out_ptr int64 [n+1], out_idx [e])``."""
        return _kernels.transpose(self.indptr, self.indices, self.num_nodes)
