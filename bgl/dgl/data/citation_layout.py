"""DGL 2.1's reading of the raw Planetoid files, reproduced with NumPy (no networkx, no scipy, no DGL).

DGL's ``CitationGraphDataset.process`` turns the eight ``ind.NAME.*`` files into a graph through
networkx and scipy; what it produces follows from those libraries' iteration orders, and this
module computes the same arrays directly, so ``bgl.dgl.data.CoraGraphDataset`` gives what
``dgl.data.CoraGraphDataset`` gives on the same files, element for element (checked against
DGL in the pinned lane, ``tests/bgl/dgl/test_data.py``):

* **edges**, ``reverse_edge=True`` (DGL's default): every adjacency-list entry ``u -> v`` of
  ``ind.NAME.graph`` in both directions, duplicates merged, self-loops once; node ids relabelled
  to their rank among all ids; edge ``i`` is the ``i``-th edge networkx's ``DiGraph`` yields: nodes
  in the order the dict first names them (its keys, then unseen neighbours), and each node's
  neighbours in the order the entries first mention the pair.  ``reverse_edge=False``: each
  undirected pair once, from the endpoint named first, ids as in the file.
* **features**: ``allx`` rows, then ``tx`` rows (CiteSeer: ``tx`` spread over the whole test-id
  range, zero rows in the gaps, as DGL's fix does); the rows at the test ids swapped into the
  order of ``test.index``; each row divided by its sum (rows summing to 0 stay 0), summed left to
  right in the files' dtype as scipy's sparse row sum does, then cast to float32.
* **labels**: the argmax of the one-hot rows, laid out as the features (a row without a class is
  class 0, DGL's answer for CiteSeer's isolated nodes); ``num_classes`` is the one-hot width.
* **masks**: train = the first ``len(y)`` nodes, val = the next 500, test = the test ids.

Cost: the features are built dense (DGL's output is dense too), with one transient copy of the
same size for the row sums; the edge order is a few sorts over twice the adjacency entries.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...errors import IngestError
from ...sources.planetoid import NUM_VAL, csr_arrays, read_raw


@dataclass(frozen=True)
class CitationArrays:
    """One citation dataset as DGL's ``CitationGraphDataset`` lays it out.

    Attributes
    ----------
    src, dst : int64 [num_edges]; edge ``i`` is ``src[i] -> dst[i]`` (DGL's edge ids)
    num_nodes : int
    feat : float32 [num_nodes, num_feats], row-normalised
    label : int64 [num_nodes]
    train_mask, val_mask, test_mask : bool [num_nodes]
    num_classes : int
    """

    src: np.ndarray
    dst: np.ndarray
    num_nodes: int
    feat: np.ndarray
    label: np.ndarray
    train_mask: np.ndarray
    val_mask: np.ndarray
    test_mask: np.ndarray
    num_classes: int


def networkx_edges(keys: np.ndarray, lens: np.ndarray, nbrs: np.ndarray, reverse_edge: bool
                   ) -> tuple[np.ndarray, np.ndarray, int]:
    """The edges DGL builds from a dict of adjacency lists, in DGL's edge-id order (see the module doc).

    Parameters
    ----------
    keys : int64 [k], the dict's keys in its order; lens : int64 [k], each list's length
    nbrs : int64 [sum(lens)], the lists concatenated
    reverse_edge : True: both directions, ids relabelled by rank (``dgl.from_networkx``);
        False: each undirected pair once, ids as given (``dgl.graph`` of ``nx.Graph.edges()``)

    Returns
    -------
    (src, dst, num_nodes) : int64 [E] twice, and the node count DGL's graph gets
    """
    u = np.repeat(keys, lens)
    v = nbrs
    # networkx's node order: the keys, then each neighbour not a key, at its first mention.
    values, first = np.unique(v, return_index=True)
    unseen = ~np.isin(values, keys)
    nodes = np.concatenate([keys, values[unseen][np.argsort(first[unseen], kind="stable")]])
    ids = np.sort(nodes)  # the relabelling by rank (networkx's ordering="sorted")
    position = np.empty(ids.shape[0], np.int64)
    position[np.searchsorted(ids, nodes)] = np.arange(nodes.shape[0])
    # Every entry puts the pair in both adjacency dicts, at its place in the entry stream.
    time = np.arange(v.shape[0], dtype=np.int64)
    a = np.searchsorted(ids, np.concatenate([u, v]))
    b = np.searchsorted(ids, np.concatenate([v, u]))
    t = np.concatenate([time, time])
    order = np.lexsort((t, b, a))  # a pair's first mention leads its group
    a, b, t = a[order], b[order], t[order]
    first_of_pair = np.ones(a.shape[0], bool)
    first_of_pair[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
    a, b, t = a[first_of_pair], b[first_of_pair], t[first_of_pair]
    if not reverse_edge:  # nx.Graph.edges(): a pair from the endpoint it reaches first
        keep = position[b] >= position[a]
        a, b, t = a[keep], b[keep], t[keep]
    emit = np.lexsort((t, position[a]))
    a, b = a[emit], b[emit]
    if reverse_edge:
        return a, b, int(ids.shape[0])
    src, dst = ids[a], ids[b]
    return src, dst, int(max(src.max(), dst.max())) + 1 if src.size else 0


def _dense(obj, where: str, rows: int | None = None) -> np.ndarray:
    """A pickled matrix as a dense array in its stored dtype (duplicate entries summed)."""
    data, indices, indptr, shape = csr_arrays(obj, where)
    out = np.zeros(shape if rows is None else (rows, shape[1]), np.result_type(data.dtype, np.float32))
    row = np.repeat(np.arange(shape[0]), np.diff(indptr))
    np.add.at(out, (row, indices), data)
    return out


def row_normalised(features: np.ndarray) -> np.ndarray:
    """Each row over its sum (DGL's ``_normalize``), computed in the features' dtype, as float32.

    The sum runs left to right (``cumsum``), as scipy's sparse row sum accumulates, so rows of
    non-integer values (PubMed's TF-IDF) round as DGL's do.  The sums are copied out contiguous
    before ``np.power``, as DGL's are: on a strided column NumPy (1.26, AVX-512) took its vector
    ``power`` loop in some calls and the scalar one in others, whose results differ in the last bit
    for a few % of values (seen: 1 call in 150 with 45 of 600 rows one ulp off DGL's).
    """
    if features.shape[1] == 0:
        return features.astype(np.float32)
    rowsum = np.ascontiguousarray(np.cumsum(features, axis=1, dtype=features.dtype)[:, -1])
    empty = rowsum == 0
    rowsum[empty] = np.nan
    with np.errstate(invalid="ignore", divide="ignore"):
        inverse = np.power(rowsum, -1)
    inverse[empty] = 0.0
    return (inverse[:, None] * features).astype(np.float32)


def _onehot(obj, where: str) -> np.ndarray:
    arr = np.asarray(obj)
    if arr.ndim != 2:
        raise IngestError(f"{where}: expected one-hot labels [n, classes], got shape {arr.shape}")
    return arr


def read_citation(prefix: Path, name: str, reverse_edge: bool = True) -> CitationArrays:
    """The dataset of the raw files ``<prefix>.{x,y,tx,ty,allx,ally,graph,test.index}`` as DGL reads them.

    ``name`` is DGL's dataset name; ``"citeseer"`` turns on DGL's CiteSeer fix (test rows spread
    over the whole test-id range).  Raises IngestError naming a missing, unreadable or inconsistent file.
    """
    raw = read_raw(prefix)
    where, test_order, index_file = raw.where, raw.test_index, f"{prefix}.test.index"
    y, tx, ty, allx, ally = raw.y, raw.tx, raw.ty, raw.allx, raw.ally
    test_sorted = np.sort(test_order)
    allx, tx = _dense(allx, f"{where}.allx"), _dense(tx, f"{where}.tx")
    ally, ty, y = _onehot(ally, f"{where}.ally"), _onehot(ty, f"{where}.ty"), _onehot(y, f"{where}.y")
    if tx.shape[0] != test_order.shape[0] or ty.shape[0] != test_order.shape[0]:
        raise IngestError(f"{where}: tx has {tx.shape[0]} rows, ty {ty.shape[0]}, test.index {test_order.shape[0]}")
    if name == "citeseer" and test_sorted.size:  # DGL's fix: isolated test ids get zero rows
        span = int(test_sorted[-1] - test_sorted[0]) + 1
        spread_x = np.zeros((span, tx.shape[1]), np.result_type(tx.dtype, np.float64))
        spread_x[test_sorted - test_sorted[0]] = tx
        spread_y = np.zeros((span, ty.shape[1]), np.float64)
        spread_y[test_sorted - test_sorted[0]] = ty
        tx, ty = spread_x, spread_y
    if allx.shape[1] != tx.shape[1]:
        raise IngestError(f"{where}: allx has {allx.shape[1]} feature columns, tx {tx.shape[1]}")
    features = np.concatenate([allx, tx.astype(np.result_type(allx.dtype, tx.dtype))]).astype(
        np.result_type(allx.dtype, tx.dtype), copy=False)
    onehot = np.concatenate([ally, ty]).astype(np.result_type(ally.dtype, ty.dtype), copy=False)
    n = features.shape[0]
    if test_order.size and (int(test_order.min()) < 0 or int(test_order.max()) >= n):
        raise IngestError(f"{index_file}: test id {int(test_order.max())} outside the {n} rows of allx + tx")
    features[test_order] = features[test_sorted]
    onehot[test_order] = onehot[test_sorted]
    src, dst, num_nodes = networkx_edges(raw.keys, raw.lens, raw.nbrs, reverse_edge)
    if num_nodes != n:
        raise IngestError(f"{where}.graph: names {num_nodes} nodes, the feature files {n} (DGL cannot pair them)")
    num_train = y.shape[0]
    if num_train + NUM_VAL > n:
        raise IngestError(f"{where}: {num_train} training + {NUM_VAL} validation nodes exceed the {n} nodes")
    masks = np.zeros((3, n), bool)
    masks[0, :num_train] = True
    masks[1, num_train:num_train + NUM_VAL] = True
    masks[2, test_sorted] = True
    return CitationArrays(src=src, dst=dst, num_nodes=n, feat=row_normalised(features),
                          label=np.argmax(onehot, axis=1).astype(np.int64), train_mask=masks[0],
                          val_mask=masks[1], test_mask=masks[2], num_classes=int(onehot.shape[1]))
