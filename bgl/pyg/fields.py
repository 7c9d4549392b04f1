"""The fields of a PyG batch beyond its sampled structure: the input's own attributes and ``input_id``.

PyG's loaders hand back the input ``Data`` / ``HeteroData`` filtered to the sampled nodes and edges
(``torch_geometric.loader.utils.filter_data``): every node-level attribute gathered at ``n_id``, every
edge-level attribute at ``e_id``, every other (graph-level) attribute as it is, and ``input_id``, the
positions of the batch's seeds in the loader's input.  Training code relies on it
(``batch.train_mask[:batch.batch_size]``), so bgl's PyG loaders do the same.

What is node-level and what edge-level is PyG's own decision (``store.node_attrs()`` /
``store.edge_attrs()``: a tensor or array whose concatenation dimension has ``num_nodes`` /
``num_edges`` entries), taken once when the loader is built: per batch each attribute costs one
``index_select`` on the sampled ids, no Python loop over nodes or edges.  Attributes the pipeline
already delivers (``x`` from the feature cache, the chosen ``edge_attr``) are not gathered again.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
import torch

# Keys PyG rebuilds per batch rather than filtering (and ``num_nodes`` it resets to the batch's count).
_STRUCTURE = frozenset({"edge_index", "adj_t", "num_nodes", "n_id", "e_id", "input_id", "batch_size"})


@dataclass(frozen=True)
class StoreFields:
    """The attributes one PyG storage passes to its batches.

    Attributes
    ----------
    gathered : ((key, value, dim), ...) per-node or per-edge attributes, gathered along ``dim``
    kept : ((key, value), ...) graph-level attributes, handed to every batch as they are
    """

    gathered: tuple = ()
    kept: tuple = ()

    def take(self, index: Optional[torch.Tensor]) -> dict[str, Any]:
        """``{key: value rows at index}`` for the gathered attributes (none when ``index`` is None,
        e.g. no ``e_id``), then the kept ones; the rows land on ``index``'s device."""
        out: dict[str, Any] = {}
        if index is not None and self.gathered:
            cpu = index.cpu()
            for key, value, dim in self.gathered:
                if isinstance(value, np.ndarray):
                    rows = torch.from_numpy(np.take(value, cpu.numpy(), axis=dim))
                else:
                    rows = value.index_select(dim, cpu if value.device.type == "cpu" else index.to(value.device))
                out[key] = rows if rows.device == index.device else rows.to(index.device)
        out.update(self.kept)
        return out


def store_fields(data, store, level: str, skip=()) -> StoreFields:
    """The ``level`` ("node" or "edge") attributes of PyG storage ``store`` of ``data`` as a
    :class:`StoreFields` (nothing kept; see :func:`graph_fields`).

    Raises
    ------
    ValueError
        a per-node/per-edge attribute that is neither a tensor nor an array (a list of
        ``num_nodes`` entries, which PyG's own loader cannot gather either), naming it.
    """
    keys = store.node_attrs() if level == "node" else store.edge_attrs()
    gathered = []
    for key in keys:
        if key in skip or key in _STRUCTURE:
            continue
        value = store[key]
        if not isinstance(value, (torch.Tensor, np.ndarray)):
            raise ValueError(f"{level} attribute {key!r} is a {type(value).__name__}: bgl.pyg gathers tensor "
                             "and NumPy attributes per batch; make it a tensor or delete it from the data")
        gathered.append((key, value, int(data.__cat_dim__(key, value, store))))
    return StoreFields(tuple(gathered))


def graph_fields(store, per_item: set) -> StoreFields:
    """The attributes of ``store`` that are neither per node nor per edge, kept as they are (PyG
    copies the input object, so they come through untouched)."""
    return StoreFields(kept=tuple((key, store[key]) for key in store.keys()
                                  if key not in per_item and key not in _STRUCTURE))


def data_fields(data, skip_node=("x",), skip_edge=()) -> tuple[StoreFields, StoreFields]:
    """(node fields incl. graph-level ones, edge fields) of a homogeneous PyG ``Data``."""
    store = data._store if hasattr(data, "_store") else data
    node = store_fields(data, store, "node", skip_node)
    edge = store_fields(data, store, "edge", skip_edge)
    per_item = set(store.node_attrs()) | set(store.edge_attrs())
    return StoreFields(node.gathered, graph_fields(store, per_item).kept), edge


class SeedPositions:
    """PyG's ``input_id`` of a batch from its seed ids.

    PyG numbers a loader's input: ids given as a tensor get their positions in it; all nodes
    (``input_nodes=None``) and a boolean mask get the node ids themselves (``input_id = nodes``
    in ``get_input_nodes``); a user's ``input_id=`` replaces the numbering, indexed by position.
    bgl's loader reorders its seeds (shuffle, proximity order), so the positions are found again
    per batch: one ``searchsorted`` in the seeds sorted once (8 bytes per seed, no table over the
    graph).  A repeated seed id is numbered by its first occurrence.

    Parameters
    ----------
    ids : int64 tensor [S], the loader's seeds in input order
    by_id : True for an input of all nodes or a mask
    given : optional tensor [S], the user's ``input_id``
    """

    def __init__(self, ids: torch.Tensor, by_id: bool, given=None):
        self.given = None
        if given is not None:
            self.given = torch.as_tensor(given)
            if self.given.dim() != 1 or self.given.shape[0] != ids.shape[0]:
                raise ValueError(f"input_id has shape {list(self.given.shape)}, expected "
                                 f"[{ids.shape[0]}] (one entry per input node)")
        self.by_id = by_id and self.given is None
        self.sorted = self.order = None
        if not self.by_id:
            arr = ids.numpy().astype(np.int64, copy=False)
            if arr.size > 1 and bool(np.any(arr[1:] < arr[:-1])):
                self.order = np.argsort(arr, kind="stable")
                arr = arr[self.order]
            self.sorted = arr

    def __call__(self, seeds: torch.Tensor) -> torch.Tensor:
        """int64 [B] ``input_id`` of the batch whose seeds (input-type-local ids) are ``seeds``."""
        if self.by_id:
            return seeds
        pos = np.searchsorted(self.sorted, seeds.cpu().numpy())
        if self.order is not None:
            pos = self.order[pos]
        pos = torch.from_numpy(pos)
        out = pos if self.given is None else self.given[pos]
        return out.to(seeds.device)
