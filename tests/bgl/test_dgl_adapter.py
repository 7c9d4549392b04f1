"""bgl/dgl/real_dgl/blocks.py's heterogeneous blocks: built straight from DGL's index, equal to ``dgl.create_block``'s."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

dgl = pytest.importorskip("dgl")

from bgl.blocks import Block  # noqa: E402
from bgl.dgl.real_dgl.blocks import to_dgl_hetero_block  # noqa: E402
from bgl.schema import EdgeType, GraphSchema, NodeType  # noqa: E402

# Types and relations out of DGL's sorted order; "author" gets no node in the batch (so "writes"
# has no edge and no node on either side), "word" no dst node (so "has" has no dst node) and
# "venue", between two types' id ranges, has no node in the graph and no relation.
SCHEMA = GraphSchema(
    (NodeType("word", 0, 8), NodeType("venue", 8, 0), NodeType("paper", 8, 12), NodeType("author", 20, 3)),
    (EdgeType("paper", "cites", "paper"), EdgeType("word", "in", "paper"), EdgeType("paper", "has", "word"),
     EdgeType("author", "writes", "paper")))


def typed_block(seed: int, grouped: bool, with_edge_ids: bool) -> Block:
    """A batch's typed block: paper seeds, paper and word src nodes, random edges of cites/in."""
    rng = np.random.default_rng(seed)
    dst = rng.permutation(np.arange(8, 20))[:5]
    src = np.concatenate([dst, rng.permutation(np.setdiff1d(np.arange(20), dst))[:9]])
    src_type = SCHEMA.type_of(src)
    rel_src = {0: 2, 1: 0}  # relation id -> src type index (cites: paper, in: word)
    indices, etypes, indptr = [], [], [0]
    for _ in dst:
        row = []
        for r, t in rel_src.items():
            cands = np.flatnonzero(src_type == t)
            picks = rng.choice(cands, size=int(rng.integers(0, 4)), replace=False)
            row += [(int(u), r) for u in picks]
        if not grouped:
            row = [row[i] for i in rng.permutation(len(row))]
        indices += [u for u, _ in row]
        etypes += [r for _, r in row]
        indptr.append(len(indices))
    return Block(torch.from_numpy(src), dst.shape[0], torch.tensor(indptr), torch.tensor(indices, dtype=torch.int64),
                 torch.from_numpy(rng.permutation(1000)[:len(indices)]) if with_edge_ids else None,
                 srcdata={"feat": {"paper": torch.randn(int((src_type == 2).sum()), 3),
                                   "word": torch.randn(int((src_type == 0).sum()), 2).double()}},
                 dstdata={"label": {"paper": torch.arange(dst.shape[0])}},
                 etypes=torch.tensor(etypes, dtype=torch.int64), schema=SCHEMA)


def create_block_reference(block: Block):
    """The same block through ``dgl.create_block``: one CSC per relation, frames assigned after."""
    src = block.src_ids.numpy()
    types = SCHEMA.type_of(src)
    pos = np.zeros(src.shape[0], np.int64)  # position of each src node among its type's
    for t in range(len(SCHEMA.ntypes)):
        pos[types == t] = np.arange(int((types == t).sum()))
    dst_of_edge = np.repeat(np.arange(block.num_dst), np.diff(block.indptr.numpy()))
    counts_src = {nt: int((types == t).sum()) for t, nt in enumerate(SCHEMA.ntypes)}
    counts_dst = {nt: int((types[:block.num_dst] == t).sum()) for t, nt in enumerate(SCHEMA.ntypes)}
    data, eids = {}, {}
    for r, canon in enumerate(SCHEMA.canonical_etypes):
        sel = np.flatnonzero(block.etypes.numpy() == r)
        dst_pos = pos[dst_of_edge[sel]]
        indptr = np.concatenate([[0], np.cumsum(np.bincount(dst_pos, minlength=counts_dst[canon[2]]))])
        data[canon] = ("csc", (torch.from_numpy(indptr), torch.from_numpy(pos[block.indices.numpy()[sel]]),
                               torch.arange(sel.shape[0])))
        eids[canon] = torch.from_numpy(sel) if block.edge_ids is None else block.edge_ids[sel]
    out = dgl.create_block(data, num_src_nodes=counts_src, num_dst_nodes=counts_dst)
    for t, nt in enumerate(SCHEMA.ntypes):
        ids = torch.from_numpy(src[types == t] - SCHEMA.offsets[t])
        out.srcnodes[nt].data[dgl.NID] = ids
        out.dstnodes[nt].data[dgl.NID] = ids[:counts_dst[nt]]
    for nt, rows in block.srcdata["feat"].items():
        out.srcnodes[nt].data["feat"] = rows
    out.dstnodes["paper"].data["label"] = block.dstdata["label"]["paper"]
    for canon, e in eids.items():
        out.edges[canon].data[dgl.EID] = e
    return out


