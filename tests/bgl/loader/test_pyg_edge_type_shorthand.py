"""PyG's ``(src, dst)`` edge-type shorthand in the ``bgl.pyg`` loaders (issue #56).

PyG's recommender examples (``examples/hetero/recommender_system.py``, ``temporal_link_pred.py``) pass
``edge_label_index=(('user', 'movie'), pairs)`` and read ``batch['user', 'movie']``: the 2-tuple names
the one relation between those node types.  The resolution is checked against ``HeteroData``'s own,
ambiguous forms are refused naming the candidates, and both examples' loader calls and loops run on a
DGL-free ``HeteroData`` of MovieLens's layout with only the loader import swapped.
"""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

pyg_nn = pytest.importorskip("torch_geometric.nn", reason="PyG's example models: needs PyG")
import torch_geometric.transforms as T  # noqa: E402
from torch_geometric.data import HeteroData  # noqa: E402

from bgl.pyg.hetero import canonical_edge_type, pyg_layer_fanouts  # noqa: E402
from bgl.pyg import LinkNeighborLoader, NeighborLoader  # noqa: E402  (the one swapped import)


def movielens_like(num_users=40, num_movies=30, num_ratings=300, seed=0) -> HeteroData:
    """MovieLens's layout as PyG's dataset gives it: ``movie.x``, ``user.num_nodes``, and
    ``('user', 'rates', 'movie')`` with ``edge_index``, ``edge_label`` (ratings 0..5) and ``time``.
    Users mostly rate movies of their taste's genre, and rate those high, so a model can learn both
    which pairs exist and their ratings."""
    g = torch.Generator().manual_seed(seed)
    genre = torch.randint(0, 3, (num_movies,), generator=g)
    taste = torch.randint(0, 3, (num_users,), generator=g)
    data = HeteroData()
    data["movie"].x = torch.cat([F.one_hot(genre, 3).float(), torch.randn(num_movies, 5, generator=g)], 1)
    data["user"].num_nodes = num_users
    users = torch.randint(0, num_users, (num_ratings,), generator=g)
    movies = torch.randint(0, num_movies, (num_ratings,), generator=g)
    liked = torch.rand(num_ratings, generator=g) < 0.9
    for genre_id in range(3):  # a liked rating's movie is drawn among the user's genre
        of_genre = (genre == genre_id).nonzero().flatten()
        mine = liked & (taste[users] == genre_id)
        movies[mine] = of_genre[torch.randint(0, of_genre.numel(), (int(mine.sum()),), generator=g)]
    rel = data["user", "rates", "movie"]
    rel.edge_index = torch.stack([users, movies])
    rel.edge_label = torch.where(taste[users] == genre[movies], 5, 1)
    rel.time = torch.randint(0, 1000, (num_ratings,), generator=g)
    return data


def prepared(data: HeteroData) -> HeteroData:
    """Both examples' preparation: one-hot user features, a reverse relation without labels."""
    data["user"].x = torch.eye(data["user"].num_nodes)
    del data["user"].num_nodes
    data = T.ToUndirected()(data)
    del data["movie", "rev_rates", "user"].edge_label
    return data


class Encoder(torch.nn.Module):
    def __init__(self, hidden: int, layers: int):
        super().__init__()
        self.convs = torch.nn.ModuleList([pyg_nn.SAGEConv((-1, -1), hidden) for _ in range(layers)])

    def forward(self, x, edge_index):
        for i, conv in enumerate(self.convs):
            x = conv(x, edge_index)
            x = x.relu() if i < len(self.convs) - 1 else x
        return x


class RatingModel(torch.nn.Module):
    """A heterogeneous encoder (``to_hetero``) and an MLP on the two ends' embeddings, as both examples."""

    def __init__(self, metadata, hidden: int = 16, layers: int = 2):
        super().__init__()
        self.encoder = pyg_nn.to_hetero(Encoder(hidden, layers), metadata, aggr="sum")
        self.decoder = torch.nn.Sequential(torch.nn.Linear(2 * hidden, hidden), torch.nn.ReLU(),
                                           torch.nn.Linear(hidden, 1))

    def forward(self, x_dict, edge_index_dict, edge_label_index):
        z = self.encoder(x_dict, edge_index_dict)
        row, col = edge_label_index
        return self.decoder(torch.cat([z["user"][row], z["movie"][col]], -1)).view(-1)


def train_epochs(model, loader, epochs: int, shuffle_batch: bool = False) -> list:
    """Mean training MSE of each epoch; batches read through the ``('user', 'movie')`` shorthand."""
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for _ in range(epochs):
        total = count = 0
        for batch in loader:
            if shuffle_batch:  # recommender_system.py's randomize_inputs
                perm = torch.randperm(batch["user", "movie"].edge_label.numel())
                batch["user", "movie"].edge_label = batch["user", "movie"].edge_label[perm]
                batch["user", "movie"].edge_label_index = batch["user", "movie"].edge_label_index[:, perm]
            optimizer.zero_grad()
            pred = model(batch.x_dict, batch.edge_index_dict, batch["user", "movie"].edge_label_index)
            target = batch["user", "movie"].edge_label.to(pred.dtype)
            loss = F.mse_loss(pred, target)
            loss.backward()
            optimizer.step()
            total, count = total + loss.detach().item() * pred.numel(), count + pred.numel()
        losses.append(total / count)
    return losses


# ------------------------------------------------------------------ the resolution itself

