"""``bgl.pyg.LinkNeighborLoader(hetero_data, ..., time_attr=, edge_label_time=)``: PyG's temporal link loader
over a ``HeteroData`` (its ``examples/hetero/temporal_link_pred.py`` shape: user-item pairs with times).

One ``bgl.DataLoader`` over the pairs' positions; each batch's seeds are laid out in the sample stage
(:class:`HeteroLinkLayout` through ``seed_layout=``) as PyG's hetero link sampler does: the source
side (positives' sources, then the binary negatives' sources) of the edge type's source type and the
destination side (positives' destinations, then the negatives' destinations) of its destination type,
every one its own subgraph at its pair's time (a negative ``j`` at positive ``j % B``'s), then sampled
by the typed temporal sampler in its disjoint layout.  Batches have PyG's heterogeneous layout
(:func:`bgl.pyg.hetero.hetero_batch`) plus ``batch[t].batch`` per type (the subgraph's pair,
modulo B) and on the edge type ``edge_label_index`` (local ids into the end types' ``n_id``),
``edge_label``, ``edge_label_time`` and ``input_id``; triplet negatives give ``src_index``,
``dst_pos_index`` and ``dst_neg_index`` instead.  Edge-level times only (``data[edge_type][time_attr]``
on every edge type); node-level ones are refused in one line.  Cost: 24 B a pair (ends, time), labels.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np
import torch

from ..loader.pipeline.epoch_iterator import TimedEpochs
from ..loader.state.position import DelegatedState


@dataclass
class HeteroLinkBatch:
    """One batch's PyG link fields as they travel the pipeline (``MiniBatch.edges``): ``positions``
    (``input_id``), ``num_pos`` (B) and ``fields`` ``{store key: {name: tensor}}``."""

    positions: torch.Tensor
    num_pos: int
    fields: dict

    def to(self, device, non_blocking: bool = False) -> "HeteroLinkBatch":
        return self  # small index tensors: the batch's Data is built on the CPU, as PyG's


class HeteroLinkLayout:
    """The per-batch seed layout of PyG's temporal hetero link loader (see the module docstring); picklable."""

    def __init__(self, pairs: np.ndarray, edge_type: tuple, schema, label_time: np.ndarray, edge_label, negatives):
        self.pairs, self.edge_type, self.label_time = pairs, edge_type, label_time
        self.edge_label, self.negatives = edge_label, negatives
        src_t, dst_t = schema.node_type(edge_type[0]), schema.node_type(edge_type[2])
        self.offsets = (int(src_t.offset), int(dst_t.offset))
        self.counts = (int(src_t.count), int(dst_t.count))

    @property
    def num_items(self) -> int:
        return int(self.pairs.shape[1])

    @property
    def order_nodes(self) -> np.ndarray:
        return self.pairs[1] + self.offsets[1]

    def __call__(self, positions: np.ndarray, seed: int):
        from .. import negative_sampler as ns
        from ..sampler.ops import MASK64, splitmix64

        src, dst, t = self.pairs[0, positions], self.pairs[1, positions], self.label_time[positions]
        b = int(src.shape[0])
        src_type, _, dst_type = self.edge_type
        same = src_type == dst_type
        mode = None if self.negatives is None else self.negatives.mode
        c = self.edge_type
        if mode == "triplet":
            k = int(self.negatives.amount)
            neg_dst = ns.uniform_draws(seed, 0, b * k, self.counts[1])
            neg_t = np.tile(t, k)  # negative j is drawn for positive j % B
            nodes = np.concatenate([src + self.offsets[0], dst + self.offsets[1], neg_dst + self.offsets[1]])
            times = np.concatenate([t, t, neg_t])
            first_dst = b if same else 0  # the destination side's first local id among its type's nodes
            neg = torch.arange(first_dst + b, first_dst + b + b * k).view(k, b).t().reshape(b, -1).squeeze(-1)
            fields = {src_type: {"src_index": torch.arange(b)},
                      dst_type: {"dst_pos_index": torch.arange(first_dst, first_dst + b), "dst_neg_index": neg}}
            fields.setdefault(c, {})["seed_time"] = torch.from_numpy(t)
        else:
            label = torch.ones(b) if self.edge_label is None else self.edge_label[torch.from_numpy(positions)]
            if mode == "binary":
                count = math.ceil(b * self.negatives.amount)
                src = np.concatenate([src, ns.uniform_draws(seed, 0, count, self.counts[0])])
                dst = np.concatenate([dst, ns.uniform_draws(splitmix64(int(seed) & MASK64), 0, count, self.counts[1])])
                t = np.concatenate([t, np.resize(t, count)])  # negative j at positive j % B's time
                label = torch.cat([label, label.new_zeros((count,) + tuple(label.shape[1:]))])
            p = int(src.shape[0])
            nodes = np.concatenate([src + self.offsets[0], dst + self.offsets[1]])
            times = np.concatenate([t, t])
            first_dst = p if same else 0
            fields = {c: {"edge_label_index": torch.stack([torch.arange(p), torch.arange(first_dst, first_dst + p)]),
                          "edge_label": label, "edge_label_time": torch.from_numpy(t)}}
        return nodes, times, HeteroLinkBatch(torch.from_numpy(positions.copy()), b, fields)


