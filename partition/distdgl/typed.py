"""Import a HETEROGENEOUS DistDGL partition as a typed bgl partition (see :mod:`.importer`).

DGL's ``partition_graph`` of a heterograph shuffles ids the way a typed bgl
partition lays them out (:mod:`bgl.partition.typed_parts`): part ``k`` owns a contiguous
homogeneous id range, and inside it each node type owns a contiguous block, in
node-type-id order.  ``PART_CONFIG.json`` says so:

* ``ntypes`` / ``etypes``: name -> type id (edge types as ``"src:rel:dst"``);
* ``node_map[ntype]``: per part ``[start, end)`` of that type's homogeneous ids,
  which is exactly the typed partition's ``type_bounds``;
* ``part-K/graph.dgl``: homogeneous part graph with ``ndata[dgl.NID]``,
  ``ndata["inner_node"]`` and ``edata[dgl.ETYPE]``;
* ``part-K/node_feat.dgl``: ``"<ntype>/<name>"`` tensors over the part's inner
  nodes of that type, in id order.

So the import is again one rewrite per part, no repartitioning: in-edges sorted by
(destination, relation id, source) so each row groups its relations as a typed store
does, per-type features/labels/masks as ``feat/<nt>``, ``label/<nt>``,
``split/<nt>/...``, and each node's original id in ``key_ids.npy`` (its sampling stream key,
as :mod:`bgl.partition.typed_parts` writes it).  Type-local ORIGINAL ids are DGL's per-type ids when the
mapping ``partition_graph(..., return_mapping=True)`` returned is given (a dict, or
an ``.npz`` with one array per node type); else the per-type shuffled ids.

Edge features of a heterogeneous partition (``"src:rel:dst/<name>"``) are refused
by name: a typed store has no per-relation edge arrays yet.

Cost: as the untyped import, plus the part's edge types (8 bytes per part edge of
scratch while sorting).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from bgl.errors import PartitionFormatError
from bgl.output_dir import WorkDir, remove_stale
from bgl.sampler.typed.sampling import KEY_IDS
from bgl.schema import EdgeType, GraphSchema, NodeType
from bgl.store import StoreWriter

from .common import METHOD, SPLIT_MASKS, import_meta, inner_in_edges, load_part_graph, publish
from ..format import ORIG_IDS_FILE, TYPED_FORMAT_VERSION, PartitionBook, check_out_dir, open_partition



def is_typed_config(cfg: dict) -> bool:
    """True for the config of a heterogeneous DistDGL partition (several node or edge types)."""
    return len(cfg.get("node_map") or {}) > 1 or len(cfg.get("etypes") or {}) > 1


def typed_layout(cfg: dict, where: Path):
    """``(ntypes, canonical etypes, bounds [P+1], type_bounds [P*T+1])`` of a heterogeneous config."""
    num_parts, n = int(cfg["num_parts"]), int(cfg["num_nodes"])
    try:
        ntypes = sorted(cfg["ntypes"], key=lambda k: int(cfg["ntypes"][k]))
        etypes = sorted(cfg["etypes"], key=lambda k: int(cfg["etypes"][k]))
    except (KeyError, TypeError, ValueError) as e:
        raise PartitionFormatError(f"{where}: a heterogeneous config needs ntypes and etypes maps: {e}") from None
    canon = []
    for key in etypes:
        parts = key.split(":")
        if len(parts) != 3 or parts[0] not in ntypes or parts[2] not in ntypes:
            raise PartitionFormatError(f"{where}: edge type {key!r} is not 'src:rel:dst' over node types {ntypes}")
        canon.append(tuple(parts))
    if set(cfg["node_map"]) != set(ntypes):
        raise PartitionFormatError(f"{where}: node_map types {sorted(cfg['node_map'])} are not ntypes {ntypes}")
    T = len(ntypes)
    tb = np.empty(num_parts * T + 1, np.int64)
    ends = np.empty(num_parts * T, np.int64)
    for t, nt in enumerate(ntypes):
        ranges = cfg["node_map"][nt]
        if len(ranges) != num_parts or not all(isinstance(r, list) and len(r) == 2 for r in ranges):
            raise PartitionFormatError(f"{where}: node_map[{nt!r}] must list {num_parts} [start, end) ranges")
        for k, (s, e) in enumerate(ranges):
            tb[k * T + t], ends[k * T + t] = int(s), int(e)
    tb[-1] = n
    if tb[0] != 0 or not np.array_equal(tb[1:], ends) or np.any(ends < tb[:-1]):
        raise PartitionFormatError(f"{where}: node_map ranges do not tile [0, {n}) part by part, type by type")
    for k in range(num_parts):
        if f"part-{k}" not in cfg or "part_graph" not in cfg[f"part-{k}"]:
            raise PartitionFormatError(f"{where}: lacks part-{k}'s part_graph entry")
    return ntypes, canon, tb[::T].copy(), tb


def _orig_local(orig_ids, ntypes, counts) -> list[np.ndarray]:
    """Per node type: per-type shuffled id -> original per-type id (identity when not given)."""
    if orig_ids is None:
        return [np.arange(c, dtype=np.int64) for c in counts]
    if isinstance(orig_ids, (str, os.PathLike)):
        try:
            with np.load(orig_ids, allow_pickle=False) as z:
                orig_ids = {k: z[k] for k in z.files}
        except (OSError, ValueError, AttributeError) as e:
            raise PartitionFormatError(f"{orig_ids}: cannot read per-type orig ids (.npz, one array per node "
                                       f"type): {e}") from None
    out = []
    for nt, c in zip(ntypes, counts):
        ids = np.asarray(orig_ids.get(nt) if hasattr(orig_ids, "get") else None)
        if ids.shape != (c,) or ids.dtype.kind not in "iu" or not np.array_equal(np.sort(ids), np.arange(c)):
            raise PartitionFormatError(f"orig ids of node type {nt!r} must be a permutation of [0, {c}), "
                                       f"got {ids.dtype} {list(ids.shape)}")
        out.append(ids.astype(np.int64))
    return out


def _part_edges(graph, dgl, s: int, e: int, where: str):
    """``(indptr [e-s+1], indices, etype)`` of the inner nodes' in-edges, rows grouped by relation."""
    if dgl.ETYPE not in graph.edata:
        raise PartitionFormatError(f"{where}: a heterogeneous part graph needs edata[dgl.ETYPE]")
    gsrc, gdst, keep = inner_in_edges(graph, dgl, s, e, where)
    et = graph.edata[dgl.ETYPE].numpy().astype(np.int64)[keep]
    order = np.lexsort((gsrc, et, gdst))
    indptr = np.zeros(e - s + 1, np.int64)
    np.cumsum(np.bincount(gdst - s, minlength=e - s), out=indptr[1:])
    return indptr, gsrc[order], et[order]


