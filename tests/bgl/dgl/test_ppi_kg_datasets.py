"""``PPIDataset`` (node-link JSON and ``.npy`` files) and the knowledge-graph datasets (dictionaries and triplet
files) from raw files written here: what DGL 2.1 builds from the same files (pinned lane; DGL reads PPI
through networkx), and in both lanes what bgl.dgl reads without DGL."""
from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
import torch

import bgl.dgl as bdgl
from bgl.dgl.data.utils import _get_dgl_url


def _folder(root, name, archive):
    url = _get_dgl_url(f"dataset/{name}.{archive}")
    folder = root / f"{name}_{hashlib.sha1(url.encode()).hexdigest()[:8]}"
    folder.mkdir(parents=True)
    return folder


def write_ppi(root, seed=0):
    """Every split's files under ``root/ppi_<hash>/``: node ids listed out of order, repeated links and
    self-loops, links across graphs (dropped by the subgraphs), 4 features, 121 labels."""
    rng = np.random.default_rng(seed)
    folder = _folder(root, "ppi", "zip")
    for mode, (lo, hi) in {"train": (1, 21), "valid": (21, 23), "test": (23, 25)}.items():
        n = 4 * (hi - lo) + 3
        ids = rng.permutation(n) + 100
        links = [{"source": int(a), "target": int(b)} for a, b in rng.choice(ids, (3 * n, 2))]
        links += links[:3]
        data = {"directed": False, "multigraph": False, "graph": {},
                "nodes": [{"id": int(i), "test": False} for i in ids], "links": links,
                "edges": links}  # DGL's files say "links"; networkx 3.6 (pinned lane) reads "edges"
        (folder / f"{mode}_graph.json").write_text(json.dumps(data))
        np.save(folder / f"{mode}_feats.npy", rng.random((n, 4)))
        np.save(folder / f"{mode}_labels.npy", rng.integers(0, 2, (n, 121)))
        np.save(folder / f"{mode}_graph_id.npy", rng.integers(lo, hi, n))
    return root


def write_kg(root, name="FB15k-237", seed=0, entities=12, relations=4):
    rng = np.random.default_rng(seed)
    folder = _folder(root, name, "tgz")
    ent = [f"/m/{i:03x}" for i in rng.permutation(entities)]
    rel = [f"/rel/r{i}" for i in rng.permutation(relations)]
    (folder / "entities.dict").write_text("".join(f"{i}\t{e}\n" for i, e in enumerate(ent)))
    (folder / "relations.dict").write_text("".join(f"{i}\t{r}\n" for i, r in enumerate(rel)))
    for part, size in (("train", 30), ("valid", 6), ("test", 7)):
        rows = [f"{ent[a]}\t{rel[r]}\t{ent[b]}\n" for a, r, b in zip(rng.integers(0, entities, size),
                                                                  rng.integers(0, relations, size),
                                                                  rng.integers(0, entities, size))]
        (folder / f"{part}.txt").write_text("".join(rows))
    return root


@pytest.mark.parametrize("mode", ["train", "test"])
def test_ppi_matches_dgl(tmp_path, mode, same_graph):
    dgl = pytest.importorskip("dgl", reason="needs DGL (pinned lane) to compare against")
    pytest.importorskip("networkx", reason="DGL reads PPI through networkx")
    theirs = dgl.data.PPIDataset(mode, raw_dir=str(write_ppi(tmp_path / "dgl")))
    ours = bdgl.data.PPIDataset(mode, raw_dir=str(write_ppi(tmp_path / "bgl")))
    assert (len(ours), ours.num_classes, ours.num_labels) == (len(theirs), theirs.num_classes, theirs.num_labels)
    same_graph(ours.graph, theirs.graph)
    for i in range(len(theirs)):
        same_graph(ours[i], theirs[i])


@pytest.mark.parametrize("cls,name,reverse", [("FB15k237Dataset", "FB15k-237", True), ("WN18Dataset", "wn18", False)])
def test_knowledge_graphs_match_dgl(tmp_path, cls, name, reverse, same_graph):
    dgl = pytest.importorskip("dgl", reason="needs DGL (pinned lane) to compare against")
    theirs = getattr(dgl.data, cls)(reverse=reverse, raw_dir=str(write_kg(tmp_path / "dgl", name)), verbose=False)
    ours = getattr(bdgl.data, cls)(reverse=reverse, raw_dir=str(write_kg(tmp_path / "bgl", name)), verbose=False)
    assert (len(ours), ours.num_nodes, ours.num_rels, ours.name) == (len(theirs), theirs.num_nodes, theirs.num_rels,
                                                                     theirs.name)
    same_graph(ours[0], theirs[0])


def test_ppi_and_knowledge_graph_without_dgl(tmp_path):
    ppi = bdgl.data.PPIDataset("valid", raw_dir=str(write_ppi(tmp_path)))
    g = ppi[0]
    assert len(ppi) == 2 and ppi.num_classes == 121 and g.ndata["label"].dtype == torch.float32
    big_src, big_dst = ppi.graph.edges()
    pairs = set(zip(big_src.tolist(), big_dst.tolist()))
    assert all((v, u) in pairs for u, v in pairs) and len(pairs) == ppi.graph.num_edges()  # both ways, once
    legacy = bdgl.data.LegacyPPIDataset("valid", raw_dir=str(tmp_path))  # DGL's item: (graph, feat, label)
    assert [torch.equal(x, y) for x, y in zip(legacy[1], (ppi[1], ppi[1].ndata["feat"], ppi[1].ndata["label"]))
            if isinstance(y, torch.Tensor)] == [True, True]
    batch = next(iter(bdgl.dataloading.GraphDataLoader(ppi, batch_size=2)))  # as DGL's GAT PPI example batches
    assert batch.batch_size == 2 and batch.ndata["feat"].shape == (ppi[0].num_nodes() + ppi[1].num_nodes(), 4)
    kg = bdgl.data.FB15kDataset(raw_dir=str(write_kg(tmp_path, "FB15k")), verbose=False)
    h = kg[0]
    assert h.num_edges() == 2 * 43 and int(h.edata["train_edge_mask"].sum()) == 30
    assert int(h.edata["train_mask"].sum()) == 60 and int(h.edata["etype"].max()) < 2 * kg.num_rels
    with pytest.raises(FileNotFoundError, match="downloads nothing"):
        bdgl.data.WN18Dataset(raw_dir=str(tmp_path), verbose=False)
