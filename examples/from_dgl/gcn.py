"""GCN, full-graph node classification on Cora: a DGL script whose only bgl line is the import.

DGL's ``examples/pytorch/gcn/train.py`` setting: two ``GraphConv`` layers (16 hidden, symmetric
normalisation), self-loops, dropout 0.5, Adam with weight decay 5e-4.  With ``import dgl`` /
``import dgl.nn as dglnn`` it runs on DGL 2.1 unchanged.

    python examples/from_dgl/gcn.py [--raw-dir DIR] [--epochs 100]
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

import bgl.dgl as dgl
import bgl.dgl.nn as dglnn


class GCN(nn.Module):
    def __init__(self, in_size, hid_size, out_size):
        super().__init__()
        self.layers = nn.ModuleList([dglnn.GraphConv(in_size, hid_size, activation=F.relu),
                                     dglnn.GraphConv(hid_size, out_size)])
        self.dropout = nn.Dropout(0.5)

    def forward(self, g, features):
        h = features
        for i, layer in enumerate(self.layers):
            if i != 0:
                h = self.dropout(h)
            h = layer(g, h)
        return h


def evaluate(model, g, features, labels, mask):
    model.eval()
    with torch.no_grad():
        pred = model(g, features)[mask].argmax(1)
        return float((pred == labels[mask]).float().mean())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--raw-dir", default=None, help="folder of the raw Cora files (default: DGL's)")
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    dgl.seed(args.seed)
    torch.manual_seed(args.seed)

    dataset = dgl.data.CoraGraphDataset(raw_dir=args.raw_dir, verbose=False)
    g = dataset[0]
    g = dgl.add_self_loop(dgl.remove_self_loop(g))
    features, labels = g.ndata["feat"], g.ndata["label"]
    masks = g.ndata["train_mask"], g.ndata["val_mask"], g.ndata["test_mask"]

    model = GCN(features.shape[1], 16, dataset.num_classes)
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
