"""GraphSAGE link prediction on Cora: a DGL script whose only bgl line is the import.

DGL's ``examples/pytorch/graphsage/link_pred.py`` pattern: seed edges through
``as_edge_prediction_sampler`` (their reverses excluded from the sampled blocks, one uniform
negative per positive), node embeddings from ``SAGEConv`` blocks, pair scores from
``apply_edges(fn.u_dot_v(...))``.  Evaluation: 10% of the citations held out of the training
graph, scored against as many random node pairs (AUC).  With ``import dgl`` /
``import dgl.function as fn`` / ``import dgl.nn as dglnn`` it runs on DGL 2.1 unchanged.

    python examples/from_dgl/link_prediction.py [--raw-dir DIR] [--epochs 5]
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

import bgl.dgl as dgl
import bgl.dgl.function as fn
import bgl.dgl.nn as dglnn


class SAGE(nn.Module):
    def __init__(self, in_size, hid_size):
        super().__init__()
        self.layers = nn.ModuleList([dglnn.SAGEConv(in_size, hid_size, "mean"),
                                     dglnn.SAGEConv(hid_size, hid_size, "mean")])

    def forward(self, blocks, x):
        h = x
        for i, (layer, block) in enumerate(zip(self.layers, blocks)):
            h = layer(block, h)
            if i != len(self.layers) - 1:
                h = F.relu(h)
        return h


def score(pair_graph, h):
    with pair_graph.local_scope():
        pair_graph.ndata["h"] = h
        pair_graph.apply_edges(fn.u_dot_v("h", "h", "score"))
        return pair_graph.edata["score"].squeeze(1)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--raw-dir", default=None, help="folder of the raw Cora files (default: DGL's)")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    dgl.seed(args.seed)
    torch.manual_seed(args.seed)

    g = dgl.data.CoraGraphDataset(raw_dir=args.raw_dir, verbose=False)[0]
    src, dst = g.edges()
    once = src < dst  # each citation once
    src, dst = src[once], dst[once]
    perm = torch.randperm(src.shape[0])
    num_test = src.shape[0] // 10
    test_src, test_dst = src[perm[:num_test]], dst[perm[:num_test]]
    train_src, train_dst = src[perm[num_test:]], dst[perm[num_test:]]
    n, m = g.num_nodes(), train_src.shape[0]
    # both directions of the training citations: edge i and edge i + m are each other's reverse
    train_g = dgl.graph((torch.cat([train_src, train_dst]), torch.cat([train_dst, train_src])), num_nodes=n)
    train_g.ndata["feat"] = g.ndata["feat"]
    reverse_eids = torch.cat([torch.arange(m, 2 * m), torch.arange(0, m)])

    sampler = dgl.dataloading.NeighborSampler([10, 10], prefetch_node_feats=["feat"])
    sampler = dgl.dataloading.as_edge_prediction_sampler(
        sampler, exclude="reverse_id", reverse_eids=reverse_eids,
        negative_sampler=dgl.dataloading.negative_sampler.Uniform(1))
    loader = dgl.dataloading.DataLoader(train_g, torch.arange(2 * m), sampler, batch_size=512, shuffle=True)
    model = SAGE(g.ndata["feat"].shape[1], 64)
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    for epoch in range(args.epochs):
        model.train()
        for _, pair_graph, neg_pair_graph, blocks in loader:
            h = model(blocks, blocks[0].srcdata["feat"])
            pos, neg = score(pair_graph, h), score(neg_pair_graph, h)
            logits = torch.cat([pos, neg])
            labels = torch.cat([torch.ones_like(pos), torch.zeros_like(neg)])
            loss = F.binary_cross_entropy_with_logits(logits, labels)
            opt.zero_grad()
            loss.backward()
            opt.step()

    model.eval()
    full = dgl.dataloading.MultiLayerFullNeighborSampler(2)
    with torch.no_grad():
        _, _, blocks = next(iter(dgl.dataloading.DataLoader(train_g, torch.arange(n), full, batch_size=n)))
        h = model(blocks, blocks[0].srcdata["feat"])
        h_by_node = torch.empty_like(h)
        h_by_node[blocks[-1].dstdata[dgl.NID]] = h
        neg_src, neg_dst = torch.randint(0, n, (num_test,)), torch.randint(0, n, (num_test,))
        pos = (h_by_node[test_src] * h_by_node[test_dst]).sum(1)
        neg = (h_by_node[neg_src] * h_by_node[neg_dst]).sum(1)
        auc = float((pos[:, None] > neg[None, :]).float().mean())
    print(f"test AUC {auc:.4f}")
    return {"test_auc": auc}


if __name__ == "__main__":
    main()
