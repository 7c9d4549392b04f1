"""``GNNExplainer`` and ``HeteroGNNExplainer`` (Ying et al., NeurIPS 2019) as DGL 2.1 has them.

An explanation learns a soft edge mask ``M`` (one logit per edge) and a feature mask ``F`` (one logit per
input feature column) by Adam on

    l(y, y_hat) + alpha1 ||M||_1 + alpha2 H(M) + beta1 mean(F) + beta2 H(F)

where ``y`` is the model's own prediction on the unmasked input, ``y_hat`` its log-probability with the
features scaled by ``sigmoid(F)`` and the messages by ``sigmoid(M)`` (the model's ``eweight`` argument),
``H`` the mean binary entropy.  The masks start as DGL's do (``torch.randn`` in the same order and
scale), so with the same seed, model weights and graph a run follows DGL's step for step.

Cost per epoch: one forward and backward pass of the model over the explained (sub)graph; a node's
explanation runs on its ``num_hops``-hop in-neighbourhood only (:func:`khop_in_subgraph`).
"""
from __future__ import annotations

from math import sqrt

import torch
from torch import nn

from bgl.dgl.base import EID, NID
from bgl.dgl.graph_utils.khop import khop_in_subgraph

__all__ = ["GNNExplainer", "HeteroGNNExplainer"]


