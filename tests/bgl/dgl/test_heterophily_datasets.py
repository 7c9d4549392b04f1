"""The heterophilous graphs (Platonov et al.'s ``.npz``) and Geom-GCN's text files (Chameleon ... Actor),
written small here: DGL 2.1's graphs from the same files (pinned lane), bgl's reading in both lanes."""
from __future__ import annotations

import hashlib

import numpy as np
import pytest
import torch

import bgl.dgl as bdgl
from bgl.dgl.data.utils import _get_dgl_url

HETERO_URL = "https://github.com/yandex-research/heterophilous-graphs/raw/main/data/{}.npz"


def _folder(root, name, url):
    folder = root / f"{name}_{hashlib.sha1(url.encode()).hexdigest()[:8]}"
    folder.mkdir(parents=True)
    return folder


def write_heterophilous(root, name="roman_empire", n=10, seed=0):
    rng = np.random.default_rng(seed)
    edges = rng.integers(0, n, (18, 2))
    edges[:2] = [[1, 2], [2, 1]]  # both directions already: to_bidirected keeps one of each
    np.savez(_folder(root, name, HETERO_URL.format(name)) / f"{name}.npz", edges=edges,
             node_features=rng.random((n, 3), dtype=np.float32), node_labels=rng.integers(0, 3, n),
             train_masks=rng.random((10, n)) < 0.5, val_masks=rng.random((10, n)) < 0.3,
             test_masks=rng.random((10, n)) < 0.2)
    return root


def write_geom(root, name="texas", n=9, seed=0):
    rng = np.random.default_rng(seed)
    folder = _folder(root, name, _get_dgl_url(f"dataset/{name}.zip"))
    if name == "actor":  # word indices, listed out of node order
        rows = [f"{i}\t{','.join(map(str, sorted(set(rng.integers(0, 7, 3).tolist()))))}\t{rng.integers(0, 5)}"
                for i in rng.permutation(n)]
    else:
        rows = [f"{i}\t{','.join(str(float(v)) for v in rng.integers(0, 2, 4))}\t{rng.integers(0, 5)}" for i in range(n)]
    (folder / "out1_node_feature_label.txt").write_text("node_id\tfeature\tlabel\n" + "\n".join(rows) + "\n")
    edges = [f"{a}\t{b}" for a, b in rng.integers(0, n, (15, 2))]
    (folder / "out1_graph_edges.txt").write_text("node_id\tnode_id\n" + "\n".join(edges) + "\n")
    for i in range(10):
        np.savez(folder / f"{name}_split_0.6_0.2_{i}.npz", train_mask=rng.integers(0, 2, n),
                 val_mask=rng.integers(0, 2, n), test_mask=rng.integers(0, 2, n))
    return root


@pytest.mark.parametrize("cls,name", [("RomanEmpireDataset", "roman_empire"), ("TexasDataset", "texas"),
                                      ("ActorDataset", "actor")])
def test_heterophily_datasets_match_dgl(tmp_path, cls, name, same_graph):
    dgl = pytest.importorskip("dgl", reason="needs DGL (pinned lane) to compare against")
    write = write_geom if cls != "RomanEmpireDataset" else write_heterophilous
    theirs = getattr(dgl.data, cls)(raw_dir=str(write(tmp_path / "dgl", name)), verbose=False)
    ours = getattr(bdgl.data, cls)(raw_dir=str(write(tmp_path / "bgl", name)), verbose=False)
    assert (len(ours), ours.num_classes, ours.name) == (len(theirs), theirs.num_classes, theirs.name)
    same_graph(ours[0], theirs[0])


def test_heterophily_datasets_without_dgl(tmp_path):
    g = bdgl.data.TolokersDataset(raw_dir=str(write_heterophilous(tmp_path, "tolokers")))[0]
    assert g.ndata["train_mask"].shape == (10, 10) and g.ndata["feat"].dtype == torch.float32
    pairs = set(zip(*(t.tolist() for t in g.edges())))
    assert all((v, u) in pairs for u, v in pairs) and len(pairs) == g.num_edges()
    w = bdgl.data.WisconsinDataset(raw_dir=str(write_geom(tmp_path, "wisconsin")))
    assert w[0].ndata["test_mask"].dtype == torch.bool and w[0].ndata["feat"].shape == (9, 4) and w.num_classes <= 5
    with pytest.raises(FileNotFoundError, match="questions.npz"):
        bdgl.data.QuestionsDataset(raw_dir=str(tmp_path))
    with pytest.raises(FileNotFoundError, match="cornell.zip"):
        bdgl.data.CornellDataset(raw_dir=str(tmp_path))
