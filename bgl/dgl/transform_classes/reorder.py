"""DGL 2.1's ``dgl.reorder_graph`` (and ``g.reorder_graph``): nodes renumbered (RCMK, METIS clusters or a given
permutation), then edges sorted by source or destination (or a given order), features carried along.

As DGL's: the node order is an induced subgraph in that order (edges by new source, edge-id order within),
then the edge order is ``np.argsort`` of the new sources / destinations called as DGL calls it (NumPy's default
sort, so ties fall as in DGL with the same NumPy); ``edata["__orig__"]`` holds each edge's old id and becomes
``edata[dgl.EID]`` with ``store_ids`` (it stays ``"__orig__"`` without, as in DGL).  ``"rcmk"`` is SciPy's
reverse Cuthill-McKee order rebuilt without SciPy (:mod:`bgl.dgl.data.reorder`, a numba kernel, O(E));
``"metis"`` groups the nodes of each of ``k`` parts of bgl's partitioner (KaMinPar; METIS through pymetis where
KaMinPar has no wheel), as ClusterGCN's clusters: DGL documents its METIS order as non-deterministic, so only
the grouping is DGL's, not the parts.  Cost: two sorts of the edges.
"""
from __future__ import annotations

import numpy as np
import torch

from bgl.dgl.base import EID, NID, DGLError
from bgl.dgl.heterograph import DGLGraph
from bgl.dgl.transforms import clone, edge_subgraph, node_subgraph


def _metis_order(g: DGLGraph, k: int) -> np.ndarray:
    from bgl.dgl.sampling.cluster_gcn import cluster_assignment

    return np.argsort(cluster_assignment(g, int(k))).copy()


def reorder_graph(g: DGLGraph, node_permute_algo=None, edge_permute_algo="src", store_ids=True,
                  permute_config=None) -> DGLGraph:
    """``g`` (homogeneous) with nodes and edges reordered (see the module).

    Parameters
    ----------
    node_permute_algo : None (keep), ``"rcmk"``, ``"metis"`` (``permute_config={"k": parts}``) or ``"custom"``
        (``permute_config={"nodes_perm": ...}``: new node ``i`` is old node ``nodes_perm[i]``)
    edge_permute_algo : ``"src"``, ``"dst"`` or ``"custom"`` (``permute_config={"edges_perm": ...}``, old edge
        ids in their new order)
    store_ids : old ids into ``ndata[dgl.NID]`` / ``edata[dgl.EID]``

    Raises
    ------
    DGLError : a typed graph, an unknown algorithm, a missing ``permute_config`` entry, a ``nodes_perm`` of
        another length than the node count
    """
    if len(g.ntypes) != 1 or len(g.canonical_etypes) != 1:
        raise DGLError("Only homogeneous graphs are supported.")
    if node_permute_algo is not None and node_permute_algo not in ("rcmk", "metis", "custom"):
        raise DGLError(f"Unexpected node_permute_algo is specified: {node_permute_algo}. "
                       "Expected algos: ['rcmk', 'metis', 'custom']")
    if edge_permute_algo not in ("src", "dst", "custom"):
        raise DGLError(f"Unexpected edge_permute_algo is specified: {edge_permute_algo}. "
                       "Expected algos: ['src', 'dst', 'custom']")
    config = permute_config or {}
    g = clone(g)  # the old edge ids ride along as a feature, without touching the caller's graph
    g.edata["__orig__"] = torch.arange(g.num_edges(), dtype=g.idtype, device=g.device)
    if node_permute_algo == "rcmk":
        from bgl.dgl.data.reorder import rcmk_permutation

        src, dst = (t.cpu().numpy() for t in g.edges())
        nodes_perm = rcmk_permutation(src.astype(np.int64), dst.astype(np.int64), g.num_nodes())
    elif node_permute_algo == "metis":
        if "k" not in config:
            raise DGLError("Partition parts 'k' is required for metis. Please specify in permute_config.")
        nodes_perm = _metis_order(g, config["k"])
    elif node_permute_algo == "custom":
        if "nodes_perm" not in config:
            raise DGLError("node_permute_algo is specified as custom, but no 'nodes_perm' is specified in "
                           "permute_config.")
        nodes_perm = config["nodes_perm"]
        if len(nodes_perm) != g.num_nodes():
            raise DGLError(f"Length of 'nodes_perm' ({len(nodes_perm)}) does not match graph num_nodes "
                           f"({g.num_nodes()}).")
    else:
        nodes_perm = torch.arange(g.num_nodes(), dtype=g.idtype, device=g.device)
    rg = g if node_permute_algo is None else node_subgraph(g, torch.as_tensor(nodes_perm), store_ids=False)
    if store_ids:
        rg.ndata[NID] = torch.as_tensor(nodes_perm).to(device=g.device, dtype=g.idtype)
    if edge_permute_algo == "custom":
        if "edges_perm" not in config:
            raise DGLError("edge_permute_algo is specified as custom, but no 'edges_perm' is specified in "
                           "permute_config.")
        back = torch.argsort(rg.edata["__orig__"])  # new position of each old edge id
        edges_perm = back[torch.as_tensor(config["edges_perm"], device=back.device).long()].to(rg.idtype)
    else:
        ends = rg.edges()[0 if edge_permute_algo == "src" else 1]
        edges_perm = torch.from_numpy(np.argsort(ends.cpu().numpy()))  # DGL's call: its ties
    rg = edge_subgraph(rg, edges_perm, relabel_nodes=False, store_ids=False)
    if store_ids:
        rg.edata[EID] = rg.edata.pop("__orig__")
    return rg
