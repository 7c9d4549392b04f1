"""Import a DistDGL partition (``dgl.distributed.partition_graph`` output) as a bgl partition dir.

DistDGL users already hold partitions on shared storage; repartitioning a
billion-edge graph to try bgl would cost hours.  DGL's partitioner reshuffles
node ids so each part owns a contiguous id range -- exactly bgl's layout
(:mod:`bgl.partition.format`) -- so an import is a per-part rewrite, no repartitioning:

* ``PART_CONFIG.json``: ``num_nodes``, ``num_parts`` and ``node_map`` (per part
  ``[start, end)`` of shuffled ids; the old "end ids only" form is read too,
  as DGL's ``_get_part_ranges`` does);
* ``part-K/graph.dgl``: the part graph -- inner nodes first, then 1-hop halo
  nodes; ``ndata[dgl.NID]`` = shuffled global id, ``ndata["inner_node"]``;
  the in-edges of every inner node are present (``edata["inner_edge"]``);
* ``part-K/node_feat.dgl``: ``"_N/<name>"`` tensors over the inner nodes in
  id order (``feat``, ``label``, ``train_mask``/``val_mask``/``test_mask``);
* ``part-K/edge_feat.dgl``: ``"_N:_E:_N/<name>"`` (or ``"_E/<name>"``) tensors over
  the part's own edges in shuffled edge-id order (``edge_map`` gives each part's
  range; DGL gives an edge to its destination's part): each becomes the part
  store's edge array ``<name>``, rows in the part's CSC order.

The bgl partition keeps DGL's shuffled ids as its new ids, so part k owns the
same range it owned in DGL.  ``orig_ids.npy`` (new id -> original id) is only
known if ``partition_graph(..., return_mapping=True)`` was called and its
``orig_nids`` saved as ``.npy`` (DGL 2.1 does not write them to disk): pass it
as ``orig_ids``; otherwise orig ids are the shuffled ids (identity).

A heterogeneous partition becomes a typed bgl partition (:mod:`.typed`).
Reading the ``.dgl`` files needs DGL; ``dgl`` is imported lazily here (and in
``bgl/dgl/real_dgl/``), so nothing else in bgl needs it.

Cost: one part at a time -- DGL's part graph in memory (as a DistDGL server
holds it) plus its in-edges sorted by (dst, src): 16 bytes per part edge and
8 per part node of scratch; features are copied in row chunks.  The output is
built in a hidden work dir next to ``<out>`` and renamed when complete.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from bgl.errors import PartitionFormatError
from bgl.output_dir import WorkDir, remove_stale
from bgl.store import StoreWriter, read_json

from ..format import FORMAT_VERSION, ORIG_IDS_FILE, PartitionBook, check_out_dir, open_partition

from .common import FEAT_CHUNK_ROWS, METHOD, SPLIT_MASKS, import_meta, inner_in_edges, load_part_graph, publish
from .typed import import_typed_distdgl, is_typed_config
def _import_dgl():
    try:
        import dgl  # noqa: F401  (lazy: only this import path needs DGL)
        from dgl.data.utils import load_graphs, load_tensors
    except ImportError as e:
        raise PartitionFormatError(
            f"importing a DistDGL partition reads DGL's .dgl files and needs the 'dgl' package "
            f"(pip install 'bgl[dgl]'): {e}") from None
    return dgl, load_graphs, load_tensors




def read_config(part_config: str | os.PathLike) -> tuple[dict, np.ndarray]:
    """``(config, bounds int64 [P+1])`` of a DistDGL partition config; PartitionFormatError if unusable."""
    path = Path(part_config)
    cfg = read_json(path, PartitionFormatError, "no such DistDGL partition config")
    missing = {"num_nodes", "num_parts", "node_map"} - set(cfg) if isinstance(cfg, dict) else {"(object)"}
    if missing:
        raise PartitionFormatError(f"{path}: not a DistDGL partition config (lacks {sorted(missing)})")
    node_map = cfg["node_map"]
    if not isinstance(node_map, dict) or len(node_map) != 1 or len(cfg.get("etypes", {"_E": 0})) > 1:
        raise PartitionFormatError(
            f"{path}: only homogeneous graphs can be imported; node types {list(node_map)}, "
            f"edge types {list(cfg.get('etypes', {}))}")
    (ranges,) = node_map.values()
    num_parts, n = int(cfg["num_parts"]), int(cfg["num_nodes"])
    if len(ranges) != num_parts:
        raise PartitionFormatError(f"{path}: node_map lists {len(ranges)} ranges for {num_parts} parts")
    if ranges and not isinstance(ranges[0], list):  # old format: end ids only
        starts = [0] + list(ranges[:-1])
        ranges = [[s, e] for s, e in zip(starts, ranges)]
    bounds = np.array([r[0] for r in ranges] + [n], np.int64)
    ends = np.array([r[1] for r in ranges], np.int64)
    if bounds[0] != 0 or not np.array_equal(bounds[1:], ends) or np.any(np.diff(bounds) < 0):
        raise PartitionFormatError(f"{path}: node_map ranges {ranges} do not tile [0, {n}) contiguously")
    for k in range(num_parts):
        if f"part-{k}" not in cfg or "part_graph" not in cfg[f"part-{k}"]:
            raise PartitionFormatError(f"{path}: lacks part-{k}'s part_graph entry")
    return cfg, bounds


def _part_in_edges(graph, dgl, s: int, e: int, where: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(indptr int64 [e-s+1], indices int64, eids int64)``: in-edges of the inner nodes, global ids,
    rows sorted; ``eids`` is DGL's shuffled edge id of each (for the edge features)."""
    gsrc, gdst, keep = inner_in_edges(graph, dgl, s, e, where)
    eids = graph.edata[dgl.EID].numpy().astype(np.int64)[keep] if dgl.EID in graph.edata else None
    del keep
    order = np.lexsort((gsrc, gdst))
    gsrc, gdst = gsrc[order], gdst[order]
    eids = None if eids is None else eids[order]
    indptr = np.zeros(e - s + 1, np.int64)
    np.cumsum(np.bincount(gdst - s, minlength=e - s), out=indptr[1:])
    return indptr, gsrc, eids