def assert_frames_equal(got, want):
    assert list(got.keys()) == list(want.keys())
    for key in want.keys():
        assert got[key].dtype == want[key].dtype and torch.equal(got[key], want[key]), key


@pytest.mark.parametrize("grouped", [True, False], ids=["rows-grouped-by-relation", "rows-shuffled"])
@pytest.mark.parametrize("with_edge_ids", [True, False], ids=["edge-ids", "csc-positions"])
def test_direct_hetero_block_equals_create_blocks_field_by_field(grouped, with_edge_ids):
    for seed in range(3):
        block = typed_block(seed, grouped, with_edge_ids)
        got, want = to_dgl_hetero_block(block, SCHEMA), create_block_reference(block)
        assert type(got) is type(want) and got.is_block
        assert got.ntypes == want.ntypes and got.srctypes == want.srctypes and got.dsttypes == want.dsttypes
        assert got.etypes == want.etypes and got.canonical_etypes == want.canonical_etypes
        assert got.idtype == want.idtype and got.device == want.device
        assert got.num_src_nodes("author") == got.num_dst_nodes("author") == got.num_src_nodes("venue") == 0
        assert got.num_dst_nodes("word") == 0 and got.num_src_nodes("word") > 0
        assert got.num_edges(("author", "writes", "paper")) == got.num_edges(("paper", "has", "word")) == 0
        assert list(got.metagraph().edges(keys=True)) == list(want.metagraph().edges(keys=True))
        for nt in want.ntypes:
            assert got.num_src_nodes(nt) == want.num_src_nodes(nt) and got.num_dst_nodes(nt) == want.num_dst_nodes(nt)
            assert_frames_equal(got.srcnodes[nt].data, want.srcnodes[nt].data)
            assert_frames_equal(got.dstnodes[nt].data, want.dstnodes[nt].data)
        for canon in want.canonical_etypes:
            assert got.formats() == want.formats()
            for g, w in zip(got.edges(form="all", order="eid", etype=canon), want.edges(form="all", order="eid", etype=canon)):
                assert torch.equal(g, w), canon
            for g, w in zip(got.adj_tensors("csc", etype=canon), want.adj_tensors("csc", etype=canon)):
                assert torch.equal(g, w), canon
            assert_frames_equal(got.edges[canon].data, want.edges[canon].data)
        # two blocks of one schema share the schema's bookkeeping, never their graphs or frames
        other = to_dgl_hetero_block(typed_block(seed + 10, grouped, with_edge_ids), SCHEMA)
        assert got.srcnodes["paper"].data["feat"] is block.srcdata["feat"]["paper"]
        assert other._graph is not got._graph and other.srcnodes["paper"].data is not got.srcnodes["paper"].data


def test_a_broken_typed_block_is_refused_naming_the_edge():
    block = typed_block(0, True, False)
    wrong = block.etypes.clone()
    p = int(torch.nonzero(wrong == 0)[0])
    wrong[p] = 1  # a paper -> paper edge labelled word -> paper
    with pytest.raises(ValueError, match=f"block edge {p} \\(relation id 1\\)"):
        to_dgl_hetero_block(Block(block.src_ids, block.num_dst, block.indptr, block.indices, etypes=wrong,
                                  schema=SCHEMA), SCHEMA)
    wrong = block.etypes.clone()
    wrong[p] = 4
    with pytest.raises(ValueError, match=f"block edge {p} \\(relation id 4\\)"):
        to_dgl_hetero_block(Block(block.src_ids, block.num_dst, block.indptr, block.indices, etypes=wrong,
                                  schema=SCHEMA), SCHEMA)
    far = block.indices.clone()
    far[p] = block.num_src
    with pytest.raises(ValueError, match=f"block edge {p} "):
        to_dgl_hetero_block(Block(block.src_ids, block.num_dst, block.indptr, far, etypes=block.etypes,
                                  schema=SCHEMA), SCHEMA)
    ids = block.src_ids.clone()
    ids[3] = 23
    with pytest.raises(ValueError, match="src node 3 has global id 23"):
        to_dgl_hetero_block(Block(ids, block.num_dst, block.indptr, block.indices, etypes=block.etypes,
                                  schema=SCHEMA), SCHEMA)


