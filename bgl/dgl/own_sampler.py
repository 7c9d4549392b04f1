"""A DGL user's own sampler in ``dgl.dataloading.DataLoader``: bgl's order stage, the user's sample stage.

A ``dgl.dataloading.Sampler`` subclass (most often a ``BlockSampler`` whose ``sample_blocks`` calls
``dgl.sampling.sample_neighbors`` and ``dgl.to_block`` per layer) decides in Python what a batch is,
so the loader cannot read it as settings the way it reads ``NeighborSampler``.  Its batches still
come from the pipeline's first stage: :class:`~bgl.loader.stages.order.OrderStage` cuts the seeds
into batches (DGL's per-epoch shuffle from the loader's generator seed, ``drop_last``, each DDP rank's
share padded as DGL pads it), and the user's ``sample(g, seeds)`` is the sample stage, run in the
trainer's thread as DGL runs it with ``num_workers=0``; the batch goes to ``device`` last, as DGL's
does.  Typed seeds (``{ntype: ids}``) are cut as DGL cuts them: one stream over every (type, id) pair
in the dict's order, each batch split back into ``{ntype: ids}`` of the types it holds.

With ``num_workers > 0`` (DGL: worker processes sample while the model trains) the user's ``sample`` runs in
one producer thread instead, ``prefetch_factor`` batches (default 2) ahead of the trainer
(:func:`bgl.loader.pipeline.background.background_items`: the first batch in the trainer's thread, errors
raised in the trainer, the thread stopped when the loop ends or breaks).  bgl's samplers release the GIL in
their kernels, so the next batch is sampled beside the model step.  Their draws come from a generator of
the producer's own, seeded from the epoch's seed (:func:`bgl.sampler.multilayer.drawing_from`): the same
batches every run, and the trainer's RNG stream (dropout) as without the thread.  As in DGL's workers, the
sampler should not depend on the trainer's state while the epoch runs; unlike them it shares the process
(a sampler's own ``torch.rand`` calls still draw from torch's default generator, in whichever order the
threads reach it).

Link prediction over one's own sampler (``as_edge_prediction_sampler(MySampler(), ...)``) runs DGL's
``EdgePredictionSampler.sample`` (:class:`OwnEdgePrediction`): the batch's seed edges as a pair graph, the
negative sampler's pairs as another, both compacted to the nodes they touch (:func:`bgl.dgl.compact_graphs`),
those nodes handed to the user's ``sample(g, seed_nodes, exclude_eids)`` with the edges ``exclude`` names
(``"self"``, ``"reverse_id"``, ``"reverse_types"``, ids, or a callable), as DGL's ``find_exclude_eids``.

Cost per seed: 8 B (its position in the stream; typed seeds also keep their type, 8 B).
"""
from __future__ import annotations

from typing import Iterator, Mapping

import inspect

import numpy as np
import torch

from bgl.dgl.base import EID, NID, DGLError
from bgl.loader.ddp import ddp_chunk
from bgl.loader.pipeline.background import background_items
from bgl.loader.stages.order import OrderStage
from bgl.loader.state.position import epoch_seed, generator_seed_from_torch
from bgl.sampler.multilayer import drawing_from

# DGL's DataLoader arguments that tune its worker processes: num_workers > 0 runs the user's sampler in one
# producer thread, prefetch_factor batches ahead; the others have nothing to tune here
DGL_TUNING = ("num_workers", "use_uva", "use_prefetch_thread", "use_alternate_streams", "pin_prefetcher",
              "persistent_workers", "pin_memory", "prefetch_factor", "worker_init_fn", "timeout",
              "use_cpu_worker_affinity", "cpu_worker_affinity_cores", "gpu_cache")