def _edge_data(cfg: dict, base: Path, k: int, eids, load_tensors, where: str) -> dict[str, np.ndarray]:
    """Part ``k``'s edge features from ``edge_feat.dgl``, as rows in the part's CSC order."""
    files = cfg[f"part-{k}"]
    file = base / files["edge_feats"] if files.get("edge_feats") else None
    if file is None or not file.is_file():
        return {}
    tensors = load_tensors(str(file))
    if not tensors:
        return {}
    if eids is None:
        raise PartitionFormatError(f"{where}: part graph has no edata[dgl.EID] to place its edge features")
    (ranges,) = (cfg.get("edge_map") or {"_E": [[0, 0]]}).values()
    start = int(ranges[k][0]) if isinstance(ranges[k], list) else (int(ranges[k - 1]) if k else 0)
    local = eids - start
    out = {}
    for key, t in tensors.items():
        name = key.rsplit("/", 1)[-1]
        arr = t.numpy()
        if local.size and (int(local.min()) < 0 or int(local.max()) >= arr.shape[0]):
            raise PartitionFormatError(f"{file}: edge data {key!r} has {arr.shape[0]} rows; the part's in-edges "
                                       f"have local edge ids up to {int(local.max())}")
        out[name] = arr[local]
    return out


def _node_data(tensors: dict, count: int, where: str, feat_key: str, label_key: str) -> dict[str, Any]:
    """feat / label / split ids (local positions) of one part from its ``node_feat.dgl`` tensors."""
    def get(name):
        t = tensors.get(f"_N/{name}", tensors.get(name))
        if t is not None and t.shape[0] != count:
            raise PartitionFormatError(f"{where}: node data {name!r} has {t.shape[0]} rows, part has {count} nodes")
        return None if t is None else t.numpy()

    out: dict[str, Any] = {"feat": get(feat_key), "label": get(label_key), "splits": {}}
    for split, names in SPLIT_MASKS.items():
        for name in names:
            mask = get(name)
            if mask is not None:
                out["splits"][split] = np.flatnonzero(mask.astype(bool)).astype(np.int64)
                break
    return out