def import_typed_distdgl(cfg: dict, cfg_path: Path, out_dir, dgl_modules, *, orig_ids=None, feat_key: str = "feat",
                         label_key: str = "label", overwrite: bool = False) -> PartitionBook:
    """:func:`~.importer.import_distdgl` for a heterogeneous config (see the module docstring);
    ``dgl_modules`` is ``(dgl, load_graphs, load_tensors)``, imported by the caller."""
    out = check_out_dir(out_dir, overwrite, inputs=[cfg_path])
    ntypes, canon, bounds, tb = typed_layout(cfg, cfg_path)
    dgl, load_graphs, load_tensors = dgl_modules
    num_parts, n, T = int(cfg["num_parts"]), int(cfg["num_nodes"]), len(ntypes)
    per_part = np.diff(tb).reshape(num_parts, T) if num_parts else np.zeros((0, T), np.int64)
    counts = per_part.sum(axis=0)
    cum = np.zeros((T, num_parts + 1), np.int64)
    np.cumsum(per_part.T, axis=1, out=cum[:, 1:])
    orig_local = _orig_local(orig_ids, ntypes, counts)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    remove_stale(out.absolute().parent)
    work = WorkDir(out, "tmp")
    tmp = work.path
    try:
        parts, schemas, total_edges, cut = [], [], 0, 0
        orig = np.empty(n, np.int64)
        for k in range(num_parts):
            s, e = int(bounds[k]), int(bounds[k + 1])
            files = cfg[f"part-{k}"]
            graph, where = load_part_graph(cfg, cfg_path, k, load_graphs)
            indptr, indices, etype = _part_edges(graph, dgl, s, e, where)
            del graph
            edge_file = cfg_path.parent / files["edge_feats"] if files.get("edge_feats") else None
            if edge_file is not None and edge_file.is_file() and load_tensors(str(edge_file)):
                raise PartitionFormatError(f"{edge_file}: edge features of a heterogeneous partition are not "
                                           "imported yet (typed stores have no per-relation edge arrays)")
            tensors = {}
            if files.get("node_feats") and (cfg_path.parent / files["node_feats"]).is_file():
                tensors = {key: t.numpy() for key, t in load_tensors(str(cfg_path.parent / files["node_feats"])).items()}
            nts = []
            with StoreWriter(tmp / f"part-{k}", e - s, int(indices.size), node_offset=s, global_num_nodes=n,
                             name=f"{cfg.get('graph_name') or 'graph'}-part{k}",
                             extra={"partition_method": METHOD, "part": k, "num_parts": num_parts}) as w:
                w.save_array("indptr", indptr)
                w.save_array("indices", indices.astype(w.id_dtype, copy=False))
                w.save_typed("etype", etype.astype(np.uint8 if len(canon) <= 256 else np.uint16))
                off = 0
                for t, nt in enumerate(ntypes):
                    c = int(per_part[k, t])
                    lo = int(tb[k * T + t])
                    orig[lo:lo + c] = offsets[t] + orig_local[t][cum[t, k]:cum[t, k] + c]
                    nts.append(_write_type(w, nt, off, c, tensors, feat_key, label_key, SPLIT_MASKS, where))
                    off += c
                edge_counts = np.bincount(etype, minlength=len(canon))
                part_schema = GraphSchema(tuple(nts), tuple(EdgeType(*c, int(edge_counts[r]))
                                                            for r, c in enumerate(canon)))
                w.save_typed(KEY_IDS, orig[s:e])  # stream keys: the original ids (sampler/typed/sampling.py)
                w.set_schema({**part_schema.to_dict(), KEY_IDS: True})
            schemas.append(part_schema)
            cut += int(np.count_nonzero((indices < s) | (indices >= e)))
            total_edges += int(indices.size)
            parts.append({"part": k, "store": f"part-{k}", "node_start": s, "node_end": e, "num_nodes": e - s,
                          "num_edges": int(indices.size),
                          "num_train": sum(t.splits.get("train", 0) for t in part_schema.node_types)})
        meta = import_meta(cfg, cfg_path, TYPED_FORMAT_VERSION, "given" if orig_ids is not None
                           else "identity (per-type shuffled ids)", parts, total_edges, cut)
        whole = _whole_schema(schemas, counts)
        _set_part_classes(tmp, num_parts, whole)
        np.save(tmp / ORIG_IDS_FILE, orig, allow_pickle=False)
        meta.update(schema=whole.to_dict(), type_bounds=tb.tolist())
        publish(work, out, meta, overwrite)
    except BaseException:
        work.remove()
        raise
    return open_partition(out)