class HeteroTemporalLinkNeighborLoader(TimedEpochs, DelegatedState):
    """PyG's temporal ``LinkNeighborLoader`` over a ``HeteroData`` (see the module docstring)."""

    def __init__(self, data, num_neighbors, edge_label_index=None, edge_label=None, replace: bool = False,
                 neg_sampling=None, neg_sampling_ratio=None, batch_size: int = 1, shuffle: bool = False,
                 drop_last: bool = False, num_workers: int = 0, **kwargs):
        from ..sampler.temporal.sampling import check_times
        from ..loader.dataloader import DataLoader
        from .hetero import hetero_data_arrays, hetero_fields, pyg_layer_fanouts
        from .hetero_link import checked_pairs
        from .hetero_temporal import hetero_time_source
        from .negatives import _negatives, check_edge_label
        from .options import pyg_options
        from .temporal import temporal_args
        from ..loader.temporal_sampler import TemporalNeighborSampler

        args = temporal_args(kwargs)
        self.options = pyg_options(kwargs, "LinkNeighborLoader")
        if replace:
            raise ValueError("bgl.pyg.LinkNeighborLoader with time_attr= does not support replace=True; drop it")
        if kwargs.pop("weight_attr", None) is not None:
            raise ValueError("bgl.pyg.LinkNeighborLoader on a HeteroData with time_attr= does not take weight_attr= (weighted "
                             "temporal sampling runs on an untyped graph: a Data or a store); drop it")
        kind, times = hetero_time_source(data, args.time_attr)
        if kind != "edge":
            raise ValueError(f"time_attr={args.time_attr!r} is node-level: a HeteroData's temporal LinkNeighborLoader "
                             "takes edge times (data[edge_type][time_attr] on every edge type)")
        arrays = hetero_data_arrays(data)
        self.data, self.schema = data, arrays.schema
        arrays.rel_edata[args.time_attr] = [times[tuple(c)] for c in self.schema.canonical_etypes]
        self._fields = hetero_fields(data)
        self.edge_type, pairs = checked_pairs(edge_label_index, data, self.schema)
        n = pairs.shape[1]
        if args.edge_label_time is None:
            raise ValueError("bgl.pyg.LinkNeighborLoader: edge_label_time= is required with time_attr= (PyG's "
                             "rule): one int64 time per pair of edge_label_index")
        label_time = check_times(args.edge_label_time, n, "edge_label_time")
        self.neg_sampling = _negatives(neg_sampling, neg_sampling_ratio)
        self.edge_label = check_edge_label(edge_label, n, self.neg_sampling)
        fanouts = pyg_layer_fanouts(num_neighbors, self.schema.canonical_etypes)  # -1: every eligible edge
        sampler = TemporalNeighborSampler(fanouts, layout="disjoint", strategy=args.strategy,
                                          edge_timestamp_attr_name=args.time_attr)
        layout = HeteroLinkLayout(pairs, self.edge_type, self.schema, label_time, self.edge_label, self.neg_sampling)
        self.batch_size = int(batch_size)
        self.dataset = range(n)
        self._loader = DataLoader(arrays, torch.arange(n), sampler, seed_layout=layout, batch_size=batch_size,
                                  shuffle=shuffle, drop_last=drop_last, num_workers=num_workers, blocks="bgl",
                                  **kwargs)

    def __len__(self) -> int:
        return len(self._loader)

    def _epoch_batches(self) -> Iterator[Any]:
        from .hetero import hetero_batch

        for _, link, blocks in self._loader:
            batch, layout = hetero_batch(blocks, self.schema, self._fields)
            for nt in layout["n_id"]:
                batch[nt].batch = blocks[0].srcdata["batch"][nt] % link.num_pos
            for key, fields in link.fields.items():
                for name, value in fields.items():
                    batch[key][name] = value
            batch[self.edge_type].input_id = link.positions
            yield self.options.finish(batch)

    def close(self) -> None:
        self._loader.close()
