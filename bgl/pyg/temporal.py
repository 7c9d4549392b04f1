"""PyG's temporal (disjoint) batch layout, from a disjoint temporal sample given as plain arrays.

PyG 2.8's ``NeighborLoader`` / ``LinkNeighborLoader`` with ``time_attr=`` always sample disjoint
subgraphs (``NeighborSampler.disjoint`` is ``disjoint or is_temporal``): one subgraph per seed, grown at
that seed's time, a node reached from two seeds being two nodes.  This module holds what a bgl loader
needs to hand such a sample over exactly as PyG lays it out, with plain arrays in and out, so it reads a
:class:`~bgl.sampler.temporal.sampling.TemporalSample` and the MFG-shaped blocks of ``bgl.DataLoader`` alike:

* ``time_attr`` (:func:`time_source`): a node-level attribute of the ``Data`` makes node-temporal
  sampling (a neighbour is a candidate when its node time is <= the seed time), an edge-level one
  edge-temporal sampling (the edge's time is); node-level wins when both sizes match, as
  ``data.is_node_attr`` is asked first in PyG's sampler.
* every batch (:func:`disjoint_fields`): ``n_id`` [N] (seeds first, duplicates across subgraphs),
  ``batch`` [N] each node's subgraph, ``edge_index`` [2, E] local (row 0 the sampled neighbour),
  ``e_id`` [E], ``num_sampled_nodes`` / ``num_sampled_edges`` per hop;
* ``NeighborLoader`` (:func:`node_seed_fields`): ``input_id``, ``seed_time`` [B] (``input_time``, or
  with node-level times and no ``input_time`` the seeds' own node times), ``batch_size`` = B;
* ``LinkNeighborLoader`` (:func:`link_seeds`): the sample's seeds are ``cat([src, dst])`` of the
  positive pairs and their negatives, every one at its pair's ``edge_label_time``; a negative ``j``
  takes the time of positive ``j % B`` (PyG's ``edge_label_time.repeat(...)``), and with node-level
  times a negative node newer than that time is redrawn (5 rounds, then the oldest node, PyG's rule).
  ``batch`` is taken modulo B, so a negative's nodes name the positive it was drawn for (PyG's layout:
  with a non-integer ``amount`` the destination side's subgraphs then name other positives than the
  ones whose time they grew at, as in PyG; the sample itself is never from the future).  Binary or no
  negatives: ``edge_label_index = arange(2 * P).view(2, -1)`` over P = B + negatives pairs (seed ``k``
  is node ``k``: the seeds lead ``n_id``), ``edge_label`` [P], ``edge_label_time`` [P], no
  ``seed_time``; triplet: ``src_index`` [B], ``dst_pos_index`` [B], ``dst_neg_index`` [B, amount]
  (``[B]`` for 1) and ``seed_time`` [B].
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
import torch

from ..sampler.temporal.sampling import check_times

#: PyG redraws a negative newer than its seed time this many times, then takes the oldest node.
REDRAW_ROUNDS = 5


def time_source(data, time_attr: str) -> tuple[str, np.ndarray]:
    """``("node" | "edge", int64 times)`` of ``data[time_attr]``, decided as PyG's sampler decides it.

    Raises
    ------
    ValueError
        ``time_attr`` not an attribute of ``data``, or of neither node nor edge length.
    TypeError
        ``time_attr`` not a str, or times that are not integers.
    """
    if not isinstance(time_attr, str):
        raise TypeError(f"time_attr must name an attribute of the Data (a str), got {type(time_attr).__name__}")
    value = getattr(data, time_attr, None) if time_attr in _keys(data) else None
    if value is None:
        raise ValueError(f"time_attr={time_attr!r} is not an attribute of the Data (it has {sorted(_keys(data))})")
    n, e = int(data.num_nodes), int(data.edge_index.shape[1])
    shape = tuple(getattr(value, "shape", ()))
    is_node = data.is_node_attr(time_attr) if callable(getattr(data, "is_node_attr", None)) else shape[:1] == (n,)
    is_edge = not is_node and (data.is_edge_attr(time_attr) if callable(getattr(data, "is_edge_attr", None))
                               else shape[:1] == (e,))
    if not (is_node or is_edge) or len(shape) != 1:
        raise ValueError(f"time_attr={time_attr!r} has shape {list(shape)}: node times are [{n}] "
                         f"(num_nodes), edge times [{e}] (num_edges)")
    kind = "node" if is_node else "edge"
    return kind, check_times(value, shape[0], f"{kind} times data.{time_attr}")


def _keys(data) -> list:
    keys = getattr(data, "keys", None)
    keys = keys() if callable(keys) else keys
    return list(keys) if keys is not None else list(vars(data))


def seed_times(input_time, kind: str, node_time: Optional[np.ndarray], seeds: np.ndarray,
               what: str = "input_time") -> np.ndarray:
    """int64 [len(seeds)]: the given ``input_time``, or the seeds' node times when it is None and
    the times are node-level (PyG's default); ValueError when edge-level times have none to use."""
    if input_time is not None:
        return check_times(input_time, seeds.shape[0], what)
    if kind == "node" and node_time is None:  # graph servers' node times, no partition dir to read them from
        raise ValueError(f"{what} is required here: time_attr's node times live on the graph servers, and the "
                         "loader reads a seed's own time from the partition dir's part stores only; give "
                         f"{what}, or pass the partition dir (BGL_SERVERS set) or set BGL_PARTITION")
    if kind == "node":
        return np.ascontiguousarray(node_time[seeds], dtype=np.int64)
    raise ValueError(f"{what} is required with edge-level time_attr (seeds have no times of their own): "
                     f"give one int64 time per seed")


def disjoint_fields(node, batch, src, dst, eid, num_sampled_nodes, num_sampled_edges) -> dict[str, Any]:
    """The fields every temporal PyG batch has, from a disjoint sample's arrays (torch or numpy).

    ``node`` int64 [N] global ids, seeds first; ``batch`` int64 [N] subgraph of each node; ``src`` /
    ``dst`` int64 [E] local indices (messages flow ``src -> dst``); ``eid`` int64 [E] edge ids (None:
    no ``e_id``); per-hop counts as lists.
    """
    t = lambda a: torch.as_tensor(np.asarray(a) if not torch.is_tensor(a) else a, dtype=torch.int64)  # noqa: E731
    out = {"n_id": t(node), "batch": t(batch), "edge_index": torch.stack([t(src), t(dst)]),
           "num_sampled_nodes": [int(c) for c in num_sampled_nodes],
           "num_sampled_edges": [int(c) for c in num_sampled_edges]}
    if eid is not None:
        out["e_id"] = t(eid)
    return out


def node_seed_fields(input_id, times: np.ndarray) -> dict[str, Any]:
    """``input_id``, ``seed_time`` and ``batch_size`` of a temporal ``NeighborLoader`` batch."""
    return {"input_id": input_id, "seed_time": torch.from_numpy(np.asarray(times, np.int64)),
            "batch_size": int(len(times))}


@dataclass(frozen=True)
class LinkSeeds:
    """One temporal link batch's disjoint seeds and the fields PyG derives from them.

    seeds, times : int64 [S] the sample's seeds (``cat([src, dst])``, negatives included) and their times
    num_pos : B, the positive pairs (``batch`` of the sample is taken modulo it: :meth:`subgraph`)
    fields : ``edge_label_index``, ``edge_label``, ``edge_label_time`` (binary / none) or
        ``src_index``, ``dst_pos_index``, ``dst_neg_index``, ``seed_time`` (triplet)
    """

    seeds: np.ndarray
    times: np.ndarray
    num_pos: int
    fields: dict

    def subgraph(self, batch) -> torch.Tensor:
        """PyG's ``batch`` of a link batch: the sample's subgraph index modulo B."""
        return torch.as_tensor(batch, dtype=torch.int64) % self.num_pos


@dataclass
class PygLinkBatch:
    """One temporal link batch's PyG fields as they travel the pipeline (``MiniBatch.edges``): the batch's
    pair ``positions`` (``input_id``), B (``num_pos``) and :attr:`LinkSeeds.fields`."""

    positions: torch.Tensor
    num_pos: int
    fields: dict

    def to(self, device, non_blocking: bool = False) -> "PygLinkBatch":
        moved = {k: v.to(device, non_blocking=non_blocking) if torch.is_tensor(v) else v for k, v in self.fields.items()}
        return PygLinkBatch(self.positions, self.num_pos, moved)

    def subgraph(self, batch) -> torch.Tensor:
        """PyG's ``batch`` of a link batch: the sample's subgraph index modulo B."""
        return torch.as_tensor(batch, dtype=torch.int64) % self.num_pos


class PygLinkLayout:
    """The per-batch seed layout of PyG's temporal link loader, run in bgl's sample stage
    (:class:`~bgl.loader.seeds.temporal_edges.LaidOutSeeds`): a batch of pair positions -> :func:`link_seeds`'
    ``(seeds, times, PygLinkBatch)``, negatives from the batch's own stream (so a resumed loader draws
    the same).  Holds the pairs, their times and labels (16 B + 8 B a pair, plus the labels): picklable
    into a sample-stage process."""

    def __init__(self, pairs, label_time: np.ndarray, edge_label, negatives, num_nodes: int,
                 node_time: Optional[np.ndarray] = None):
        self.pairs = np.asarray(pairs, np.int64)
        self.label_time, self.edge_label, self.negatives = label_time, edge_label, negatives
        self.num_nodes, self.node_time = int(num_nodes), node_time

    @property
    def num_items(self) -> int:
        return int(self.pairs.shape[1])

    @property
    def order_nodes(self) -> np.ndarray:
        """Each pair's destination: where proximity order places it."""
        return self.pairs[1]

    def __call__(self, positions: np.ndarray, seed: int):
        label = None if self.edge_label is None else self.edge_label[torch.from_numpy(positions)]
        ls = link_seeds(self.pairs[0, positions], self.pairs[1, positions], self.label_time[positions], label,
                        self.negatives, self.num_nodes, seed, self.node_time)
        return ls.seeds, ls.times, PygLinkBatch(torch.from_numpy(positions.copy()), ls.num_pos, ls.fields)


def link_seeds(src, dst, label_time, edge_label: Optional[torch.Tensor], negatives, num_nodes: int, seed: int,
               node_time: Optional[np.ndarray] = None) -> LinkSeeds:
    """The disjoint seeds of B positive pairs ``src -> dst`` at ``label_time`` (int64 [B] each), with
    ``negatives`` (a :class:`~bgl.pyg.negatives.PairNegatives` or None) drawn from stream ``seed``.

    ``edge_label`` [B] (None: ones) is already shifted as PyG shifts it
    (:func:`~bgl.pyg.negatives.check_edge_label`).
    """
    from .. import negative_sampler as ns
    from ..sampler.ops import MASK64, splitmix64

    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    b = int(src.shape[0])
    times = check_times(label_time, b, "edge_label_time")
    mode = None if negatives is None else negatives.mode
    if mode == "triplet":
        k = int(negatives.amount)
        neg_times = np.tile(times, k)  # negative j is drawn for positive j % B
        neg_dst = _draws(seed, b * k, num_nodes, node_time, neg_times)
        seeds = np.concatenate([src, dst, neg_dst])
        all_times = np.concatenate([times, times, neg_times])
        neg_index = torch.arange(2 * b, seeds.shape[0]).view(-1, b).t().reshape(b, -1).squeeze(-1)
        fields = {"src_index": torch.arange(b), "dst_pos_index": torch.arange(b, 2 * b),
                  "dst_neg_index": neg_index, "seed_time": torch.from_numpy(times)}
        return LinkSeeds(seeds, all_times, b, fields)
    label = torch.ones(b) if edge_label is None else edge_label
    if mode == "binary":
        count = math.ceil(b * negatives.amount)
        neg_times = np.resize(times, count)  # times repeated: negative j at positive j % B's time
        ns.check_num_nodes(num_nodes)
        neg_src = _draws(seed, count, num_nodes, node_time, neg_times)
        neg_dst = _draws(splitmix64(int(seed) & MASK64), count, num_nodes, node_time, neg_times)
        src, dst = np.concatenate([src, neg_src]), np.concatenate([dst, neg_dst])
        times = np.concatenate([times, neg_times])
        label = torch.cat([label, label.new_zeros((count,) + tuple(label.shape[1:]))])
    p = int(src.shape[0])
    fields = {"edge_label_index": torch.arange(2 * p).view(2, -1), "edge_label": label,
              "edge_label_time": torch.from_numpy(times)}
    return LinkSeeds(np.concatenate([src, dst]), np.concatenate([times, times]), b, fields)


def _draws(seed: int, count: int, num_nodes: int, node_time: Optional[np.ndarray], times: np.ndarray) -> np.ndarray:
    """``count`` uniform node ids from stream ``seed``; with node times, none newer than ``times[j]``
    where a redraw (up to :data:`REDRAW_ROUNDS`, further counters of the stream) finds one, else the
    oldest node (PyG's ``neg_sample``)."""
    from .. import negative_sampler as ns

    out = ns.uniform_draws(seed, 0, count, num_nodes)
    if node_time is None:
        return out
    for round_ in range(1, REDRAW_ROUNDS + 1):
        bad = np.flatnonzero(node_time[out] > times)
        if bad.size == 0:
            return out
        out[bad] = ns.uniform_draws(seed, round_ * count, bad.size, num_nodes)
    out[node_time[out] > times] = int(np.argmin(node_time))
    return out


@dataclass(frozen=True)
class TemporalArgs:
    """PyG's temporal loader arguments, taken out of a loader's keywords (:func:`temporal_args`)."""

    time_attr: Optional[str] = None
    input_time: Any = None
    edge_label_time: Any = None
    strategy: str = "uniform"


def temporal_args(kwargs: dict) -> TemporalArgs:
    """Pop ``time_attr``, ``input_time``, ``edge_label_time``, ``temporal_strategy`` and ``disjoint`` from
    ``kwargs``; ``disjoint`` may be anything (temporal sampling is always disjoint, as in PyG)."""
    from ..sampler.temporal.sampling import check_strategy

    strategy = kwargs.pop("temporal_strategy", "uniform")
    check_strategy(strategy)
    kwargs.pop("disjoint", None)
    return TemporalArgs(kwargs.pop("time_attr", None), kwargs.pop("input_time", None),
                        kwargs.pop("edge_label_time", None), strategy)


class TimedSeedPositions:
    """PyG's ``input_id`` of a temporal batch, found again from its seeds' (node, time) pairs.

    bgl's loader may reorder its seeds (shuffle), and a node may be a seed at several times, so a
    position is found by the pair: one ``searchsorted`` in the pairs' keys ``node * U + rank(time)``
    (U distinct times) sorted once, 16 B per seed.  Equal pairs are numbered by their first
    occurrence (their samples are alike); keys that would overflow int64 fall back to the node alone.
    ``by_id`` (all nodes or a mask, no ``input_id=``): the node ids themselves, as PyG numbers them.
    """

    def __init__(self, nodes: np.ndarray, times: np.ndarray, by_id: bool, given=None):
        self.given = None if given is None else torch.as_tensor(given)
        if self.given is not None and (self.given.dim() != 1 or self.given.shape[0] != nodes.shape[0]):
            raise ValueError(f"input_id has shape {list(self.given.shape)}, expected [{nodes.shape[0]}] "
                             "(one entry per input node)")
        self.by_id = by_id and self.given is None
        if self.by_id:
            return
        self.tvals, rank = np.unique(times, return_inverse=True)
        self.width = self.tvals.shape[0] if nodes.size and int(nodes.max()) < 2**62 // self.tvals.shape[0] else 0
        key = self._keys(nodes, rank.reshape(-1))
        self.order = np.argsort(key, kind="stable")
        self.sorted = key[self.order]

    def _keys(self, nodes: np.ndarray, rank: np.ndarray) -> np.ndarray:
        return nodes.astype(np.int64) * self.width + rank if self.width else nodes.astype(np.int64)

    def __call__(self, seeds: torch.Tensor, times: torch.Tensor) -> torch.Tensor:
        """int64 [B] ``input_id`` of the batch whose seeds are ``seeds`` at ``times``."""
        if self.by_id:
            return seeds
        rank = np.searchsorted(self.tvals, times.cpu().numpy())
        pos = torch.from_numpy(self.order[np.searchsorted(self.sorted, self._keys(seeds.cpu().numpy(), rank))])
        return pos if self.given is None else self.given[pos]
