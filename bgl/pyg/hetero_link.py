"""``bgl.pyg.LinkNeighborLoader`` over a PyG ``HeteroData``: PyG's recommender loop on bgl's typed pipeline.

``LinkNeighborLoader(data, num_neighbors, edge_label_index=(edge_type, pairs), edge_label=,
neg_sampling=)`` on a ``HeteroData`` (PyG's ``examples/hetero/recommender_system.py`` shape): the
pairs of one edge type are typed edge seeds of :class:`bgl.DataLoader`
(:mod:`bgl.loader.seeds.typed_edges`, PyG's sorted-unique node order), the typed blocks come back in
PyG's heterogeneous batch layout:

* per node type ``n_id`` (seeds first: the sorted unique endpoints of the batch's pairs of that type),
  ``x`` where the input has features and its other node attributes; per edge type ``edge_index``,
  ``e_id`` and its edge attributes (:func:`bgl.pyg.hetero.hetero_batch`, as the node loader's);
* binary negatives (or none): ``batch[edge_type].edge_label_index`` [2, B + ceil(B * amount)] local
  ids into the end types' ``n_id``, positives first, then pairs of a random source of the source
  type and a random destination of the destination type; ``edge_label`` the given labels (shifted by
  one when they hold 0) or ones, then zeros; ``batch[edge_type].input_id`` the pairs' positions;
* triplet negatives: ``batch[src_type].src_index`` [B], ``batch[dst_type].dst_pos_index`` [B],
  ``batch[dst_type].dst_neg_index`` [B, amount] (``[B]`` for amount 1).
"""
from __future__ import annotations

from typing import Any, Iterator

import numpy as np
import torch

from ..loader.edge_prediction import EdgePredictionSampler
from ..loader.pipeline.epoch_iterator import TimedEpochs
from ..loader.state.position import DelegatedState


