"""The distributed engines' vertex weights (partition/distributed/weights.py): nodes and in-edges, and training nodes,
each counting alike in the total; one all-reduce over the ranks (here MPI's one-rank COMM_SELF)."""
from __future__ import annotations

import numpy as np
import pytest

from bgl.partition.distributed.weights import BALANCES, DEFAULT_BALANCE, check_balance, vertex_weights

pytestmark = pytest.mark.usefixtures("mpi")  # mpi4py, installed if missing (conftest)


@pytest.fixture
def ex():
    from mpi4py import MPI

    from bgl.partition.distributed.exchange import Exchange

    return Exchange(MPI.COMM_SELF)


def test_nodes_and_edges_weigh_alike(ex):
    degree = np.array([0, 1, 2, 9, 0, 0], np.int64)  # 12 in-edges over 6 nodes: a node weighs 2 edges
    w = vertex_weights("nodes+edges", degree, None, ex)
    assert w.dtype == np.int64 and w.tolist() == [2, 3, 4, 11, 2, 2]
    assert w.sum() == 2 * degree.sum()  # half the total is the nodes', half the edges'


def test_training_nodes_add_a_third_of_the_same_size(ex):
    degree = np.array([0, 1, 2, 9, 0, 0], np.int64)
    train = np.array([1, 0, 0, 0, 1, 1], np.uint8)  # 3 training nodes share 12 edges' weight: 4 each
    w = vertex_weights("nodes+edges+train", degree, train, ex)
    assert w.tolist() == [6, 3, 4, 11, 6, 6] and w.sum() == 3 * degree.sum()
    # without training nodes (or flags) the third term is absent, not a division by zero
    assert vertex_weights("nodes+edges+train", degree, np.zeros(6, np.uint8), ex).tolist() == [2, 3, 4, 11, 2, 2]
    assert vertex_weights("nodes+edges+train", degree, None, ex).tolist() == [2, 3, 4, 11, 2, 2]


def test_nodes_only_is_the_engines_unit_weights_and_every_weight_is_positive(ex):
    assert vertex_weights("nodes", np.arange(5), None, ex) is None
    w = vertex_weights("nodes+edges", np.zeros(4, np.int64), None, ex)  # no edges: a node still weighs 1
    assert w.tolist() == [1, 1, 1, 1]


def test_an_unknown_balance_is_refused_naming_the_choices(ex):
    assert DEFAULT_BALANCE == "nodes+edges" and check_balance("nodes") == "nodes"
    with pytest.raises(ValueError, match="balance must be one of " + ", ".join(BALANCES).replace("+", r"\+")):
        vertex_weights("edges", np.arange(3), None, ex)
