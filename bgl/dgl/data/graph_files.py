"""Graphs on disk without DGL: ``save_graphs`` / ``load_graphs`` in an ``.npz`` of plain arrays, and
``from_dgl``, the one call that moves a graph out of an environment that still has DGL.

DGL's own ``dgl.save_graphs`` file is a serialisation of DGL's C++ objects; reading it without
DGL would mean re-implementing that format, so bgl does not: where DGL still imports (the pinned
environment, an old container), ``bgl.dgl.data.from_dgl(g, "graph.npz")`` (or
``from_dgl(dgl.load_graphs("old.bin")[0], ...)``) writes the graphs in this format, and
``bgl.dgl.data.load_graphs("graph.npz")`` reads them back on any stack.  ``load_graphs`` on a
DGL ``.bin`` file says this in one line.

The format: one ``.npz`` (``allow_pickle=False``) holding ``meta`` (a JSON string: format name,
``version``, per graph its node types and counts, canonical edge types, idtype, and the names and
dtypes of its node / edge data) and, per graph ``i``, ``g{i}/rel{r}/src`` / ``dst`` (edge-id order),
``g{i}/node{t}/{k}`` and ``g{i}/edge{r}/{k}`` (the ``k``-th data field of that type), plus
``label/{k}`` for the graph labels.  Types and fields are numbered in the file, named in
``meta``, so any name DGL accepts is kept.  The file is written beside its final name and moved
into place, so an interrupted write leaves nothing half-written.  Cost: the arrays once, as stored.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
import torch

from ...output_dir import write_npz_atomically

FORMAT = "bgl.dgl.graphs"
VERSION = 1
DGL_MAGIC = bytes.fromhex("3fa1b446f04f2edd")  # dgl.save_graphs' first 8 bytes (0xDD2E4FF046B4A13F)

# torch dtypes numpy cannot hold, stored as the integer view of the same width
_VIEWED = {torch.bfloat16: torch.int16}


def _to_numpy(t: torch.Tensor) -> tuple[np.ndarray, str]:
    t = t.detach().cpu()
    name = str(t.dtype).removeprefix("torch.")
    if t.dtype in _VIEWED:
        t = t.view(_VIEWED[t.dtype])
    return t.contiguous().numpy(), name


def _to_tensor(arr: np.ndarray, name: str) -> torch.Tensor:
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"unknown tensor dtype {name!r} in the graph file")
    t = torch.from_numpy(np.ascontiguousarray(arr))
    return t.view(dtype) if dtype in _VIEWED else t


def _graph_arrays(g, i: int, arrays: dict) -> dict:
    """Meta of graph ``g`` (a DGLGraph of DGL's or of bgl.dgl), its arrays added to ``arrays``."""
    if getattr(g, "is_block", False):
        raise ValueError("a block cannot be saved (DGL refuses it too); save the graph it was sampled from")
    ntypes, cets = list(g.ntypes), [tuple(c) for c in g.canonical_etypes]
    meta = {"ntypes": ntypes, "num_nodes": [int(g.num_nodes(nt)) for nt in ntypes],
            "canonical_etypes": [list(c) for c in cets], "idtype": str(g.idtype).removeprefix("torch."),
            "ndata": [], "edata": []}
    for r, c in enumerate(cets):
        src, dst = g.edges(order="eid", etype=c)
        arrays[f"g{i}/rel{r}/src"], _ = _to_numpy(src)
        arrays[f"g{i}/rel{r}/dst"], _ = _to_numpy(dst)
        fields = []
        for k, (key, value) in enumerate(g.edges[c].data.items()):
            arrays[f"g{i}/edge{r}/{k}"], dtype = _to_numpy(value)
            fields.append([key, dtype])
        meta["edata"].append(fields)
    for t, nt in enumerate(ntypes):
        fields = []
        for k, (key, value) in enumerate(g.nodes[nt].data.items()):
            arrays[f"g{i}/node{t}/{k}"], dtype = _to_numpy(value)
            fields.append([key, dtype])
        meta["ndata"].append(fields)
    return meta


def save_graphs(filename, g_list, labels: Optional[dict] = None) -> None:
    """Write graphs (and ``{name: tensor}`` graph labels) to ``filename`` (DGL's arguments; the format in
    the module doc).  ``g_list``: one graph or a list, each a ``bgl.dgl`` or a DGL ``DGLGraph``."""
    graphs = list(g_list) if isinstance(g_list, (list, tuple)) else [g_list]
    arrays: dict[str, np.ndarray] = {}
    meta = {"format": FORMAT, "version": VERSION, "graphs": [_graph_arrays(g, i, arrays) for i, g in enumerate(graphs)],
            "labels": []}
    for k, (key, value) in enumerate((labels or {}).items()):
        arrays[f"label/{k}"], dtype = _to_numpy(torch.as_tensor(value))
        meta["labels"].append([key, dtype])
    path = Path(filename)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_npz_atomically(path, {"meta": np.array(json.dumps(meta)), **arrays})


def from_dgl(g, filename) -> None:
    """Write a DGL ``DGLGraph`` (or a list of them) where ``bgl.dgl.data.load_graphs`` reads it on any
    stack: run it where DGL still imports (DGL itself is never imported here)."""
    save_graphs(filename, g)


def _check_file(path: Path) -> None:
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such graph file") from None
    if head == DGL_MAGIC:
        raise ValueError(f"{path} is DGL's own binary format (dgl.save_graphs), which bgl does not read; where DGL "
                         f"imports, run bgl.dgl.data.from_dgl(dgl.load_graphs({str(path)!r})[0], 'graphs.npz') "
                         "and load that file")
    if not head.startswith(b"PK"):
        raise ValueError(f"{path} is not a graph file written by bgl.dgl.data.save_graphs / from_dgl")


def load_graphs(filename, idx_list: Optional[Sequence[int]] = None) -> tuple[list, dict]:
    """``(graphs, labels)`` from a file of :func:`save_graphs` / :func:`from_dgl` (DGL's arguments):
    ``bgl.dgl`` graphs with their node and edge data, and the graph labels ``{name: tensor}``.

    Raises
    ------
    FileNotFoundError; ValueError for DGL's binary format (saying how to convert it), a file of
    another kind or version, or an index in ``idx_list`` outside the graphs stored.
    """
    from .. import heterograph

    path = Path(filename)
    _check_file(path)
    with np.load(path, allow_pickle=False) as z:
        if "meta" not in z.files:
            raise ValueError(f"{path} is not a graph file written by bgl.dgl.data.save_graphs / from_dgl")
        meta = json.loads(str(z["meta"]))
        if meta.get("format") != FORMAT or meta.get("version") != VERSION:
            raise ValueError(f"{path}: format {meta.get('format')!r} version {meta.get('version')!r}, "
                             f"expected {FORMAT!r} version {VERSION}")
        stored = meta["graphs"]
        wanted = range(len(stored)) if idx_list is None else [int(i) for i in idx_list]
        for i in wanted:
            if not 0 <= i < len(stored):
                raise ValueError(f"{path} holds {len(stored)} graphs; index {i} is outside [0, {len(stored)})")
        graphs = []
        for i in wanted:
            m = stored[i]
            cets = [tuple(c) for c in m["canonical_etypes"]]
            edges = {c: (torch.from_numpy(z[f"g{i}/rel{r}/src"]), torch.from_numpy(z[f"g{i}/rel{r}/dst"]))
                     for r, c in enumerate(cets)}
            g = heterograph(edges, num_nodes_dict=dict(zip(m["ntypes"], m["num_nodes"])),
                            idtype=getattr(torch, m["idtype"]))
            for t, nt in enumerate(m["ntypes"]):
                for k, (key, dtype) in enumerate(m["ndata"][t]):
                    g.nodes[nt].data[key] = _to_tensor(z[f"g{i}/node{t}/{k}"], dtype)
            for r, c in enumerate(cets):
                for k, (key, dtype) in enumerate(m["edata"][r]):
                    g.edges[c].data[key] = _to_tensor(z[f"g{i}/edge{r}/{k}"], dtype)
            graphs.append(g)
        labels = {key: _to_tensor(z[f"label/{k}"], dtype) for k, (key, dtype) in enumerate(meta["labels"])}
    return graphs, labels
