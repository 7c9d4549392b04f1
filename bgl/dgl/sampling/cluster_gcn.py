"""DGL's ``dgl.dataloading.ClusterGCNSampler`` (Chiang et al., Cluster-GCN): the subgraph of a batch of clusters.

The graph's nodes are cut once into ``k`` clusters; each batch of cluster ids (DGL's script:
``DataLoader(g, torch.arange(k), sampler, batch_size=..., shuffle=True)``) gives the subgraph induced by
the nodes of those clusters, cluster after cluster in the batch's order, each cluster's nodes ascending
(:func:`bgl.dgl.transforms.node_subgraph`: ``ndata[dgl.NID]`` / ``edata[dgl.EID]`` the graph's ids, the
graph's fields at them).

The clusters are bgl's partitioner's (``bgl.partition.compute_assignment(..., "bgl", k)``: KaMinPar on the
symmetrized graph, node counts and edges balanced; its ``"metis"`` method where KaMinPar has no wheel), where
DGL runs METIS: other clusters of the same kind
(connected, balanced, few edges between them), so a model trains alike but not on DGL's batches.
``balance_ntypes`` (one label per node) and ``balance_edges`` are checked as DGL checks them and not
otherwise used: bgl's partitioner always balances nodes and edges; ``mode`` ``"k-way"`` or ``"recursive"``
gives the same cut.

The cut is kept at ``cache_path`` and read back when the file exists, as DGL does, but in a safe format
(NumPy's ``.npz`` without pickled objects, read with ``allow_pickle=False``; a format tag and version), written
to a temporary file beside it and renamed into place, so a crash never leaves half a file.  A DGL pickle at
that path is refused (never unpickled): remove it or name another path.
Cost: the partitioning once (seconds for a million edges), 8 B a node kept; per batch O(its subgraph).
"""
from __future__ import annotations

import logging
import os
import zipfile

import numpy as np
import torch

from bgl.dgl.base import DGLError
from bgl.dgl.dataloading import Sampler
from bgl.output_dir import write_npz_atomically

FORMAT, VERSION = "bgl.dgl.ClusterGCNSampler", 1
MODES = ("k-way", "recursive")


class ClusterGCNSampler(Sampler):
    """Cluster-GCN's subgraph sampler (module doc).

    Parameters
    ----------
    g : a one-type ``bgl.dgl`` graph
    k : the number of clusters
    cache_path : where the clusters are kept (read back when it exists)
    balance_ntypes, balance_edges, mode : as DGL's (module doc: checked, the balance is bgl's partitioner's)
    prefetch_ndata, prefetch_edata : names of fields the subgraph carries (it carries every field already)
    output_device : where the subgraph is put

    Attributes
    ----------
    partition_offset : int64 tensor [k + 1]: cluster ``i`` is ``partition_node_ids[offset[i]:offset[i + 1]]``
    partition_node_ids : int64 tensor [num_nodes]: the nodes, cluster by cluster, ascending within each
    """

    def __init__(self, g, k, cache_path="cluster_gcn.pkl", balance_ntypes=None, balance_edges=False, mode="k-way",
                 prefetch_ndata=None, prefetch_edata=None, output_device=None):
        super().__init__()
        k = int(k)
        if os.path.exists(cache_path):
            offset, node_ids = read_clusters(cache_path)
            if len(offset) != k + 1:
                raise DGLError("Number of partitions in the cache does not match the value of k. "
                               f"Please remove the cache file {cache_path} or specify another path.")
            if len(node_ids) != g.num_nodes():
                raise DGLError("Number of nodes in the cache does not match the given graph. "
                               f"Please remove the cache file {cache_path} or specify another path.")
        else:
            if mode not in MODES:
                raise AssertionError("'mode' can only be 'k-way' or 'recursive'")
            if balance_ntypes is not None and len(balance_ntypes) != g.num_nodes():
                raise AssertionError("The length of balance_ntypes should be equal to #nodes in the graph")
            offset, node_ids = clusters_of(cluster_assignment(g, k), k)
            write_clusters(cache_path, offset, node_ids)
        self.partition_offset, self.partition_node_ids = torch.from_numpy(offset), torch.from_numpy(node_ids)
        self.prefetch_ndata = prefetch_ndata or []
        self.prefetch_edata = prefetch_edata or []
        self.output_device = output_device

    def sample(self, g, partition_ids):
        """The subgraph induced by the nodes of clusters ``partition_ids`` (in that order)."""
        from bgl.dgl.transforms import node_subgraph

        ids = torch.as_tensor(partition_ids).view(-1).long().cpu()
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= self.partition_offset.numel() - 1):
            raise DGLError(f"partition ids must be in [0, {self.partition_offset.numel() - 1}), got {ids.tolist()}.")
        offset = self.partition_offset
        nodes = torch.cat([self.partition_node_ids[offset[i]:offset[i + 1]] for i in ids.tolist()]) if ids.numel() \
            else self.partition_node_ids[:0]  # a loop over the batch's clusters, not the graph's nodes
        return node_subgraph(g, nodes.to(g.idtype), output_device=self.output_device)


