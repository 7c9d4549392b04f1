"""Co-located reads: a SamplingClient that reads its own host's parts from the partition files.

Real `bgl serve` processes for both parts; the client reads one part itself.
Results must equal the all-socket client's bit for bit, and the bytes it
exchanges for that part must be zero.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from bgl.errors import ProtocolError
from bgl.sampler import SamplingClient
from bgl.sampler.client import traffic
from bgl.sampler.server import open_part_store



def same_blocks(a, b) -> bool:
    return len(a) == len(b) and all(
        x.num_dst == y.num_dst and torch.equal(x.src_ids, y.src_ids) and torch.equal(x.indptr, y.indptr)
        and torch.equal(x.indices, y.indices) for x, y in zip(a, b))


def _moved(before: dict) -> int:
    after = traffic()
    return after["sent"] - before["sent"] + after["received"] - before["received"]


@pytest.fixture(scope="module")
def part_addresses(module_servers):
    return [s.address for s in module_servers["parts"]]


@pytest.mark.parametrize("local_parts", [[0], [1], [0, 1]])
def test_local_parts_give_the_servers_answers(part_addresses, partition_dir, local_parts):
    seeds = torch.from_numpy(np.random.default_rng(5).permutation(500)[:120])  # both parts, mixed order
    ids = torch.tensor([499, 0, 229, 230, 7, 499, 231])
    stores = [open_part_store(partition_dir, k) for k in local_parts]
    with SamplingClient(part_addresses, timeout=120, local_stores=()) as remote, \
            SamplingClient(part_addresses, timeout=120, local_stores=stores) as client:
        assert client.local_servers == [part_addresses[k] for k in local_parts]
        for fanouts, replace in (([3, 2], False), ([-1], False), ([10, 10, 10], True)):
            assert same_blocks(client.sample_blocks(seeds, fanouts, replace=replace, seed=11),
                               remote.sample_blocks(seeds, fanouts, replace=replace, seed=11))
        assert torch.equal(client.fetch_features(ids), remote.fetch_features(ids))
        assert torch.equal(client.fetch_labels(ids), remote.fetch_labels(ids))
        feats, labels = client.fetch_features_and_labels(ids, ids[:3])
        assert torch.equal(feats, remote.fetch_features(ids)) and torch.equal(labels, remote.fetch_labels(ids[:3]))


def test_local_part_moves_no_bytes_and_the_remote_part_still_does(part_addresses, partition_dir):
    with SamplingClient(part_addresses, timeout=120, local_stores=[open_part_store(partition_dir, 0)]) as client:
        client.fetch_features([300])  # warm-up: the first FEATURES may compile the server's kernel
        before = traffic()
        client.sample_blocks(torch.arange(0, 200), [5], seed=3)  # part 0 only: [0, 230)
        client.fetch_features(torch.arange(0, 230))
        assert _moved(before) == 0
        before = traffic()
        client.fetch_features(torch.arange(225, 235))  # 5 rows of part 1 go over the socket
        assert _moved(before) > 5 * 16 * 4


def test_environment_names_the_local_parts(part_addresses, partition_dir, monkeypatch):
    monkeypatch.setenv("BGL_PARTITION", str(partition_dir))
    monkeypatch.setenv("BGL_LOCAL_PARTS", "1")
    with SamplingClient(part_addresses, timeout=120) as client:
        assert client.local_servers == [part_addresses[1]]
    monkeypatch.setenv("BGL_LOCAL_PARTS", "")
    with SamplingClient(part_addresses, timeout=120) as client:
        assert client.local_servers == []


@pytest.mark.parametrize("value, partition, match", [
    ("0,x", True, "BGL_LOCAL_PARTS='0,x': expected comma-separated part ids, got 'x'"),
    ("-1", True, "part ids are >= 0, got -1"),
    ("0", False, "BGL_LOCAL_PARTS is set but BGL_PARTITION"),
    ("7", True, r"--part must be in \[0, 2\), got 7"),
])
def test_bad_environment_is_named(part_addresses, partition_dir, monkeypatch, value, partition, match):
    monkeypatch.setenv("BGL_LOCAL_PARTS", value)
    if partition:
        monkeypatch.setenv("BGL_PARTITION", str(partition_dir))
    else:
        monkeypatch.delenv("BGL_PARTITION", raising=False)
    with pytest.raises(ValueError, match=match):
        SamplingClient(part_addresses, timeout=120)


def test_a_store_that_is_not_the_served_part_is_refused(part_addresses, random_store):
    # the whole store starts at id 0 like part 0, but holds 500 nodes, not 230
    with pytest.raises(ProtocolError, match=r"local part store .* is not the part served by "
                                            r".*: num_nodes 500 here, 230 on the server"):
        SamplingClient(part_addresses, timeout=120, local_stores=[random_store])