class TypedPairNegatives:
    """PyG's negatives for the pairs of one edge type, each end drawn over its own node type's ids."""

    def __init__(self, negatives):
        self.mode, self.amount = negatives.mode, negatives.amount
        self._plain = negatives

    def sample_pairs(self, src, dst, num_nodes: int, seed: int, graph=None) -> tuple[np.ndarray, np.ndarray]:
        """Both ends over one id range (an edge type from a node type to itself)."""
        return self.sample_typed_pairs(src, dst, num_nodes, num_nodes, seed)

    def sample_typed_pairs(self, src, dst, num_src: int, num_dst: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """Negative (src, dst) type-local ids: triplet keeps each source, binary draws both ends."""
        if self.mode == "triplet":
            return self._plain.sample_pairs(src, dst, num_dst, seed)
        ns, _ = self._plain.sample_pairs(src, dst, num_src, seed)
        _, nd = self._plain.sample_pairs(src, dst, num_dst, seed)
        return ns, nd


class _TypedPairSeedSampler(EdgePredictionSampler):
    """Edge seeds given as node pairs of one edge type, compacted in PyG's sorted order."""

    def __init__(self, sampler, pairs: np.ndarray, etype, negative_sampler=None):
        super().__init__(sampler, negative_sampler=negative_sampler)
        self.pairs, self.pair_etype, self.node_order = pairs, etype, "sorted"


def checked_pairs(edge_label_index, data, schema) -> tuple[tuple, np.ndarray]:
    """``(canonical edge type, int64 [2, N] type-local pairs)`` of PyG's ``(edge_type, pairs | None)``
    (None: the edge type's own edges); ValueError naming a bad form, type or id."""
    from .hetero import canonical_edge_type
    from .negatives import _check_label_index

    if not (isinstance(edge_label_index, tuple) and len(edge_label_index) == 2):
        raise ValueError("edge_label_index of a HeteroData must be (edge_type, pairs [2, N]), got "
                         f"{type(edge_label_index).__name__}")
    etype, pairs = edge_label_index
    edge_type = canonical_edge_type(etype, schema.canonical_etypes)  # (src, dst) as PyG; ValueError if unknown
    src_type, dst_type = edge_type[0], edge_type[2]
    if pairs is None:
        pairs = data[edge_type].edge_index
    pairs = _check_label_index(pairs, np.iinfo(np.int64).max)  # shape, dtype, sign; each row's range below
    for row, t in enumerate((src_type, dst_type)):
        n = schema.node_type(t).count
        if pairs.size and int(pairs[row].max()) >= n:
            raise ValueError(f"edge_label_index row {row} holds {t!r} id {int(pairs[row].max())}, outside [0, {n})")
    return edge_type, pairs


class HeteroLinkNeighborLoader(TimedEpochs, DelegatedState):
    """PyG's ``LinkNeighborLoader`` over a ``HeteroData`` (see the module docstring)."""

    def __init__(self, data, num_neighbors, edge_label_index=None, edge_label=None, replace: bool = False,
                 neg_sampling=None, neg_sampling_ratio=None, batch_size: int = 1, shuffle: bool = False,
                 drop_last: bool = False, num_workers: int = 0, **kwargs):
        from ..loader.dataloader import DataLoader
        from .hetero import hetero_data_arrays, hetero_fields, pyg_layer_fanouts
        from .negatives import _negatives, check_edge_label
        from .options import pyg_options
        from ..loader.sampler_options import NeighborSampler

        self.options = pyg_options(kwargs, "LinkNeighborLoader")
        arrays = hetero_data_arrays(data)
        self.data, self.schema = data, arrays.schema
        self._fields = hetero_fields(data)
        self.edge_type, pairs = checked_pairs(edge_label_index, data, self.schema)
        plain = _negatives(neg_sampling, neg_sampling_ratio)
        self.neg_sampling = None if plain is None else TypedPairNegatives(plain)
        self.edge_label = check_edge_label(edge_label, pairs.shape[1], self.neg_sampling)
        node_sampler = NeighborSampler(pyg_layer_fanouts(num_neighbors, self.schema.canonical_etypes), replace=replace)
        sampler = _TypedPairSeedSampler(node_sampler, pairs, self.edge_type, negative_sampler=self.neg_sampling)
        self.batch_size = int(batch_size)
        self._loader = DataLoader(arrays, torch.arange(pairs.shape[1]), sampler, batch_size=batch_size,
                                  shuffle=shuffle, drop_last=drop_last, num_workers=num_workers, blocks="bgl",
                                  **kwargs)

    def __len__(self) -> int:
        return len(self._loader)

    def _epoch_batches(self) -> Iterator[Any]:
        from .hetero import hetero_batch

        c = self.edge_type
        for _, pair, *neg, blocks in self._loader:
            batch, _ = hetero_batch(blocks, self.schema, self._fields)
            input_id = pair.edata["_ID"][c]
            pos_src, pos_dst = pair.edges(etype=c)
            b = int(pos_src.shape[0])
            batch[c].input_id = input_id
            label = torch.ones(b) if self.edge_label is None else self.edge_label[input_id]
            if not neg:
                batch[c].edge_label_index = torch.stack([pos_src, pos_dst])
                batch[c].edge_label = label
            elif self.neg_sampling.mode == "binary":
                neg_src, neg_dst = neg[0].edges(etype=c)
                batch[c].edge_label_index = torch.stack([torch.cat([pos_src, neg_src]), torch.cat([pos_dst, neg_dst])])
                batch[c].edge_label = torch.cat([label, label.new_zeros((neg_src.shape[0],) + label.shape[1:])])
            else:
                batch[c[0]].src_index, batch[c[2]].dst_pos_index = pos_src, pos_dst
                batch[c[2]].dst_neg_index = neg[0].edges(etype=c)[1].view(b, -1).squeeze(-1)
            yield self.options.finish(batch)

    def close(self) -> None:
        self._loader.close()