def test_the_shorthand_resolves_as_heterodata_does():
    data = prepared(movielens_like())
    edge_types = data.edge_types
    for form in [("user", "movie"), ("movie", "user"), "rates", "rev_rates", ("user", "rates", "movie")]:
        assert canonical_edge_type(form, edge_types) == data._to_canonical(form)
    # and the loaders' batch access is HeteroData's own
    loader = LinkNeighborLoader(data, num_neighbors={("user", "movie"): [3], ("movie", "user"): [3]},
                                edge_label_index=(("user", "movie"), None), batch_size=32)
    batch = next(iter(loader))
    assert batch["user", "movie"].edge_label_index.shape == (2, 32)
    assert ("user", "rates", "movie") in batch.edge_types


def test_an_ambiguous_or_unknown_shorthand_is_refused_naming_the_candidates():
    data = prepared(movielens_like())
    data["user", "wishes", "movie"].edge_index = data["user", "rates", "movie"].edge_index[:, :10]
    with pytest.raises(ValueError, match=r"ambiguous.*\('user', 'rates', 'movie'\).*\('user', 'wishes', 'movie'\)"):
        LinkNeighborLoader(data, num_neighbors=[3], edge_label_index=(("user", "movie"), None), batch_size=8)
    with pytest.raises(ValueError, match=r"no edge type has the \(src, dst\) edge type \('movie', 'movie'\)"):
        LinkNeighborLoader(data, num_neighbors=[3], edge_label_index=(("movie", "movie"), None), batch_size=8)
    with pytest.raises(ValueError, match="ambiguous"):
        pyg_layer_fanouts({("user", "movie"): [2], ("movie", "user"): [2]}, data.edge_types)
    with pytest.raises(ValueError, match="twice"):
        pyg_layer_fanouts({("movie", "user"): [2], ("movie", "rev_rates", "user"): [2]},
                          [("user", "rates", "movie"), ("movie", "rev_rates", "user")])
    with pytest.raises(TypeError, match="an edge type is"):
        canonical_edge_type(3, data.edge_types)


def test_num_neighbors_dict_keys_may_be_the_shorthand():
    data = prepared(movielens_like())
    torch.manual_seed(0)  # the loader's epoch orders are drawn from torch's RNG when it is built
    long_form = NeighborLoader(data, num_neighbors={("user", "rates", "movie"): [2, 2],
                                                    ("movie", "rev_rates", "user"): [3, 1]},
                               input_nodes="user", batch_size=8, shuffle=True)
    a = [b["movie"].n_id for b in long_form]
    torch.manual_seed(0)
    short = NeighborLoader(data, num_neighbors={("user", "movie"): [2, 2], ("movie", "user"): [3, 1]},
                           input_nodes="user", batch_size=8, shuffle=True)
    b = [b["movie"].n_id for b in short]
    assert len(a) == 5 and all(torch.equal(x, y) for x, y in zip(a, b))


# ------------------------------------------------------------------ PyG's two examples

def test_recommender_system_example_runs_and_learns(one_torch_thread):
    """``recommender_system.py``'s loaders (a temporal training loader with negatives, full-neighbour
    evaluation loaders) and loop (``batch['user', 'movie']``, ``randomize_inputs``)."""
    torch.manual_seed(42)
    data = prepared(movielens_like())
    data["movie"].n_id = torch.arange(0, data["movie"].x.size(0))  # the example adds node ids as fields
    data["user"].n_id = torch.arange(0, data["user"].x.size(0))
    rel = ("user", "rates", "movie")
    train_loader = LinkNeighborLoader(data=data, num_neighbors=[5, 5, 5], neg_sampling_ratio=1,
                                      edge_label_index=(rel, data[rel].edge_index), edge_label_time=data[rel].time,
                                      batch_size=64, shuffle=True, time_attr="time")
    val_loader = LinkNeighborLoader(data=data, num_neighbors=[-1, -1, -1], neg_sampling_ratio=1,
                                    edge_label_index=(rel, data[rel].edge_index), batch_size=64, shuffle=True)
    model = RatingModel(data.metadata(), layers=3)
    losses = train_epochs(model, train_loader, 12, shuffle_batch=True)
    assert losses[-1] < 0.8 * losses[0], losses
    batch = next(iter(val_loader))
    assert batch["user", "movie"].edge_label.shape == (128,)
    assert torch.equal(batch["user"].n_id, data["user"].n_id[batch["user"].n_id])


def test_temporal_link_pred_example_runs_and_learns(one_torch_thread):
    """``temporal_link_pred.py``'s loaders: ``('user', 'movie')`` pairs, labels and times, batch size 1,
    ``temporal_strategy='last'``; its loop reads ``batch['user', 'movie']``."""
    torch.manual_seed(0)
    data = prepared(movielens_like(num_ratings=150))
    perm = torch.argsort(data["user", "movie"].time)
    train_idx, val_idx = perm[:120], perm[120:]
    edge_index = data["user", "movie"].edge_index
    kwargs = dict(data=data, num_neighbors=[5, 5], batch_size=1, time_attr="time", temporal_strategy="last")
    train_loader = LinkNeighborLoader(edge_label_index=(("user", "movie"), edge_index[:, train_idx]),
                                      edge_label=data["user", "movie"].edge_label[train_idx].float(),
                                      edge_label_time=data["user", "movie"].time[train_idx] - 1, shuffle=True,
                                      **kwargs)
    val_loader = LinkNeighborLoader(edge_label_index=(("user", "movie"), edge_index[:, val_idx]),
                                    edge_label=data["user", "movie"].edge_label[val_idx].float(),
                                    edge_label_time=data["user", "movie"].time[val_idx] - 1, **kwargs)
    model = RatingModel(data.metadata(), layers=2)
    losses = train_epochs(model, train_loader, 4)
    assert losses[-1] < 0.8 * losses[0], losses
    times = [(b["user", "movie"].edge_label_time, b["user", "movie"].time) for b in val_loader]
    assert len(times) == 30
    assert all(bool((t <= label_time).all()) for label_time, t in times)  # no edge from the future
