"""``bgl.pyg.LinkNeighborLoader``: PyG's ``torch_geometric.loader.LinkNeighborLoader``, backed by bgl.

Swap the import and a PyG link-prediction loop runs on bgl's pipeline: the supervision
pairs ``edge_label_index`` are edge seeds of :class:`bgl.DataLoader` (given node pairs,
no edge-id lookup), their negatives are drawn in the sample stage, and the blocks come
back in PyG's batch layout (:func:`~bgl.pyg.loader.blocks_to_pyg`).

Each batch, as PyG 2.x lays it out (homogeneous, non-disjoint):

* ``n_id`` [N]: the batch's node seeds first -- the ascending unique endpoints of its
  positive and negative pairs, PyG's ``seed.unique()`` -- then the nodes reached per hop;
  ``edge_index`` [2, E] local, ``x`` [N, F], ``num_sampled_nodes`` / ``num_sampled_edges``;
* ``input_id`` [B]: positions of the batch's pairs in ``edge_label_index``;
* binary negatives (``NegativeSampling("binary", amount)`` or ``neg_sampling_ratio``):
  ``edge_label_index`` [2, B + ceil(B * amount)] local ids, positives first, then pairs of
  random source and random destination; ``edge_label`` the given labels (shifted by one
  when they contain 0, so 0 means negative, as PyG does) or ones, then zeros;
* triplet negatives: ``src_index`` [B], ``dst_pos_index`` [B], ``dst_neg_index`` [B, amount]
  (``[B]`` for amount 1) of random destinations;
* no negatives: ``edge_label_index`` [2, B] and ``edge_label`` (given or ones).

A ``Data`` input's own attributes come along as PyG's: ``y``, masks and every other node-level
attribute at ``n_id``, edge-level ones (``edge_attr``, ...) at ``e_id``, graph-level ones as they
are (:mod:`bgl.pyg.fields`); ``transform=`` is applied to each batch.  Randomness is bgl's: negatives come from
the batch seed's counter-based stream (:mod:`bgl.negative_sampler`).
"""
from __future__ import annotations

from typing import Any, Iterator, Optional, Sequence

import numpy as np
import torch

from ..loader.edge_prediction import EdgePredictionSampler
from .negatives import _check_label_index, _negatives, check_edge_label
from .batches import PygDataBuilder
from .options import pyg_options
from .loader import NeighborLoader, blocks_to_pyg


class _PairSeedSampler(EdgePredictionSampler):
    """An edge-prediction sampler whose seeds are given node pairs, compacted in PyG's order."""

    def __init__(self, sampler, pairs: np.ndarray, negative_sampler=None):
        super().__init__(sampler, negative_sampler=negative_sampler)
        self.pairs = pairs
        self.node_order = "sorted"


