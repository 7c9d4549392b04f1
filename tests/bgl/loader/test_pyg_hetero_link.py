"""``bgl.pyg.LinkNeighborLoader`` on a ``HeteroData``: PyG's recommender loop with only the import swapped."""
from __future__ import annotations

import pytest
import torch

pyg = pytest.importorskip("torch_geometric")

import bgl.pyg  # noqa: E402

RATES = ("user", "rates", "item")


def ratings(seed=0, users=30, items=50, n=300):
    from torch_geometric.data import HeteroData

    gen = torch.Generator().manual_seed(seed)
    data = HeteroData()
    data["user"].x = torch.randn(users, 4, generator=gen)
    data["item"].x = torch.randn(items, 3, generator=gen)
    ei = torch.stack([torch.randint(0, users, (n,), generator=gen), torch.randint(0, items, (n,), generator=gen)])
    data[RATES].edge_index = ei
    data["item", "rev_rates", "user"].edge_index = ei.flip(0)
    return data


def _loader(data, **kw):
    kw.setdefault("edge_label_index", (RATES, data[RATES].edge_index))
    return bgl.pyg.LinkNeighborLoader(data, num_neighbors=[5, 5], batch_size=64, **kw)


@pytest.mark.parametrize("neg", [None, {"mode": "binary", "amount": 2}, "binary"])
def test_binary_batches_have_pygs_typed_layout(neg):
    data = ratings()
    ei = data[RATES].edge_index
    torch.manual_seed(0)
    seen = []
    for batch in _loader(data, neg_sampling=neg, shuffle=True):
        input_id = batch[RATES].input_id
        b = input_id.shape[0]
        seen.append(input_id)
        eli = batch[RATES].edge_label_index
        amount = 0 if neg is None else (2 if isinstance(neg, dict) else 1)
        assert eli.shape == (2, b + b * amount)
        src, dst = batch["user"].n_id[eli[0]], batch["item"].n_id[eli[1]]
        assert torch.equal(src[:b], ei[0][input_id]) and torch.equal(dst[:b], ei[1][input_id])
        assert int(src.max()) < 30 and int(dst.max()) < 50  # each end over its own type's ids
        label = batch[RATES].edge_label
        assert torch.equal(label, torch.cat([torch.ones(b), torch.zeros(b * amount)]))
        for nt, count in (("user", 30), ("item", 50)):
            n_id = batch[nt].n_id
            assert torch.equal(batch[nt].x, data[nt].x[n_id])
            seeds = torch.unique(eli[0] if nt == "user" else eli[1])
            assert torch.equal(seeds, torch.arange(seeds.shape[0]))  # PyG: seeds lead n_id ...
            assert torch.equal(n_id[:seeds.shape[0]], torch.sort(n_id[:seeds.shape[0]]).values)  # ... sorted
        for canon in (RATES, ("item", "rev_rates", "user")):
            s, d = batch[canon].edge_index
            assert int(s.max()) < batch[canon[0]].n_id.shape[0] and int(d.max()) < batch[canon[2]].n_id.shape[0]
    assert sorted(torch.cat(seen).tolist()) == list(range(300))


def test_triplet_batches_and_given_labels():
    data = ratings()
    ei = data[RATES].edge_index
    batch = next(iter(_loader(data, neg_sampling={"mode": "triplet", "amount": 3})))
    b = batch[RATES].input_id.shape[0]
    assert batch["user"].src_index.shape == (b,) and batch["item"].dst_neg_index.shape == (b, 3)
    assert torch.equal(batch["user"].n_id[batch["user"].src_index], ei[0][batch[RATES].input_id])
    assert torch.equal(batch["item"].n_id[batch["item"].dst_pos_index], ei[1][batch[RATES].input_id])
    labels = torch.arange(300) % 2
    batch = next(iter(_loader(data, edge_label=labels, neg_sampling="binary")))
    b = batch[RATES].input_id.shape[0]
    assert torch.equal(batch[RATES].edge_label[:b], labels[batch[RATES].input_id].float() + 1)  # PyG's shift


def test_a_recommender_trains_on_the_batches():
    """Users rate items of their own cluster only, and features carry the cluster: a model trained on
    bgl's batches must learn to score rated pairs above random ones (half of them cross-cluster)."""
    from torch_geometric.nn import SAGEConv, to_hetero

    data = ratings()
    ei = data[RATES].edge_index
    ei[1] = ei[1] - ei[1] % 2 + ei[0] % 2  # item cluster = user cluster (both parities)
    ei[1] = ei[1].clamp(max=49 - (1 - ei[0] % 2))
    data["item", "rev_rates", "user"].edge_index = ei.flip(0)
    for nt, n in (("user", 30), ("item", 50)):
        data[nt].x[:, 0] = (torch.arange(n) % 2).float() * 2 - 1
    torch.manual_seed(0)

    class GNN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1, self.conv2 = SAGEConv((-1, -1), 16), SAGEConv((-1, -1), 16)

        def forward(self, x, edge_index):
            return self.conv2(self.conv1(x, edge_index).relu(), edge_index)

    model = to_hetero(GNN(), data.metadata(), aggr="sum")
    loader = _loader(data, neg_sampling="binary", shuffle=True)
    model(next(iter(loader)).x_dict, next(iter(loader)).edge_index_dict)  # lazy shapes
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for _ in range(15):
        total = 0.0
        for batch in loader:
            h = model(batch.x_dict, batch.edge_index_dict)
            eli = batch[RATES].edge_label_index
            score = (h["user"][eli[0]] * h["item"][eli[1]]).sum(-1)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(score, batch[RATES].edge_label)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
        losses.append(total)
    assert losses[-1] < 0.8 * losses[0], losses


def test_bad_hetero_link_input_is_named():
    data = ratings()
    with pytest.raises(ValueError, match="unknown edge type"):
        _loader(data, edge_label_index=(("user", "likes", "item"), data[RATES].edge_index))
    with pytest.raises(ValueError, match="'item' id 55, outside \\[0, 50\\)"):
        _loader(data, edge_label_index=(RATES, torch.tensor([[0], [55]])))
    with pytest.raises(ValueError, match="edge_label_index of a HeteroData must be \\(edge_type, pairs"):
        _loader(data, edge_label_index=data[RATES].edge_index)
    with pytest.raises(ValueError, match="edge_label has 3 entries for 300 pairs"):
        _loader(data, edge_label=torch.ones(3))
