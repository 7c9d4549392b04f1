"""A heterogeneous DistDGL partition, imported with ``bgl partition import-distdgl``: every node and
edge of every type once, each type's rows, served by graph servers as a typed partition."""
from __future__ import annotations

import json

import numpy as np
import pytest

from bgl.errors import PartitionFormatError

dgl = pytest.importorskip("dgl")
torch = pytest.importorskip("torch")
from bgl.partition.distdgl.importer import import_distdgl  # noqa: E402
from bgl.sampler.local import LocalSampler  # noqa: E402


def heterograph(seed=0):
    gen = torch.Generator().manual_seed(seed)
    g = dgl.heterograph({
        ("author", "writes", "paper"): (torch.randint(0, 20, (100,), generator=gen),
                                        torch.randint(0, 30, (100,), generator=gen)),
        ("paper", "cites", "paper"): (torch.randint(0, 30, (80,), generator=gen),
                                      torch.randint(0, 30, (80,), generator=gen)),
        ("paper", "by", "author"): (torch.randint(0, 30, (60,), generator=gen),
                                    torch.randint(0, 20, (60,), generator=gen)),
    }, num_nodes_dict={"paper": 30, "author": 20})
    g.nodes["paper"].data["feat"] = torch.randn(30, 4, generator=gen)
    g.nodes["paper"].data["label"] = torch.randint(0, 3, (30,), generator=gen)
    g.nodes["paper"].data["train_mask"] = torch.arange(30) % 2 == 0
    g.nodes["author"].data["feat"] = torch.randn(20, 2, generator=gen).half()  # own width and dtype
    return g


@pytest.fixture(scope="module")
def distdgl_hetero(tmp_path_factory):
    out = tmp_path_factory.mktemp("distdgl_hetero")
    g = heterograph()
    nmap, _ = dgl.distributed.partition_graph(g, "h", 2, str(out / "dgl"), part_method="random",
                                              return_mapping=True)
    np.savez(out / "orig.npz", **{nt: ids.numpy() for nt, ids in nmap.items()})
    return g, out / "dgl" / "h.json", out


def test_every_node_and_edge_of_every_type_once(distdgl_hetero):
    g, config, out = distdgl_hetero
    book = import_distdgl(config, out / "bgl", orig_ids=out / "orig.npz")
    schema, orig = book.schema, np.asarray(book.orig_ids)
    assert book.meta["version"] == 2 and schema.ntypes == g.ntypes
    assert schema.canonical_etypes == sorted(g.canonical_etypes, key=lambda c: ":".join(c))
    assert np.array_equal(np.sort(orig), np.arange(book.num_nodes))
    cfg = json.loads(config.read_text())
    T = len(schema.node_types)
    for t, nt in enumerate(schema.ntypes):  # DGL's node_map is the partition's type_bounds
        assert [[int(book.type_bounds[k * T + t]), int(book.type_bounds[k * T + t + 1])] for k in range(2)] \
            == cfg["node_map"][nt]
    for r, canon in enumerate(schema.canonical_etypes):
        got = []
        for k in range(book.num_parts):
            ps = book.part_store(k)
            ptr, et = np.asarray(ps.indptr), np.asarray(ps.etype)
            assert all(np.all(np.diff(et[ptr[v]:ptr[v + 1]].astype(int)) >= 0) for v in range(ps.num_nodes))
            dst = np.repeat(np.arange(ps.num_nodes) + ps.node_offset, np.diff(ptr))[et == r]
            src = np.asarray(ps.indices)[et == r]
            assert np.array_equal(book.type_of(src), np.full(src.size, schema.ntype_id(canon[0])))
            got += zip((orig[src] - schema.node_type(canon[0]).offset).tolist(),
                       (orig[dst] - schema.node_type(canon[2]).offset).tolist())
        u, v = g.edges(etype=canon)
        assert sorted(got) == sorted(zip(u.tolist(), v.tolist())), canon
    for nt in ("paper", "author"):
        for k in range(book.num_parts):
            ps = book.part_store(k)
            t = ps.schema.ntype_id(nt)
            lo = int(book.type_bounds[k * T + t])
            local = book.to_orig(np.arange(lo, lo + ps.schema.node_types[t].count))[1]
            want = g.nodes[nt].data["feat"][torch.from_numpy(local)].numpy()
            assert ps.type_feat[nt].dtype == want.dtype and np.array_equal(ps.type_feat[nt], want)
    train = book.to_orig(book.type_split("paper", "train"))[1]
    assert np.array_equal(np.sort(train), np.arange(0, 30, 2))
    # a part store samples its nodes' full typed neighbourhoods, ids in the partition's space
    seeds = np.arange(book.bounds[1], book.bounds[2])
    block = LocalSampler(book.part_store(1)).sample_typed_blocks(seeds, [np.full(3, -1)], seed=0)[0]
    assert block.etypes.numel() == book.meta["parts"][1]["num_edges"]


def test_the_cli_imports_with_identity_ids_without_the_mapping(distdgl_hetero):
    g, config, out = distdgl_hetero
    from bgl.cli import main
    from bgl.partition import open_partition

    assert main(["partition", "import-distdgl", str(config), str(out / "cli")]) == 0

    book = open_partition(out / "cli")
    types, local = book.to_orig(np.arange(book.num_nodes))
    for t in range(len(book.schema.node_types)):  # per-type shuffled ids, in (part, id) order
        assert np.array_equal(local[types == t], np.arange(book.schema.node_types[t].count))


def test_bad_typed_imports_are_named(distdgl_hetero, tmp_path):
    g, config, out = distdgl_hetero
    with pytest.raises(PartitionFormatError, match="orig ids of node type 'author'"):
        import_distdgl(config, tmp_path / "a", orig_ids={"paper": np.arange(30), "author": np.zeros(20, int)})
    g2 = heterograph(1)
    g2.edges["cites"].data["w"] = torch.rand(g2.num_edges("cites"))
    dgl.distributed.partition_graph(g2, "e", 2, str(tmp_path / "dgl"), part_method="random")
    with pytest.raises(PartitionFormatError, match="edge features of a heterogeneous partition"):
        import_distdgl(tmp_path / "dgl" / "e.json", tmp_path / "b")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
