"""The rebalancing pass when a node cap blocks every mover: light nodes swap in to make room."""
from __future__ import annotations

import numpy as np

from bgl.partition import bgl_part
from bgl.partition.graph_input import GraphInput


def heavy_and_light_graph(seed=0):
    """600 heavy nodes (papers: 40 in-edges each, half of them training nodes) and 1,400 light
    ones (authors: 2 in-edges each), with the engine-like start of the typed R-MAT: every heavy
    node in part 1, part 0 exactly at the 1.5x node cap."""
    rng = np.random.default_rng(seed)
    heavy, light = 600, 1400
    n = heavy + light
    deg = np.r_[np.full(heavy, 40), np.full(light, 2)]
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(deg, out=indptr[1:])
    indices = rng.integers(0, n, int(indptr[-1])).astype(np.int32)
    is_train = np.zeros(n)
    is_train[rng.choice(heavy, 300, replace=False)] = 1.0
    part_of = np.zeros(n, np.int64)
    part_of[:heavy] = 1
    part_of[heavy:heavy + 100] = 1  # part 1: 700 nodes; part 0: 1,300 = 1.3x the average of 1,000
    return GraphInput(n, int(indptr[-1]), indptr, indices, is_train), part_of


def test_a_node_cap_that_blocks_every_mover_no_longer_leaves_edges_over():
    graph, part_of = heavy_and_light_graph()
    caps = (1.3, 1.1, 1.5)  # nodes, train, edges: part 0 sits at its node cap
    before = bgl_part.part_loads(graph, part_of, 2)
    avg = before.sum(axis=1) / 2
    assert before[2, 1] > 1.5 * avg[2] and before[0, 0] >= 1.3 * avg[0] - 1  # edges over, blocked
    crossings = np.zeros(graph.num_nodes)
    moved = bgl_part.rebalance(graph, part_of, 2, crossings, caps, rounds=4)
    after = bgl_part.part_loads(graph, part_of, 2)
    assert moved > 0
    assert np.all(after <= np.array(caps)[:, None] * avg[:, None] + 1e-6), after / avg[:, None]
    assert after.sum(axis=1).tolist() == before.sum(axis=1).tolist()  # every node still in one part
