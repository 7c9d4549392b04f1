"""Weighted and masked typed sampling (bgl/sampler/typed/sampling.py, ``prob=``): each relation draws by weight
(frequencies on a hub row), never a zero weight, DGL's eligibility and counts, store == servers."""
from __future__ import annotations

import numpy as np
import pytest
import torch

dgl = pytest.importorskip("dgl")

from bgl.partition import partition_graph  # noqa: E402
from bgl.sampler import protocol as P  # noqa: E402
from bgl.sampler.client import SamplingClient  # noqa: E402
from bgl.sampler.local import LocalSampler  # noqa: E402
from bgl.sampler.typed.sampling import relation_fanouts  # noqa: E402
from bgl.sampler.typed.remote import TypedServerSampler, typed_sample_request  # noqa: E402
from bgl.sources.hetero import TypedArrays  # noqa: E402

from .conftest import part_args, started_servers, with_edge_arrays  # noqa: E402

# chi-square 0.9999 quantile with 10 degrees of freedom: a fair draw fails 1 time in 10,000 (fixed seeds here)
CHI2_10_DOF = 35.56


def hub_graph():
    """Item 0 is a hub: 12 ``rates`` in-edges weighted 0..11, 10 ``views`` in-edges all weighted 0 but
    the last, 8 ``clicks`` in-edges without weights (DGL draws those uniformly)."""
    g = dgl.heterograph({
        ("user", "rates", "item"): (torch.arange(12), torch.zeros(12, dtype=torch.int64)),
        ("user", "views", "item"): (torch.arange(10), torch.zeros(10, dtype=torch.int64)),
        ("user", "clicks", "item"): (torch.arange(8), torch.zeros(8, dtype=torch.int64)),
    }, num_nodes_dict={"user": 12, "item": 2})
    g.edges["rates"].data["w"] = torch.arange(12, dtype=torch.float32)
    g.edges["views"].data["w"] = torch.tensor([0.0] * 9 + [5.0])
    return g


def draws(sampler, gid, fanouts, replace, n):
    """{relation id: per-relation edge ids drawn} over ``n`` layer seeds for one destination."""
    out: dict = {}
    for s in range(n):
        counts, _, eids, etypes = sampler.sample_typed_layer(np.array([gid]), fanouts, replace, s, prob="w")
        for r in np.unique(etypes):
            out.setdefault(int(r), []).append(eids[etypes == r])
    return out


@pytest.mark.parametrize("replace", [False, True])
def test_hub_row_draws_each_relation_in_proportion_to_its_weights(replace):
    g = hub_graph()
    arrays = TypedArrays.from_dglgraph(g)
    sampler = LocalSampler(arrays)
    hub = arrays.schema.node_type("item").offset
    fan = relation_fanouts({"rates": 1, "views": 2, "clicks": 1}, arrays.schema.canonical_etypes)
    n = 3000
    got = draws(sampler, hub, fan, replace, n)
    rates, views, clicks = (g.canonical_etypes.index(("user", r, "item")) for r in ("rates", "views", "clicks"))
    freq = np.bincount(np.concatenate(got[rates]), minlength=12)
    assert freq.sum() == n and freq[0] == 0  # weight 0: never
    expected = n * np.arange(1, 12) / 66.0
    assert ((freq[1:] - expected) ** 2 / expected).sum() < CHI2_10_DOF, freq
    # one positive edge: a fanout of 2 takes just it (min(fanout, positive)), or it twice with replacement
    assert all(e.tolist() == ([9, 9] if replace else [9]) for e in got[views])
    uniform = np.bincount(np.concatenate(got[clicks]), minlength=8)  # no weights on this relation: uniform
    assert ((uniform - n / 8) ** 2 / (n / 8)).sum() < 26.1  # chi-square 0.9995 quantile, 7 dof


def random_heterograph(seed=0):
    gen = torch.Generator().manual_seed(seed)
    n = {"paper": 40, "author": 30}
    rel = {("author", "writes", "paper"): (30, 40, 300), ("paper", "cites", "paper"): (40, 40, 250),
           ("paper", "by", "author"): (40, 30, 300)}
    g = dgl.heterograph({c: (torch.randint(0, a, (e,), generator=gen), torch.randint(0, b, (e,), generator=gen))
                         for c, (a, b, e) in rel.items()}, num_nodes_dict=n)
    for c in ("writes", "cites"):  # "by" has no weights: drawn uniformly, as DGL draws it
        w = torch.rand(g.num_edges(c), generator=gen)
        w[torch.rand(g.num_edges(c), generator=gen) < 0.4] = 0
        g.edges[c].data["w"] = w
        g.edges[c].data["m"] = w > 0
    return g


