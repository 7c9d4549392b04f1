"""bgl.pyg.LinkNeighborLoader against PyG's documented batch layout (real torch_geometric Data objects).

PyG's own LinkNeighborLoader needs pyg-lib or torch-sparse (no PyPI wheels), so the layout is checked
field by field against what PyG's docs and its ``edge_sample`` specify, on a real ``Data``.
"""
from __future__ import annotations

import pytest
import torch

tg = pytest.importorskip("torch_geometric")
from torch_geometric.data import Data  # noqa: E402
from torch_geometric.sampler import NegativeSampling  # noqa: E402

from bgl.pyg import LinkNeighborLoader  # noqa: E402

N = 120


@pytest.fixture(scope="module")
def data():
    g = torch.Generator().manual_seed(0)
    ei = torch.randint(0, N, (2, 900), generator=g)
    return Data(x=torch.randn(N, 6, generator=g), edge_index=ei, num_nodes=N)


def graph_edges(data):
    return set(zip(data.edge_index[0].tolist(), data.edge_index[1].tolist()))


def check_common(batch, data, edges):
    n_id = batch.n_id
    assert torch.equal(batch.x, data.x[n_id])
    src, dst = n_id[batch.edge_index[0]], n_id[batch.edge_index[1]]
    assert set(zip(src.tolist(), dst.tolist())) <= edges  # sampled edges are the graph's, source -> target
    assert sum(batch.num_sampled_nodes) == n_id.shape[0]
    assert sum(batch.num_sampled_edges) == batch.edge_index.shape[1]


def test_binary_layout(data):
    labels = torch.arange(300) % 3  # contains 0: PyG shifts labels by one so 0 means negative
    pairs = torch.randint(0, N, (2, 300), generator=torch.Generator().manual_seed(1))
    loader = LinkNeighborLoader(data, [4, 2], edge_label_index=pairs, edge_label=labels,
                                neg_sampling=NegativeSampling("binary", amount=2), batch_size=64, shuffle=True)
    edges, seen = graph_edges(data), []
    for batch in loader:
        assert isinstance(batch, Data)
        check_common(batch, data, edges)
        b = batch.input_id.shape[0]
        eli = batch.edge_label_index
        assert eli.shape == (2, b + 2 * b)
        assert torch.equal(batch.n_id[eli[:, :b]], pairs[:, batch.input_id])
        assert torch.equal(batch.edge_label[:b], labels[batch.input_id] + 1)
        assert torch.equal(batch.edge_label[b:], torch.zeros(2 * b, dtype=labels.dtype))
        seeds = torch.unique(batch.n_id[eli].flatten())  # PyG: the seeds are seed.unique(), first in n_id
        assert torch.equal(batch.n_id[:seeds.shape[0]], seeds)
        seen.append(batch.input_id)
    assert sorted(torch.cat(seen).tolist()) == list(range(300))


def test_triplet_layout(data):
    pairs = data.edge_index[:, :200]
    loader = LinkNeighborLoader(data, [3], edge_label_index=pairs, neg_sampling="triplet", batch_size=50)
    amounts = LinkNeighborLoader(data, [3], edge_label_index=pairs, neg_sampling=dict(mode="triplet", amount=3),
                                 batch_size=50)
    edges = graph_edges(data)
    for k, ld in ((1, loader), (3, amounts)):
        batch = next(iter(ld))
        check_common(batch, data, edges)
        b = batch.input_id.shape[0]
        assert not hasattr(batch, "edge_label_index") or batch.edge_label_index is None
        assert torch.equal(batch.n_id[batch.src_index], pairs[0, batch.input_id])
        assert torch.equal(batch.n_id[batch.dst_pos_index], pairs[1, batch.input_id])
        assert batch.dst_neg_index.shape == ((b,) if k == 1 else (b, k))
        assert int(batch.dst_neg_index.max()) < batch.n_id.shape[0]


def test_without_negatives_and_default_pairs(data):
    loader = LinkNeighborLoader(data, [2, 2], batch_size=128, neg_sampling_ratio=0.0)
    batch = next(iter(loader))
    assert batch.edge_label_index.shape == (2, 128) and torch.equal(batch.edge_label, torch.ones(128))
    assert torch.equal(batch.n_id[batch.edge_label_index], data.edge_index[:, batch.input_id])
    assert len(loader) == -(-900 // 128)


def test_negatives_are_seeded_by_torch(data):
    def first_negatives(seed):
        torch.manual_seed(seed)
        loader = LinkNeighborLoader(data, [2], neg_sampling_ratio=1.0, batch_size=100, shuffle=True)
        b = next(iter(loader))
        return b.n_id[b.edge_label_index[:, 100:]]

    assert torch.equal(first_negatives(5), first_negatives(5))
    assert not torch.equal(first_negatives(5), first_negatives(6))


@pytest.mark.parametrize("kwargs,error,match", [
    (dict(edge_label_index=torch.tensor([[0, N], [1, 2]])), ValueError, f"node id {N}"),
    (dict(edge_label_index=torch.tensor([[0.5], [1.0]])), TypeError, "integer"),
    (dict(edge_label_index=torch.tensor([0, 1])), ValueError, r"\[2, N\]"),
    (dict(neg_sampling=dict(mode="triplet", amount=1.5)), ValueError, "integer amount"),
    (dict(neg_sampling=dict(mode="ternary")), ValueError, "'ternary'"),
    (dict(neg_sampling_ratio=-1.0), ValueError, "amount must be > 0"),
    (dict(edge_label=torch.ones(3)), ValueError, "3 entries for 900 pairs"),
    (dict(time_attr="t"), ValueError, "time_attr"),
])
def test_bad_input_is_refused(data, kwargs, error, match):
    with pytest.raises(error, match=match):
        LinkNeighborLoader(data, [2], batch_size=4, **kwargs)
