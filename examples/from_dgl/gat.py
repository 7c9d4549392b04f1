"""GAT, full-graph node classification on Cora: a DGL script whose only bgl line is the import.

DGL's ``examples/pytorch/gat/train.py`` setting: two ``GATConv`` layers (8 heads of 8, then one
head), ELU, dropout 0.6 on features and attention, self-loops added, Adam with weight decay.
With ``import dgl`` / ``import dgl.nn as dglnn`` it runs on DGL 2.1 unchanged.

    python examples/from_dgl/gat.py [--raw-dir DIR] [--epochs 60]
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

import bgl.dgl as dgl
import bgl.dgl.nn as dglnn


class GAT(nn.Module):
    def __init__(self, in_size, hid_size, out_size, heads):
        super().__init__()
        self.gat_layers = nn.ModuleList([
            dglnn.GATConv(in_size, hid_size, heads[0], feat_drop=0.6, attn_drop=0.6, activation=F.elu),
            dglnn.GATConv(hid_size * heads[0], out_size, heads[1], feat_drop=0.6, attn_drop=0.6),
        ])

    def forward(self, g, inputs):
        h = inputs
        for i, layer in enumerate(self.gat_layers):
            h = layer(g, h)
            h = h.flatten(1) if i == 0 else h.mean(1)
        return h


def evaluate(model, g, features, labels, mask):
    model.eval()
    with torch.no_grad():
        pred = model(g, features)[mask].argmax(1)
        return float((pred == labels[mask]).float().mean())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--raw-dir", default=None, help="folder of the raw Cora files (default: DGL's)")
    parser.add_argument("--epochs", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    dgl.seed(args.seed)
    torch.manual_seed(args.seed)

    dataset = dgl.data.CoraGraphDataset(raw_dir=args.raw_dir, verbose=False)
    g = dataset[0]
    g = dgl.add_self_loop(dgl.remove_self_loop(g))
    features, labels = g.ndata["feat"], g.ndata["label"]
    masks = g.ndata["train_mask"], g.ndata["val_mask"], g.ndata["test_mask"]

    model = GAT(features.shape[1], 8, dataset.num_classes, heads=[8, 1])
    opt = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=5e-4)
    for epoch in range(args.epochs):
        model.train()
        logits = model(g, features)
        loss = F.cross_entropy(logits[masks[0]], labels[masks[0]])
        opt.zero_grad()
        loss.backward()
        opt.step()
    val_acc, test_acc = evaluate(model, g, features, labels, masks[1]), evaluate(model, g, features, labels, masks[2])
    print(f"val accuracy {val_acc:.4f}, test accuracy {test_acc:.4f}")
    return {"val_acc": val_acc, "test_acc": test_acc}


if __name__ == "__main__":
    main()
