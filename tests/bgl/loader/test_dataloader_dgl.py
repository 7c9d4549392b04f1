"""bgl.DataLoader as a drop-in for dgl.dataloading.DataLoader: same script, same accuracy."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest
import torch

dgl = pytest.importorskip("dgl")

import bgl  # noqa: E402

# DGL's examples/pytorch/graphsage/node_classification.py, trimmed to Cora from a
# bgl store on disk (no downloads) and to a few epochs; the training loop is DGL's.
DGL_EXAMPLE = '''
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import dgl
import dgl.nn as dglnn
from dgl.dataloading import DataLoader, NeighborSampler


class SAGE(nn.Module):
    def __init__(self, in_size, hid_size, out_size):
        super().__init__()
        self.layers = nn.ModuleList()
        self.layers.append(dglnn.SAGEConv(in_size, hid_size, "mean"))
        self.layers.append(dglnn.SAGEConv(hid_size, out_size, "mean"))
        self.dropout = nn.Dropout(0.5)

    def forward(self, blocks, x):
        h = x
        for l, (layer, block) in enumerate(zip(self.layers, blocks)):
            h = layer(block, h)
            if l != len(self.layers) - 1:
                h = F.relu(h)
                h = self.dropout(h)
        return h


def evaluate(model, dataloader):
    model.eval()
    ys, y_hats = [], []
    for it, (input_nodes, output_nodes, blocks) in enumerate(dataloader):
        with torch.no_grad():
            x = blocks[0].srcdata["feat"]
            ys.append(blocks[-1].dstdata["label"])
            y_hats.append(model(blocks, x))
    return (torch.cat(y_hats).argmax(1) == torch.cat(ys)).float().mean().item()


def load_graph(path):
    indptr = np.load(f"{path}/indptr.npy")
    src = np.load(f"{path}/indices.npy").astype(np.int64)
    dst = np.repeat(np.arange(indptr.shape[0] - 1), np.diff(indptr))
    g = dgl.graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=indptr.shape[0] - 1)
    g.ndata["feat"] = torch.from_numpy(np.load(f"{path}/feat.npy"))
    g.ndata["label"] = torch.from_numpy(np.load(f"{path}/label.npy"))
    split = {name: torch.from_numpy(np.load(f"{path}/{name}_idx.npy")) for name in ("train", "val", "test")}
    return g, split


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cpu")
    g, split = load_graph(sys.argv[1])
    num_classes = int(g.ndata["label"].max()) + 1
    model = SAGE(g.ndata["feat"].shape[1], 32, num_classes).to(device)
    sampler = NeighborSampler([10, 10])
    train_dataloader = DataLoader(g, split["train"], sampler, device=device, batch_size=256, shuffle=True,
                                  drop_last=False, num_workers=0, use_uva=False)
    val_dataloader = DataLoader(g, split["val"], sampler, device=device, batch_size=256, shuffle=True,
                                drop_last=False, num_workers=0, use_uva=False)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=5e-4)
    for epoch in range(5):
        model.train()
        total_loss = 0
        for it, (input_nodes, output_nodes, blocks) in enumerate(train_dataloader):
            x = blocks[0].srcdata["feat"]
            y = blocks[-1].dstdata["label"]
            y_hat = model(blocks, x)
            loss = F.cross_entropy(y_hat, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total_loss += loss.item()
        acc = evaluate(model, val_dataloader)
        print(f"Epoch {epoch:05d} | Loss {total_loss / (it + 1):.4f} | Accuracy {acc:.4f}")
    test_dataloader = DataLoader(g, split["test"], sampler, batch_size=256)
    print(f"Test Accuracy {evaluate(model, test_dataloader):.4f}")
    print(f"loader type {type(train_dataloader).__module__}.{type(train_dataloader).__name__}")
'''

IMPORT_LINE = "from dgl.dataloading import DataLoader, NeighborSampler"


def test_dgl_example_runs_unchanged_with_bgl_dataloader(cora_store, tmp_path):
    script = DGL_EXAMPLE.replace(IMPORT_LINE, "from dgl.dataloading import NeighborSampler\nfrom bgl import DataLoader")
    assert script.count("bgl") == 1  # only the import line changed
    path = tmp_path / "node_classification.py"
    path.write_text(script)
    # One torch thread: on a small shared box, OpenMP threads of concurrent jobs thrash.
    env = {**os.environ, "DGLBACKEND": "pytorch", "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, str(path), str(cora_store.path)], capture_output=True, text=True,
                          timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "loader type bgl.loader.dataloader.DataLoader" in done.stdout
    accuracy = float(re.search(r"Test Accuracy ([0-9.]+)", done.stdout).group(1))
    assert accuracy > 0.75, done.stdout  # Cora GraphSAGE reaches ~0.85-0.9; chance is ~0.3


# ---------------------------------------------------------------- equivalence
@pytest.fixture(scope="module")
def cora_graph(cora_store):
    st = cora_store
    src = np.asarray(st.indices).astype(np.int64)
    dst = np.repeat(np.arange(st.num_nodes), np.diff(st.indptr))
    g = dgl.graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=st.num_nodes)
    g.ndata["feat"] = torch.from_numpy(np.array(st.feat))
    g.ndata["label"] = torch.from_numpy(np.array(st.label))
    return g, torch.from_numpy(np.array(st.train_idx)), torch.from_numpy(np.array(st.test_idx))


class SAGE(torch.nn.Module):
    def __init__(self, in_size, hid_size, out_size):
        super().__init__()
        self.layers = torch.nn.ModuleList([dgl.nn.SAGEConv(in_size, hid_size, "mean"),
                                           dgl.nn.SAGEConv(hid_size, out_size, "mean")])
        self.dropout = torch.nn.Dropout(0.5)

    def forward(self, blocks, x):
        for i, (layer, block) in enumerate(zip(self.layers, blocks)):
            x = layer(block, x)
            if i == 0:
                x = self.dropout(torch.relu(x))
        return x


def train_and_test(loader, g, test_idx, seed: int, epochs: int = 3) -> float:
    """Test accuracy (%) after training with ``loader``; full-neighbour inference for evaluation."""
    torch.manual_seed(seed)
    dgl.seed(seed)  # DGL's own sampling RNG: the same seed gives the same DGL run
    model = SAGE(g.ndata["feat"].shape[1], 32, int(g.ndata["label"].max()) + 1)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=5e-4)
    for _ in range(epochs):
        model.train()
        for _, _, blocks in loader:
            loss = torch.nn.functional.cross_entropy(model(blocks, blocks[0].srcdata["feat"]),
                                                     blocks[-1].dstdata["label"])
            opt.zero_grad()
            loss.backward()
            opt.step()
    model.eval()
    with torch.no_grad():
        logits = model([g, g], g.ndata["feat"])
    return 100.0 * (logits[test_idx].argmax(1) == g.ndata["label"][test_idx]).float().mean().item()


# Measured over 20 seeds (3 epochs, Cora): DGL 88.0 +- 0.83 points a run, bgl random
# 88.1 +- 0.62, bgl proximity/fifo 87.5 +- 0.78. Three seeds left the pooled difference
# with sd ~0.57, so a 1-point bound failed ~8 % of runs by chance; ten give sd ~0.31.
SEEDS = tuple(range(10))
INLINE_CONFIGS = {
    "inline/random/no-cache": dict(pipeline="inline", order="random"),
    "inline/proximity/fifo": dict(pipeline="inline", order="proximity", cache="fifo"),
}
# Same order and seeds as an inline configuration => the very same batches, so the
# trained model must score exactly the same; one seed is enough to show it.
PROCESS_CONFIGS = {
    "processes/proximity/no-cache": (dict(pipeline="processes", order="proximity"), "inline/proximity/fifo"),
    "processes/random/fifo": (dict(pipeline="processes", order="random", cache="fifo", cache_ratio=0.2),
                              "inline/random/no-cache"),
}


def test_graphsage_accuracy_matches_dgl_dataloader(cora_graph, one_torch_thread):
    g, train_idx, test_idx = cora_graph
    sampler = dgl.dataloading.NeighborSampler([10, 10])
    dgl_loader = dgl.dataloading.DataLoader(g, train_idx, sampler, batch_size=256, shuffle=True)
    dgl_accs = [train_and_test(dgl_loader, g, test_idx, seed) for seed in SEEDS]
    results = {}
    for name, kwargs in INLINE_CONFIGS.items():
        torch.manual_seed(SEEDS[0])  # a bgl loader draws its epoch orders' generator seed when built
        with bgl.DataLoader(g, train_idx, sampler, batch_size=256, shuffle=True, **kwargs) as loader:
            results[name] = [train_and_test(loader, g, test_idx, seed) for seed in SEEDS]
            if "cache" in kwargs:
                assert loader.cache_stats()["hits"] > 0
    for name, (kwargs, twin) in PROCESS_CONFIGS.items():
        torch.manual_seed(SEEDS[0])  # the twin's generator seed: the same epoch orders
        with bgl.DataLoader(g, train_idx, sampler, batch_size=256, shuffle=True, **kwargs) as loader:
            results[name] = [train_and_test(loader, g, test_idx, SEEDS[0])]
            _, _, blocks = next(iter(loader))
            assert isinstance(blocks[0], dgl.DGLGraph) and blocks[0].is_block
            if "cache" in kwargs:
                assert loader.cache_stats()["hits"] > 0
    dgl_mean = float(np.mean(dgl_accs))
    report = f"dgl {np.round(dgl_accs, 1)}; " + "; ".join(f"{k} {np.round(v, 1)}" for k, v in results.items())
    print(f"\ntest accuracy (%): {report}")
    for name, (_, twin) in PROCESS_CONFIGS.items():
        assert results[name][0] == results[twin][0], report
    pooled = float(np.mean([a for name in INLINE_CONFIGS for a in results[name]]))
    # Pooled over seeds and configurations the accuracy is DGL's within 1 point (~3 sd of
    # the difference); each configuration's mean of ten within 2 points (~5 sd). On Cora even
    # fanouts 1,1 score ~87, so this guards features, labels and training, not fanouts: the
    # sampler's semantics are asserted in test_dgl_sampler_settings_are_read and tests/sampler.
    assert abs(pooled - dgl_mean) <= 1.0, report
    for name in INLINE_CONFIGS:
        assert abs(float(np.mean(results[name])) - dgl_mean) <= 2.0, f"{name}: {report}"
    assert dgl_mean > 80.0, report


def test_bgl_sampler_with_dgl_blocks_on_a_store(cora_store):
    train = np.array(cora_store.train_idx)[:300]
    loader = bgl.DataLoader(cora_store, train, bgl.NeighborSampler([5, 5]), batch_size=100, blocks="dgl")
    for input_nodes, output_nodes, blocks in loader:
        assert all(b.is_block for b in blocks)
        assert torch.equal(blocks[0].srcdata[dgl.NID], input_nodes)
        assert torch.equal(blocks[-1].dstdata[dgl.NID], output_nodes)
        assert blocks[0].srcdata["feat"].shape == (input_nodes.numel(), cora_store.feat_dim)
        assert torch.equal(blocks[-1].dstdata["label"], torch.from_numpy(cora_store.label[output_nodes.numpy()]))
        assert blocks[1].num_src_nodes() == blocks[0].num_dst_nodes()


def test_dgl_sampler_settings_are_read(cora_graph):
    g, train_idx, _ = cora_graph
    sampler = dgl.dataloading.NeighborSampler([3, 2], replace=True, prefetch_node_feats=["feat"],
                                              prefetch_labels=["label"])
    loader = bgl.DataLoader(g, train_idx[:64], sampler, batch_size=64)
    _, _, blocks = next(iter(loader))
    # Sampling with replacement draws exactly `fanout` in-edges for every node that has any.
    deg = [b.in_degrees() for b in blocks]
    assert set(deg[0].unique().tolist()) <= {0, 3} and set(deg[1].unique().tolist()) <= {0, 2}
    with pytest.raises(ValueError, match="edge_dir"):
        bgl.DataLoader(g, train_idx, dgl.dataloading.NeighborSampler([2], edge_dir="out"))
    with pytest.raises(TypeError, match="unsupported graph_sampler"):
        bgl.DataLoader(g, train_idx, dgl.dataloading.ShaDowKHopSampler([2]))