@pytest.mark.parametrize("name", ["w", "m"])
def test_drawn_edges_are_dgls_eligible_edges_in_dgls_counts(name):
    g = random_heterograph()
    arrays = TypedArrays.from_dglgraph(g)
    schema = arrays.schema
    fanout = {"writes": 3, "cites": 2, "by": 2}
    fan = relation_fanouts(fanout, schema.canonical_etypes)
    seeds = np.arange(schema.num_nodes)
    counts, _, eids, etypes = LocalSampler(arrays).sample_typed_layer(seeds, fan, False, 5, prob=name)
    ref = dgl.sampling.sample_neighbors(g, {nt: torch.arange(g.num_nodes(nt)) for nt in g.ntypes}, fanout,
                                        prob="w")  # DGL's own: counts to match (its draws are its own)
    ptr = np.concatenate([[0], np.cumsum(counts)])
    for r, c in enumerate(g.canonical_etypes):
        dst_type = schema.node_type(c[2])
        in_deg = ref.in_degrees(etype=c).numpy()
        for v in range(dst_type.count):
            j = dst_type.offset + v
            mine = eids[ptr[j]:ptr[j + 1]][etypes[ptr[j]:ptr[j + 1]] == r]
            into = g.in_edges(v, form="eid", etype=c).numpy()
            weights = g.edges[c].data["w"][into].numpy() if "w" in g.edges[c].data else np.ones(into.size)
            eligible = set(into[weights > 0].tolist())
            assert set(mine.tolist()) <= eligible and len(set(mine.tolist())) == mine.size, (c, v)
            assert mine.size == min(fanout[c[1]], len(eligible)) == in_deg[v], (c, v)


@pytest.fixture(scope="module")
def weighted(hetero_store, tmp_path_factory):
    """The typed test store with weights ``w`` (40 % zero) and a bool mask ``m``, its 2-part partition
    and a server per part."""
    work = tmp_path_factory.mktemp("typed_weighted")
    rng = np.random.default_rng(3)
    w = rng.random(hetero_store.num_edges).astype(np.float32)
    w[rng.random(hetero_store.num_edges) < 0.4] = 0
    store = with_edge_arrays(hetero_store, work / "store", {"w": w, "m": rng.random(hetero_store.num_edges) < 0.5})
    book = partition_graph(store, "random", 2, work / "p", measure_samples=False)
    with started_servers(part_args(book), work) as addresses:
        yield store, book, addresses


def test_store_and_servers_give_the_same_weighted_blocks(weighted):
    store, book, addresses = weighted
    fan = [relation_fanouts(layer, store.schema.canonical_etypes)
           for layer in (2, {"writes": 3, "cites": 1, "in": 2, "by": -1})]
    seeds = np.arange(0, store.num_nodes, 4)
    local = LocalSampler(store)
    with TypedServerSampler(SamplingClient(addresses, local_stores=()), book.path) as remote, \
            TypedServerSampler(SamplingClient(addresses, local_stores=[book.part_store(1)]), book.path) as mixed:
        for name in ("w", "m"):
            want = local.sample_typed_blocks(seeds, fan, seed=9, prob=name)
            uniform = local.sample_typed_blocks(seeds, fan, seed=9)
            assert any(a.indices.shape != b.indices.shape for a, b in zip(want, uniform))
            mask = np.asarray(store.edge_array(name))
            for b in want:
                assert (mask[b.edge_ids.numpy()] > 0).all(), name  # a zero weight / False mask: never drawn
            for got in (remote.sample_typed_blocks(seeds, fan, seed=9, prob=name),
                        mixed.sample_typed_blocks(seeds, fan, seed=9, prob=name)):
                for x, y in zip(want, got, strict=True):
                    for field in ("src_ids", "indptr", "indices", "etypes"):
                        assert torch.equal(getattr(x, field), getattr(y, field)), (name, field)


def test_typed_weighted_frames_and_what_is_refused(weighted):
    store, _, addresses = weighted
    frames = typed_sample_request(1, np.array([0, 5]), np.array([1, 2, 0, -1]), False, 3, prob="w",
                                  exclude=np.array([4, 9]))
    req = P.parse_request(frames, num_relations=4)
    assert req.weights == "w" and req.exclude.tolist() == [4, 9] and req.fanouts.tolist() == [1, 2, 0, -1]
    with pytest.raises(P.ProtocolError, match="typed SAMPLE needs 4 frames"):
        P.parse_request(frames[:3], num_relations=4)
    fan = [relation_fanouts(1, store.schema.canonical_etypes)]
    with pytest.raises(ValueError, match="weighted sampling with excluded edges is not supported"):
        LocalSampler(store).sample_typed_blocks([0], fan, seed=1, prob="w", exclude=np.array([0]))
    with pytest.raises(ValueError, match="no edge data 'nope'"):
        LocalSampler(store).sample_typed_blocks([0], fan, seed=1, prob="nope")
    from bgl.errors import ServerError

    with SamplingClient(addresses, local_stores=()) as client, pytest.raises(ServerError, match="'nope'"):
        client.sample_typed_blocks([0], fan, seed=1, prob="nope")
