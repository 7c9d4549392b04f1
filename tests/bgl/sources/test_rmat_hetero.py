"""Typed R-MAT (``rmat-hetero:SCALE``): counter-based per-relation streams, the store of the same DGL heterograph."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import bgl
from bgl.cli import main
from bgl.errors import IngestError
from bgl.sources import _rmat_kernels as K
from bgl.sources.typed.rmat import RELATION_EIGHTHS, rmat_hetero_source

A, B, C, _ = (0.57, 0.19, 0.19, 0.05)


@pytest.mark.parametrize("shift", [0, 1, 3])
def test_typed_kernel_is_the_untyped_draw_cut_to_each_types_size(shift):
    """rmat_typed_edges = rmat_edges' (u, v) with the smaller end keeping its top levels (>> shift)."""
    scale, m = 10, 5000
    rng = np.random.default_rng(0)
    ident = np.arange(1 << scale, dtype=np.int64)
    s0, d0 = np.empty(m, np.int64), np.empty(m, np.int64)
    K.rmat_edges(17, m, scale, A, A + B, A + B + C, 5, ident, s0, d0)
    perm_src = rng.permutation(1 << scale).astype(np.int64)
    perm_dst = rng.permutation(1 << (scale - shift)).astype(np.int64)
    s1, d1 = np.empty(m, np.int64), np.empty(m, np.int64)
    K.rmat_typed_edges(17, m, scale, 0, shift, A, A + B, A + B + C, 5, perm_src, perm_dst, s1, d1)
    assert np.array_equal(s1, perm_src[s0]) and np.array_equal(d1, perm_dst[d0 >> shift])


def test_the_store_is_the_store_of_the_same_dgl_heterograph(tmp_path, assert_same_typed_store):
    dgl = pytest.importorskip("dgl")
    store = bgl.ingest("rmat-hetero:6", tmp_path / "r", feat_dim=8, num_classes=3, seed=2)
    src = rmat_hetero_source(6, seed=2, feat_dim=8, num_classes=3)
    rel = {e.canonical: tuple(np.concatenate(x) for x in zip(*chunks()))
           for e, chunks in zip(src.schema.edge_types, src.relations)}
    counts = {t.name: t.count for t in src.schema.node_types}
    g = dgl.heterograph({c: (torch.from_numpy(s), torch.from_numpy(d)) for c, (s, d) in rel.items()},
                        num_nodes_dict=counts)
    g.nodes["paper"].data["feat"] = torch.from_numpy(np.array(store.type_feat["paper"]))
    g.nodes["paper"].data["label"] = torch.from_numpy(np.array(store.type_label["paper"]))
    for name in ("train", "val", "test"):
        mask = torch.zeros(counts["paper"], dtype=torch.bool)
        mask[torch.from_numpy(np.array(store.type_splits["paper"][name]))] = True
        g.nodes["paper"].data[f"{name}_mask"] = mask
    assert_same_typed_store(store, bgl.ingest(g, tmp_path / "dgl"))
    assert counts == {"author": 32, "field": 4, "paper": 64}
    assert [e.count for e in store.schema.edge_types] == [16 * 64 * RELATION_EIGHTHS[c] // 8 for c in rel]
    assert store.type_label["paper"].max() == 2 and store.type_feat["paper"].shape == (64, 8)


def test_chunks_and_buckets_do_not_change_the_store_but_the_seed_does(tmp_path, assert_same_typed_store):
    from bgl.sources.typed.source import with_reverse, write_typed_source

    a = bgl.ingest("rmat-hetero:7", tmp_path / "a", add_reverse=True)
    b = write_typed_source(with_reverse(rmat_hetero_source(7, chunk_edges=333)), tmp_path / "b", fill_bytes=4000)
    assert b.meta.extra["csc_build"]["buckets"] > 1
    assert_same_typed_store(a, b)
    c = bgl.ingest("rmat-hetero:7", tmp_path / "c", add_reverse=True, seed=1)
    assert not np.array_equal(np.asarray(a.indices), np.asarray(c.indices))


def test_the_cli_generates_it_and_bad_scales_are_named(tmp_path, capsys):
    assert main(["ingest", "rmat-hetero:5", str(tmp_path / "s"), "--add-reverse", "--edge-factor", "8",
                 "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "edge type    (paper, rev_writes, author): 64" in out and "(paper, cites, paper): 320" in out
    with pytest.raises(IngestError, match=r"typed R-MAT scale must be in \[4, 40\], got 2"):
        bgl.ingest("rmat-hetero:2", tmp_path / "t")
    with pytest.raises(IngestError, match="'rmat-hetero:SCALE'"):
        bgl.ingest("rmat-hetero:x", tmp_path / "t")
    with pytest.raises(IngestError, match="symmetrize"):
        bgl.ingest("rmat-hetero:5", tmp_path / "t", symmetrize=True)
    assert not (tmp_path / "t").exists()
