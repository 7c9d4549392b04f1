"""``PGExplainer`` and ``HeteroPGExplainer`` (Luo et al., NeurIPS 2020) as DGL 2.1 has them.

An explanation network (an MLP ``elayers``) scores every edge from the model's detached node embeddings
(source, destination and, for a node's explanation, the explained node's); a concrete (Gumbel-sigmoid) sample
of the scores, symmetrised over each edge and its reverse, is the edge mask the model then runs with.  The
network is trained over many instances (``train_step`` / ``train_step_node``) and explains new ones in one
forward pass.

The model contract is DGL's: ``model(graph, feat, embed=True, **kwargs)`` returns node embeddings,
``model(graph, feat, edge_weight=mask, **kwargs)`` logits.  Random numbers are drawn as DGL draws them (one
``torch.rand(E)`` per sample), so the same seed and weights give DGL's masks.  DGL 2.1's quirks are kept so
that outputs agree: the training loss's prediction term reads detached probabilities (only the size and
entropy terms reach ``elayers``), and ``HeteroPGExplainer.explain_node`` reads the explained node's own
embedding at its type-local id in the homogeneous subgraph.

Cost per call: one embedding pass and one masked pass of the model, ``E x 64`` hidden units in ``elayers``, and
one reverse-edge look-up (``edge_ids``) per edge; a node's explanation runs on its ``num_hops``-hop
in-subgraph (one :func:`khop_in_subgraph` per explained node).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from bgl.dgl.base import ETYPE, NID
from bgl.dgl.batching import batch
from bgl.dgl.graph_utils.khop import khop_in_subgraph
from bgl.dgl.transforms import to_homogeneous

__all__ = ["PGExplainer", "HeteroPGExplainer"]


def _require(flag: bool, message: str) -> None:
    """DGL checks its calling conventions with ``assert``; the same AssertionError, raised even under -O."""
    if not flag:
        raise AssertionError(message)


class PGExplainer(nn.Module):
    """DGL's ``PGExplainer`` for a model over a one-type graph (module doc).

    Parameters
    ----------
    model : ``forward(graph, feat, embed=False, edge_weight=None, **kwargs)``: node embeddings
        ``[N, num_features]`` with ``embed=True``, else logits (``[B, C]`` per graph or ``[N, C]`` per node)
    num_features : the embedding size; ``elayers`` reads 2 (graph) or 3 (node) embeddings per edge
    num_hops : the model's layer count (needed by ``explain_node``)
    explain_graph : build for graph-level (True) or node-level (False) predictions
    coff_budget, coff_connect : weights of the size and entropy losses; sample_bias : the concrete sample's
        noise is drawn from ``[sample_bias, 1 - sample_bias]``
    """

    def __init__(self, model, num_features, num_hops=None, explain_graph=True, coff_budget=0.01,
                 coff_connect=5e-4, sample_bias=0.0):
        super().__init__()
        self.model = model
        self.graph_explanation = explain_graph
        self.num_features = num_features * (2 if explain_graph else 3)
        self.num_hops = num_hops
        self.coff_budget = coff_budget
        self.coff_connect = coff_connect
        self.sample_bias = sample_bias
        self.init_bias = 0.0
        self.elayers = nn.Sequential(nn.Linear(self.num_features, 64), nn.ReLU(), nn.Linear(64, 1))

    def set_masks(self, graph, edge_mask=None):
        """Hold ``edge_mask`` (float ``[E]``) on ``graph``'s device, or a random one (``randn`` scaled as DGL's)."""
        if edge_mask is None:
            std = nn.init.calculate_gain("relu") * math.sqrt(2.0 / (2 * graph.num_nodes()))
            edge_mask = torch.randn(graph.num_edges()) * std + self.init_bias
        self.edge_mask = edge_mask.to(graph.device)

    def clear_masks(self):
        """Forget the held edge mask."""
        self.edge_mask = None

    def parameters(self):
        """The explanation network's parameters (what an optimiser trains; DGL's override: no ``recurse``)."""
        return self.elayers.parameters()

    def loss(self, prob, ori_pred):
        """Mean ``-log(p + 1e-6)`` of the original class, plus the size loss of the sampled edge values and the
        entropy loss of the held mask (``prob [B, C]``, ``ori_pred`` int64 ``[B]``); a scalar tensor."""
        target_prob = prob.gather(-1, ori_pred.unsqueeze(-1)) + 1e-6
        pred_loss = torch.mean(-torch.log(target_prob))
        values = self.sparse_mask_values
        if self.coff_budget <= 0:
            size_loss = self.coff_budget * torch.sum(values)
        else:
            size_loss = self.coff_budget * F.relu(torch.sum(values) - self.coff_budget)
        scale = 0.99
        mask = self.edge_mask * (2 * scale - 1.0) + (1.0 - scale)
        ent = -mask * torch.log(mask) - (1 - mask) * torch.log(1 - mask)
        return pred_loss + size_loss + self.coff_connect * torch.mean(ent)

    def concrete_sample(self, w, beta=1.0, training=True):
        """``sigmoid((logit(u) + w) / beta)``, ``u ~ U[bias, 1 - bias]`` (one ``torch.rand`` like ``w``) when
        ``training``, else ``sigmoid(w)``."""
        if not training:
            return torch.sigmoid(w)
        bias = self.sample_bias
        noise = bias + (1 - 2 * bias) * torch.rand(w.size()).to(w.device)
        gate = (torch.log(noise) - torch.log(1.0 - noise) + w) / beta
        return torch.sigmoid(gate)

    def _to_device(self, graph):
        self.model = self.model.to(graph.device)
        self.elayers = self.elayers.to(graph.device)

    def _embed(self, graph, feat, kwargs):
        with torch.no_grad():
            return self.model(graph, feat, embed=True, **kwargs)

    def _sample_mask(self, graph, emb, temperature, training):
        """Edge values from ``elayers(emb)`` (``[E, *]``), sampled; the mask averages each edge with its reverse
        (DGLError where an edge has none)."""
        values = self.concrete_sample(self.elayers(emb).reshape(-1), beta=temperature, training=training)
        self.sparse_mask_values = values
        src, dst = graph.edges()
        edge_mask = (values + values[graph.edge_ids(dst, src).long()]) / 2
        self.set_masks(graph, edge_mask)
        return edge_mask

    def _prediction(self, graph, feat, kwargs):
        with torch.no_grad():
            return self.model(graph, feat, embed=False, **kwargs)

    def train_step(self, graph, feat, temperature, **kwargs):
        """The explanation network's loss (scalar tensor) on graph ``graph`` (a batch) with features ``feat``."""
        _require(self.graph_explanation, '"explain_graph" must be True when initializing the module.')
        self._to_device(graph)
        pred = self._prediction(graph, feat, kwargs).argmax(-1)
        prob, _ = self.explain_graph(graph, feat, temperature, training=True, **kwargs)
        return self.loss(prob, pred)

    def train_step_node(self, nodes, graph, feat, temperature, **kwargs):
        """The explanation network's loss (scalar tensor) on ``nodes`` (int, ids or tensor, no duplicates)."""
        _require(not self.graph_explanation, '"explain_graph" must be False when initializing the module.')
        self._to_device(graph)
        if isinstance(nodes, torch.Tensor):
            nodes = nodes.tolist()
        if isinstance(nodes, int):
            nodes = [nodes]
        prob, _, batched_graph, inverse = self.explain_node(nodes, graph, feat, temperature, training=True,
                                                            **kwargs)
        pred = self._prediction(batched_graph, self.batched_feats, kwargs).argmax(-1)
        return self.loss(prob[inverse], pred[inverse])

    def _finish(self, probs, training):
        if training:
            return probs.detach()
        self.clear_masks()
        return probs

    def explain_graph(self, graph, feat, temperature=1.0, training=False, **kwargs):
        """The edge mask of ``graph`` (every edge needs its reverse) and the model's prediction under it.

        Returns
        -------
        probs : float ``[B, C]``, softmax of the masked model's logits; edge_mask : float ``[E]`` in (0, 1)
        """
        _require(self.graph_explanation, '"explain_graph" must be True when initializing the module.')
        self._to_device(graph)
        embed = self._embed(graph, feat, kwargs)
        src, dst = graph.edges()
        edge_mask = self._sample_mask(graph, torch.cat([embed[src.long()], embed[dst.long()]], dim=-1),
                                      temperature, training)
        probs = F.softmax(self.model(graph, feat, edge_weight=self.edge_mask, **kwargs), dim=-1)
        return self._finish(probs, training), edge_mask

    def explain_node(self, nodes, graph, feat, temperature=1.0, training=False, **kwargs):
        """Edge masks of the ``num_hops``-hop in-subgraphs of ``nodes`` (int, ids or tensor), batched.

        Returns
        -------
        probs : float ``[N_b, C]`` over the batch's nodes; edge_mask : float ``[E_b]``; batched_graph : the
        subgraphs batched (``ndata`` ``_ID``, ``feat``, ``train``; ``edata`` ``_ID``); inverse : int64, the
        explained nodes' ids in it
        """
        _require(not self.graph_explanation, '"explain_graph" must be False when initializing the module.')
        _require(self.num_hops is not None, '"num_hops" must be provided when initializing the module.')
        if isinstance(nodes, torch.Tensor):
            nodes = nodes.tolist()
        if isinstance(nodes, int):
            nodes = [nodes]
        self._to_device(graph)
        graphs, embeds = [], []
        for node_id in nodes:  # one subgraph per explained node
            sg, inverse = khop_in_subgraph(graph, node_id, self.num_hops)
            sg.ndata["feat"] = feat[sg.ndata[NID].long()]
            train = torch.zeros(sg.num_nodes(), dtype=torch.bool, device=sg.device)
            train[inverse] = True
            sg.ndata["train"] = train
            embed = self._embed(sg, sg.ndata["feat"], kwargs)
            src, dst = sg.edges()
            own = embed[inverse[0]].repeat(sg.num_edges(), 1)
            embeds.append(torch.cat([embed[src.long()], embed[dst.long()], own], dim=-1))
            graphs.append(sg)
        batched_graph = batch(graphs)
        edge_mask = self._sample_mask(batched_graph, torch.cat(embeds), temperature, training)
        batched_feats = batched_graph.ndata["feat"]
        probs = F.softmax(self.model(batched_graph, batched_feats, edge_weight=self.edge_mask, **kwargs), dim=-1)
        inverse = batched_graph.ndata["train"].nonzero().squeeze(1)
        if training:
            self.batched_feats = batched_feats
        return self._finish(probs, training), edge_mask, batched_graph, inverse


