"""``bgl.pyg.NeighborLoader(hetero_data, ..., time_attr=)``: PyG's temporal loader over a ``HeteroData``.

A ``HeteroData`` with node times (``data[node_type][time_attr]`` on every node type) or edge times
(``data[edge_type][time_attr]`` on every edge type), decided as PyG decides it (node-level first),
is sampled by ``bgl.DataLoader``'s typed temporal sampler in its disjoint layout
(:mod:`bgl.loader.temporal_sampler`): no edge or node newer than its subgraph's seed time, each
relation with its own fanout.  Batches have PyG's heterogeneous layout
(:func:`bgl.pyg.hetero.hetero_batch`: per type ``n_id``, ``x`` and node fields, per relation
``edge_index``, ``e_id`` and edge fields) plus the disjoint fields: ``batch[t].batch`` (each node's
subgraph) on every type, ``batch[input_type].seed_time``, ``batch_size`` and ``input_id``.

``input_time`` defaults to the seeds' own times with node-level times (PyG's rule) and is required
with edge-level ones.  Costs beyond the untimed loader: 8 B per node (node times) or per edge (the
edge times, fused into CSC order once), and the per-run time order (:mod:`bgl.sampler.temporal.typed`).
"""
from __future__ import annotations

from typing import Any, Iterator

from ..loader.pipeline.epoch_iterator import TimedEpochs
from ..sampler.temporal.sampling import check_times
from ..loader.state.position import DelegatedState
from .hetero import HeteroNeighborLoader, hetero_batch, hetero_data_arrays, hetero_fields, pyg_layer_fanouts
from .options import pyg_options
from .temporal import temporal_args


def hetero_time_source(data, time_attr) -> tuple[str, dict]:
    """``("node", {node type: times})`` or ``("edge", {edge type: times})`` of ``time_attr`` on a
    ``HeteroData``; ValueError naming the types that lack it (it must be on all of one kind)."""
    if not isinstance(time_attr, str):
        raise TypeError(f"time_attr must name an attribute (a str), got {type(time_attr).__name__}")
    for kind, types in (("node", list(data.node_types)), ("edge", [tuple(t) for t in data.edge_types])):
        having = [t for t in types if time_attr in data[t]]
        if not having:
            continue
        if len(having) != len(types):
            raise ValueError(f"time_attr={time_attr!r} is on {kind} types {having} but not on "
                             f"{[t for t in types if t not in having]}; give every {kind} type its times")
        count = (lambda t: int(data[t].num_nodes)) if kind == "node" else (lambda t: int(data[t].edge_index.shape[1]))
        return kind, {t: check_times(data[t][time_attr], count(t), f"{kind} times data[{t!r}].{time_attr}")
                      for t in types}
    raise ValueError(f"time_attr={time_attr!r} is on no node type and no edge type of the HeteroData")


class HeteroTemporalNeighborLoader(TimedEpochs, DelegatedState):
    """PyG's temporal ``NeighborLoader`` over a ``HeteroData`` (see the module docstring)."""

    def __init__(self, data, num_neighbors, input_nodes=None, replace: bool = False, batch_size: int = 1,
                 shuffle: bool = False, drop_last: bool = False, num_workers: int = 0, **kwargs):
        from ..loader.dataloader import DataLoader
        from .temporal import TimedSeedPositions, seed_times
        from ..loader.temporal_sampler import TemporalNeighborSampler

        args = temporal_args(kwargs)
        self.options = pyg_options(kwargs, "NeighborLoader")
        if replace:
            raise ValueError("bgl.pyg.NeighborLoader with time_attr= does not support replace=True (each eligible "
                             "edge is drawn at most once); drop it")
        if kwargs.pop("weight_attr", None) is not None:
            raise ValueError("bgl.pyg.NeighborLoader on a HeteroData with time_attr= does not take weight_attr= (weighted "
                             "temporal sampling runs on an untyped graph: a Data or a store); drop it")
        self.data = data
        kind, times = hetero_time_source(data, args.time_attr)
        arrays = hetero_data_arrays(data)
        self.schema = arrays.schema
        if kind == "edge":
            arrays.rel_edata[args.time_attr] = [times[tuple(c)] for c in self.schema.canonical_etypes]
        else:
            arrays.type_ndata = {args.time_attr: times}
        self.input_type, ids, by_id = HeteroNeighborLoader._input(input_nodes, self.schema)
        ids_np = ids.numpy()
        node_time = times.get(self.input_type) if kind == "node" else None
        seed_time = seed_times(args.input_time, kind, node_time, ids_np)
        self._input_id = TimedSeedPositions(ids_np, seed_time, by_id, self.options.input_id)
        self._fields = hetero_fields(data)
        fanouts = pyg_layer_fanouts(num_neighbors, self.schema.canonical_etypes)
        sampler = TemporalNeighborSampler(fanouts, layout="disjoint", strategy=args.strategy,
                                          **{f"{kind}_timestamp_attr_name": args.time_attr})
        self.batch_size = int(batch_size)
        self.dataset = range(int(ids.shape[0]))
        self._loader = DataLoader(arrays, {self.input_type: ids}, sampler, seed_time={self.input_type: seed_time},
                                  batch_size=batch_size, shuffle=shuffle, drop_last=drop_last,
                                  num_workers=num_workers, blocks="bgl", **kwargs)

    def __len__(self) -> int:
        return len(self._loader)

    def _epoch_batches(self) -> Iterator[Any]:
        for _, _, blocks in self._loader:
            batch, layout = hetero_batch(blocks, self.schema, self._fields)
            first = blocks[0]
            bs = int(blocks[-1].num_dst)
            for nt in layout["n_id"]:
                batch[nt].batch = first.srcdata["batch"][nt]
            seed_time = first.srcdata["seed_time"][self.input_type][:bs]
            store = batch[self.input_type]
            store.batch_size, store.seed_time = bs, seed_time
            store.input_id = self._input_id(layout["n_id"][self.input_type][:bs], seed_time)
            yield self.options.finish(batch)

    def close(self) -> None:
        self._loader.close()