def import_distdgl(part_config: str | os.PathLike, out_dir: str | os.PathLike, *,
                   orig_ids: str | os.PathLike | np.ndarray | None = None, feat_key: str = "feat",
                   label_key: str = "label", overwrite: bool = False) -> PartitionBook:
    """Rewrite a DistDGL partition as a bgl partition directory (no repartitioning).

    Parameters
    ----------
    part_config : DistDGL's ``<graph_name>.json``
    out_dir : bgl partition directory to create
    orig_ids : ``.npy`` path or int array [num_nodes] of ``partition_graph``'s
        ``orig_nids`` (shuffled id -> original id); None = identity.  For a heterogeneous
        partition: ``{ntype: per-type orig ids}`` (``partition_graph(..., return_mapping=True)``'s
        first value) or an ``.npz`` of one array per node type
    feat_key, label_key : names of the feature / label tensors in ``node_feat.dgl``
    overwrite : replace an existing ``out_dir``

    Returns the opened :class:`PartitionBook`; ``meta["params"]`` records the
    source config and DGL's ``part_method``, ``meta["metrics"]["edge_cut"]``
    the share of edges whose endpoints lie on different parts.
    """
    out = check_out_dir(out_dir, overwrite, inputs=[part_config])
    cfg_path = Path(part_config)
    raw = read_json(cfg_path, PartitionFormatError, "no such DistDGL partition config")
    if isinstance(raw, dict) and {"num_nodes", "num_parts", "node_map"} <= set(raw) and is_typed_config(raw):
        return import_typed_distdgl(raw, cfg_path, out_dir, _import_dgl(), orig_ids=orig_ids, feat_key=feat_key,
                                    label_key=label_key, overwrite=overwrite)
    cfg, bounds = read_config(cfg_path)
    dgl, load_graphs, load_tensors = _import_dgl()
    n, num_parts = int(cfg["num_nodes"]), int(cfg["num_parts"])
    ids = _orig_ids(orig_ids, n)
    remove_stale(out.absolute().parent)
    work = WorkDir(out, "tmp")
    tmp = work.path
    try:
        parts, total_edges, cut, num_classes = [], 0, 0, 0
        for k in range(num_parts):
            s, e = int(bounds[k]), int(bounds[k + 1])
            files = cfg[f"part-{k}"]
            graph, where = load_part_graph(cfg, cfg_path, k, load_graphs)
            indptr, indices, eids = _part_in_edges(graph, dgl, s, e, where)
            del graph
            edata = _edge_data(cfg, cfg_path.parent, k, eids, load_tensors, where)
            del eids
            tensors = {}
            if "node_feats" in files and (cfg_path.parent / files["node_feats"]).is_file():
                tensors = load_tensors(str(cfg_path.parent / files["node_feats"]))
            data = _node_data(tensors, e - s, where, feat_key, label_key)
            data["edata"] = edata
            del tensors
            num_train = _write_part(tmp / f"part-{k}", indptr, indices, data, s, n, cfg, k)
            cut += int(np.count_nonzero((indices < s) | (indices >= e)))
            total_edges += int(indices.size)
            if data["label"] is not None and data["label"].size:
                num_classes = max(num_classes, int(data["label"].max()) + 1)
            parts.append({"part": k, "store": f"part-{k}", "node_start": s, "node_end": e,
                          "num_nodes": e - s, "num_edges": int(indices.size), "num_train": num_train})
        meta = import_meta(cfg, cfg_path, FORMAT_VERSION, "given" if orig_ids is not None
                           else "identity (shuffled ids)", parts, total_edges, cut)
        if num_classes:
            _set_num_classes(tmp, num_parts, num_classes)
        np.save(tmp / ORIG_IDS_FILE, ids, allow_pickle=False)
        publish(work, out, meta, overwrite)
    except BaseException:
        work.remove()
        raise
    return open_partition(out)


def _orig_ids(orig_ids, n: int) -> np.ndarray:
    if orig_ids is None:
        return np.arange(n, dtype=np.int64)
    ids = orig_ids
    if not isinstance(ids, np.ndarray):
        try:
            ids = np.load(ids, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise PartitionFormatError(f"{orig_ids}: cannot read orig ids (.npy of int ids): {e}") from None
    ids = np.asarray(ids)
    if ids.shape != (n,) or ids.dtype.kind not in "iu":
        raise PartitionFormatError(f"orig ids must be int [{n}], got {ids.dtype} {list(ids.shape)}")
    ids = ids.astype(np.int64)
    check = np.zeros(n, bool)
    if n and (ids.min() < 0 or ids.max() >= n):
        raise PartitionFormatError(f"orig ids must lie in [0, {n}), got [{ids.min()}, {ids.max()}]")
    check[ids] = True
    if not check.all():
        raise PartitionFormatError("orig ids are not a permutation of [0, num_nodes) (repeated ids)")
    return ids


def _write_part(path: Path, indptr: np.ndarray, indices: np.ndarray, data: dict, s: int, n: int,
                cfg: dict, k: int) -> int:
    """Write one part store; returns its number of training nodes."""
    count = indptr.size - 1
    extra = {"partition_method": METHOD, "part": k, "num_parts": int(cfg["num_parts"]),
             "dgl_graph_name": cfg.get("graph_name")}
    with StoreWriter(path, count, int(indices.size), node_offset=s, global_num_nodes=n,
                     name=f"{cfg.get('graph_name') or 'graph'}-part{k}", extra=extra) as w:
        w.save_array("indptr", indptr)
        w.save_array("indices", indices.astype(w.id_dtype, copy=False))
        feat = data["feat"]
        if feat is not None:
            if feat.ndim != 2:
                feat = feat.reshape(count, -1)
            out = w.create_array("feat", feat.shape, feat.dtype)
            for a in range(0, count, FEAT_CHUNK_ROWS):
                out[a : a + FEAT_CHUNK_ROWS] = feat[a : a + FEAT_CHUNK_ROWS]
            out.flush()
            del out
        if data["label"] is not None:
            w.save_array("label", data["label"].astype(np.int64).reshape(count))
        for name, local in data["splits"].items():
            w.save_array(f"{name}_idx", local + s)
        for name, values in data["edata"].items():
            w.save_edge_array(name, values)
    return int(data["splits"].get("train", np.zeros(0)).size)


def _set_num_classes(tmp: Path, num_parts: int, num_classes: int) -> None:
    """Give every part the global class count (a part may lack the highest label)."""
    for k in range(num_parts):
        meta_path = tmp / f"part-{k}" / "meta.json"
        meta = json.loads(meta_path.read_text())
        meta["num_classes"] = num_classes
        meta_path.write_text(json.dumps(meta, indent=2))