def _entropy_terms(mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(sigmoid(mask), its mean binary entropy), DGL's eps inside the logs."""
    eps = 1e-15
    m = mask.sigmoid()
    ent = -m * torch.log(m + eps) - (1 - m) * torch.log(1 - m + eps)
    return m, ent.mean()


class _Explainer(nn.Module):
    """What both explainers share: DGL's hyper-parameters and the optimisation loop."""

    def __init__(self, model, num_hops, lr=0.01, num_epochs=100, *, alpha1=0.005, alpha2=1.0, beta1=1.0,
                 beta2=0.1, log=True):
        super().__init__()
        self.model = model
        self.num_hops = num_hops
        self.lr = lr
        self.num_epochs = num_epochs
        self.alpha1 = alpha1
        self.alpha2 = alpha2
        self.beta1 = beta1
        self.beta2 = beta2
        self.log = log

    def _regularize(self, loss, feat_masks, edge_masks):
        for mask in edge_masks:
            m, ent = _entropy_terms(mask)
            loss = loss + self.alpha1 * torch.sum(m)
            loss = loss + self.alpha2 * ent
        for mask in feat_masks:
            m, ent = _entropy_terms(mask)
            loss = loss + self.beta1 * torch.mean(m)
            loss = loss + self.beta2 * ent
        return loss

    def _optimise(self, params, step, title: str) -> None:
        """``num_epochs`` Adam steps on ``params``; ``step()`` returns the loss of one forward pass."""
        optimizer = torch.optim.Adam(params, lr=self.lr)
        bar = None
        if self.log:
            from tqdm.auto import tqdm

            bar = tqdm(total=self.num_epochs)
            bar.set_description(title)
        for _ in range(self.num_epochs):
            optimizer.zero_grad()
            step().backward()
            optimizer.step()
            if bar is not None:
                bar.update(1)
        if bar is not None:
            bar.close()

    def _predict(self, **inputs):
        with torch.no_grad():
            return self.model(**inputs)


class GNNExplainer(_Explainer):
    """DGL's ``GNNExplainer`` for a model over a one-type graph (module doc).

    Parameters
    ----------
    model : ``forward(graph, feat, eweight=None, **kwargs)`` -> logits ``[N, C]`` (a node's explanation) or
        ``[B, C]`` (a graph's); ``eweight [E]`` must scale the messages
    num_hops : hops of the neighbourhood a node's explanation reads (the model's layer count)
    lr, num_epochs : Adam's learning rate and step count; alpha1, alpha2, beta1, beta2 : the loss weights
        (keyword only); log : a tqdm progress bar
    """

    @staticmethod
    def _init_masks(graph, feat):
        num_nodes, feat_size = feat.size()
        feat_mask = nn.Parameter(torch.randn(1, feat_size, device=feat.device) * 0.1)
        std = nn.init.calculate_gain("relu") * sqrt(2.0 / (2 * num_nodes))
        edge_mask = nn.Parameter(torch.randn(graph.num_edges(), device=feat.device) * std)
        return feat_mask, edge_mask

    def explain_node(self, node_id, graph, feat, **kwargs):
        """Explain the prediction for node ``node_id`` of ``graph`` (features ``feat [N, D]``).

        ``kwargs`` go to the model, rows of a per-node ``[N, ...]`` / per-edge ``[E, ...]`` tensor restricted
        to the subgraph.

        Returns
        -------
        new_node_id : the node's position in ``sg``; sg : its ``num_hops``-hop in-subgraph (``ndata[NID]``,
        ``edata[EID]``); feat_mask : float ``[D]`` in (0, 1); edge_mask : float ``[sg.num_edges()]`` in (0, 1)
        """
        self.model = self.model.to(graph.device)
        self.model.eval()
        num_nodes, num_edges = graph.num_nodes(), graph.num_edges()
        sg, inverse = khop_in_subgraph(graph, node_id, self.num_hops)
        sg_nodes, sg_edges = sg.ndata[NID].long(), sg.edata[EID].long()
        feat = feat[sg_nodes]
        for key, item in kwargs.items():
            if torch.is_tensor(item) and item.size(0) == num_nodes:
                kwargs[key] = item[sg_nodes]
            elif torch.is_tensor(item) and item.size(0) == num_edges:
                kwargs[key] = item[sg_edges]
        pred = self._predict(graph=sg, feat=feat, **kwargs).argmax(dim=-1)
        feat_mask, edge_mask = self._init_masks(sg, feat)

        def step():
            logits = self.model(graph=sg, feat=feat * feat_mask.sigmoid(), eweight=edge_mask.sigmoid(), **kwargs)
            loss = -logits.log_softmax(dim=-1)[inverse, pred[inverse]]
            return self._regularize(loss, [feat_mask], [edge_mask])

        self._optimise([feat_mask, edge_mask], step, f"Explain node {node_id}")
        return inverse, sg, feat_mask.detach().sigmoid().squeeze(), edge_mask.detach().sigmoid()

    def explain_graph(self, graph, feat, **kwargs):
        """Explain the prediction for ``graph`` (the model's first output row).

        Returns
        -------
        feat_mask : float ``[D]``; edge_mask : float ``[E]``, both in (0, 1)
        """
        self.model = self.model.to(graph.device)
        self.model.eval()
        pred = self._predict(graph=graph, feat=feat, **kwargs).argmax(dim=-1)
        feat_mask, edge_mask = self._init_masks(graph, feat)

        def step():
            logits = self.model(graph=graph, feat=feat * feat_mask.sigmoid(), eweight=edge_mask.sigmoid(), **kwargs)
            loss = -logits.log_softmax(dim=-1)[0, pred[0]]
            return self._regularize(loss, [feat_mask], [edge_mask])

        self._optimise([feat_mask, edge_mask], step, "Explain graph")
        return feat_mask.detach().sigmoid().squeeze(), edge_mask.detach().sigmoid()


class HeteroGNNExplainer(_Explainer):
    """DGL's ``HeteroGNNExplainer``: :class:`GNNExplainer` over a typed graph, one feature mask per node type
    (``feat`` a ``{ntype: [N_t, D_t]}`` dict) and one edge mask per canonical edge type (the model's
    ``eweight`` a ``{canonical etype: [E_r]}`` dict); the model returns ``{ntype: logits}`` for a node's
    explanation, logits ``[B, C]`` for a graph's.  Same arguments as :class:`GNNExplainer`."""

    @staticmethod
    def _init_masks(graph, feat):
        feat_masks = {nt: nn.Parameter(torch.randn(1, x.size(1), device=graph.device) * 0.1)
                      for nt, x in feat.items()}
        edge_masks = {}
        for cet in graph.canonical_etypes:
            ends = graph.num_nodes(cet[0]) + graph.num_nodes(cet[-1])
            std = nn.init.calculate_gain("relu") * (sqrt(2.0 / ends) if ends > 0 else 1.0)
            edge_masks[cet] = nn.Parameter(torch.randn(graph.num_edges(cet), device=graph.device) * std)
        return feat_masks, edge_masks

    def _run(self, graph, feat, pick, title: str, kwargs):
        feat_mask, edge_mask = self._init_masks(graph, feat)

        def step():
            h = {nt: x * feat_mask[nt].sigmoid() for nt, x in feat.items()}
            eweight = {cet: m.sigmoid() for cet, m in edge_mask.items()}
            loss = pick(self.model(graph=graph, feat=h, eweight=eweight, **kwargs))
            return self._regularize(loss, list(feat_mask.values()), list(edge_mask.values()))

        self._optimise([*feat_mask.values(), *edge_mask.values()], step, title)
        return ({nt: m.detach().sigmoid().squeeze() for nt, m in feat_mask.items()},
                {cet: m.detach().sigmoid() for cet, m in edge_mask.items()})

    def explain_node(self, ntype, node_id, graph, feat, **kwargs):
        """Explain the prediction for node ``node_id`` of type ``ntype``.

        Returns
        -------
        new_node_id : its position among ``sg``'s ``ntype`` nodes; sg : the ``num_hops``-hop in-subgraph;
        feat_mask : ``{ntype: float [D_t]}``; edge_mask : ``{canonical etype: float [E_r]}``
        """
        self.model = self.model.to(graph.device)
        self.model.eval()
        sg, inverse = khop_in_subgraph(graph, {ntype: node_id}, self.num_hops)
        inverse = inverse[ntype]
        sg_feat = {nt: feat[nt][ids.long()] for nt, ids in sg.ndata[NID].items()}
        pred = self._predict(graph=sg, feat=sg_feat, **kwargs)[ntype].argmax(dim=-1)

        def pick(out):
            return -out[ntype].log_softmax(dim=-1)[inverse, pred[inverse]]

        feat_mask, edge_mask = self._run(sg, sg_feat, pick, f"Explain node {node_id} with type {ntype}", kwargs)
        return inverse, sg, feat_mask, edge_mask

    def explain_graph(self, graph, feat, **kwargs):
        """Explain the prediction for ``graph``: ``(feat_mask {ntype: [D_t]}, edge_mask {canonical etype:
        [E_r]})``."""
        self.model = self.model.to(graph.device)
        self.model.eval()
        pred = self._predict(graph=graph, feat=feat, **kwargs).argmax(dim=-1)

        def pick(out):
            return -out.log_softmax(dim=-1)[0, pred[0]]

        return self._run(graph, feat, pick, "Explain graph", kwargs)
