"""What every homogeneous ``bgl.pyg`` loader shares: PyG ``Data`` input as the loader's graph, its own
attributes per batch, seed-id and input-id checks, and the loader's lifetime (close, state, stats).

Split from :mod:`bgl.pyg.loader` so the temporal loaders (:mod:`bgl.pyg.temporal_loader`),
which ``bgl.pyg.NeighborLoader`` / ``LinkNeighborLoader`` hand a ``time_attr=`` to, build on it without
importing the loaders that route to them.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import numpy as np
import torch

from ..threads import Closes
from ..loader.arguments import owned_ids
from ..loader.graph_arrays import GraphArrays
from ..loader.pipeline.epoch_iterator import TimedEpochs
from ..loader.state.position import DelegatedState


def _pyg_data_class():
    try:
        from torch_geometric.data import Data
    except ImportError:
        return None
    return Data


def is_pyg_data(obj: Any) -> bool:
    """True for a homogeneous ``torch_geometric.data.Data`` (duck-typed: ``edge_index`` + ``num_nodes``)."""
    return hasattr(obj, "edge_index") and hasattr(obj, "num_nodes") and not hasattr(obj, "node_types") \
        or type(obj).__name__ == "Data" and type(obj).__module__.startswith("torch_geometric")


def data_arrays(data) -> GraphArrays:
    """A PyG ``Data`` (``edge_index`` source -> target, ``x``, ``y``) as the loader's graph, edges as given.

    ``x`` and integer ``y`` are the caller's own storage (read-only views); only the
    CSC is built, over targets (the in-neighbours of each node, PyG's message direction).
    """
    n = int(data.num_nodes)
    ei = data.edge_index
    if ei is None or ei.dim() != 2 or ei.shape[0] != 2:
        raise ValueError(f"data.edge_index must be an int tensor [2, E], got {None if ei is None else list(ei.shape)}")
    src, dst = ei[0].cpu().numpy(), ei[1].cpu().numpy()
    if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= n):
        raise ValueError(f"data.edge_index holds node ids outside [0, {n})")
    order = np.argsort(dst, kind="stable")  # CSC over targets: in-neighbours of each node
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(dst, minlength=n), out=indptr[1:])
    indices = src[order].astype(np.int64, copy=False)
    edata = {}
    keys = data.edge_attrs() if callable(getattr(data, "edge_attrs", None)) else ["edge_attr", "edge_weight"]
    for key in keys:
        value = getattr(data, key, None)
        if key != "edge_index" and torch.is_tensor(value) and value.dim() >= 1 and value.shape[0] == src.size:
            edata[key] = value.detach().cpu()
    feat = label = None
    x = getattr(data, "x", None)
    if x is not None:
        feat = x.detach().cpu()
        if feat.dim() != 2:
            raise ValueError(f"data.x must be [num_nodes, F], got {list(feat.shape)}")
        if not feat.is_contiguous():
            feat = feat.contiguous()
    y = getattr(data, "y", None)
    if y is not None and y.dim() == 1 and not torch.is_floating_point(y):
        label = y.detach().cpu()
        if label.dtype != torch.int64 or not label.is_contiguous():
            label = label.to(torch.int64).contiguous()
    num_classes = int(label.max()) + 1 if label is not None and label.numel() else 0
    return GraphArrays(torch.from_numpy(indptr), torch.from_numpy(indices), feat, label,
                       num_classes=num_classes, name="pyg-data", edge_ids=torch.from_numpy(order), edata=edata)


def pyg_graph(data):
    """The loader's graph for PyG input ``data``: a ``Data``'s arrays, else ``data`` as given."""
    return data_arrays(data) if is_pyg_data(data) else data


def input_fields(data, edge_attr: Optional[str]):
    """(node fields, edge fields) a batch takes from a PyG ``Data`` input (:mod:`~bgl.pyg.fields`),
    or None for a store or servers; ``x`` and ``edge_attr`` come from the pipeline when it delivers them."""
    if not is_pyg_data(data) or not callable(getattr(data, "node_attrs", None)):
        return None  # (a duck-typed Data without PyG's attribute kinds carries x, y and edge_attr only)
    from .fields import data_fields

    return data_fields(data, skip_node=("x",), skip_edge=() if edge_attr is None else ("edge_attr",))


class PygLoaderBase(TimedEpochs, DelegatedState, Closes):
    """The parts of a homogeneous PyG loader over ``self._loader`` (a ``bgl.DataLoader``) that do not
    depend on its seed kind; subclasses set ``self.options``, ``self._fields`` and ``self._loader``."""

    def _num_nodes(self, graph) -> Optional[int]:
        """The node count of a local graph (None for servers or a partition); a typed store is refused."""
        if isinstance(graph, (str, Path)) and (Path(graph) / "meta.json").is_file():
            from ..store import GraphStore

            graph = GraphStore(graph)
        if getattr(graph, "is_typed", False):
            raise ValueError(f"bgl.pyg.{type(self).__name__} takes a typed graph as a PyG HeteroData, not a "
                             "typed store; pass the HeteroData, or give the store to bgl.DataLoader with "
                             "{node_type: ids} seeds")
        if hasattr(graph, "num_nodes") and not callable(graph.num_nodes):
            return int(graph.num_nodes)
        return None

    @staticmethod
    def _input_ids(input_nodes, num_nodes: Optional[int]) -> tuple[torch.Tensor, bool]:
        """(seed ids, whether PyG numbers them by node id: all nodes or a mask)."""
        if input_nodes is None:
            if num_nodes is None:
                raise ValueError("input_nodes=None (all nodes) needs a Data or store input; pass the seed ids")
            return torch.arange(num_nodes), True
        if isinstance(input_nodes, tuple):
            raise ValueError("heterogeneous input_nodes (node_type, ids) need a HeteroData input; "
                             "give a Data, a store or servers plain ids or a mask")
        ids = owned_ids(input_nodes)  # a copy: seeds are small, memmaps are read-only
        if ids.dtype == torch.bool:
            if num_nodes is not None and ids.shape[0] != num_nodes:
                raise ValueError(f"input_nodes mask has {ids.shape[0]} entries for {num_nodes} nodes")
            return ids.nonzero().flatten(), True
        return ids, False

    def _user_input_id(self, n: int) -> Optional[torch.Tensor]:
        """The user's ``input_id=`` (PyG's numbering of the pairs), checked: one entry per pair."""
        given = self.options.input_id
        if given is None:
            return None
        given = torch.as_tensor(given)
        if given.dim() != 1 or given.shape[0] != n:
            raise ValueError(f"input_id has shape {list(given.shape)}, expected [{n}] (one entry per pair "
                             "of edge_label_index)")
        return given

    def _add_data_fields(self, fields: dict) -> None:
        """The input ``Data``'s own attributes for the batch's nodes (``n_id``) and edges (``e_id``),
        and its graph-level ones, as PyG's ``filter_data`` gives them (nothing for a store or servers).
        The batch's own fields win, as in PyG, which sets them after filtering (a ``Data`` holding
        ``edge_label_index`` from ``RandomLinkSplit`` keeps the batch's pairs)."""
        if self._fields is not None:
            node, edge = self._fields
            for key, value in node.take(fields["n_id"]).items():
                fields.setdefault(key, value)
            for key, value in edge.take(fields.get("e_id")).items():
                fields.setdefault(key, value)

    def __len__(self) -> int:
        return len(self._loader)

    def cache_stats(self) -> Optional[dict]:
        """The feature cache's counters (see :meth:`bgl.DataLoader.cache_stats`)."""
        return self._loader.cache_stats()

    def close(self) -> None:
        """Stop the pipeline (stage processes, server sockets); the loader may be iterated again."""
        loader = getattr(self, "_loader", None)
        if loader is not None:
            loader.close()