def _per_relation(edge_mask, homograph, heterograph):
    """Split a mask over ``homograph``'s edges into ``{canonical etype: [E_r]}`` by its ``edata[ETYPE]``."""
    kind = homograph.edata[ETYPE]
    return {cet: edge_mask[(kind == t).nonzero().squeeze(1)] for t, cet in enumerate(heterograph.canonical_etypes)}


class HeteroPGExplainer(PGExplainer):
    """DGL's ``HeteroPGExplainer``: :class:`PGExplainer` over a typed graph.  ``feat`` and the model's embeddings
    are ``{ntype: tensor}`` dicts; edges are scored on the homogeneous form of the graph (:func:`to_homogeneous`)
    and the mask handed to the model as ``edge_weight={canonical etype: [E_r]}``.  Same arguments."""

    def train_step_node(self, nodes, graph, feat, temperature, **kwargs):
        """The explanation network's loss (scalar tensor) on ``nodes``, ``{ntype: ids}``."""
        _require(not self.graph_explanation, '"explain_graph" must be False when initializing the module.')
        self._to_device(graph)
        prob, _, batched_graph, inverse = self.explain_node(nodes, graph, feat, temperature, training=True,
                                                            **kwargs)
        pred = self._prediction(batched_graph, self.batched_feats, kwargs)
        return self.loss(torch.cat([prob[nt][ids] for nt, ids in inverse.items()]),
                         torch.cat([pred[nt].argmax(-1)[ids] for nt, ids in inverse.items()]))

    def explain_graph(self, graph, feat, temperature=1.0, training=False, **kwargs):
        """The edge mask of ``graph`` and the model's prediction under it: ``(probs [B, C], {canonical etype:
        float [E_r]})``.  Unlike DGL's, ``graph``'s node data is left as it was (DGL's writes ``emb`` there)."""
        _require(self.graph_explanation, '"explain_graph" must be True when initializing the module.')
        self._to_device(graph)
        embed = self._embed(graph, feat, kwargs)
        homo = to_homogeneous(graph)
        homo_embed = torch.cat([embed[nt] for nt in graph.ntypes])
        src, dst = homo.edges()
        edge_mask = self._sample_mask(homo, torch.cat([homo_embed[src.long()], homo_embed[dst.long()]], dim=-1),
                                      temperature, training)
        hetero_mask = _per_relation(edge_mask, homo, graph)
        probs = F.softmax(self.model(graph, feat, edge_weight=hetero_mask, **kwargs), dim=-1)
        return self._finish(probs, training), hetero_mask

    def explain_node(self, nodes, graph, feat, temperature=1.0, training=False, **kwargs):
        """Edge masks of the ``num_hops``-hop in-subgraphs of ``nodes`` (``{ntype: ids}``), batched.

        Returns
        -------
        probs : ``{ntype: float [N_t, C]}``; edge_mask : ``{canonical etype: float [E_r]}``; batched_graph : the
        subgraphs batched (``ndata`` ``_ID``, ``feat``, ``train``, ``emb``); inverse : ``{ntype: int64}``, the
        explained nodes' ids in it
        """
        _require(not self.graph_explanation, '"explain_graph" must be False when initializing the module.')
        _require(self.num_hops is not None, '"num_hops" must be provided when initializing the module.')
        self._to_device(graph)
        embeds, homos, graphs = [], [], []
        for ntype, ids in nodes.items():
            for node_id in (ids.tolist() if isinstance(ids, torch.Tensor) else ids):  # one subgraph per node
                sg, inverse = khop_in_subgraph(graph, {ntype: node_id}, self.num_hops)
                for nt in sg.ntypes:
                    sg.nodes[nt].data["feat"] = feat[nt][sg.ndata[NID][nt].long()]
                    train = torch.zeros(sg.num_nodes(nt), dtype=torch.bool, device=sg.device)
                    if nt in inverse:
                        train[inverse[nt]] = True
                    sg.nodes[nt].data["train"] = train
                embed = self._embed(sg, sg.ndata["feat"], kwargs)
                for nt, x in embed.items():
                    sg.nodes[nt].data["emb"] = x
                homo = to_homogeneous(sg, ndata=["emb"])
                homo_embed = homo.ndata["emb"]
                src, dst = homo.edges()
                # DGL 2.1 indexes the homogeneous embeddings with the node's type-local id: kept, for its masks
                own = homo_embed[inverse[ntype][0]].repeat(sg.num_edges(), 1)
                embeds.append(torch.cat([homo_embed[src.long()], homo_embed[dst.long()], own], dim=-1))
                homos.append(homo)
                graphs.append(sg)
        batched_homo, batched_graph = batch(homos), batch(graphs)
        edge_mask = self._sample_mask(batched_homo, torch.cat(embeds), temperature, training)
        hetero_mask = _per_relation(edge_mask, batched_homo, batched_graph)
        batched_feats = {nt: batched_graph.nodes[nt].data["feat"] for nt in batched_graph.ntypes}
        logits = self.model(batched_graph, batched_feats, edge_weight=hetero_mask, **kwargs)
        probs = {nt: F.softmax(x, dim=-1) for nt, x in logits.items()}
        inverse = {nt: batched_graph.nodes[nt].data["train"].nonzero().squeeze(1) for nt in batched_graph.ntypes}
        if training:
            self.batched_feats = batched_feats
            probs = {nt: p.detach() for nt, p in probs.items()}
        else:
            self.clear_masks()
        return probs, hetero_mask, batched_graph, inverse
