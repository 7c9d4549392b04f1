"""DGL 2.1's ``CSVDataset``: graphs described by a ``meta.yaml`` and node / edge / graph CSV files.

``CSVDataset(data_path)`` reads ``data_path/meta.yaml`` (``dataset_name``, ``separator``, ``node_data``,
``edge_data``, optional ``graph_data``, each file with DGL's default id columns ``node_id`` / ``src_id`` /
``dst_id`` / ``graph_id`` and types ``_V`` / ``("_V", "_E", "_V")``) and builds the graphs DGL builds: per graph
id (sorted), each node type's nodes renumbered in sorted id order, its edges mapped through that numbering,
every other column a field (float64 stored as float32; a string column parsed row by row with
``ast.literal_eval``, so ``"[0.1, 0.2]"`` becomes a vector).  ``dataset[i]`` is ``(graph, label)`` when the graph
CSV has one data column, ``(graph, {name: value})`` with several, the graph alone with none; a 1-D tensor of
indices gives a :class:`~bgl.dgl.data.utils.Subset`.  ``ndata_parser`` / ``edata_parser`` / ``gdata_parser``
take a pandas DataFrame and return ``{name: array}``, as DGL's.

It needs pandas (the CSV reader, and what the parsers receive) and PyYAML: a missing one is named in one
ImportError line.  ``meta.yaml`` is checked as DGL's pydantic models check it, without pydantic.  Unlike DGL,
nothing is cached (DGL writes ``<dataset_name>.bin`` beside the CSV files).  Cost: one ``np.unique`` of the
ids and one ``searchsorted`` per edge for each graph; string columns cost a Python parse per row.
"""
from __future__ import annotations

import ast
import os
import warnings
from typing import Callable, Optional

import numpy as np
import torch

from ..base import DGLError
from .dgl_dataset import DGLDataset
from .utils import Subset

__all__ = ["CSVDataset", "DefaultDataParser"]

_NODE = {"file_name": None, "ntype": "_V", "graph_id_field": "graph_id", "node_id_field": "node_id"}
_EDGE = {"file_name": None, "etype": ["_V", "_E", "_V"], "graph_id_field": "graph_id", "src_id_field": "src_id",
         "dst_id_field": "dst_id"}
_GRAPH = {"file_name": None, "graph_id_field": "graph_id"}


def _need(module: str, package: str):
    try:
        return __import__(module)
    except ImportError:
        raise ImportError(f"CSVDataset reads its files with {package}, which is not installed: pip install {package}"
                          ) from None


def _entry(raw, fields: dict, where: str) -> dict:
    if not isinstance(raw, dict):
        raise DGLError(f"Validation Error for YAML fields: {where} must be a mapping, got {raw!r}")
    out = {}
    for key, default in fields.items():
        value = raw.get(key, default)
        if value is None and default is None:
            raise DGLError(f"Validation Error for YAML fields: {where} needs {key!r}")
        out[key] = value
    return out


def load_meta_yaml(path: str) -> dict:
    """``meta.yaml`` with DGL's defaults filled in; DGLError in one line for what DGL's check refuses (a missing
    field, another version, a repeated node or edge type)."""
    yaml = _need("yaml", "PyYAML")
    with open(path) as f:
        raw = yaml.safe_load(f)
    if not isinstance(raw, dict) or "dataset_name" not in raw:
        raise DGLError("Validation Error for YAML fields: meta.yaml needs 'dataset_name'")
    for key in ("node_data", "edge_data"):
        if not isinstance(raw.get(key), list):
            raise DGLError(f"Validation Error for YAML fields: meta.yaml needs a list '{key}'")
    meta = {"version": str(raw.get("version", "1.0.0")), "dataset_name": str(raw["dataset_name"]),
            "separator": raw.get("separator", ","),
            "node_data": [_entry(e, _NODE, "node_data") for e in raw["node_data"]],
            "edge_data": [_entry(e, _EDGE, "edge_data") for e in raw["edge_data"]],
            "graph_data": None if raw.get("graph_data") is None else _entry(raw["graph_data"], _GRAPH, "graph_data")}
    if meta["version"] != "1.0.0":
        raise DGLError("Invalid CSVDataset version {}. Supported versions: '1.0.0'".format(meta["version"]))
    ntypes = [e["ntype"] for e in meta["node_data"]]
    if len(ntypes) > len(set(ntypes)):
        raise DGLError(f"Each node CSV file must have a unique node type name, but found duplicate node type: {ntypes}.")
    etypes = [tuple(e["etype"]) for e in meta["edge_data"]]
    if len(etypes) > len(set(etypes)):
        raise DGLError(f"Each edge CSV file must have a unique edge type name, but found duplicate edge type: {etypes}.")
    return meta


