"""A DistDGL partition's edge features (edge_feat.dgl) become the imported parts' edge arrays."""
from __future__ import annotations

import numpy as np
import pytest

dgl = pytest.importorskip("dgl")
torch = pytest.importorskip("torch")
from bgl.partition.distdgl.importer import import_distdgl  # noqa: E402


def test_imported_parts_carry_each_edges_features(tmp_path):
    rng = np.random.default_rng(1)
    n, e = 120, 900
    src, dst = rng.integers(0, n, e), rng.integers(0, n, e)
    keep = src != dst
    pairs = np.unique(np.stack([src[keep], dst[keep]], 1), axis=0)
    src, dst = pairs[:, 0], pairs[:, 1]
    g = dgl.graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=n)
    w = rng.random(src.size).astype(np.float32)
    g.edata["w"] = torch.from_numpy(w)
    orig_nids, _ = dgl.distributed.partition_graph(g, "toy", 2, str(tmp_path / "dgl"), part_method="random",
                                                   return_mapping=True)
    book = import_distdgl(tmp_path / "dgl" / "toy.json", tmp_path / "bgl", orig_ids=orig_nids.numpy())
    orig = np.asarray(book.orig_ids)
    weight_of = {(int(s), int(d)): float(x) for s, d, x in zip(src, dst, w)}
    seen = 0
    for k in range(book.num_parts):
        part = book.part_store(k)
        rows = np.repeat(np.arange(part.num_nodes) + part.node_offset, np.diff(part.indptr))
        for s, d, x in zip(orig[np.asarray(part.indices)], orig[rows], part.edge_array("w")):
            assert weight_of[(int(s), int(d))] == float(x)
            seen += 1
    assert seen == src.size
