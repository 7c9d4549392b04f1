"""bgl/loader/typed.py: global ids split into DGL's ``{ntype: type-local ids}``."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from bgl.blocks import Block
from bgl.loader.typed import by_type, typed_input_nodes
from bgl.schema import EdgeType, GraphSchema, NodeType

# An empty type between two others and one at the end: the type search must skip both.
SCHEMA = GraphSchema((NodeType("a", 0, 5), NodeType("empty", 5, 0), NodeType("b", 5, 7), NodeType("c", 12, 4),
                      NodeType("last", 16, 0)), (EdgeType("a", "to", "b"),))


@pytest.mark.parametrize("keep_empty", [True, False])
def test_by_type_keeps_each_types_ids_in_the_order_given(keep_empty):
    rng = np.random.default_rng(0)
    gids = rng.integers(0, 16, 200)
    got = by_type(torch.from_numpy(gids), SCHEMA, keep_empty=keep_empty)
    want = {}
    for t in SCHEMA.node_types:
        mine = gids[(gids >= t.offset) & (gids < t.offset + t.count)] - t.offset
        if keep_empty or mine.size:
            want[t.name] = mine
    assert list(got) == list(want)
    for nt, ids in want.items():
        assert got[nt].dtype == torch.int64 and np.array_equal(got[nt].numpy(), ids), nt


def test_by_type_of_no_ids_and_of_int32_ids():
    assert {nt: ids.numel() for nt, ids in by_type(torch.zeros(0, dtype=torch.int64), SCHEMA).items()} == \
        dict.fromkeys(SCHEMA.ntypes, 0)
    got = by_type(torch.tensor([13, 0, 6], dtype=torch.int32), SCHEMA, keep_empty=False)
    assert {nt: ids.tolist() for nt, ids in got.items()} == {"a": [0], "b": [1], "c": [1]}


def test_by_type_names_an_id_outside_the_graph():
    with pytest.raises(ValueError, match="node id 16 is outside the graph's global ids \\[0, 16\\)"):
        by_type(torch.tensor([3, 16]), SCHEMA)
    with pytest.raises(ValueError, match="node id -1 "):
        by_type(torch.tensor([-1]), SCHEMA)


@pytest.mark.parametrize("keep_split", [True, False])
def test_typed_input_nodes_are_by_type_and_the_split_is_kept_only_when_asked(keep_split):
    """``input_nodes`` of a typed batch; the split stays on the block only for a frontend that converts it
    next: a bgl block the user keeps holds no split (16 B per src node more)."""
    gids = np.array([13, 0, 6, 12, 3, 7, 15])
    block = Block(torch.from_numpy(gids), 3, torch.tensor([0, 1, 1, 2]), torch.tensor([3, 4]))
    got = typed_input_nodes(block, SCHEMA, keep_split=keep_split)
    assert {nt: ids.tolist() for nt, ids in got.items()} == \
        {nt: ids.tolist() for nt, ids in by_type(block.src_ids, SCHEMA).items()}
    assert (block.type_split is not None) == keep_split
    if keep_split:  # each type's dst nodes: its ids among the first num_dst
        assert block.type_split.num_dst.tolist() == [1, 0, 1, 1, 0]
    with pytest.raises(ValueError, match="node id 16 is outside"):
        typed_input_nodes(Block(torch.tensor([3, 16]), 1, torch.tensor([0, 0]), torch.zeros(0, dtype=torch.int64)),
                          SCHEMA, keep_split=keep_split)