def _write_type(w, nt: str, offset: int, count: int, tensors: dict, feat_key: str, label_key: str,
                split_masks: dict, where: str) -> NodeType:
    """Write one node type's features, labels and splits of a part; its part NodeType."""
    def get(name):
        arr = tensors.get(f"{nt}/{name}")
        if arr is not None and arr.shape[0] != count:
            raise PartitionFormatError(f"{where}: node data {nt}/{name} has {arr.shape[0]} rows, the part has "
                                       f"{count} nodes of type {nt!r}")
        return arr

    feat, label = get(feat_key), get(label_key)
    if feat is not None:
        feat = np.ascontiguousarray(feat.reshape(count, -1))
        w.save_typed(f"feat/{nt}", feat)
    if label is not None:
        w.save_typed(f"label/{nt}", label.astype(np.int64).reshape(count))
    splits = {}
    for split, names in split_masks.items():
        mask = next((m for m in (get(name) for name in names) if m is not None), None)
        if mask is not None:
            ids = np.flatnonzero(mask.astype(bool)).astype(np.int64)
            w.save_typed(f"split/{nt}/{split}_idx", ids)
            splits[split] = int(ids.size)
    return NodeType(nt, offset, count, 0 if feat is None else int(feat.shape[1]),
                    None if feat is None else feat.dtype.name, label is not None,
                    int(label.max()) + 1 if label is not None and label.size else 0, splits)


def _whole_schema(schemas: list[GraphSchema], counts: np.ndarray) -> GraphSchema:
    """The whole graph's schema from the parts' (counts summed, widths from a part that has them)."""
    nts, off = [], 0
    for t, c in enumerate(counts):
        per = [s.node_types[t] for s in schemas]
        with_feat = next((p for p in per if p.feat_dim), per[0])
        names = dict.fromkeys(name for p in per for name in p.splits)
        nts.append(NodeType(per[0].name, off, int(c), with_feat.feat_dim, with_feat.feat_dtype,
                            any(p.has_label for p in per), max(p.num_classes for p in per),
                            {name: sum(p.splits.get(name, 0) for p in per) for name in names}))
        off += int(c)
    ets = tuple(EdgeType(*e.canonical, sum(s.edge_types[r].count for s in schemas))
                for r, e in enumerate(schemas[0].edge_types))
    return GraphSchema(tuple(nts), ets)


def _set_part_classes(tmp: Path, num_parts: int, whole: GraphSchema) -> None:
    """Give every part each type's global class count, feature width and labels (a part may lack a
    type's highest label, or hold no node of a type: it then gets empty arrays of the type's shape)."""
    for k in range(num_parts):
        meta_path = tmp / f"part-{k}" / "meta.json"
        meta = json.loads(meta_path.read_text())
        for t, whole_t in zip(meta["schema"]["node_types"], whole.node_types):
            t["num_classes"] = whole_t.num_classes
            if whole_t.feat_dim and not t["feat_dim"]:
                if t["count"]:
                    raise PartitionFormatError(f"part {k} holds {t['count']} nodes of type {t['name']!r} but no "
                                               f"features for them ({whole_t.feat_dim} columns in other parts)")
                (tmp / f"part-{k}" / "feat").mkdir(exist_ok=True)
                np.save(tmp / f"part-{k}" / "feat" / f"{t['name']}.npy",
                        np.empty((0, whole_t.feat_dim), whole_t.feat_dtype), allow_pickle=False)
                t["feat_dim"], t["feat_dtype"] = whole_t.feat_dim, whole_t.feat_dtype
            if whole_t.has_label and not t["has_label"]:
                (tmp / f"part-{k}" / "label").mkdir(exist_ok=True)
                np.save(tmp / f"part-{k}" / "label" / f"{t['name']}.npy", np.empty(0, np.int64), allow_pickle=False)
                t["has_label"] = True
        meta_path.write_text(json.dumps(meta, indent=2))
