"""``dgl.data.TUDataset`` from raw TU files written here: the graphs, fields and labels DGL 2.1 builds from the
same files (pinned lane, side by side), and in both lanes what bgl.dgl reads without DGL, what it refuses, and a
GIN-style graph-classification step over its batches."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import bgl.dgl as bdgl
from bgl.dgl.data.tu import dgl_folder


def write_tu(root, name: str = "TOY", graphs: int = 6, seed: int = 0, labels: bool = True):
    """A TU dataset's text files under ``root/<name>_<hash>/<name>`` (where DGL unzips it): 1-based node ids,
    graph labels -1 / 1 / 3, node labels, 3 float node attributes, edge labels."""
    rng = np.random.default_rng(seed)
    folder = root / dgl_folder(name) / name
    folder.mkdir(parents=True)
    sizes = rng.integers(2, 7, graphs)
    start = np.concatenate([[0], np.cumsum(sizes)])
    edges = np.array([(start[i] + a + 1, start[i] + b + 1) for i in range(graphs)
                      for a, b in rng.integers(0, sizes[i], (2 * sizes[i], 2))])
    np.savetxt(folder / f"{name}_A.txt", edges, fmt="%d", delimiter=", ")
    np.savetxt(folder / f"{name}_graph_indicator.txt", np.repeat(np.arange(1, graphs + 1), sizes), fmt="%d")
    if labels:
        np.savetxt(folder / f"{name}_graph_labels.txt", rng.choice([-1, 1, 3], graphs), fmt="%d")
    else:
        np.savetxt(folder / f"{name}_graph_attributes.txt", rng.random(graphs))
    np.savetxt(folder / f"{name}_node_labels.txt", rng.integers(1, 4, start[-1]), fmt="%d")
    np.savetxt(folder / f"{name}_node_attributes.txt", rng.random((start[-1], 3)), delimiter=", ")
    np.savetxt(folder / f"{name}_edge_labels.txt", rng.integers(0, 2, edges.shape[0]), fmt="%d")
    return root


def _fields(data) -> dict:
    return {k: v for k, v in data.items()}


@pytest.mark.parametrize("labels", [True, False])
def test_tu_dataset_matches_dgl(tmp_path, labels):
    dgl = pytest.importorskip("dgl", reason="needs DGL (pinned lane) to compare against")
    theirs = dgl.data.TUDataset("TOY", raw_dir=str(write_tu(tmp_path / "dgl", labels=labels)))
    ours = bdgl.data.TUDataset("TOY", raw_dir=str(write_tu(tmp_path / "bgl", labels=labels)))
    assert (len(ours), ours.num_classes, ours.max_num_node) == (len(theirs), theirs.num_classes, theirs.max_num_node)
    torch.testing.assert_close(ours.graph_labels, theirs.graph_labels, rtol=1e-12, atol=0)
    for i in range(len(theirs)):
        (a, la), (b, lb) = ours[i], theirs[i]
        torch.testing.assert_close(la, lb, rtol=1e-12, atol=0)
        assert a.num_nodes() == b.num_nodes() and all(torch.equal(x, y) for x, y in zip(a.edges(), b.edges()))
        for mine, dgls in ((_fields(a.ndata), _fields(b.ndata)), (_fields(a.edata), _fields(b.edata))):
            assert sorted(mine) == sorted(dgls)
            for key in dgls:  # pandas parses floats to within an ulp of numpy's correctly rounded values
                assert mine[key].dtype == dgls[key].dtype and mine[key].shape == dgls[key].shape
                torch.testing.assert_close(mine[key], dgls[key], rtol=1e-12, atol=0)


def test_tu_dataset_trains_a_gin_step_and_refuses_missing_files(tmp_path):
    data = bdgl.data.TUDataset("TOY", raw_dir=str(write_tu(tmp_path)))
    loader = bdgl.dataloading.GraphDataLoader(data, batch_size=4, shuffle=True)
    conv = bdgl.nn.GINConv(torch.nn.Linear(3, 8), "sum")
    head, pool = torch.nn.Linear(8, data.num_classes), bdgl.nn.SumPooling()
    for batch, labels in loader:
        logits = head(pool(batch, conv(batch, batch.ndata["node_attr"].float())))
        torch.nn.functional.cross_entropy(logits, labels.view(-1)).backward()
        assert logits.shape == (batch.batch_size, data.num_classes)
    assert conv.apply_func.weight.grad is not None
    with pytest.raises(FileNotFoundError, match="graphkerneldatasets/MISSING.zip"):
        bdgl.data.TUDataset("MISSING", raw_dir=str(tmp_path))
