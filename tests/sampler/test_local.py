"""LocalSampler: block structure, reproducibility, part stores, features and errors."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from bgl.blocks import Block
from bgl.sampler import LocalSampler


def edge_set(store) -> set[tuple[int, int]]:
    ip, ix = np.asarray(store.indptr), np.asarray(store.indices)
    dst = np.repeat(np.arange(store.num_nodes) + store.node_offset, np.diff(ip))
    return set(zip(ix.tolist(), dst.tolist()))


def global_edges(block: Block) -> list[tuple[int, int]]:
    src, dst = block.edges()
    return list(zip(block.src_ids[src].tolist(), block.src_ids[dst].tolist()))


@pytest.mark.parametrize("replace", [False, True])
def test_block_structure(random_store, replace):
    sampler = LocalSampler(random_store)
    seeds = torch.tensor([17, 3, 250, 499, 0])
    fanouts = [4, 3, 2]
    blocks = sampler.sample_blocks(seeds, fanouts, replace=replace, seed=7)
    assert len(blocks) == 3
    assert torch.equal(blocks[-1].dst_ids, seeds)
    edges = edge_set(random_store)
    deg = np.diff(np.asarray(random_store.indptr))
    for i, b in enumerate(blocks):
        assert b.src_ids.dtype == torch.int64 and b.indices.dtype == torch.int64
        assert torch.unique(b.src_ids).numel() == b.num_src
        if i + 1 < len(blocks):
            assert torch.equal(b.dst_ids, blocks[i + 1].src_ids)
        counts = (b.indptr[1:] - b.indptr[:-1]).numpy()
        d = deg[b.dst_ids.numpy()]
        assert np.array_equal(counts, np.where(d > 0, fanouts[i], 0) if replace else np.minimum(d, fanouts[i]))
        assert all(e in edges for e in global_edges(b)), "block contains an edge not in the graph"
        assert b.edge_ids is not None
        assert np.array_equal(np.asarray(random_store.indices)[b.edge_ids.numpy()], b.src_ids[b.indices].numpy())
        assert b.to("cpu").num_edges == b.num_edges


def test_same_seed_same_blocks_and_torch_seed(random_store):
    sampler = LocalSampler(random_store)
    seeds = np.arange(0, 500, 7)
    a = sampler.sample_blocks(seeds, [5, 5], seed=3)
    b = sampler.sample_blocks(seeds, [5, 5], seed=3)
    c = sampler.sample_blocks(seeds, [5, 5], seed=4)
    assert all(torch.equal(x.src_ids, y.src_ids) and torch.equal(x.indices, y.indices) for x, y in zip(a, b))
    assert not all(torch.equal(x.src_ids, y.src_ids) for x, y in zip(a, c))
    torch.manual_seed(1)
    d = sampler.sample_blocks(seeds, [5, 5])
    torch.manual_seed(1)
    e = sampler.sample_blocks(seeds, [5, 5])
    assert all(torch.equal(x.src_ids, y.src_ids) for x, y in zip(d, e))


def test_part_store_samples_like_whole_store(random_store, partition_dir):
    from bgl.store import GraphStore

    part = GraphStore(partition_dir / "part-1")
    assert part.node_offset == 230
    whole, local = LocalSampler(random_store), LocalSampler(part)
    seeds = np.array([499, 230, 300])
    a = whole.sample_blocks(seeds, [3], seed=5)[0]
    b = local.sample_blocks(seeds, [3], seed=5)[0]
    assert torch.equal(a.src_ids, b.src_ids) and torch.equal(a.indices, b.indices)
    assert torch.equal(local.fetch_features(seeds), whole.fetch_features(seeds))
    assert torch.equal(local.fetch_labels(seeds), whole.fetch_labels(seeds))
    assert local.num_nodes == 500
    with pytest.raises(ValueError, match=r"= 12 is outside the owned id range \[230, 500\)"):
        local.sample_blocks([12], [2])


def test_features_labels_and_props(random_store):
    sampler = LocalSampler(random_store)
    ids = torch.tensor([5, 9, 5])
    assert torch.equal(sampler.fetch_features(ids), torch.from_numpy(np.asarray(random_store.feat)[[5, 9, 5]]))
    assert sampler.fetch_labels(ids).dtype == torch.int64
    assert (sampler.num_nodes, sampler.feat_dim, sampler.feat_dtype, sampler.num_classes) == (500, 16, torch.float32, 4)


def test_bad_inputs_name_the_problem(random_store):
    with LocalSampler(random_store) as sampler:
        with pytest.raises(ValueError, match="id 3 repeats"):
            sampler.sample_blocks([3, 4, 3], [2])
        with pytest.raises(ValueError, match=r"fanout must be >= -1 .*got -3"):
            sampler.sample_blocks([3], [2, -3])
        with pytest.raises(ValueError, match="non-empty sequence"):
            sampler.sample_blocks([3], [])
        with pytest.raises(ValueError, match="must be integers"):
            sampler.sample_blocks(np.array([1.5]), [2])
        with pytest.raises(ValueError, match="edge weights .prob. must have shape"):
            LocalSampler(random_store, prob=np.ones(3))


def test_empty_seeds(random_store):
    blocks = LocalSampler(random_store).sample_blocks(np.array([], np.int64), [2, 2], seed=0)
    assert [b.num_src for b in blocks] == [0, 0] and blocks[-1].num_edges == 0