class OwnSamplerLoader:
    """Batches ``sampler.sample(graph, seeds)`` over seeds ``indices`` (module doc); ``len()``,
    ``set_epoch`` and iteration as DGL's DataLoader."""

    def __init__(self, graph, indices, sampler, device=None, use_ddp: bool = False, ddp_seed: int = 0,
                 batch_size: int = 1, drop_last: bool = False, shuffle: bool = False, **kwargs):
        unknown = sorted(set(kwargs) - set(DGL_TUNING))
        if unknown:
            raise ValueError(f"{', '.join(unknown)}: not taken with your own sampler ({type(sampler).__name__}"
                             ".sample runs in the trainer's thread, or one producer thread with num_workers > 0); "
                             "bgl's pipeline options need a bgl sampler")
        if int(batch_size) < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.graph, self.graph_sampler = graph, sampler
        self.device = torch.device(device) if device is not None else None
        self.batch_size, self.drop_last, self.shuffle = int(batch_size), bool(drop_last), bool(shuffle)
        self.use_ddp, self.ddp_seed = bool(use_ddp), int(ddp_seed)
        self._keys, self._ids, self._types = _seed_stream(indices)
        positions = np.arange(self._ids.shape[0], dtype=np.int64)
        pad, self._rank = 0, 0
        if self.use_ddp:
            positions, pad, self._rank, _ = ddp_chunk(positions, self.drop_last)
        self._order = OrderStage(ids=positions, batch_size=self.batch_size, drop_last=self.drop_last,
                                 shuffle=self.shuffle, pad=pad)
        self._generator_seed = None if self.use_ddp else generator_seed_from_torch()
        self._ahead = max(1, int(kwargs.get("prefetch_factor") or 2)) if int(kwargs.get("num_workers") or 0) > 0 else 0
        self._epoch, self._epoch_set = 0, False

    def __len__(self) -> int:
        return len(self._order)

    def set_epoch(self, epoch: int) -> None:
        """Set the epoch number (its shuffle; with DDP every rank should call it)."""
        self._epoch, self._epoch_set = int(epoch), True

    def __iter__(self) -> Iterator:
        epoch = self._epoch
        seed = epoch_seed(epoch, self._generator_seed, (self.ddp_seed, self._rank) if self.use_ddp else None)
        if not self._epoch_set:
            self._epoch += 1
        self._epoch_set = False
        if self._ahead:
            batches = background_items(lambda: self._sampled(epoch, seed), self._ahead, name="bgl-own-sampler")
        else:
            batches = (self.graph_sampler.sample(self.graph, self._seeds_of(batch.seeds))
                       for batch in self._order.items((epoch, seed)))
        for out in batches:
            fill_lazy_features(out, self.graph)
            yield out if self.device is None else _to_device(out, self.device)

    def _sampled(self, epoch: int, seed) -> Iterator:
        """The epoch's samples, drawn from a generator seeded from its order's seed (the producer thread's)."""
        generator = torch.Generator().manual_seed(int(np.random.default_rng([int(seed), 1]).integers(0, 2**62)))
        for batch in self._order.items((epoch, seed)):
            with drawing_from(generator):  # per batch: entered and left in the thread that makes it
                out = self.graph_sampler.sample(self.graph, self._seeds_of(batch.seeds))
            yield out

    def _seeds_of(self, positions: torch.Tensor):
        """The seeds at stream ``positions``: ids, or ``{ntype: ids}`` of the types present (DGL's split)."""
        ids = self._ids[positions]
        if self._keys is None:
            return ids
        types = self._types[positions]
        order = torch.sort(types, stable=True).indices
        types, ids = types[order], ids[order]
        present, counts = torch.unique_consecutive(types, return_counts=True)
        return {self._keys[int(t)]: part.clone() for t, part in zip(present.tolist(), ids.split(counts.tolist()))}


def _seed_stream(indices) -> tuple:
    """(type names or None, ids [n], type index of each [n] or None): the seeds as one stream."""
    if not isinstance(indices, Mapping):
        return None, _ids(indices, "indices"), None
    keys = list(indices.keys())
    parts = [_ids(indices[k], f"indices[{k!r}]") for k in keys]
    types = torch.cat([torch.full((p.shape[0],), i, dtype=torch.int64) for i, p in enumerate(parts)]) if parts \
        else torch.zeros(0, dtype=torch.int64)
    ids = torch.cat(parts) if parts else torch.zeros(0, dtype=torch.int64)
    return keys, ids, types


def _ids(values, what: str) -> torch.Tensor:
    ids = torch.as_tensor(values)
    if ids.dtype == torch.bool:  # DGL takes a mask of the seeds too
        return ids.nonzero().view(-1)
    if ids.is_floating_point() or ids.dim() != 1:
        raise DGLError(f"{what} must be a 1-D integer tensor of seed ids (or a bool mask), got {ids.dtype} "
                       f"of shape {tuple(ids.shape)}.")
    return ids.cpu()


def fill_lazy_features(obj, graph) -> None:
    """Replace each :class:`~bgl.dgl.frames.LazyFeature` column of the graphs in ``obj`` (a batch: graphs, and
    tuples, lists and dicts of them) by ``graph``'s field at its ids, read on first use, as DGL's loader fills
    them: the field is the placeholder's ``name`` (else its key) of the same node type / relation, the ids its
    ``id_`` (else the frame's ``dgl.NID`` / ``dgl.EID``).  Cost: O(columns); each read gathers its rows."""
    from bgl.dgl.frames import LazyFeature
    from bgl.dgl.heterograph import DGLGraph

    if isinstance(obj, (tuple, list)):
        for x in obj:
            fill_lazy_features(x, graph)
    elif isinstance(obj, Mapping):
        for x in obj.values():
            fill_lazy_features(x, graph)
    elif isinstance(obj, DGLGraph) and isinstance(graph, DGLGraph):
        sources = graph._node_frames()
        for frames, parents, id_key in ((obj._src_frames, sources, NID), (obj._dst_frames, sources, NID),
                                        (obj._edge_frames, graph._edge_frames, EID)):
            for key, frame in frames.items():
                for name, column in list(frame._columns.items()):
                    if type(column) is not LazyFeature:
                        continue
                    if column.id_ is None and id_key not in frame:
                        raise DGLError("Found a LazyFeature with no ID specified, and the graph does not have "
                                       "dgl.NID or dgl.EID columns")
                    ids = frame[id_key] if column.id_ is None else torch.as_tensor(column.id_)
                    frame._columns.pop(name)
                    frame.set_rows_on_read(name, parents[key][column.name or name], ids.long())


