"""Fixtures of the bgl.dgl tests: random test graphs with the shapes that break message passing: a hub that receives many
edges, a hub that sends many, parallel edges, self-loops, isolated and zero-in-degree nodes."""
from __future__ import annotations

import pytest
import torch


def _hub_edges(num_nodes: int = 40, num_edges: int = 160, seed: int = 0, num_dst=None):
    """(src, dst) int64 [E]: a third of the edges into node 0, a sixth out of node 1, the last
    quarter of the nodes isolated (as dst and src) and the dst ids below ``num_dst`` when set."""
    g = torch.Generator().manual_seed(seed)
    live = max(2, num_nodes * 3 // 4)
    dst_hi = live if num_dst is None else min(num_dst, live)
    src = torch.randint(0, live, (num_edges,), generator=g)
    dst = torch.randint(0, dst_hi, (num_edges,), generator=g)
    dst[: num_edges // 3] = 0
    src[num_edges // 3: num_edges // 2] = 1
    dst[(dst == 2) | (dst == 3)] = 0  # nodes 2 and 3: no in-edges
    src[-4:], dst[-4:] = src[0], dst[0]  # parallel edges
    perm = torch.randperm(num_edges, generator=g)  # edge ids not sorted by dst
    return src[perm], dst[perm]


@pytest.fixture(scope="session")
def hub_edges():
    """:func:`_hub_edges`, for tests and their graph builders."""
    return _hub_edges


def _graph_state(g) -> dict:
    """Everything a DGL graph (real or bgl.dgl) says of itself, as plain lists: node counts and edge types,
    each type's edges in id order, each type's node and edge fields (compare two with ``==``)."""
    out = {"nodes": {nt: g.num_nodes(nt) for nt in g.ntypes}, "etypes": sorted(g.canonical_etypes)}
    for c in g.canonical_etypes:
        out[c] = tuple(t.tolist() for t in g.edges(etype=c, order="eid"))
        out[(c, "data")] = {k: v.tolist() for k, v in sorted(g.edges[c].data.items())}
    for nt in g.ntypes:
        out[(nt, "data")] = {k: v.tolist() for k, v in sorted(g.nodes[nt].data.items())}
    return out


@pytest.fixture(scope="session")
def graph_state():
    """:func:`_graph_state`, for the tests that compare bgl.dgl's graphs with DGL's."""
    return _graph_state


def _states_close(a: dict, b: dict) -> None:
    """Two :func:`_graph_state` results alike: structure equal, fields within float32 tolerance (NaN where NaN)."""
    assert a.keys() == b.keys()
    for key in a:
        if isinstance(a[key], dict):
            assert a[key].keys() == b[key].keys(), key
            for name in a[key]:
                torch.testing.assert_close(torch.tensor(a[key][name]), torch.tensor(b[key][name]), equal_nan=True,
                                           msg=str((key, name)))
        else:
            assert a[key] == b[key], key


@pytest.fixture(scope="session")
def states_close():
    """:func:`_states_close`, for the tests that compare bgl.dgl's graphs with DGL's."""
    return _states_close


def _user_item(lib, seed: int, users: int, items: int, edges: int, edge_field: str = "w"):
    """A user-item graph of ``lib`` (DGL or bgl.dgl): ``rates`` and its reverse ``rated-by``, user features
    ``x`` [users, 2] and ``rates`` edge field ``edge_field``, all drawn from ``seed``."""
    gen = torch.Generator().manual_seed(seed)
    u, i = torch.randint(0, users, (edges,), generator=gen), torch.randint(0, items, (edges,), generator=gen)
    g = lib.heterograph({("user", "rates", "item"): (u, i), ("item", "rated-by", "user"): (i, u)},
                        num_nodes_dict={"user": users, "item": items})
    g.nodes["user"].data["x"] = torch.randn(users, 2, generator=gen)
    g.edges["rates"].data[edge_field] = torch.rand(edges, generator=gen)
    return g


@pytest.fixture(scope="session")
def user_item():
    """:func:`_user_item`, for the tests that compare typed bgl.dgl graphs with DGL's."""
    return _user_item


def _same_graph(a, b) -> None:
    """Assert two homogeneous graphs (real DGL or bgl.dgl) are equal: node count, edges in id order, and every
    node and edge field (names in order, dtype, values)."""
    assert a.num_nodes() == b.num_nodes() and all(torch.equal(x, y) for x, y in zip(a.edges(), b.edges()))
    for ours, theirs in ((a.ndata, b.ndata), (a.edata, b.edata)):
        assert list(ours.keys()) == list(theirs.keys())
        for key in theirs.keys():
            assert ours[key].dtype == theirs[key].dtype and torch.equal(ours[key], theirs[key]), key


@pytest.fixture(scope="session")
def same_graph():
    """:func:`_same_graph`, for the dataset tests that compare bgl.dgl's graphs with DGL's."""
    return _same_graph
