"""The single-graph benchmarks read from DGL's raw files (GNN-benchmark ``.npz``, Wiki-CS ``data.json``,
GraphSAINT's Flickr / Yelp files), written small here: DGL 2.1's graphs from the same files (pinned lane),
and bgl's reading of them in both lanes."""
from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
import torch

import bgl.dgl as bdgl
from bgl.dgl.data.utils import _get_dgl_url


def _folder(root, name):
    url = _get_dgl_url(f"dataset/{name}.zip")
    folder = root / f"{name}_{hashlib.sha1(url.encode()).hexdigest()[:8]}"
    folder.mkdir(parents=True)
    return folder


def _csr(prefix, dense):
    rows, cols = np.nonzero(dense)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=dense.shape[0]))])
    return {f"{prefix}_data": dense[rows, cols], f"{prefix}_indices": cols.astype(np.int32),
            f"{prefix}_indptr": indptr.astype(np.int32), f"{prefix}_shape": np.array(dense.shape)}


def write_gnn_benchmark(root, name, sparse_attr=True, n=14, seed=0):
    """``<name>.npz`` as the GNN-benchmark files hold it: a directed adjacency with repeats and self-loops,
    attributes sparse or dense, labels, and an object array (pickle) no reader may touch."""
    rng = np.random.default_rng(seed)
    adj = (rng.random((n, n)) < 0.2).astype(np.float32)
    adj[n - 1, 0] = adj[2, 2] = 1
    attr = (rng.random((n, 5)) < 0.4) * rng.integers(1, 3, (n, 5)).astype(np.float32)
    arrays = {**_csr("adj", adj), "labels": rng.integers(0, 4, n),
              "idx_to_node": np.array([{"i": 0}], dtype=object)}
    arrays.update(_csr("attr", attr) if sparse_attr else {"attr_matrix": attr})
    np.savez(_folder(root, name) / f"{name}.npz", **arrays)
    return root


def write_wikics(root, n=12, seed=0):
    rng = np.random.default_rng(seed)
    links = [sorted(set(rng.integers(0, n, rng.integers(0, 4)).tolist()) - {i}) for i in range(n)]
    links[-1] = [0]
    data = {"links": links, "features": rng.random((n, 3)).tolist(), "labels": rng.integers(0, 10, n).tolist(),
            "train_masks": rng.integers(0, 2, (20, n)).tolist(), "val_masks": rng.integers(0, 2, (20, n)).tolist(),
            "stopping_masks": rng.integers(0, 2, (20, n)).tolist(), "test_mask": rng.integers(0, 2, n).tolist()}
    (_folder(root, "wiki_cs") / "data.json").write_text(json.dumps(data))
    return root


def write_saint(root, name, n=15, seed=0):
    rng = np.random.default_rng(seed)
    folder = _folder(root, name)
    adj = (rng.random((n, n)) < 0.25).astype(np.float32)
    np.savez(folder / "adj_full.npz", format=np.array("csr"), shape=np.array([n, n]), **{
        k[4:]: v for k, v in _csr("adj", adj).items() if k != "adj_shape"})
    np.save(folder / "feats.npy", rng.random((n, 3)))
    labels = {str(i): (rng.integers(0, 2, 4).tolist() if name == "yelp" else int(rng.integers(0, 7)))
              for i in range(n)}
    (folder / "class_map.json").write_text(json.dumps(labels))
    order = rng.permutation(n).tolist()
    (folder / "role.json").write_text(json.dumps({"tr": order[:8], "va": order[8:11], "te": order[11:]}))
    return root


CASES = [("CoraFullDataset", "cora_full", {}), ("AmazonCoBuyPhotoDataset", "amazon_co_buy_photo", {}),
         ("WikiCSDataset", "wiki_cs", {}), ("FlickrDataset", "flickr", {"reorder": True}),
         ("YelpDataset", "yelp", {})]


def _write(root, name):
    if name == "wiki_cs":
        return write_wikics(root)
    if name in ("flickr", "yelp"):
        return write_saint(root, name)
    return write_gnn_benchmark(root, name, sparse_attr=name == "cora_full")


@pytest.mark.parametrize("cls,name,kwargs", CASES)
def test_benchmark_files_match_dgl(tmp_path, cls, name, kwargs, same_graph):
    dgl = pytest.importorskip("dgl", reason="needs DGL (pinned lane) to compare against")
    theirs = getattr(dgl.data, cls)(raw_dir=str(_write(tmp_path / "dgl", name)), **kwargs)
    ours = getattr(bdgl.data, cls)(raw_dir=str(_write(tmp_path / "bgl", name)), **kwargs)
    assert (len(ours), ours.num_classes, ours.name) == (len(theirs), theirs.num_classes, theirs.name)
    same_graph(ours[0], theirs[0])


def test_benchmark_files_without_dgl(tmp_path):
    g = bdgl.data.CoauthorCSDataset(raw_dir=str(write_gnn_benchmark(tmp_path, "coauthor_cs", False)))[0]
    src, dst = g.edges()
    pairs = set(zip(src.tolist(), dst.tolist()))
    assert all((v, u) in pairs for u, v in pairs) and len(pairs) == g.num_edges()  # both ways, once
    assert bool((dst[1:] >= dst[:-1]).all()) and g.ndata["feat"].dtype == torch.float32
    w = bdgl.data.WikiCSDataset(raw_dir=str(write_wikics(tmp_path)))[0]
    assert w.ndata["train_mask"].shape == (12, 20) and w.ndata["test_mask"].dtype == torch.bool
    y = bdgl.data.YelpDataset(raw_dir=str(write_saint(tmp_path, "yelp")))[0]
    assert y.ndata["label"].shape == (15, 4) and int(y.ndata["train_mask"].sum()) == 8
    with pytest.raises(FileNotFoundError, match="coauthor_physics.zip"):
        bdgl.data.CoauthorPhysicsDataset(raw_dir=str(tmp_path))