class LinkNeighborLoader(NeighborLoader):
    """PyG's ``LinkNeighborLoader(data, num_neighbors, edge_label_index=None, edge_label=None,
    replace=False, neg_sampling=None, neg_sampling_ratio=None, batch_size=1, shuffle=False)``.

    Parameters
    ----------
    data : ``torch_geometric.data.Data`` | GraphStore | store dir | partition dir | server addresses; a
        ``HeteroData`` with ``edge_label_index=(edge_type, pairs)`` (:mod:`bgl.pyg.hetero_link`)
    num_neighbors : list of int, PyG order (``num_neighbors[0]`` for the seeds' hop)
    edge_label_index : int [2, N] supervision pairs (default: every edge of a ``Data``'s ``edge_index``)
    edge_label : [N] labels of the pairs (default: ones)
    neg_sampling : ``torch_geometric.sampler.NegativeSampling`` ("binary" | "triplet", ``amount``),
        its mode string, or a dict ``{"mode", "amount"}``
    neg_sampling_ratio : binary negatives per positive (PyG's older argument)
    **kwargs : as :class:`~bgl.pyg.loader.NeighborLoader` (``cache``, ``order``, ``pipeline``, ...)

    Raises
    ------
    ValueError, TypeError
        pairs out of range or not integers, a bad negative-sampling mode or amount, labels of the
        wrong length, or PyG options bgl cannot honour -- before anything starts.
    """

    def __new__(cls, data=None, *args, **kwargs):
        from .hetero import is_hetero_data

        if is_hetero_data(data):  # PyG's one LinkNeighborLoader takes Data and HeteroData alike
            if kwargs.get("time_attr") is not None:  # bgl/pyg/hetero_temporal_link.py
                from .hetero_temporal_link import HeteroTemporalLinkNeighborLoader

                return HeteroTemporalLinkNeighborLoader(data, *args, **kwargs)
            from .hetero_link import HeteroLinkNeighborLoader

            return HeteroLinkNeighborLoader(data, *args, **kwargs)
        if kwargs.get("time_attr") is not None:  # PyG's temporal loader (bgl/pyg/temporal_loader.py)
            from .temporal_loader import TemporalLinkNeighborLoader

            return TemporalLinkNeighborLoader(data, *args, **kwargs)
        return object.__new__(cls)

    def __init__(self, data, num_neighbors: Sequence[int], edge_label_index=None, edge_label=None,
                 replace: bool = False, neg_sampling=None, neg_sampling_ratio: Optional[float] = None,
                 batch_size: int = 1, shuffle: bool = False, drop_last: bool = False, num_workers: int = 0,
                 **kwargs):
        from ..loader.sampler_options import NeighborSampler
        from ..loader.dataloader import DataLoader
        from .loader import _pyg_data_class, input_fields, is_pyg_data, pyg_graph

        self.options = pyg_options(kwargs, "LinkNeighborLoader")
        graph = pyg_graph(data)
        self.data = data
        self._fields = input_fields(data, None)
        num_nodes = self._num_nodes(graph)
        if edge_label_index is None:
            if not is_pyg_data(data):
                raise ValueError("edge_label_index=None (all edges) needs a Data input; pass the pairs")
            edge_label_index = data.edge_index
        if isinstance(edge_label_index, tuple):
            raise ValueError("heterogeneous edge_label_index (edge_type, pairs) is not supported")
        if num_nodes is None:
            from ..loader.graph_info import resolve_graph

            num_nodes = resolve_graph(graph, None, None, float(kwargs.get("server_timeout", 5.0))).num_nodes
        pairs = _check_label_index(edge_label_index, num_nodes)
        self._given_input_id = self._user_input_id(pairs.shape[1])
        self.neg_sampling = _negatives(neg_sampling, neg_sampling_ratio)
        self.edge_label = check_edge_label(edge_label, pairs.shape[1], self.neg_sampling)
        self.num_neighbors = list(num_neighbors)
        node_sampler = NeighborSampler(list(reversed(self.num_neighbors)), replace=replace)
        sampler = _PairSeedSampler(node_sampler, pairs, negative_sampler=self.neg_sampling)
        self.batch_size = int(batch_size)
        self._loader = DataLoader(graph, torch.arange(pairs.shape[1]), sampler, batch_size=batch_size,
                                  shuffle=shuffle, drop_last=drop_last, num_workers=num_workers, blocks="bgl",
                                  **kwargs)
        self._data_class = _pyg_data_class()
        self._build_data = None if self._data_class is None else PygDataBuilder(self._data_class)

    def _epoch_batches(self) -> Iterator[Any]:
        for input_nodes, pair, *neg, blocks in self._loader:
            fields = blocks_to_pyg(blocks)
            fields.pop("batch_size")
            fields["x"] = blocks[0].srcdata.get("feat")
            input_id = pair.edata["_ID"]
            fields["input_id"] = input_id if self._given_input_id is None else self._given_input_id[input_id]
            pos_src, pos_dst = pair.edges()
            b = int(pos_src.shape[0])
            label = torch.ones(b) if self.edge_label is None else self.edge_label[input_id]
            if not neg:
                fields["edge_label_index"] = torch.stack([pos_src, pos_dst])
                fields["edge_label"] = label
            elif self.neg_sampling.mode == "binary":
                neg_src, neg_dst = neg[0].edges()
                fields["edge_label_index"] = torch.stack([torch.cat([pos_src, neg_src]), torch.cat([pos_dst, neg_dst])])
                fields["edge_label"] = torch.cat([label, label.new_zeros((neg_src.shape[0],) + label.shape[1:])])
            else:
                fields["src_index"], fields["dst_pos_index"] = pos_src, pos_dst
                fields["dst_neg_index"] = neg[0].edges()[1].view(b, -1).squeeze(-1)
            self._add_data_fields(fields)
            yield self.options.finish(self._make(fields))

    def _make(self, fields: dict):
        if self._data_class is None:
            from types import SimpleNamespace

            return SimpleNamespace(**fields)
        return self._build_data(fields)
