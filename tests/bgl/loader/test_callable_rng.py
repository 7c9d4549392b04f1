"""A user's callable negative sampler draws from torch's global RNG, which the training loop shares.

bgl reseeds it per batch inside ``torch.random.fork_rng`` (its negatives a function of the batch, the
caller's RNG left alone: tests/bgl/loader/test_link_callables.py).  That holds only where no other
thread draws meanwhile: in the thread pipeline the loop's dropout-like draws landed inside the
sampler's reseeded window, so the negatives stopped matching inline's (1 of 62 batches) and the
loop's own stream was rewound (repeated draws).  A loader with such a sampler runs inline by default,
and ``pipeline="thread"`` named with it fails in one line.  Runs without DGL (a bgl store).
"""
from __future__ import annotations

import re
import time

import numpy as np
import pytest
import torch

import bgl

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def slow_random_negatives(graph, eids):
    """Random destinations in two draws with the GIL free between them (as a sampler calling into
    C code or reading a file lets another thread run)."""
    first = torch.randint(0, graph.num_nodes, (len(eids),))
    time.sleep(0.002)
    return first, torch.randint(0, graph.num_nodes, (len(eids),))


def first_nodes(graph, eids):
    """Draws nothing."""
    return eids.new_zeros(len(eids)), eids.new_zeros(len(eids))


def train(store, negatives, **options):
    """(each batch's negative pairs, the loop's own draws) of a loop that draws from torch's RNG while
    it runs, sleeping between draws as a model step's ops release the GIL."""
    sampler = bgl.as_edge_prediction_sampler(bgl.NeighborSampler([2]), negative_sampler=negatives)
    torch.manual_seed(7)
    pairs, draws = [], []
    with bgl.DataLoader(store, np.arange(store.num_edges), sampler, batch_size=64, shuffle=True,
                        **options) as loader:
        mode = loader.pipeline_mode
        for _, _, neg, _ in loader:
            pairs.append(torch.stack(neg.edges()))
            for _ in range(8):
                draws.append(torch.rand(4))
                time.sleep(0.0005)
    return mode, pairs, torch.stack(draws)


def test_a_callable_negative_sampler_runs_in_the_trainers_thread_by_default(random_store):
    mode, pairs, draws = train(random_store, slow_random_negatives)
    assert mode == "inline"
    _, inline_pairs, _ = train(random_store, slow_random_negatives, pipeline="inline")
    assert len(pairs) == len(inline_pairs) > 10
    assert all(torch.equal(a, b) for a, b in zip(pairs, inline_pairs))
    _, _, untouched = train(random_store, first_nodes, pipeline="inline")
    assert torch.equal(draws, untouched)  # the loop's stream as if nothing else drew
    assert len(torch.unique(draws, dim=0)) == len(draws)


def test_the_thread_pipeline_named_with_a_callable_negative_sampler_fails_in_one_line(random_store):
    message = ("pipeline='thread' would call the negative sampler slow_random_negatives in a background thread, "
               "where its draws from torch's global RNG and the training loop's race")
    with pytest.raises(ValueError, match=re.escape(message)):
        train(random_store, slow_random_negatives, pipeline="thread")


def test_bgls_own_negative_samplers_keep_the_default_pipeline(random_store):
    sampler = bgl.as_edge_prediction_sampler(bgl.NeighborSampler([2]), negative_sampler=bgl.negative_sampler.Uniform(1))
    with bgl.DataLoader(random_store, np.arange(random_store.num_edges), sampler, batch_size=64) as loader:
        assert loader.pipeline_mode == bgl.loader.loader_options.default_pipeline("store", "cpu")