def cluster_assignment(g, k: int) -> np.ndarray:
    """Each node's cluster, int64 [num_nodes] in [0, k): bgl's partitioner over the graph's in-edges (CSC)."""
    from bgl.partition import compute_assignment
    from bgl.partition.graph_input import GraphInput

    if len(g.canonical_etypes) != 1 or len(g.ntypes) != 1:
        raise DGLError("ClusterGCNSampler needs a homogeneous graph (one node type and one edge type).")
    n = g.num_nodes()
    if k < 1 or k > n:
        raise DGLError(f"k must be in [1, {n}] (the number of nodes), got {k}.")
    csc = g._rels[g.canonical_etypes[0]].csc()
    indptr = csc.indptr.cpu().numpy().astype(np.int64)
    indices = csc.indices.cpu().numpy().astype(np.int64)
    graph = GraphInput(n, int(indices.shape[0]), indptr, indices, np.zeros(n, np.float64))
    quiet = _NoTrainingNodesNote()  # a graph has no training split here: the partitioner's note about it is noise
    log = logging.getLogger("bgl.partition.bgl_part")
    log.addFilter(quiet)
    try:
        return np.asarray(compute_assignment(graph, "bgl", k, seed=0), dtype=np.int64)
    except ImportError:  # no KaMinPar wheel for this platform: bgl's METIS method (pymetis, a core dependency)
        return np.asarray(compute_assignment(graph, "metis", k, seed=0), dtype=np.int64)
    finally:
        log.removeFilter(quiet)


class _NoTrainingNodesNote(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "no training nodes" not in record.getMessage()


def clusters_of(assignment: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``(offset int64 [k + 1], node ids int64 [n])``: the nodes grouped by cluster, ascending within each."""
    node_ids = np.argsort(assignment, kind="stable").astype(np.int64)
    offset = np.zeros(k + 1, np.int64)
    np.cumsum(np.bincount(assignment, minlength=k), out=offset[1:])
    return offset, node_ids


def write_clusters(path, offset: np.ndarray, node_ids: np.ndarray) -> None:
    """Write the clusters to ``path`` atomically (a temporary file in the same folder, then renamed)."""
    write_npz_atomically(path, {"format": np.array(FORMAT), "version": np.array(VERSION, np.int64),
                                "partition_offset": offset, "partition_node_ids": node_ids}, durable=True)


def read_clusters(path) -> tuple[np.ndarray, np.ndarray]:
    """``(offset, node ids)`` from a file :func:`write_clusters` wrote; DGLError for anything else."""
    invalid = DGLError(f"The contents in the cache file {path} is invalid. "
                       f"Please remove the cache file {path} or specify another path.")
    try:
        with np.load(path, allow_pickle=False) as data:
            if str(data["format"]) != FORMAT or int(data["version"]) != VERSION:
                raise invalid
            offset, node_ids = data["partition_offset"], data["partition_node_ids"]
    except (OSError, ValueError, KeyError, EOFError, TypeError, zipfile.BadZipFile, AttributeError):
        raise invalid from None
    if offset.ndim != 1 or node_ids.ndim != 1 or offset.dtype != np.int64 or node_ids.dtype != np.int64:
        raise invalid
    return offset, node_ids