def _to_device(obj, device: torch.device):
    """``obj`` (tensors, graphs, and tuples, lists and dicts of them) on ``device``."""
    if isinstance(obj, (tuple, list)):
        return type(obj)(_to_device(x, device) for x in obj)
    if isinstance(obj, Mapping):
        return {k: _to_device(v, device) for k, v in obj.items()}
    return obj.to(device) if hasattr(obj, "to") else obj


class OwnEdgePrediction:
    """DGL's ``EdgePredictionSampler.sample`` over a user's own sampler (module doc), from the settings
    ``as_edge_prediction_sampler`` recorded; TypeError, as DGL's, for a sampler whose ``sample`` takes no
    ``exclude_eids``."""

    def __init__(self, settings):
        self.sampler = settings.sampler
        if len(inspect.getfullargspec(self.sampler.sample).args) < 4:  # self, g, indices, exclude_eids
            raise TypeError("This sampler does not support edge or link prediction; please add an optional "
                            "third argument for edge IDs to exclude in its sample() method.")
        self.exclude, self.reverse_eids = settings.exclude, settings.reverse_eids
        self.reverse_etypes, self.negative_sampler = settings.reverse_etypes, settings.negative_sampler

    def sample(self, g, seed_edges):
        from bgl.dgl.to_block import compact_graphs
        from bgl.dgl.transforms import edge_subgraph

        if isinstance(seed_edges, Mapping):
            seed_edges = {g.to_canonical_etype(k): v for k, v in seed_edges.items()}
        pair = edge_subgraph(g, seed_edges, relabel_nodes=False)
        if self.negative_sampler is None:
            pair, graphs = compact_graphs(pair), ()
        else:
            pair, neg = compact_graphs([pair, self._negative_graph(g, seed_edges)])
            graphs = (neg,)
        seed_nodes = pair.nodes[pair.ntypes[0]].data[NID] if len(pair.ntypes) == 1 else \
            {nt: pair.nodes[nt].data[NID] for nt in pair.ntypes}
        excluded = self._excluded(g, seed_edges)
        input_nodes, _, blocks = self.sampler.sample(g, seed_nodes, excluded)
        return (input_nodes, pair, *graphs, blocks)

    def _negative_graph(self, g, seed_edges):
        """The negative sampler's pairs as a graph over every node of ``g`` (every relation, empty where it drew none)."""
        from bgl.dgl.convert import heterograph

        pairs = self.negative_sampler(g, seed_edges)
        if not isinstance(pairs, Mapping):
            if len(g.canonical_etypes) != 1:
                raise DGLError("graph has multiple or no edge types; please return a dict in negative sampler.")
            pairs = {g.canonical_etypes[0]: pairs}
        pairs = {g.to_canonical_etype(k): v for k, v in pairs.items()}
        none = torch.zeros(0, dtype=g.idtype, device=g.device)
        data = {c: pairs.get(c, (none, none)) for c in g.canonical_etypes}
        return heterograph(data, {nt: g.num_nodes(nt) for nt in g.ntypes}, idtype=g.idtype)

    def _excluded(self, g, seed_edges):
        """DGL's ``find_exclude_eids``: the edge ids the blocks never sample (or None)."""
        mode = self.exclude
        if mode is None:
            return None
        if callable(mode):
            return mode(seed_edges)
        if torch.is_tensor(mode) or (isinstance(mode, Mapping) and all(torch.is_tensor(v) for v in mode.values())):
            return mode
        if mode == "self":
            return seed_edges
        if mode == "reverse_id":
            rev = self.reverse_eids
            if isinstance(seed_edges, Mapping):
                rev = {g.to_canonical_etype(k): v for k, v in rev.items()}
                return {c: torch.cat([e, torch.as_tensor(rev[c])[e.long()]]) for c, e in seed_edges.items()}
            return torch.cat([seed_edges, torch.as_tensor(rev)[seed_edges.long()]])
        if mode == "reverse_types":
            out = dict(seed_edges)
            for k, v in self.reverse_etypes.items():
                k, v = g.to_canonical_etype(k), g.to_canonical_etype(v)
                if k in seed_edges:
                    out[v] = torch.unique(torch.cat([out[k], out[v]])) if v in out else out[k]
            return out
        raise ValueError(f"unsupported mode {mode}")
