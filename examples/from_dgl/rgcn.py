"""R-GCN on a small heterograph built from Cora: a DGL script whose only bgl line is the import.

Cora as a typed graph: ``paper`` nodes (with features and labels) and ``word`` nodes (featureless,
a learned embedding each, as DGL's R-GCN examples give featureless types), four relations
(``cites`` / ``cited_by``: the two directions of each citation; ``appears_in`` / ``contains``:
word-paper incidence).  Two models, as DGL's R-GCN examples have them:

* ``--model hetero``: ``HeteroGraphConv`` of one ``GraphConv`` per relation, trained on minibatches
  of typed blocks (``NeighborSampler`` over the heterograph, seeds ``{"paper": ids}``);
* ``--model rel``: ``RelGraphConv`` (basis decomposition) on ``dgl.to_homogeneous`` of it, full graph.

With ``import dgl`` / ``import dgl.nn as dglnn`` it runs on DGL 2.1 unchanged.

    python examples/from_dgl/rgcn.py [--model hetero|rel] [--raw-dir DIR] [--epochs N]
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

import bgl.dgl as dgl
import bgl.dgl.nn as dglnn


def cora_heterograph(raw_dir):
    dataset = dgl.data.CoraGraphDataset(raw_dir=raw_dir, verbose=False)
    g = dataset[0]
    src, dst = g.edges()
    # Each citation's two directions go one to "cites", one to "cited_by", chosen by a hash of the pair:
    # by id order instead, the relations would follow Planetoid's numbering (train ids first, test last).
    lo, hi = torch.minimum(src, dst), torch.maximum(src, dst)
    forward = (src < dst) ^ ((lo * 1103515245 + hi * 12345) // 7 % 2 == 1)
    paper, word = g.ndata["feat"].nonzero(as_tuple=True)
    hg = dgl.heterograph({
        ("paper", "cites", "paper"): (src[forward], dst[forward]),
        ("paper", "cited_by", "paper"): (src[~forward], dst[~forward]),
        ("word", "appears_in", "paper"): (word, paper),
        ("paper", "contains", "word"): (paper, word),
    }, num_nodes_dict={"paper": g.num_nodes(), "word": g.ndata["feat"].shape[1]})
    for key in ("feat", "label", "train_mask", "val_mask", "test_mask"):
        hg.nodes["paper"].data[key] = g.ndata[key]
    return hg, dataset.num_classes


class InputLayer(nn.Module):
    """Paper features projected; featureless word nodes start from one learned vector (they carry
    what the papers around them send): one width for every type."""

    def __init__(self, in_size, num_words, hid_size):
        super().__init__()
        self.proj = nn.Linear(in_size, hid_size)
        self.word = nn.Parameter(torch.zeros(1, hid_size))

    def forward(self, paper_feat, word_ids):
        return {"paper": self.proj(paper_feat), "word": self.word.expand(word_ids.shape[0], -1)}


class HeteroRGCN(nn.Module):
    def __init__(self, rel_names, in_size, num_words, hid_size, out_size):
        super().__init__()
        self.input = InputLayer(in_size, num_words, hid_size)
        self.conv1 = dglnn.HeteroGraphConv({r: dglnn.GraphConv(hid_size, hid_size, norm="right",
                                                               allow_zero_in_degree=True) for r in rel_names})
        self.conv2 = dglnn.HeteroGraphConv({r: dglnn.GraphConv(hid_size, out_size, norm="right",
                                                               allow_zero_in_degree=True) for r in rel_names})
        self.dropout = nn.Dropout(0.5)

    def forward(self, blocks):
        first = blocks[0]
        h = self.input(first.srcnodes["paper"].data["feat"], first.srcnodes["word"].data[dgl.NID])
        h = self.conv1(first, h)
        h = {k: self.dropout(F.relu(v)) for k, v in h.items()}
        return self.conv2(blocks[1], h)["paper"]


class RelRGCN(nn.Module):
    def __init__(self, num_rels, in_size, num_words, hid_size, out_size):
        super().__init__()
        self.input = InputLayer(in_size, num_words, hid_size)
        self.conv1 = dglnn.RelGraphConv(hid_size, hid_size, num_rels, regularizer="basis", num_bases=2,
                                        self_loop=True)
        self.conv2 = dglnn.RelGraphConv(hid_size, out_size, num_rels, regularizer="basis", num_bases=2,
                                        self_loop=True)
        self.dropout = nn.Dropout(0.5)

    def forward(self, g, paper_feat, num_words):
        h = self.input(paper_feat, torch.arange(num_words))
        h = torch.cat([h["paper"], h["word"]])  # to_homogeneous numbers nodes type by type
        etypes, norm = g.edata[dgl.ETYPE], g.edata["norm"]
        h = self.dropout(F.relu(self.conv1(g, h, etypes, norm)))
        return self.conv2(g, h, etypes, norm)


def train_hetero(hg, num_classes, epochs):
    train_ids = {"paper": hg.nodes["paper"].data["train_mask"].nonzero().flatten()}
    sampler = dgl.dataloading.NeighborSampler([8, 8])
    loader = dgl.dataloading.DataLoader(hg, train_ids, sampler, batch_size=32, shuffle=True)
    model = HeteroRGCN(hg.etypes, hg.nodes["paper"].data["feat"].shape[1], hg.num_nodes("word"), 32, num_classes)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=5e-4)
    for epoch in range(epochs):
        model.train()
        for _, _, blocks in loader:
            loss = F.cross_entropy(model(blocks), blocks[-1].dstnodes["paper"].data["label"])
            opt.zero_grad()
            loss.backward()
            opt.step()

    def accuracy(mask_name):
        model.eval()
        ids = {"paper": hg.nodes["paper"].data[mask_name].nonzero().flatten()}
        full = dgl.dataloading.MultiLayerFullNeighborSampler(2)
        correct = total = 0
        with torch.no_grad():
            for _, _, blocks in dgl.dataloading.DataLoader(hg, ids, full, batch_size=1024):
                pred = model(blocks).argmax(1)
                correct += int((pred == blocks[-1].dstnodes["paper"].data["label"]).sum())
                total += pred.shape[0]
        return correct / total

    return accuracy("val_mask"), accuracy("test_mask")


def train_rel(hg, num_classes, epochs):
    g = dgl.to_homogeneous(hg)
    _, dst = g.edges()
    g.edata["norm"] = (1.0 / g.in_degrees().float().clamp(min=1))[dst].unsqueeze(1)  # mean over in-edges
    num_papers = hg.num_nodes("paper")
    paper = hg.nodes["paper"].data
    model = RelRGCN(len(hg.canonical_etypes), paper["feat"].shape[1], hg.num_nodes("word"), 32, num_classes)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=5e-4)
    for epoch in range(epochs):
        model.train()
        logits = model(g, paper["feat"], hg.num_nodes("word"))[:num_papers]
        loss = F.cross_entropy(logits[paper["train_mask"]], paper["label"][paper["train_mask"]])
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        pred = model(g, paper["feat"], hg.num_nodes("word"))[:num_papers].argmax(1)
    return tuple(float((pred[paper[m]] == paper["label"][paper[m]]).float().mean()) for m in ("val_mask", "test_mask"))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["hetero", "rel"], default="hetero")
    parser.add_argument("--raw-dir", default=None, help="folder of the raw Cora files (default: DGL's)")
    parser.add_argument("--epochs", type=int, default=None, help="default: 10 (hetero), 30 (rel)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    dgl.seed(args.seed)
    torch.manual_seed(args.seed)

    hg, num_classes = cora_heterograph(args.raw_dir)
    if args.model == "hetero":
        val_acc, test_acc = train_hetero(hg, num_classes, args.epochs or 10)
    else:
        val_acc, test_acc = train_rel(hg, num_classes, args.epochs or 30)
    print(f"val accuracy {val_acc:.4f}, test accuracy {test_acc:.4f}")
    return {"val_acc": val_acc, "test_acc": test_acc}


if __name__ == "__main__":
    main()
