"""``GINDataset`` (GIN text format) and ``LegacyTUDataset`` (TU text files) from raw files written here: the
graphs, fields, labels and attributes DGL 2.1 builds from the same files (pinned lane, side by side), and in
both lanes what bgl.dgl reads without DGL."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch

import bgl.dgl as bdgl


def _tu_writer():
    spec = importlib.util.spec_from_file_location("tu_files", Path(__file__).with_name("test_tu_dataset.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.write_tu


write_tu = _tu_writer()


def write_gin(root, name="TOYG", graphs=7, seed=0, raw_labels=(0, 1, 2, 3), short=False):
    """``root/GINDataset/dataset/<name>/<name>.txt`` in the GIN format (graph labels -1 / 1, node labels
    drawn from ``raw_labels``, neighbours in random order, repeats included); ``short``: every node line
    announces one neighbour more than it lists (DGL's empty-attr case)."""
    rng = np.random.default_rng(seed)
    lines = [str(graphs)]
    for i in range(graphs):
        n = int(rng.integers(1, 6))
        lines.append(f"{n} {rng.choice([-1, 1])}")
        for _ in range(n):
            nbrs = rng.integers(0, n, int(rng.integers(0, 4)))
            extra = 1 if short else 0
            lines.append(" ".join(str(v) for v in [rng.choice(raw_labels), len(nbrs) + extra, *nbrs]))
    folder = root / "GINDataset" / "dataset" / name
    folder.mkdir(parents=True)
    (folder / f"{name}.txt").write_text("\n".join(lines) + "\n")
    return root


def _where(ds) -> str:
    return str(Path(ds.raw_path).relative_to(ds.raw_dir))


def _same_pairs(mine, dgls, atol=0.0):
    assert len(mine) == len(dgls)
    for i in range(len(dgls)):
        (a, la), (b, lb) = mine[i], dgls[i]
        assert torch.equal(la, lb) and la.dtype == lb.dtype
        assert a.num_nodes() == b.num_nodes() and all(torch.equal(x, y) for x, y in zip(a.edges(), b.edges()))
        for ours, theirs in ((a.ndata, b.ndata), (a.edata, b.edata)):
            assert list(ours.keys()) == list(theirs.keys())
            for key in theirs.keys():
                assert ours[key].dtype == theirs[key].dtype and ours[key].shape == theirs[key].shape, key
                torch.testing.assert_close(ours[key], theirs[key], rtol=0, atol=atol)


GIN_CASES = [dict(self_loop=False), dict(self_loop=True, degree_as_nlabel=True),
             dict(self_loop=True, raw_labels=(5, 9)), dict(self_loop=False, short=True)]


@pytest.mark.parametrize("case", GIN_CASES)
def test_gin_dataset_matches_dgl(tmp_path, case):
    dgl = pytest.importorskip("dgl", reason="needs DGL (pinned lane) to compare against")
    kwargs = {k: case[k] for k in ("self_loop", "degree_as_nlabel") if k in case}
    files = {k: case[k] for k in ("raw_labels", "short") if k in case}
    theirs = dgl.data.GINDataset("TOYG", raw_dir=str(write_gin(tmp_path / "dgl", **files)), **kwargs)
    ours = bdgl.data.GINDataset("TOYG", raw_dir=str(write_gin(tmp_path / "bgl", **files)), **kwargs)
    for attr in ("N", "n", "m", "gclasses", "nclasses", "eclasses", "dim_nfeats", "num_classes", "glabel_dict",
                 "nlabel_dict", "nattrs_flag", "nlabels_flag", "hash"):
        assert getattr(ours, attr) == getattr(theirs, attr), attr
    assert torch.equal(ours.labels, theirs.labels) and _where(ours) == _where(theirs)
    _same_pairs(ours, theirs)


@pytest.mark.parametrize("labels", [True, False])
def test_legacy_tu_dataset_matches_dgl(tmp_path, labels):
    dgl = pytest.importorskip("dgl", reason="needs DGL (pinned lane) to compare against")
    for kwargs in (dict(), dict(max_allow_node=4, hidden_size=3)):
        theirs = dgl.data.LegacyTUDataset("TOY", raw_dir=str(write_tu(tmp_path / f"dgl{len(kwargs)}", labels=labels)),
                                          **kwargs)
        ours = bdgl.data.LegacyTUDataset("TOY", raw_dir=str(write_tu(tmp_path / f"bgl{len(kwargs)}", labels=labels)),
                                         **kwargs)
        assert (ours.max_num_node, ours.num_labels, ours.data_mode) == (theirs.max_num_node, theirs.num_labels,
                                                                        theirs.data_mode)
        assert ours.statistics() == theirs.statistics() and _where(ours) == _where(theirs)
        assert ours.graph_labels.dtype == theirs.graph_labels.dtype
        torch.testing.assert_close(ours.graph_labels, theirs.graph_labels, rtol=1e-12, atol=0)
        _same_pairs(ours, theirs, atol=1e-6 if labels else 1e-6)


def test_legacy_tu_constant_features_match_dgl(tmp_path):
    dgl = pytest.importorskip("dgl", reason="needs DGL (pinned lane) to compare against")
    folders = [write_tu(tmp_path / side) for side in ("dgl", "bgl")]
    for folder in folders:
        for part in ("node_labels", "node_attributes"):
            next(folder.rglob(f"TOY_{part}.txt")).unlink()
    theirs = dgl.data.LegacyTUDataset("TOY", raw_dir=str(folders[0]), hidden_size=4)
    ours = bdgl.data.LegacyTUDataset("TOY", raw_dir=str(folders[1]), hidden_size=4)
    assert ours.data_mode == theirs.data_mode == "constant"
    _same_pairs(ours, theirs)


def test_gin_and_legacy_tu_without_dgl(tmp_path):
    ds = bdgl.data.GINDataset("TOYG", self_loop=True, raw_dir=str(write_gin(tmp_path)))
    g, label = ds[0]
    assert len(ds) == 7 and ds.num_classes == 2 and ds.dim_nfeats == 4 and label.dtype == torch.int64
    src, dst = g.edges()
    assert bool((src[g.edata.get("_ID", torch.arange(g.num_edges()))] >= 0).all())
    assert bool((g.ndata["attr"].sum(1) == 1).all())  # one-hot node labels
    assert int((src == dst).sum()) >= g.num_nodes()  # every node's self-loop
    batch, labels = next(iter(bdgl.dataloading.GraphDataLoader(ds, batch_size=3)))  # as DGL's GIN example batches
    assert batch.batch_size == 3 and torch.equal(labels, ds.labels[:3])
    assert batch.ndata["attr"].shape == (sum(ds[i][0].num_nodes() for i in range(3)), ds.dim_nfeats)
    with pytest.raises(FileNotFoundError, match="GINDataset"):
        bdgl.data.GINDataset("NOPE", self_loop=False, raw_dir=str(tmp_path))
    legacy = bdgl.data.LegacyTUDataset("TOY", raw_dir=str(write_tu(tmp_path / "tu")))
    h, y = legacy[0]
    assert legacy.data_mode == "node_attr" and h.ndata["feat"].dtype == torch.float32 and y.dtype == torch.int64
    assert legacy.num_classes == int(legacy.graph_labels.max()) + 1
    with pytest.raises(FileNotFoundError, match="downloads nothing"):
        bdgl.data.LegacyTUDataset("MISSING", raw_dir=str(tmp_path))
