"""A generated user–item graph for ``bgl demo --task recsys``: taste clusters, popular items, one held-out item per user.

Recommendation graphs have what the demo must show working: two node types, a relation and its
reverse, hubs (a few items everyone rates), users of a few interactions.  This generator makes
such a graph from a seed, so it can be shipped and regenerated anywhere:

* users and items fall in ``clusters`` taste groups; a user's ratings are mostly items of
  its own group, chosen by a Zipf popularity inside the group, the rest popular items of any
  group (so the graph has hubs and a signal a model can learn);
* a user rates ``min_items + Geometric`` items, no item twice;
* items carry ``feat_dim`` features (their group's direction plus noise), users none (a model
  learns user embeddings from ids, as recommenders do);
* each user with at least three ratings has one held out as its test item (leave-one-out); the
  store holds the others as ``(user, rates, item)`` and the reverse ``(item, rated-by, user)``
  (the reverse of edge ``k`` is edge ``k``, DGL's ``reverse_etypes`` convention).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

RATES = ("user", "rates", "item")
RATED_BY = ("item", "rated-by", "user")
TEST_FILE = "test_pairs.npy"


def generate_ratings(num_users: int = 2000, num_items: int = 1000, clusters: int = 8, min_items: int = 3,
                     mean_items: float = 12.0, own_share: float = 0.8, feat_dim: int = 16, seed: int = 0):
    """``(train (user, item) int64 [2, E], test (user, item) int64 [2, U'], item features float32
    [num_items, feat_dim])``, type-local ids; see the module docstring."""
    if num_users < 1 or num_items < 2 * clusters or clusters < 1 or min_items < 1 or mean_items < min_items:
        raise ValueError(f"need users >= 1, items >= 2 * clusters, clusters >= 1, 1 <= min_items <= mean_items; "
                         f"got {num_users}, {num_items}, {clusters}, {min_items}, {mean_items}")
    rng = np.random.default_rng(seed)
    item_group = rng.integers(0, clusters, num_items)
    user_group = rng.integers(0, clusters, num_users)
    popularity = 1.0 / (1.0 + rng.permutation(num_items)) ** 0.8  # Zipf-like, a random item order
    counts = np.minimum(min_items + rng.geometric(1.0 / (1.0 + mean_items - min_items), num_users) - 1,
                        num_items // 2)
    by_group = [np.flatnonzero(item_group == g) for g in range(clusters)]
    weights = [popularity[items] / popularity[items].sum() for items in by_group]
    overall = popularity / popularity.sum()
    users, items = [], []
    for u in range(num_users):  # per user, a handful of draws: the graph's size is the demo's
        own = by_group[user_group[u]]
        k_own = min(int(round(counts[u] * own_share)), own.shape[0])
        picked = set(rng.choice(own, k_own, replace=False, p=weights[user_group[u]]).tolist()) if k_own else set()
        while len(picked) < counts[u]:
            picked.add(int(rng.choice(num_items, p=overall)))
        picked = rng.permutation(np.fromiter(picked, np.int64))
        users.append(np.full(picked.shape[0], u, np.int64))
        items.append(picked)
    held = np.array([a[-1] if a.shape[0] >= 3 else -1 for a in items])
    test_users = np.flatnonzero(held >= 0)
    train_u = np.concatenate([u[:-1] if h >= 0 else u for u, h in zip(users, held)])
    train_i = np.concatenate([i[:-1] if h >= 0 else i for i, h in zip(items, held)])
    directions = rng.standard_normal((clusters, feat_dim)).astype(np.float32)
    feat = directions[item_group] + 0.5 * rng.standard_normal((num_items, feat_dim)).astype(np.float32)
    return np.stack([train_u, train_i]), np.stack([test_users, held[test_users]]), feat


def write_ratings_store(out_dir, overwrite: bool = False, **kwargs):
    """Generate (:func:`generate_ratings`) and write the typed store at ``out_dir``, with the test pairs
    in ``out_dir``'s sibling ``<name>_test_pairs.npy``; returns ``(store, test pairs path)``."""
    from .hetero import write_typed_store
    from .typed.source import schema_of

    train, test, feat = generate_ratings(**kwargs)
    num_users = int(kwargs.get("num_users", 2000))
    schema = schema_of({"user": num_users, "item": feat.shape[0]}, [RATES, RATED_BY])
    store = write_typed_store(out_dir, schema, [(train[0], train[1]), (train[1], train[0])], feats={"item": feat},
                              name="generated-ratings", overwrite=overwrite,
                              extra={"generator": "bgl.sources.recsys.generate_ratings", **kwargs})
    out = Path(out_dir)
    test_path = out.parent / f"{out.name}_{TEST_FILE}"
    np.save(test_path, test)
    return store, test_path