class DefaultDataParser:
    """DGL's default column parser: every column but ``Unnamed*`` ones (warned about), string cells parsed
    with ``ast.literal_eval``."""

    def __call__(self, df) -> dict:
        data = {}
        for header in df:
            if "Unnamed" in header:
                warnings.warn("Unnamed column is found. Ignored...")
                continue
            values = df[header].to_numpy().squeeze()
            if len(values) > 0 and isinstance(values[0], str):
                values = np.array([ast.literal_eval(row) for row in values])
            data[header] = values
        return data


def _tensor(data) -> torch.Tensor:
    """DGL's ``_tensor``: ``torch.as_tensor``, float64 stored as float32."""
    out = torch.as_tensor(data)
    return out.float() if out.dtype == torch.float64 else out


def _same_length(columns: dict) -> None:
    lengths = {k: len(v) for k, v in columns.items()}
    if len(set(lengths.values())) > 1:
        raise DGLError(f"All data are required to have same length while some of them does not. Length of data="
                       f"{lengths}")


def _read(pd, base_dir: str, meta: dict, separator: str, parser, ids: tuple):
    """``(id columns popped, parsed data)`` of one CSV; DGLError naming a missing id column."""
    df = pd.read_csv(os.path.join(base_dir, meta["file_name"]), sep=separator)
    popped = []
    for field, required in ids:
        name = meta[field]
        column = df.pop(name).to_numpy().squeeze() if name in df else None
        if column is None and required:
            raise DGLError("Missing {} field [{}] in file [{}].".format(field.replace("_field", "").replace("_", " "),
                                                                       name, meta["file_name"]))
        popped.append(column)
    return popped, parser(df)