def conversion_outcome(block):
    """What ``to_dgl_hetero_block`` makes of ``block``: its per-type NID ids, or the error it raises."""
    try:
        got = to_dgl_hetero_block(block, SCHEMA)
    except ValueError as e:
        return str(e)
    return {nt: got.srcnodes[nt].data[dgl.NID].tolist() for nt in got.ntypes}


@pytest.mark.parametrize("with_edge_ids", [True, False], ids=["edge-ids", "csc-positions"])
def test_the_loaders_type_split_gives_the_same_block_and_input_nodes_share_its_ids(with_edge_ids):
    """The transfer stage splits block 0's src ids by type for ``input_nodes`` and keeps the split on the
    block (``typed_input_nodes``); the DGL block built from it is the block built without, and its ``NID``
    ids share ``input_nodes``' array, as DGL's ``input_nodes`` are its ``blocks[0].srcdata[NID]``.  A split
    of other ids (another length, or src ids written to the block after the split) is not used."""
    from bgl.loader.typed import by_type, split_by_type, typed_input_nodes

    for seed in range(3):
        block = typed_block(seed, True, with_edge_ids)
        want = create_block_reference(block)
        input_nodes = typed_input_nodes(block, SCHEMA, keep_split=True)
        assert block.type_split is not None
        assert {nt: ids.tolist() for nt, ids in input_nodes.items()} == \
            {nt: ids.tolist() for nt, ids in by_type(block.src_ids, SCHEMA).items()}
        other_ids = np.arange(8, 9 + block.num_src) % 20  # a split of other ids, one more
        stale = dataclasses.replace(block, type_split=split_by_type(other_ids, SCHEMA))
        for got in (to_dgl_hetero_block(block, SCHEMA), to_dgl_hetero_block(stale, SCHEMA)):
            for nt in want.ntypes:
                assert_frames_equal(got.srcnodes[nt].data, want.srcnodes[nt].data)
                assert_frames_equal(got.dstnodes[nt].data, want.dstnodes[nt].data)
            for canon in want.canonical_etypes:
                for g, w in zip(got.adj_tensors("csc", etype=canon), want.adj_tensors("csc", etype=canon)):
                    assert torch.equal(g, w), canon
                assert_frames_equal(got.edges[canon].data, want.edges[canon].data)
        got = to_dgl_hetero_block(block, SCHEMA)
        for nt, ids in input_nodes.items():
            if ids.numel():
                assert got.srcnodes[nt].data[dgl.NID].data_ptr() == ids.data_ptr()
        # src ids written after the split, of the same length: the split is not theirs, so it is not used
        moved = dataclasses.replace(block, src_ids=torch.roll(block.src_ids, 1))
        assert moved.type_split is block.type_split
        assert conversion_outcome(moved) == conversion_outcome(dataclasses.replace(moved, type_split=None))


def test_a_frame_takes_its_lazy_columns_as_they_are_and_checks_tensor_rows():
    from dgl.frame import Column, Frame

    from bgl.dgl.real_dgl.blocks import frame_of

    storage = torch.randn(10, 3)
    ids = torch.tensor([4, 1, 7])
    lazy = Column(storage, None, ids, None)
    fields = {"_ID": ids, "feat": lazy, "label": torch.arange(3)}
    ours, dgls = frame_of(dict(fields), 3), Frame(dict(fields), num_rows=3)
    assert ours._columns["feat"] is lazy  # not cloned: the column was made for this frame
    assert ours.num_rows == dgls.num_rows == 3 and list(ours.keys()) == list(dgls.keys())
    assert all(torch.equal(ours[k], dgls[k]) for k in fields)
    assert torch.equal(ours["feat"], storage[ids])
    with pytest.raises(ValueError, match="'label' has 4 rows, the frame 3"):
        frame_of({"label": torch.arange(4)}, 3)
