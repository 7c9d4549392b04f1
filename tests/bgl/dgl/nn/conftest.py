"""Random graphs and blocks for the layer tests, built edge-for-edge alike in bgl.dgl and in DGL.

Every structure has a hub (many in-edges to one node), isolated nodes and nodes without
in-edges, the cases where a layer's normalisation or reduction could differ from DGL's.
"""
from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch

import bgl.dgl


@dataclass
class Edges:
    """One relation's edges; ``num_src == num_dst`` and ``block=False`` for a plain graph."""

    src: torch.Tensor
    dst: torch.Tensor
    num_src: int
    num_dst: int
    block: bool


def random_edges(seed: int, num_src: int, num_dst: int, num_edges: int, block: bool) -> Edges:
    """Random edges with a hub (dst 0 gets ``num_src // 2`` extra in-edges), the last dst node
    without in-edges and, on a graph, the last three nodes isolated."""
    gen = torch.Generator().manual_seed(seed)
    src_hi = num_src - (0 if block else 3)
    dst_hi = num_dst - (1 if block else 4)
    src = torch.randint(0, src_hi, (num_edges,), generator=gen)
    dst = torch.randint(0, dst_hi, (num_edges,), generator=gen)
    hub_src = torch.randint(0, src_hi, (num_src // 2,), generator=gen)
    src = torch.cat([src, hub_src])
    dst = torch.cat([dst, torch.zeros_like(hub_src)])
    perm = torch.randperm(src.shape[0], generator=gen)  # hub edges spread over the edge ids
    return Edges(src[perm], dst[perm], num_src, num_dst, block)


def bgl_graph(e: Edges):
    if e.block:
        return bgl.dgl.create_block((e.src, e.dst), num_src_nodes=e.num_src, num_dst_nodes=e.num_dst)
    return bgl.dgl.graph((e.src, e.dst), num_nodes=e.num_src)


def dgl_graph(e: Edges):
    import dgl

    if e.block:
        return dgl.create_block((e.src, e.dst), num_src_nodes=e.num_src, num_dst_nodes=e.num_dst)
    return dgl.graph((e.src, e.dst), num_nodes=e.num_src)


TYPED_SIZES = {"user": (30, 10), "item": (20, 6)}  # ntype: (num src, num dst) of the typed block
TYPED_RELATIONS = [("user", "follows", "user"), ("user", "buys", "item"), ("item", "bought-by", "user")]


def typed_edges(seed: int) -> dict:
    gen = torch.Generator().manual_seed(seed)
    out = {}
    for i, (s, r, d) in enumerate(TYPED_RELATIONS):
        n_src, n_dst = TYPED_SIZES[s][0], TYPED_SIZES[d][1] - 1  # last dst of each type: no in-edge
        m = 40 + 10 * i
        out[(s, r, d)] = (torch.randint(0, n_src, (m,), generator=gen), torch.randint(0, n_dst, (m,), generator=gen))
    return out


def typed_block(module, seed: int):
    """The same typed block in ``module`` (``bgl.dgl`` or ``dgl``)."""
    return module.create_block(typed_edges(seed), num_src_nodes={k: v[0] for k, v in TYPED_SIZES.items()},
                               num_dst_nodes={k: v[1] for k, v in TYPED_SIZES.items()})


@pytest.fixture
def build():
    """The builders above, for test modules (conftest modules are not importable by name)."""
    from types import SimpleNamespace

    return SimpleNamespace(random_edges=random_edges, bgl=bgl_graph, dgl=dgl_graph, typed_block=typed_block,
                           typed_edges=typed_edges, typed_sizes=TYPED_SIZES)


@pytest.fixture
def block_edges() -> Edges:
    return random_edges(seed=1, num_src=30, num_dst=12, num_edges=60, block=True)


@pytest.fixture
def graph_edges() -> Edges:
    return random_edges(seed=2, num_src=25, num_dst=25, num_edges=70, block=False)