class CSVDataset(DGLDataset):
    """DGL 2.1's ``CSVDataset`` (module doc): ``data_path`` holds ``meta.yaml`` and the CSV files it names.

    Raises
    ------
    DGLError : no ``meta.yaml``, a field or id column missing, repeated node ids, a graph id only in the node /
        edge files; ImportError : pandas or PyYAML missing
    """

    META_YAML_NAME = "meta.yaml"

    def __init__(self, data_path, force_reload: bool = False, verbose: bool = True, ndata_parser=None,
                 edata_parser=None, gdata_parser=None, transform: Optional[Callable] = None):
        self.graphs, self.data = None, None
        self.ndata_parser = {} if ndata_parser is None else ndata_parser
        self.edata_parser = {} if edata_parser is None else edata_parser
        self.gdata_parser = gdata_parser
        self.default_data_parser = DefaultDataParser()
        meta_path = os.path.join(data_path, CSVDataset.META_YAML_NAME)
        if not os.path.exists(meta_path):
            raise DGLError("'{}' cannot be found under {}.".format(CSVDataset.META_YAML_NAME, data_path))
        self.meta_yaml = load_meta_yaml(meta_path)
        super().__init__(self.meta_yaml["dataset_name"], raw_dir=os.path.dirname(meta_path), force_reload=force_reload,
                         verbose=verbose, transform=transform)

    def _parser(self, given, key):
        return given if callable(given) else given.get(key, self.default_data_parser)

    def process(self) -> None:
        pd = _need("pandas", "pandas")
        meta, base = self.meta_yaml, self.raw_dir
        sep = meta["separator"]
        nodes = {}  # graph id -> ntype -> (sorted unique ids, data)
        for m in meta["node_data"]:
            (ids, gids), data = _read(pd, base, m, sep, self._parser(self.ndata_parser, m["ntype"]),
                                      (("node_id_field", True), ("graph_id_field", False)))
            ids = np.array(ids)
            gids = np.array(gids) if gids is not None else np.full(len(ids), 0)
            _same_length({"id": ids, "graph_id": gids, **data})
            for gid in np.unique(gids):
                here = gids == gid
                uniq, first, counts = np.unique(ids[here], return_index=True, return_counts=True)
                if len(uniq) < int(here.sum()):
                    raise DGLError(f"Node IDs are required to be unique but the following ids are duplicate: "
                                   f"{uniq[counts > 1]}")
                nodes.setdefault(gid, {})[m["ntype"]] = (uniq, {k: _tensor(v[here][first]) for k, v in data.items()})
        edges = {}  # graph id -> etype -> (src, dst, data)
        for m in meta["edge_data"]:
            etype = tuple(m["etype"])
            (src, dst, gids), data = _read(pd, base, m, sep, self._parser(self.edata_parser, etype),
                                           (("src_id_field", True), ("dst_id_field", True), ("graph_id_field", False)))
            src, dst = np.array(src), np.array(dst)
            gids = np.array(gids) if gids is not None else np.full(len(src), 0)
            _same_length({"src": src, "dst": dst, "graph_id": gids, **data})
            for gid in np.unique(gids):
                if etype in edges.get(gid, {}):
                    raise DGLError(f"Duplicate edge type[{etype}] for same graph[{gid}], please place the same "
                                   "edge_type for same graph into single EdgeData.")
                here = gids == gid
                edges.setdefault(gid, {})[etype] = (_renumber(nodes[gid][etype[0]][0], src[here]),
                                                    _renumber(nodes[gid][etype[2]][0], dst[here]),
                                                    {k: _tensor(v[here]) for k, v in data.items()})
        self.graphs, self.data = self._graphs(pd, nodes, edges)
        if len(self.data) == 1:
            self.labels = list(self.data.values())[0]

    def _graphs(self, pd, nodes: dict, edges: dict):
        from .. import heterograph

        built = {}
        for gid, types in nodes.items():
            g = heterograph({etype: (s, d) for etype, (s, d, _) in edges[gid].items()},
                            num_nodes_dict={ntype: len(ids) for ntype, (ids, _) in types.items()})
            for ntype, (_, data) in types.items():
                for key, value in data.items():
                    g.nodes[ntype].data[key] = value
            for etype, (_, _, data) in edges[gid].items():
                for key, value in data.items():
                    g.edges[etype].data[key] = value
            built[gid] = g
        m = self.meta_yaml["graph_data"]
        if m is None:
            gids, data = np.full(1, 0), {}
        else:
            parser = self.default_data_parser if self.gdata_parser is None else self.gdata_parser
            (gids,), data = _read(pd, self.raw_dir, m, self.meta_yaml["separator"], parser, (("graph_id_field", True),))
            gids = np.array(gids)
            _same_length({"graph_id": gids, **data})
        missing = np.setdiff1d(np.array(list(built.keys())), gids)
        if len(missing) > 0:
            raise DGLError(f"Found following graph ids in node/edge CSVs but not in graph CSV: {missing}.")
        graphs = [built[gid] if gid in built else heterograph({("_V", "_E", "_V"): ([], [])}) for gid in gids]
        return graphs, {k: _tensor(v).reshape(len(graphs), -1) for k, v in data.items()}

    def __getitem__(self, i):
        if isinstance(i, torch.Tensor) and i.dim() == 1:
            return Subset(self, i.cpu())
        g = self._transformed(self.graphs[i])
        if len(self.data) == 1:
            return g, self.labels[i]
        if len(self.data) > 0:
            return g, {k: v[i] for k, v in self.data.items()}
        return g

    def __len__(self) -> int:
        return len(self.graphs)


def _renumber(sorted_ids: np.ndarray, ids: np.ndarray) -> torch.Tensor:
    """int64 positions of ``ids`` in ``sorted_ids`` (the node numbering); KeyError naming an id with no node,
    as DGL's lookup raises."""
    ids = ids.astype(sorted_ids.dtype)
    pos = np.searchsorted(sorted_ids, ids)
    bad = (pos >= len(sorted_ids)) | (sorted_ids[np.minimum(pos, len(sorted_ids) - 1)] != ids)
    if bad.any():
        raise KeyError(ids[bad][0])
    return torch.from_numpy(pos.astype(np.int64))
