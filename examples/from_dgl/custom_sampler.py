"""GraphSAGE on Cora with the script's own sampler: a DGL script whose only bgl line is the import.

Written as DGL's documentation writes a custom sampler ("Implement Custom Graph Samplers"): a
``BlockSampler`` subclass whose ``sample_blocks`` draws a frontier per layer with
``dgl.sampling.sample_neighbors`` and turns it into a block with ``dgl.to_block``, fed to
``dgl.dataloading.DataLoader``; evaluation runs the same sampler with every neighbour.  With
``import dgl`` / ``import dgl.nn as dglnn`` in place of the two ``bgl.dgl`` imports it runs on DGL 2.1
unchanged (``tests/examples/test_from_dgl.py`` runs it both ways).

    python examples/from_dgl/custom_sampler.py [--raw-dir DIR] [--epochs 20]
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

import bgl.dgl as dgl
import bgl.dgl.nn as dglnn


class NeighborBlocks(dgl.dataloading.BlockSampler):
    """``fanouts[i]`` in-neighbours per node at layer ``i`` (-1: all of them)."""

    def __init__(self, fanouts, **prefetch):
        super().__init__(**prefetch)
        self.fanouts = fanouts

    def sample_blocks(self, g, seed_nodes, exclude_eids=None):
        output_nodes, blocks = seed_nodes, []
        for fanout in reversed(self.fanouts):
            frontier = dgl.sampling.sample_neighbors(g, seed_nodes, fanout, exclude_edges=exclude_eids)
            block = dgl.to_block(frontier, seed_nodes)
            block.edata[dgl.EID] = frontier.edata[dgl.EID]
            seed_nodes = block.srcdata[dgl.NID]
            blocks.insert(0, block)
        return seed_nodes, output_nodes, blocks


class SAGE(nn.Module):
    def __init__(self, in_size, hid_size, out_size):
        super().__init__()
        self.layers = nn.ModuleList([dglnn.SAGEConv(in_size, hid_size, "mean"),
                                     dglnn.SAGEConv(hid_size, out_size, "mean")])
        self.dropout = nn.Dropout(0.5)

    def forward(self, blocks, x):
        h = x
        for i, (layer, block) in enumerate(zip(self.layers, blocks)):
            h = layer(block, h)
            if i != len(self.layers) - 1:
                h = self.dropout(F.relu(h))
        return h


def evaluate(model, g, nids, batch_size=1024):
    """Accuracy over ``nids`` with every neighbour of every layer (no sampling noise)."""
    model.eval()
    sampler = NeighborBlocks([-1, -1], prefetch_node_feats=["feat"], prefetch_labels=["label"])
    loader = dgl.dataloading.DataLoader(g, nids, sampler, batch_size=batch_size)
    correct = total = 0
    with torch.no_grad():
        for _, _, blocks in loader:
            pred = model(blocks, blocks[0].srcdata["feat"]).argmax(1)
            correct += int((pred == blocks[-1].dstdata["label"]).sum())
            total += pred.shape[0]
    return correct / total


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--raw-dir", default=None, help="folder of the raw Cora files (default: DGL's)")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    dgl.seed(args.seed)
    torch.manual_seed(args.seed)

    dataset = dgl.data.CoraGraphDataset(raw_dir=args.raw_dir, verbose=False)
    g = dataset[0]
    train_ids = g.ndata["train_mask"].nonzero().flatten()
    val_ids = g.ndata["val_mask"].nonzero().flatten()
    test_ids = g.ndata["test_mask"].nonzero().flatten()

    sampler = NeighborBlocks([10, 10], prefetch_node_feats=["feat"], prefetch_labels=["label"])
    train_loader = dgl.dataloading.DataLoader(g, train_ids, sampler, batch_size=32, shuffle=True)
    model = SAGE(g.ndata["feat"].shape[1], 64, dataset.num_classes)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=5e-4)
    for epoch in range(args.epochs):
        model.train()
        for _, _, blocks in train_loader:
            logits = model(blocks, blocks[0].srcdata["feat"])
            loss = F.cross_entropy(logits, blocks[-1].dstdata["label"])
            opt.zero_grad()
            loss.backward()
            opt.step()
    val_acc, test_acc = evaluate(model, g, val_ids), evaluate(model, g, test_ids)
    print(f"val accuracy {val_acc:.4f}, test accuracy {test_acc:.4f}")
    return {"val_acc": val_acc, "test_acc": test_acc}


if __name__ == "__main__":
    main()
