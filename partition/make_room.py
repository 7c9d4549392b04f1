"""Make room for the rebalancing pass: swap light nodes into a part that is over one cap.

The rebalancing pass (:func:`.bgl_part.rebalance`) moves nodes out of a part above a cap into
parts that stay under *every* cap.  When the loads a node carries are uneven across node types
that stops it: on a typed R-MAT (papers carry ~80 % of the in-edges, authors and fields few)
the engine put the papers together, so one part was at 1.7x the average edges while the other
sat exactly at the 1.5x node cap -- no paper could move there, and the pass moved nothing.
This step frees node room in such a blocking part by moving it nodes that carry little of the
overloaded load (fewer in-edges than the nodes the overloaded part will shed, no training
nodes) into the overloaded part, most connected to it first; the next rebalancing round then
moves the heavy nodes the other way.  Each such swap lowers the overloaded part's load, since
a light node adds less than a heavy one takes away.

Cost: a lock flag per node (1 B/node, for the whole pass), one boolean [n] mask per (overloaded part, blocking part) pair, the candidates' ids and
gains (12 B per candidate), and one chunked pass over the edges (:func:`best_moves`) per pair.
"""
from __future__ import annotations

import numpy as np

from . import _kernels
from .graph_input import GraphInput, iter_chunks

NODES, TRAIN, EDGES = 0, 1, 2  # rows of the loads arrays (see bgl_part.part_loads)
CHUNK_EDGES = 1 << 24


def make_room(graph: GraphInput, part_of: np.ndarray, num_parts: int, loads: np.ndarray, caps: np.ndarray,
              crossings: np.ndarray, deg: np.ndarray, locked: np.ndarray) -> int:
    """Swap light nodes into each part over its train or edge cap from the parts whose node cap
    blocks its movers (see the module docstring); ``part_of`` and ``loads`` (float64 [3, P])
    change in place, and the nodes moved are set in ``locked`` (bool [n]: the rebalancing pass
    must not move them back, which their connectivity would otherwise ask first).  Returns the
    nodes moved."""
    moved = 0
    for c, carried in ((EDGES, deg), (TRAIN, graph.is_train)):
        for p in np.flatnonzero(loads[c] > caps[c] + 1e-9):
            in_p = part_of == p
            heavy = carried[in_p]
            heavy = heavy[heavy > 0]
            if not heavy.size:
                continue
            per_node = float(heavy.mean())  # the load p sheds per node it gives away
            for q in range(num_parts):
                excess = loads[c, p] - caps[c]
                if q == p or excess <= 1e-9 or (loads[:, q] > caps + 1e-9).any():
                    continue
                free = int(caps[NODES] - loads[NODES, q])
                room_in_p = int(caps[NODES] - loads[NODES, p])
                light = np.flatnonzero((part_of == q) & (carried < per_node) & (graph.is_train == 0) & ~locked)
                if room_in_p <= 0 or not light.size:
                    continue
                # each swap (one light node in, one heavy node out) lowers p's load by about this
                net = max(per_node - float(carried[light].mean()), 1e-3)
                need = int(np.ceil(min(excess, caps[c] - loads[c, q]) / net))  # heavy nodes q must take
                if need <= free:
                    continue  # q is not blocked by its node cap
                moved += _swap_in(graph, part_of, num_parts, loads, crossings, carried, deg, p, q, light,
                                  min(need - free, room_in_p), locked)
    return moved


def _swap_in(graph, part_of, num_parts, loads, crossings, carried, deg, p, q, light, count, locked) -> int:
    """Move up to ``count`` of q's ``light`` nodes into p, most connected to p first (least
    crossing-weighted connectivity lost), then lightest."""
    best_to = np.full(graph.num_nodes, -1, np.int32)
    gain = np.full(graph.num_nodes, -np.inf, np.float32)
    only_q = np.zeros(num_parts, np.bool_)
    only_q[q] = True
    only_p = np.zeros(num_parts, np.bool_)
    only_p[p] = True
    conn = np.zeros(num_parts, np.float64)
    for a, ptr, idx in iter_chunks(graph, CHUNK_EDGES):
        _kernels.best_moves(ptr, idx, a, part_of, crossings, only_q, only_p, num_parts, best_to, gain, conn)
    order = light[np.lexsort((carried[light], -gain[light]))][:count]  # most connected to p, then lightest
    part_of[order] = p
    locked[order] = True
    for row, load in ((NODES, np.ones(order.size)), (EDGES, deg[order]), (TRAIN, graph.is_train[order])):
        total = float(load.sum())
        loads[row, q] -= total
        loads[row, p] += total
    return int(order.size)
