"""``bgl.dgl.data.DGLDataset`` / ``DGLBuiltinDataset`` (call order, paths, hash, nothing downloaded) and
``RedditDataset`` from raw files written here.  Pinned lane: the same toy subclass and the same raw files
under real DGL 2.1, every attribute and array compared (edge order included); both lanes: the behaviour
without DGL."""
from __future__ import annotations

import argparse
import hashlib
import os
import zipfile

import numpy as np
import pytest
import torch

import bgl.dgl as bdgl
from bgl.dgl.data.dgl_dataset import DGLDataset


def toy_class(base):
    """A user's dataset on ``base`` (bgl's or DGL's ``DGLDataset``) that records the calls DGL makes."""

    class Toy(base):
        def __init__(self, cached=False, broken_cache=False, **kwargs):
            self.calls, self.cached, self.broken_cache = [], cached, broken_cache
            super().__init__("toy", **kwargs)

        def has_cache(self):
            self.calls.append("has_cache")
            return self.cached

        def load(self):
            self.calls.append("load")
            if self.broken_cache:
                raise OSError("corrupt cache")
            self.value = "loaded"

        def download(self):
            self.calls.append("download")

        def process(self):
            self.calls.append("process")
            self.value = "processed"

        def save(self):
            self.calls.append("save")

        def __getitem__(self, idx):
            return self.value if self._transform is None else self._transform(self.value)

        def __len__(self):
            return 1

    return Toy


CASES = [dict(), dict(cached=True), dict(cached=True, force_reload=True), dict(cached=True, broken_cache=True),
         dict(url="https://example.org/toy.zip", hash_key=(3, "a"), transform=str.upper)]


def _surface(ds) -> tuple:
    return (ds.calls, ds[0], len(ds), ds.name, ds.url, ds.hash, ds.verbose, ds.raw_dir, ds.save_dir,
            ds.raw_path, ds.save_path, repr(ds))


def test_subclass_protocol_matches_dgl(tmp_path, monkeypatch):
    dgl = pytest.importorskip("dgl", reason="needs DGL (pinned lane) to compare against")
    ours, theirs = toy_class(bdgl.data.DGLDataset), toy_class(dgl.data.DGLDataset)
    for case in CASES:
        kwargs = dict(case, raw_dir=str(tmp_path), save_dir=str(tmp_path / "save"))
        assert _surface(ours(**kwargs)) == _surface(theirs(**kwargs)), case
    monkeypatch.setenv("DGL_DOWNLOAD_DIR", str(tmp_path / "default"))
    assert _surface(ours()) == _surface(theirs())


def test_subclass_protocol_without_dgl(tmp_path):
    toy = toy_class(DGLDataset)
    assert toy(raw_dir=str(tmp_path)).calls == ["has_cache", "download", "process", "save"]
    assert toy(raw_dir=str(tmp_path), cached=True).calls == ["has_cache", "load"]
    assert toy(raw_dir=str(tmp_path), cached=True, broken_cache=True).calls == [
        "has_cache", "load", "download", "process", "save"]
    (tmp_path / "toy").mkdir()  # raw_path present: no download step
    ds = toy(raw_dir=str(tmp_path), transform=str.upper)
    assert ds.calls == ["has_cache", "process", "save"] and ds[0] == "PROCESSED" and ds.hash == "f9065fa7"
    url = "https://example.org/toy.zip"
    assert toy(raw_dir=str(tmp_path), url=url).raw_path == str(tmp_path / "toy_4a188331")
    with pytest.raises(NotImplementedError, match="__len__"):
        len(DGLDataset("bare", raw_dir=str(tmp_path)))


def test_builtin_dataset_extracts_a_zip_in_place_and_refuses_to_download(tmp_path):
    class Builtin(bdgl.data.DGLBuiltinDataset):
        def process(self):
            self.text = open(os.path.join(self.raw_path, "a.txt")).read()

    url = "https://example.org/files/thing.zip"
    with pytest.raises(FileNotFoundError, match="downloads nothing.*thing_") as err:
        Builtin("thing", url, raw_dir=str(tmp_path))
    assert "\n" not in str(err.value)
    with zipfile.ZipFile(tmp_path / "thing.zip", "w") as z:
        z.writestr("a.txt", "hello")
    assert Builtin("thing", url, raw_dir=str(tmp_path)).text == "hello"


