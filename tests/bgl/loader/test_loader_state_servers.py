"""A loader state over two real graph servers survives a server killed between save and resume: the
server comes back on its port, a new loader given the state yields exactly the rest of the run."""
from __future__ import annotations

import json
import signal
import threading
import time

import numpy as np
import pytest
import torch

import bgl


@pytest.fixture
def two_servers(random_store, tmp_path, part_server):
    """A 2-part random partition of ``random_store`` and its two server processes: a dict part ->
    ``(process, address)`` the test may replace; every server in it is stopped at teardown."""
    from bgl.partition import partition_graph

    book = partition_graph(random_store, "random", 2, tmp_path / "parts", seed=0, measure_samples=False)
    servers = {}
    try:
        for k in range(2):
            servers[k] = part_server.start(book, k, tmp_path)
        yield book, servers
    finally:
        for proc, address in servers.values():
            part_server.stop(proc, address)


def _key(batch) -> tuple:
    """A batch's seeds, its sampled input nodes and a checksum of its fetched features."""
    input_nodes, output_nodes, blocks = batch
    return (tuple(output_nodes.tolist()), tuple(input_nodes.tolist()),
            float(blocks[0].srcdata["feat"].double().sum()))


@pytest.mark.parametrize("pipeline, cache, back", [
    ("inline", False, "before"), ("thread", "lookahead", "during"),
    pytest.param("processes", "lookahead", "during", marks=pytest.mark.extended)])
def test_a_server_killed_between_save_and_resume(two_servers, tmp_path, part_server, pipeline, cache, back):
    """``back``: the server is up again "before" the new loader is built, or comes back "during" its first
    requests (as under ``bgl launch``, which restarts servers and trainers at once): the client retries."""
    book, servers = two_servers
    addresses = [servers[k][1] for k in range(2)]
    train = book.split("train")
    make = lambda: bgl.DataLoader(addresses, train, bgl.NeighborSampler([4, 4]), batch_size=32,  # noqa: E731
                                  shuffle=True, pipeline=pipeline, cache=cache,
                                  **({"cache_ratio": 0.2} if cache else {}))
    torch.manual_seed(5)
    with make() as loader:
        whole = [_key(b) for _ in range(2) for b in loader]
    per_epoch = len(whole) // 2
    assert per_epoch >= 4
    k = per_epoch // 2

    torch.manual_seed(5)
    with make() as loader:
        before = [_key(b) for b in loader]  # epoch 0 whole, then k batches of epoch 1
        it = iter(loader)
        before += [_key(next(it)) for _ in range(k)]
        state, rng = json.dumps(loader.state_dict()), torch.get_rng_state()

    proc, address = servers[1]
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)

    def restart() -> None:  # the same part on the same port
        servers[1] = part_server.start(book, 1, tmp_path, bind=address)

    later = threading.Thread(target=lambda: (time.sleep(1.0), restart()))
    if back == "before":
        restart()
    else:
        later.start()
    try:
        torch.set_rng_state(rng)
        with make() as resumed:
            resumed.load_state_dict(json.loads(state))
            after = [_key(b) for b in resumed]
    finally:
        if back == "during":
            later.join(timeout=150)
    assert len(after) == per_epoch - k
    assert before + after == whole
    seeds = np.concatenate([np.asarray(key[0]) for key in whole[per_epoch:]])
    assert np.array_equal(np.sort(seeds), np.sort(train))  # epoch 1: every seed once
