"""A DGLGraph's own arrays as the loader's graph: no temporary store, no copies.

``bgl.DataLoader(g, ...)`` on a DGLGraph used to write ``g`` to a temporary
store and memory-map it back: the features then lived twice in RAM (the
user's ``g.ndata['feat']`` and the store's page-cache pages mapped by the
fetch stage), 1.6x DGL's peak RSS on a 34k-node, 8,415-dim graph.  The
DGLGraph already holds everything the sampler and the fetch stage read, so
:class:`GraphArrays` wraps its arrays with :class:`~bgl.store.GraphStore`'s
read API (``indptr``, ``indices``, ``feat``, ``label``, ``in_degrees()``):

* CSC from ``g.adj_tensors('csc')``: DGL builds that format once and keeps it
  in the graph, exactly as its own ``NeighborSampler`` does, and hands out
  views of it;
* ``ndata[feat_key]`` / ``ndata[label_key]``: numpy views of the same
  storage (``Tensor.numpy()``), marked read-only so bgl can never write to them.

The CSC's edge-id array comes along (a view too), so sampled blocks carry the
DGLGraph's own edge ids in ``edata[dgl.EID]``, as DGL's loader gives them.

Edge data (``g.edata``) is held as the user's tensors, in DGL's edge-id
order; ``edata[name]`` gives it in CSC order (what the sampling kernels and
:class:`~bgl.store.GraphStore` use), permuted through the edge-id view on
first use of that name and kept (``itemsize * width`` B/edge per name used;
none when the CSC's edge ids are already ``0..E-1``).

Cost per node / per edge: nothing beyond the DGLGraph's own arrays, except
labels that are not int64 [n] (converted: 8 B/node), an int32 graph's
``indptr`` (widened: 8 B/node) and edge arrays used in a permuted CSC (above).  Stage processes (``pipeline="processes"``)
cannot map a private allocation, so :meth:`GraphArrays.share_memory` copies
each array once into shared memory; the user's tensors are never moved
(``Tensor.share_memory_()`` would swap their storage under any numpy view
the user holds).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

import numpy as np
import torch

from ..schema import EdgeArrays

ARRAY_NAMES = ("indptr", "indices", "feat", "label", "edge_ids")


class CscEdgeData(Mapping):
    """``name -> [num_edges, ...]`` numpy arrays in CSC order over tensors in the graph's edge-id order.

    ``edge_ids[p]`` is the graph's id of the edge at CSC position ``p``; a name's
    array is permuted once, on first access, and kept (read-only).
    """

    def __init__(self, tensors: dict[str, torch.Tensor], edge_ids: Optional[np.ndarray], derivations=None):
        self._tensors = tensors
        self._edge_ids = edge_ids
        self._derivations = derivations  # the graph's GraphDerivations: permuted once per graph, not per loader
        self._identity: Optional[bool] = None
        self._csc: dict[str, np.ndarray] = {}

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._csc and self._derivations is not None and self._edge_ids is not None:
            self._csc[name] = self._derivations.csc_order(name, self._tensors[name], self._edge_ids)
        if name not in self._csc:
            arr = self._tensors[name].numpy()
            if self._edge_ids is not None and not self._is_identity():
                arr = np.take(arr, self._edge_ids, axis=0)
            arr.flags.writeable = False
            self._csc[name] = arr
        return self._csc[name]

    def _is_identity(self) -> bool:
        if self._identity is None:
            ids = self._edge_ids
            self._identity = bool(np.array_equal(ids, np.arange(ids.shape[0], dtype=ids.dtype)))
        return self._identity

    def dtype(self, name: str) -> np.dtype:
        """The NumPy dtype of array ``name``, without permuting it."""
        return self._tensors[name].numpy().dtype

    def __iter__(self):
        return iter(self._tensors)

    def __len__(self) -> int:
        return len(self._tensors)


class GraphArrays(EdgeArrays):
    """A whole homogeneous graph held as in-memory CPU tensors, read like a :class:`~bgl.store.GraphStore`.

    Parameters
    ----------
    indptr : int64 tensor [num_nodes + 1]; indices : int32/int64 tensor [num_edges]
        In-edge CSC: row ``v`` lists the source ids of the edges into ``v``.
    feat : float tensor [num_nodes, dim] or None; label : int64 tensor [num_nodes] or None
    edge_ids : tensor [num_edges] or None: the graph's own id of the edge at each CSC position
        (a DGLGraph's edge ids are in insertion order, not CSC order); blocks sampled from
        these arrays carry those ids
    num_classes : label classes (0 = none)
    name : shown in messages where a store would show its path
    edata : {name: tensor [num_edges, ...]} per-edge data in the graph's edge-id order (the
        order of ``edge_ids``' values; CSC order when ``edge_ids`` is None)
    derivations : the graph's :class:`~bgl.loader.graph_derivations.GraphDerivations`, so that
        weight checks and CSC-ordered edge arrays are made once per graph, not once per loader

    The tensors are used as they are (numpy views, read-only); nothing is copied.
    Pickling (a spawn process) is allowed only after :meth:`share_memory`, so
    torch's pickler never moves a caller's tensor into shared memory behind its back.
    """

    node_offset = 0

    def __init__(self, indptr: torch.Tensor, indices: torch.Tensor, feat: Optional[torch.Tensor] = None,
                 label: Optional[torch.Tensor] = None, num_classes: int = 0, name: str = "arrays",
                 edge_ids: Optional[torch.Tensor] = None, edata: Optional[dict[str, torch.Tensor]] = None,
                 derivations=None):
        self._tensors = {"indptr": indptr, "indices": indices, "feat": feat, "label": label, "edge_ids": edge_ids}
        self._edge_tensors = dict(edata or {})
        for key, t in self._edge_tensors.items():
            if t.shape[0] != indices.shape[0]:
                raise ValueError(f"edge data {key!r} has {t.shape[0]} rows for {indices.shape[0]} edges")
        self.num_classes = int(num_classes)
        self.path = name
        self._derivations = derivations
        self._make_views()

    def _make_views(self) -> None:
        for key, t in self._tensors.items():
            arr = None
            if t is not None:
                arr = t.numpy()
                arr.flags.writeable = False  # a view's flag: the caller's tensor stays writable
            setattr(self, key, arr)
        self.edata = CscEdgeData(self._edge_tensors, self.edge_ids, self._derivations)

    # ------------------------------------------------------------ GraphStore's read API
    @property
    def num_nodes(self) -> int:
        return int(self.indptr.shape[0]) - 1

    @property
    def global_num_nodes(self) -> int:
        return self.num_nodes

    @property
    def num_edges(self) -> int:
        return int(self.indices.shape[0])

    @property
    def feat_dim(self) -> int:
        return 0 if self.feat is None else int(self.feat.shape[1])

    def in_degrees(self) -> np.ndarray:
        """In-degree of every node, int64 [num_nodes] (one pass over indptr)."""
        return np.diff(self.indptr)

    def raw_edge_array(self, name: str) -> np.ndarray:
        """Edge array ``name`` in the graph's own edge-id order (as the caller gave it, no copy)."""
        self.edge_array(name)  # KeyError naming the arrays there are
        return self._edge_tensors[name].numpy()

    def check_raw_weights(self, name: str) -> None:
        """Check edge array ``name`` as sampling weights (finite, >= 0; a bad one named by the graph's
        own edge id); once per version of the tensor when the graph keeps its derivations."""
        from ..sampler.ops import check_weights

        self.edge_array(name)  # KeyError naming the arrays there are
        if self._derivations is None:
            check_weights(self.raw_edge_array(name), self.num_edges, name)
        else:
            self._derivations.check_weights(name, self._edge_tensors[name], self.num_edges)

    def checked_weights(self, name: str) -> np.ndarray:
        """Edge array ``name`` as the weighted kernels take it, in CSC order, checked
        (:class:`bgl.sampler.ops.EdgeWeights` asks; the check is :meth:`check_raw_weights`)."""
        from ..sampler.ops import weights_form

        self.check_raw_weights(name)
        return weights_form(self.edata[name], self.num_edges, name)

    def tensor(self, name: str) -> Optional[torch.Tensor]:
        """The tensor behind array ``name`` (one of :data:`ARRAY_NAMES`)."""
        return self._tensors[name]

    # ------------------------------------------------------------ processes
    @property
    def is_shared(self) -> bool:
        """True when every array lives in shared memory (picklable into stage processes)."""
        tensors = list(self._tensors.values()) + list(self._edge_tensors.values())
        return all(t is None or t.is_shared() for t in tensors)

    def share_memory(self) -> "GraphArrays":
        """A GraphArrays over shared-memory copies of these arrays (one copy each); ``self`` is unchanged."""
        if self.is_shared:
            return self
        def shared(t):
            return None if t is None else torch.empty(t.shape, dtype=t.dtype).share_memory_().copy_(t)

        copies = {key: shared(t) for key, t in self._tensors.items()}
        edata = {key: shared(t) for key, t in self._edge_tensors.items()}
        return GraphArrays(**copies, num_classes=self.num_classes, name=self.path, edata=edata)

    def __getstate__(self) -> dict:
        if not self.is_shared:
            raise TypeError("GraphArrays over a caller's tensors cannot be pickled (torch would move them "
                            "into shared memory in place); use share_memory() first")
        return {"tensors": self._tensors, "num_classes": self.num_classes, "path": self.path,
                "edata": self._edge_tensors}

    def __setstate__(self, state: dict) -> None:
        self._tensors, self.num_classes, self.path = state["tensors"], state["num_classes"], state["path"]
        self._edge_tensors = state["edata"]
        self._derivations = None  # shared-memory copies: this process checks and permutes its own
        self._make_views()

    def __deepcopy__(self, memo) -> "GraphArrays":
        return self  # read-only: a stage copied for profiling shares the arrays

    def __repr__(self) -> str:
        return f"GraphArrays({self.path!r}, nodes={self.num_nodes}, edges={self.num_edges}, feat_dim={self.feat_dim})"


def _cpu(t: torch.Tensor) -> torch.Tensor:
    return t.detach().cpu()


def dglgraph_arrays(g: Any, feat_key: Optional[str], label_key: Optional[str]) -> GraphArrays:
    """The arrays of a homogeneous DGLGraph as a :class:`GraphArrays`, sharing its memory: what the
    edge's graph reader makes of it (:meth:`bgl.loader.batch_frontend.GraphReader.arrays`; real DGL's:
    :func:`bgl.dgl.real_dgl.graph_reader.dglgraph_arrays`), so the core calls no DGL API to read one."""
    from .batch_frontend import graph_reader

    return graph_reader(g).arrays(g, feat_key, label_key)


def int64_labels(given: torch.Tensor, key: str, derivations) -> tuple[torch.Tensor, int]:
    """``g.ndata[key]`` as int64 [num_nodes] labels and the class count (``max + 1``); the conversion
    (when not int64) and the count, each a pass over the nodes, made once per version of the tensor
    when the graph keeps its ``derivations``."""
    label = _cpu(given)
    if label.dim() != 1:
        raise ValueError(f"g.ndata[{key!r}] must be 1-D [num_nodes], got shape {tuple(label.shape)}")

    def widened():
        return label.to(torch.int64).contiguous()

    if label.dtype != torch.int64 or not label.is_contiguous():
        label = widened() if derivations is None else derivations.derived("label", key, given, None, widened)

    def classes():
        return int(label.max()) + 1 if label.numel() else 0

    return label, classes() if derivations is None else derivations.derived("classes", key, given, None, classes)