# ------------------------------------------------------------------------------------------------ Reddit
def write_reddit(root, self_loop=False, fmt="coo", seed=0, n=300, m=2500):
    """Raw Reddit files under ``root/reddit[_self_loop]_<hash>/`` (where DGL 2.1 extracts its zip): the graph
    as ``scipy.sparse.save_npz`` writes it (multi-edges and self-loops included), features, labels, node types."""
    name = "reddit_self_loop" if self_loop else "reddit"
    rng = np.random.default_rng(seed)
    url = bdgl.data.utils._get_dgl_url(f"dataset/{name}.zip")
    folder = root / f"{name}_{hashlib.sha1(url.encode()).hexdigest()[:8]}"
    folder.mkdir(parents=True)
    row, col = rng.integers(0, n, m), rng.integers(0, n, m)
    if fmt == "coo":
        np.savez(folder / f"{name}_graph.npz", format=np.array(b"coo"), shape=np.array([n, n]), row=row.astype(np.int32),
                 col=col.astype(np.int32), data=np.ones(m, np.float32))
    else:  # csr, each row's columns sorted and unique
        keys = np.unique(row * n + col)
        np.savez(folder / f"{name}_graph.npz", format=np.array(b"csr"), shape=np.array([n, n]),
                 indptr=np.concatenate([[0], np.cumsum(np.bincount(keys // n, minlength=n))]).astype(np.int32),
                 indices=(keys % n).astype(np.int32), data=np.ones(keys.shape[0], np.float32))
    np.savez(folder / "reddit_data.npz", feature=rng.random((n, 5)).astype(np.float64),
             label=rng.integers(0, 41, n), node_types=rng.integers(1, 4, n))
    return root


@pytest.mark.parametrize("self_loop,fmt", [(False, "coo"), (True, "csr")])
def test_reddit_matches_dgl(tmp_path, self_loop, fmt):
    dgl = pytest.importorskip("dgl", reason="needs DGL (pinned lane) to compare against")
    theirs = dgl.data.RedditDataset(self_loop=self_loop, raw_dir=str(write_reddit(tmp_path / "dgl", self_loop, fmt)))
    ours = bdgl.data.RedditDataset(self_loop=self_loop, raw_dir=str(write_reddit(tmp_path / "bgl", self_loop, fmt)))
    g, h = ours[0], theirs[0]
    assert (len(ours), ours.num_classes, ours.name) == (len(theirs), theirs.num_classes, theirs.name)
    assert g.num_nodes() == h.num_nodes() and all(torch.equal(a, b) for a, b in zip(g.edges(), h.edges()))
    for mine, dgls in ((g.ndata, h.ndata), (g.edata, h.edata)):
        assert list(mine.keys()) == list(dgls.keys())
        for key in dgls.keys():
            assert mine[key].dtype == dgls[key].dtype and torch.equal(mine[key], dgls[key]), key


def test_reddit_without_dgl(tmp_path, monkeypatch):
    ours = bdgl.data.RedditDataset(raw_dir=str(write_reddit(tmp_path)))
    g = ours[0]
    assert g.num_edges() == 2500 and ours.num_classes == 41 and len(ours) == 1
    assert bool((g.edges()[1].diff() >= 0).all())  # edges sorted by destination
    masks = torch.stack([g.ndata[k] for k in ("train_mask", "val_mask", "test_mask")])
    assert masks.dtype == torch.bool and bool((masks.sum(0) == 1).all())
    parser = argparse.ArgumentParser()
    bdgl.data.register_data_args(parser)
    monkeypatch.setenv("DGL_DOWNLOAD_DIR", str(tmp_path))
    assert bdgl.data.load_data(parser.parse_args(["--dataset", "reddit"]))[0].num_edges() == 2500
    with pytest.raises(FileNotFoundError, match="reddit_self_loop_"):
        bdgl.data.load_data(parser.parse_args(["--dataset", "reddit-self-loop"]))
    with pytest.raises(NotImplementedError, match="rdflib"):
        bdgl.data.AIFBDataset()
    assert not hasattr(bdgl.data, "AMDataset")


@pytest.mark.parametrize("multi", [False, True])
def test_rcmk_order_is_scipys(multi):
    """The node order of Reddit's reordering is SciPy's reverse Cuthill-McKee of DGL's CSR (rows the sources,
    edge-id order within; repeated edges take SciPy's non-canonical path)."""
    sparse = pytest.importorskip("scipy.sparse", reason="SciPy (the test extra) is the reference")
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    from bgl.dgl.data.reorder import rcmk_permutation

    rng = np.random.default_rng(7)
    n, m = 400, 1500
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    if not multi:
        keys = np.unique(src * n + dst)
        src, dst = keys // n, keys % n
    order = np.argsort(src, kind="stable")
    indptr = np.concatenate([[0], np.cumsum(np.bincount(src, minlength=n))])
    adj = sparse.csr_matrix((np.ones(src.shape[0], np.int64), dst[order], indptr), shape=(n, n))
    assert np.array_equal(rcmk_permutation(src, dst, n), reverse_cuthill_mckee(adj))


# ------------------------------------------------------------------------------------------ AsGraphPredDataset
def pairs_dataset(lib, masks=False):
    """Eight ``(graph, label)`` pairs made with ``lib`` (DGL or bgl.dgl), ``feat`` of width 3 on nodes."""

    class Pairs:
        name, num_classes = "pairs", 2

        def __init__(self):
            self.graphs = []
            for i in range(8):
                g = lib.graph((torch.tensor([0, 1]), torch.tensor([1, i % 3])), num_nodes=3)
                g.ndata["feat"] = torch.ones(3, 3)
                self.graphs.append(g)
            if masks:
                self.train_mask = torch.tensor([1, 1, 0, 1, 0, 0, 1, 0], dtype=torch.bool)
                self.val_mask, self.test_mask = ~self.train_mask, torch.zeros(8, dtype=torch.bool)

        def __getitem__(self, i):
            return self.graphs[i], torch.tensor(i % 2)

        def __len__(self):
            return 8

    return Pairs()


def _graphpred_surface(ds) -> tuple:
    return (ds.name, len(ds), ds.num_classes, ds.num_tasks, ds.node_feat_size, ds.edge_feat_size, ds.hash,
            ds.train_idx.tolist(), ds.val_idx.tolist(), ds.test_idx.tolist())


def test_as_graph_pred_dataset_matches_dgl(tmp_path):
    dgl = pytest.importorskip("dgl", reason="needs DGL (pinned lane) to compare against")
    for kwargs in (dict(split_ratio=[0.5, 0.25, 0.25]), dict()):
        surfaces = []
        for lib, side in ((dgl, "dgl"), (bdgl, "bgl")):
            np.random.seed(5)
            ds = lib.data.AsGraphPredDataset(pairs_dataset(lib, masks=not kwargs), raw_dir=str(tmp_path / side),
                                             **kwargs)
            surfaces.append(_graphpred_surface(ds))
        assert surfaces[0] == surfaces[1], kwargs


def test_as_graph_pred_dataset_keeps_its_split_on_disk(tmp_path):
    np.random.seed(0)
    first = bdgl.data.AsGraphPredDataset(pairs_dataset(bdgl), split_ratio=[0.5, 0.25, 0.25], raw_dir=str(tmp_path))
    np.random.seed(1)
    again = bdgl.data.AsGraphPredDataset(pairs_dataset(bdgl), split_ratio=[0.5, 0.25, 0.25], raw_dir=str(tmp_path))
    assert _graphpred_surface(first) == _graphpred_surface(again) and len(first.train_idx) == 4
    assert sorted(first.train_idx.tolist() + first.val_idx.tolist() + first.test_idx.tolist()) == list(range(8))
    with pytest.raises(bdgl.DGLError, match="split_ratio"):
        bdgl.data.AsGraphPredDataset(pairs_dataset(bdgl), raw_dir=str(tmp_path / "none"))
