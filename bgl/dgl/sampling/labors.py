"""DGL's ``dgl.sampling.sample_labors``: LABOR (Balin & Catalyurek) frontiers on ``bgl.dgl`` graphs.

Each relation's seeds' full neighbourhoods (in-edges, ``edge_dir="out"``: out-edges) go to bgl's LABOR pick
(:func:`bgl.sampler.labor_ops.labor_importance`, the kernels ``bgl.DataLoader``'s ``LaborSampler`` runs):
edge ``t -> s`` is kept when the one variate of ``t`` is below ``s``'s inclusion probability (``fanout /
deg(s)`` for LABOR-0, the fixed point of ``importance_sampling`` rounds, or by the ``prob`` weights), so
seeds that share a neighbour tend to keep it together.  The variates are keyed by ``random_seed`` (drawn
from torch's generator when None) and the neighbour's id; ``random_seed`` with two entries and
``seed2_contribution`` in [0, 1) blend two seeds' variates, as DGL's ``batch_dependency``.  DGL's own
variates come from another hash: the same law, other edges.

Returns ``(frontier, importances)`` as DGL's: the frontier as :func:`~bgl.dgl.sampling.sample_neighbors`'s
(every node, the kept edges seed by seed, ``edata[dgl.EID]``, the fields), and one tensor per relation of
the kept edges' weights (``edge_weights`` for the message passing), empty when ``importance_sampling`` is 0
and no ``prob`` is given.
Cost per call: O(the seeds' whole neighbourhoods), which LABOR reads in full.
"""
from __future__ import annotations

import numpy as np
import torch

from bgl.dgl.base import DGLError
from bgl.dgl.heterograph import DGLGraph
from bgl.dgl.sampling.neighbors import _frontier, frontier_arguments, ordered_weights
from bgl.sampler.multilayer import draw_seed


def sample_labors(g: DGLGraph, nodes, fanout, edge_dir: str = "in", prob=None, importance_sampling=0,
                  random_seed=None, seed2_contribution=0, copy_ndata: bool = True, copy_edata: bool = True,
                  exclude_edges=None, output_device=None):
    """LABOR's frontier of ``nodes`` and the kept edges' importances (module doc).

    Parameters
    ----------
    g : a ``bgl.dgl`` graph (not a block)
    nodes : seed ids (a tensor, or ``{ntype: ids}``)
    fanout : int, or ``{etype: int}`` naming every relation (-1: every edge)
    edge_dir : ``"in"`` or ``"out"``
    prob : name of an edge feature to weigh the edges by (a relation without it: unweighted)
    importance_sampling : LABOR-i's rounds (0: LABOR-0; < 0: until the fixed point)
    random_seed : int, or a tensor of one or two ints keying the variates
    seed2_contribution : the second seed's share in [0, 1) (with two seeds)
    copy_ndata, copy_edata, exclude_edges, output_device : as ``sample_neighbors``'s

    Returns
    -------
    ``(frontier, importances)``: a DGLGraph, and a list of float32 tensors, one per relation
    """
    from bgl.sampler.labor_ops import labor_importance

    seeds, fanouts, excluded = frontier_arguments(g, nodes, fanout, edge_dir, exclude_edges, "sample_labors")
    seed, seed2, mix = _variate_seeds(random_seed, seed2_contribution)
    weighted_output = importance_sampling != 0 or prob is not None
    picks, importances = {}, []
    for cet, fan in zip(g.canonical_etypes, fanouts):
        own = seeds.get(cet[2] if edge_dir == "in" else cet[0])
        eids, owner, other, counts = _neighbourhoods(g, cet, edge_dir, own, excluded.get(cet))
        weights = ordered_weights(g, cet, edge_dir, prob, None)
        if weights is not None:
            weights = weights[eids.numpy()]
        if eids.numel() == 0 or fan == 0:
            keep, imp = np.zeros(eids.shape[0], bool), np.zeros(eids.shape[0], np.float32)
        else:
            src_ids, local = np.unique(other.numpy(), return_inverse=True)
            try:
                keep, imp = labor_importance(counts, src_ids, local.astype(np.int64), fan, int(importance_sampling),
                                             seed, seed2, mix, weights, name=str(prob))
            except ValueError as e:
                raise DGLError(str(e)) from None
        keep_t = torch.from_numpy(keep)
        picks[cet] = eids[keep_t].to(g.device), owner[keep_t].to(g.device), other[keep_t].to(g.device)
        importances.append(torch.from_numpy(imp[keep]).to(g.device) if weighted_output
                           else torch.zeros(0, dtype=torch.int64))
    frontier = _frontier(g, picks, edge_dir, copy_ndata, copy_edata, output_device)
    if output_device is not None:
        importances = [t.to(output_device) for t in importances]
    return frontier, importances


def _neighbourhoods(g, cet, edge_dir, own, excluded):
    """(edge ids, the seed each belongs to, its other end), int64 CPU [e]: every edge of each of ``own`` in
    relation ``cet``, seed by seed (a seed listed twice: twice), less the ``excluded`` edge ids; and the
    number of edges of each seed, int64 numpy [len(own)]."""
    empty = torch.zeros(0, dtype=torch.int64)
    if own is None or own.numel() == 0:
        return empty, empty, empty, np.zeros(0, np.int64)
    rel = g._rels[cet]
    comp = rel.csc() if edge_dir == "in" else rel.csr()
    own = own.cpu()
    limit = rel.num_dst if edge_dir == "in" else rel.num_src
    if int(own.min()) < 0 or int(own.max()) >= limit:
        raise DGLError(f"Expect all node IDs of {cet} to be in [0, {limit}).")
    indptr = comp.indptr.cpu().numpy().astype(np.int64, copy=False)
    own_np = own.numpy().astype(np.int64, copy=False)
    degs = indptr[own_np + 1] - indptr[own_np]
    row = np.repeat(np.arange(own_np.shape[0]), degs)
    positions = np.repeat(indptr[own_np] - (np.cumsum(degs) - degs), degs) + np.arange(row.shape[0])
    eids = positions if comp.eids is None else comp.eids.cpu().numpy()[positions].astype(np.int64)
    other = comp.indices.cpu().numpy()[positions].astype(np.int64)
    owner = own_np[row]
    if excluded is not None and excluded.numel():
        keep = ~np.isin(eids, excluded.cpu().numpy())
        eids, owner, other, row = eids[keep], owner[keep], other[keep], row[keep]
    eids, owner, other = torch.from_numpy(eids), torch.from_numpy(owner), torch.from_numpy(other)
    return eids, owner, other, np.bincount(row, minlength=own_np.shape[0]).astype(np.int64)


def _variate_seeds(random_seed, seed2_contribution) -> tuple[int, int, float]:
    """(seed, second seed, its share or -1) from DGL's ``random_seed`` / ``seed2_contribution``."""
    if random_seed is None:
        return draw_seed(), 0, -1.0
    values = torch.as_tensor(random_seed).view(-1).tolist() if not isinstance(random_seed, int) else [random_seed]
    if len(values) == 2 and seed2_contribution:
        return int(values[0]), int(values[1]), float(seed2_contribution)
    return int(values[0]), 0, -1.0
