"""Stand-ins for the datasets DGL's example scripts download, built from Cora on either stack.

``bench/dgl/examples.py`` rewrites a script's dataset line to one of these where the script would
download (OGB, RDF).  Each is built with the stack the script runs on (``$BGL_EXAMPLES_DGL``:
``dgl`` or ``bgl.dgl``) from that stack's ``CoraGraphDataset`` (the same arrays on both), with a
fixed generator, so both stacks train on the same graph and split whatever the run's seed.

* :class:`CoraLinkSplit`: ``ogbl-citation2``'s interface (``dataset[0]``, ``get_edge_split()`` with
  ``source_node`` / ``target_node`` / ``target_node_neg``): Cora's citations, one direction each,
  a tenth held out for validation and a tenth for test, 100 random negatives per held-out edge.
* :class:`MRREvaluator`: ``ogb``'s ``Evaluator("ogbl-citation2")``: reciprocal rank of the positive
  among its negatives (ties count half, as OGB's).
* :class:`CoraTermsDataset`: ``dgl.data.rdf``'s entity-classification interface (``dataset[0]`` a
  typed graph, ``predict_category``, ``num_classes``, ``labels`` / ``train_mask`` / ``test_mask`` on
  the category): featureless papers and terms, relations ``cites`` / ``cited-by`` / ``has-term`` /
  ``term-of`` from Cora's citations and its bag-of-words, Planetoid's train and test papers.
"""
from __future__ import annotations

import importlib
import os

import torch

SPLIT_SEED = 20261205
NUM_NEGATIVES = 100


def _stack():
    return importlib.import_module(os.environ.get("BGL_EXAMPLES_DGL", "dgl"))


def _cora():
    return _stack().data.CoraGraphDataset(verbose=False)


class CoraLinkSplit:
    """``DglLinkPropPredDataset("ogbl-citation2")`` on Cora (module doc)."""

    def __init__(self):
        dgl = _stack()
        g = _cora()[0]
        src, dst = g.edges()
        once = src < dst  # Cora's graph holds each citation both ways
        src, dst = src[once].long(), dst[once].long()
        gen = torch.Generator().manual_seed(SPLIT_SEED)
        order = torch.randperm(src.shape[0], generator=gen)
        tenth = src.shape[0] // 10
        held = {"valid": order[:tenth], "test": order[tenth:2 * tenth]}
        train = order[2 * tenth:].sort().values
        n = g.num_nodes()
        self.graph = dgl.graph((src[train], dst[train]), num_nodes=n)
        self.graph.ndata["feat"] = g.ndata["feat"]
        self.split = {name: {"source_node": src[ids], "target_node": dst[ids],
                             "target_node_neg": torch.randint(0, n, (ids.shape[0], NUM_NEGATIVES), generator=gen)}
                      for name, ids in held.items()}

    def __getitem__(self, idx):
        return self.graph

    def __len__(self):
        return 1

    def get_edge_split(self):
        return self.split


class MRREvaluator:
    """``Evaluator("ogbl-citation2")``: ``eval({"y_pred_pos": [n], "y_pred_neg": [n, k]})`` gives
    ``{"mrr_list": [n]}``, the reciprocal of the positive's rank (ties: the mean of the optimistic and
    pessimistic rank)."""

    def __init__(self, name: str = "ogbl-citation2"):
        self.name = name

    def eval(self, input_dict):
        pos = input_dict["y_pred_pos"].view(-1, 1)
        neg = input_dict["y_pred_neg"]
        optimistic = (neg > pos).sum(dim=1) + 1
        pessimistic = (neg >= pos).sum(dim=1) + 1
        return {"mrr_list": 1.0 / (0.5 * (optimistic + pessimistic).float())}


class CoraTermsDataset:
    """An RDF entity-classification dataset's interface on Cora as a typed graph (module doc)."""

    predict_category = "paper"

    def __init__(self):
        dgl = _stack()
        data = _cora()
        g = data[0]
        src, dst = g.edges()
        once = src < dst
        cites = (src[once], dst[once])
        paper, term = (g.ndata["feat"] > 0).nonzero(as_tuple=True)
        self.num_classes = data.num_classes
        self.graph = dgl.heterograph({
            ("paper", "cites", "paper"): cites,
            ("paper", "cited-by", "paper"): (cites[1], cites[0]),
            ("paper", "has-term", "term"): (paper, term),
            ("term", "term-of", "paper"): (term, paper),
        }, num_nodes_dict={"paper": g.num_nodes(), "term": g.ndata["feat"].shape[1]})
        papers = self.graph.nodes["paper"].data
        papers["labels"] = g.ndata["label"]
        papers["train_mask"] = g.ndata["train_mask"]
        papers["test_mask"] = g.ndata["test_mask"]

    def __getitem__(self, idx):
        return self.graph

    def __len__(self):
        return 1
