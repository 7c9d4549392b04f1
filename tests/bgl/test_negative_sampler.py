"""bgl.negative_sampler: DGL's three samplers, seeded; in range, reproducible, DGL's layout and rules."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from bgl import negative_sampler as ns


class _CSC:
    def __init__(self, indptr, indices):
        self.indptr, self.indices = indptr, indices


def random_csc(num_nodes: int, avg_degree: float, seed: int):
    rng = np.random.default_rng(seed)
    dst = np.sort(rng.integers(0, num_nodes, int(num_nodes * avg_degree)))
    indptr = np.zeros(num_nodes + 1, np.int64)
    np.cumsum(np.bincount(dst, minlength=num_nodes), out=indptr[1:])
    return indptr, rng.integers(0, num_nodes, dst.shape[0])


def test_per_source_uniform_repeats_each_source_k_times_and_draws_in_range():
    src, dst = np.array([3, 9, 4]), np.array([1, 2, 3])
    nsrc, ndst = ns.PerSourceUniform(4).sample_pairs(src, dst, num_nodes=10, seed=5)
    assert nsrc.tolist() == [3] * 4 + [9] * 4 + [4] * 4  # DGL: repeat_interleave(src, k)
    assert ndst.dtype == np.int64 and ndst.min() >= 0 and ndst.max() < 10
    again = ns.Uniform(4).sample_pairs(src, dst, num_nodes=10, seed=5)
    assert np.array_equal(again[1], ndst)
    other = ns.Uniform(4).sample_pairs(src, dst, num_nodes=10, seed=6)
    assert not np.array_equal(other[1], ndst)
    assert ns.Uniform is ns.PerSourceUniform


def test_global_uniform_avoids_edges_self_loops_and_repeats():
    indptr, indices = random_csc(40, 6.0, seed=1)
    graph = _CSC(indptr, indices)
    edges = {(int(indices[p]), v) for v in range(40) for p in range(indptr[v], indptr[v + 1])}
    src = np.arange(30)
    s, d = ns.GlobalUniform(3).sample_pairs(src, src, 40, seed=11, graph=graph)
    assert 0 < s.shape[0] <= 90
    pairs = list(zip(s.tolist(), d.tolist()))
    assert not set(pairs) & edges
    assert all(a != b for a, b in pairs)
    assert len(set(pairs)) == len(pairs)
    s2, d2 = ns.GlobalUniform(3).sample_pairs(src, src, 40, seed=11, graph=graph)
    assert np.array_equal(s, s2) and np.array_equal(d, d2)


def test_global_uniform_options_allow_self_loops_and_repeats():
    indptr = np.zeros(3, np.int64)  # 2 nodes, no edges: 4 possible pairs, 2 of them self loops
    graph = _CSC(indptr, np.empty(0, np.int64))
    s, d = ns.GlobalUniform(20, exclude_self_loops=False, replace=True).sample_pairs(
        np.arange(2), np.arange(2), 2, seed=0, graph=graph)
    pairs = list(zip(s.tolist(), d.tolist()))
    assert len(pairs) == 40 and {(0, 0), (1, 1)} <= set(pairs)
    s, d = ns.GlobalUniform(20).sample_pairs(np.arange(2), np.arange(2), 2, seed=0, graph=graph)
    assert set(zip(s.tolist(), d.tolist())) <= {(0, 1), (1, 0)} and len(s) <= 2


@pytest.mark.parametrize("k", [0, -1, 1.5, True])
def test_k_below_one_is_refused(k):
    for cls in (ns.PerSourceUniform, ns.GlobalUniform):
        with pytest.raises(ValueError, match=f"got {k!r}"):
            cls(k)


def test_a_one_node_graph_has_no_negatives():
    with pytest.raises(ValueError, match="at least 2 nodes, got 1"):
        ns.Uniform(1).sample_pairs(np.array([0]), np.array([0]), 1, seed=0)


def test_dgl_call_form_over_a_dglgraph():
    dgl = pytest.importorskip("dgl")
    g = dgl.graph((torch.tensor([0, 1, 2]), torch.tensor([1, 2, 3])), num_nodes=6)
    torch.manual_seed(0)
    s, d = ns.Uniform(2)(g, torch.tensor([0, 2]))
    assert s.tolist() == [0, 0, 2, 2] and d.max() < 6
    s, d = ns.GlobalUniform(2)(g, torch.tensor([0, 2]))
    assert not set(zip(s.tolist(), d.tolist())) & {(0, 1), (1, 2), (2, 3)}
