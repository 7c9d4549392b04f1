"""Dataset ingestion: any supported input -> one graph store directory.

``ingest(source, out_dir)`` detects the format from the source, reads it into
a :class:`~bgl.sources.graph_source.GraphSource` (a re-iterable stream of edge
chunks plus node data) and writes the store with the chunked COO -> CSC
builder, so an edge list larger than RAM never has to fit in memory.

Formats (``format=`` / ``bgl ingest --format``):

===============  ==============================================================
gnn-benchmark    shchur/gnn-benchmark ``.npz`` (Cora, CiteSeer): CSR adjacency,
                 CSR/dense attributes, labels
csr-npz          ``data/indices/indptr/shape`` npz (+ ``labels``, ``feat``)
planetoid        directory of ``ind.NAME.{x,y,tx,ty,allx,ally,graph,test.index}``
                 (or the ``DIR/ind.NAME`` prefix); keeps the standard split
edgelist         SNAP-style text (``.txt``, ``.tsv``, ``.csv``, ``.el``, ``.gz``):
                 ``src dst`` per line, ``#``/``%`` comments, streamed in chunks
ogb              OGB node-property raw layout: ``raw/edge.csv.gz``,
                 ``raw/node-feat.csv.gz``, ``raw/node-label.csv.gz``,
                 ``split/<name>/{train,valid,test}.csv.gz``; or its heterogeneous
                 layout (ogbn-mag: ``raw/num-node-dict.csv.gz``,
                 ``raw/relations/<src>___<rel>___<dst>/edge.csv.gz``, ...): a typed store
typed-edgelist   ``DIR/edges/<src>__<rel>__<dst>.{txt,csv,npy}`` + ``feat/<type>.npy``,
                 ``label/<type>.npy``, ``split/<type>/<name>_idx.npy``, ``nodes.json``
                 (``bgl.sources.typed.edgelist``): a typed store
dgl              an in-memory ``DGLGraph`` (ndata feat/label/*_mask); a heterogeneous
                 one becomes a typed store
pyg              an in-memory PyG ``Data`` (x, y, *_mask; edge-level tensors as edge arrays), or a
                 ``HeteroData`` (per type x / y / *_mask): a typed store
rmat             ``"rmat:SCALE"``: Graph500 R-MAT generator (``bgl.sources.rmat``)
rmat-hetero      ``"rmat-hetero:SCALE"``: typed R-MAT, papers/authors/fields
                 (``bgl.sources.typed.rmat``): a typed store
===============  ==============================================================

Typed inputs keep every edge as given (DGL's heterograph semantics: no symmetrizing,
self-loops and repeated edges stay); ``add_reverse=True`` adds reverse relations as
``dgl.AddReverse()`` does.
"""
from __future__ import annotations

import importlib
import inspect
import logging
import os
from pathlib import Path
from typing import Any

from ..errors import IngestError
from ..output_dir import STORE, WorkDir, check_output, remove_stale
from ..store import GraphStore
from .graph_source import GraphSource, write_source
from .typed.source import TypedSource

log = logging.getLogger(__name__)

FORMATS = ("gnn-benchmark", "csr-npz", "planetoid", "edgelist", "ogb", "typed-edgelist", "dgl", "pyg", "rmat",
           "rmat-hetero")
#: Generators: ``NAME:SCALE`` sources, not read from a path.
GENERATORS = ("rmat", "rmat-hetero")
#: What a path (or ``rmat:SCALE``) may be read as: ``bgl ingest --format`` takes exactly these;
#: "dgl" / "pyg" are an in-memory DGLGraph / PyG Data or HeteroData, which only the Python ``ingest()`` takes.
PATH_FORMATS = tuple(f for f in FORMATS if f not in ("dgl", "pyg"))
RMAT_OPTIONS = {"scale", "edge_factor", "abcd", "chunk_edges"}
RMAT_HETERO_OPTIONS = {"scale", "edge_factor", "chunk_edges"}
EDGELIST_SUFFIXES = (".txt", ".tsv", ".csv", ".el", ".edges", ".edgelist", ".gz")


def _is_dgl_graph(obj: Any) -> bool:
    # Duck-typed so library code never imports dgl (only the DGL face, bgl/dgl/real_dgl/, may).
    return hasattr(obj, "ndata") and hasattr(obj, "edges") and hasattr(obj, "num_nodes")


def _is_hetero_data(obj: Any) -> bool:
    # Duck-typed so library code never imports torch_geometric.
    return hasattr(obj, "node_types") and hasattr(obj, "edge_types") and hasattr(obj, "edge_index_dict")


def detect_format(source: Any) -> str:
    """Name of the format of ``source`` (one of :data:`FORMATS`).

    Raises
    ------
    IngestError
        if the source does not exist or matches no format.
    """
    if _is_dgl_graph(source):
        return "dgl"
    from .readers.pyg_data import is_pyg_data

    if _is_hetero_data(source) or is_pyg_data(source):
        return "pyg"
    if not isinstance(source, (str, os.PathLike)):
        raise IngestError(f"cannot ingest a {type(source).__name__}; pass a path, 'rmat:SCALE', a DGLGraph or a "
                          "PyG Data or HeteroData")
    generator = _generator_of(source)
    if generator:
        return generator
    path = Path(source)
    if path.is_dir():
        from .readers.ogb import looks_ogb
        from .typed.edgelist import looks_typed_edgelist

        if looks_ogb(path):
            return "ogb"
        if any(path.glob("ind.*.graph")):
            return "planetoid"
        if looks_typed_edgelist(path):
            return "typed-edgelist"
        raise IngestError(f"{path}: directory holds no OGB raw layout, Planetoid ind.* files or typed edge "
                          "lists (edges/<src>__<rel>__<dst>.txt)")
    if not path.exists():
        if Path(f"{path}.graph").exists() and path.name.startswith("ind."):
            return "planetoid"
        raise IngestError(f"{path}: no such file or directory")
    if path.suffix == ".npz":
        from .readers.npz import npz_kind, open_npz

        kind = npz_kind(open_npz(path))
        if kind is None:
            raise IngestError(f"{path}: npz has neither gnn-benchmark (adj_*) nor CSR (indptr/indices/shape) keys")
        return kind
    if path.name.lower().endswith(EDGELIST_SUFFIXES):
        return "edgelist"
    raise IngestError(f"{path}: cannot tell the format from the name; pass --format (Python: format=) "
                      f"one of {', '.join(PATH_FORMATS)}")


def _generator_of(source: Any) -> str | None:
    """``"rmat"`` / ``"rmat-hetero"`` for ``"rmat:SCALE"`` / ``"rmat-hetero:SCALE"`` (or the bare name)."""
    if not isinstance(source, (str, os.PathLike)):
        return None
    text = str(source)
    for name in GENERATORS:
        if text == name or text.startswith(name + ":"):
            return name
    return None


def read_source(source: Any, format: str | None = None, *, scratch_dir: Path | None = None,
                progress: bool = False, **opts) -> GraphSource | TypedSource:
    """Read ``source`` into a :class:`GraphSource` (a :class:`TypedSource` for typed inputs)
    without writing the store.

    ``scratch_dir`` receives the parsed-edge files of streamed formats (edge
    lists, OGB); the caller removes it.
    """
    fmt = format or detect_format(source)
    if fmt not in FORMATS:
        raise IngestError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if fmt in GENERATORS:
        raise IngestError(f"format {fmt!r} is a generator, not a reader; use ingest()")
    if fmt == "pyg" and _is_hetero_data(source):
        raise IngestError("format 'pyg' of a HeteroData is written by ingest() directly, not through a reader")
    module, func = _READERS[fmt]
    reader = getattr(importlib.import_module(module, __package__), func)
    params = inspect.signature(reader).parameters
    _check_options(fmt, params, opts)
    if "scratch_dir" in params:
        opts["scratch_dir"] = _need(scratch_dir)
    if "progress" in params:
        opts["progress"] = progress
    return reader(source if fmt in ("dgl", "pyg") else Path(source), **opts)


# format -> (module, reader function); each reader returns a GraphSource.
_READERS = {
    "gnn-benchmark": (".readers.npz", "read_gnn_benchmark"),
    "csr-npz": (".readers.npz", "read_csr_npz"),
    "planetoid": (".planetoid", "read_planetoid"),
    "edgelist": (".readers.edgelist", "read_edgelist"),
    "ogb": (".readers.ogb", "read_ogb"),
    "typed-edgelist": (".typed.edgelist", "read_typed_edgelist"),
    "dgl": (".readers.dgl_graph", "read_dgl_graph"),
    "pyg": (".readers.pyg_data", "read_pyg_data"),
}


def _check_options(fmt: str, params, opts: dict) -> None:
    """Reject options the format does not take, by name, instead of a TypeError deep inside."""
    allowed = {k for k, p in params.items() if p.kind == p.KEYWORD_ONLY} - {"scratch_dir", "progress"}
    unknown = sorted(set(opts) - allowed)
    if unknown:
        raise IngestError(f"option(s) {unknown} do not apply to format {fmt!r} (it takes {sorted(allowed) or 'none'})")


def ingest(source: Any, out_dir: str | os.PathLike, format: str | None = None, *, feat_dim: int = 0,
           num_classes: int = 0, symmetrize: bool | None = None, remove_self_loops: bool = True,
           dedupe: bool = True, seed: int = 0, overwrite: bool = False, progress: bool = False,
           add_reverse: bool = False, **opts) -> GraphStore:
    """Convert a dataset into a graph store directory, atomically.

    Parameters
    ----------
    source : path (file or directory), ``"rmat:SCALE"`` (or ``"rmat"`` with
        ``scale=``), ``"rmat-hetero:SCALE"``, a DGLGraph or a PyG ``Data`` or ``HeteroData``.
    out_dir : store directory to create (written to a hidden work dir next to it, then renamed).
    format : one of :data:`FORMATS`; detected from ``source`` when None.
    feat_dim : > 0 adds seeded synthetic float32 features (``centroid[label] +
        noise``) to a dataset without features; must match existing features.
    num_classes : > 0 adds seeded synthetic labels to a dataset without labels.
    feat_dim, num_classes : for ``rmat-hetero``, the target type's (papers') feature width and
        class count (defaults 64 and 16); refused for other typed inputs.
    symmetrize : store every edge in both directions; None = the format's
        default (True for gnn-benchmark/CSR/Planetoid/OGB/R-MAT, False for
        DGL graphs; edge lists follow their header: True after a SNAP
        "# Undirected graph" line, else False).  The store's
        ``meta.extra["symmetrize_from"]`` records why (``"option"``,
        ``"header"`` or ``"format default"``).
    remove_self_loops, dedupe : drop ``v -> v`` edges / repeated edges.
    seed : seeds the default split and synthetic data.
    overwrite : replace an existing ``out_dir`` -- only a bgl graph store (or an empty
        directory); a file, a non-store directory, a partition or the source itself is refused.
    progress : tqdm bars on the long passes.
    add_reverse : typed inputs only: add reverse relations as ``dgl.AddReverse()`` does
        (``(B, "rev_r", A)`` for each ``(A, r, B)`` whose reverse is not there; a relation
        within one type gets its reversed edges added to it), edge types then in DGL's order.
    **opts : format options: ``name`` (planetoid), ``num_nodes``, ``chunk_bytes``
        (edgelist), ``split`` (ogb), ``scale``, ``edge_factor``, ``abcd`` (rmat; rmat-hetero
        takes ``scale``, ``edge_factor``); for a graph read from files, ``node_time`` (a file, or
        ``{ntype: file}`` / ``["ntype=file", ...]`` for a typed one) kept as the int64 node array
        ``node_time_name`` (default ``timestamp``, 8 B a node; :mod:`bgl.sources.node_times`).

    Returns
    -------
    GraphStore opened on ``out_dir``.  Datasets without a split get a seeded,
    label-stratified 60/20/20 train/val/test split.

    Raises
    ------
    IngestError
        malformed input, naming the file and the offending value / line.
    FileExistsError
        ``out_dir`` exists and ``overwrite`` is False, or it is not a bgl store (named in the message).
    OutputError
        ``out_dir`` cannot be written (its parent is a file or not writable).
    """
    from .node_times import DEFAULT_NODE_TIME_NAME, parse_node_time_args, read_all

    out = Path(out_dir)
    is_path = isinstance(source, (str, os.PathLike)) and _generator_of(source) is None
    inputs = [source] if is_path else []
    check_output(out, STORE, overwrite, inputs)  # before reading anything: refuse what it may not replace
    remove_stale(out.absolute().parent)  # scratch and tmp dirs of killed earlier runs
    fmt = format or detect_format(source)
    time_files = parse_node_time_args(opts.pop("node_time", None))
    time_name = opts.pop("node_time_name", DEFAULT_NODE_TIME_NAME)
    if time_files and (not is_path or fmt in ("rmat", "rmat-hetero")):
        kept = " (its own integer node fields become node arrays by themselves: node_keys=)" \
            if fmt in ("dgl", "pyg") else ""
        raise IngestError(f"node_time= (--node-time) reads node times for a graph read from files; {fmt!r} "
                          f"input takes none{kept}")
    node_times = read_all(time_files)  # every file parsed before the edges are read
    if fmt == "pyg" and _is_hetero_data(source):
        from .hetero import ingest_hetero_data

        _check_typed_options(symmetrize, feat_dim, num_classes)
        return ingest_hetero_data(source, out_dir, overwrite=overwrite, add_reverse=add_reverse, **opts)
    if fmt == "dgl" and (len(getattr(source, "canonical_etypes", ())) > 1 or len(getattr(source, "ntypes", ())) > 1):
        from .hetero import ingest_hetero_dglgraph

        _check_typed_options(symmetrize, feat_dim, num_classes)
        return ingest_hetero_dglgraph(source, out_dir, overwrite=overwrite, add_reverse=add_reverse, **opts)
    if fmt == "rmat-hetero":
        from .rmat import parse_rmat_source
        from .typed.rmat import rmat_hetero_source

        if _generator_of(source) == "rmat-hetero" and ":" in str(source):
            opts.setdefault("scale", parse_rmat_source(str(source), "rmat-hetero"))
        unknown = sorted(set(opts) - RMAT_HETERO_OPTIONS)
        if unknown or "scale" not in opts:
            raise IngestError(f"format 'rmat-hetero' needs a scale ('rmat-hetero:SCALE' or scale=) and takes "
                              f"only {sorted(RMAT_HETERO_OPTIONS)}" + (f", not {unknown}" if unknown else ""))
        _check_typed_options(symmetrize, 0, 0)
        src = rmat_hetero_source(seed=seed, feat_dim=feat_dim, num_classes=num_classes, **opts)
        return _write_typed(src, out, add_reverse, overwrite, progress)
    if add_reverse and fmt in ("rmat", "dgl"):
        raise IngestError("add_reverse adds reverse relations to a typed graph; this one has one node and edge "
                          "type: use symmetrize=True (--symmetrize) for both directions")
    if fmt == "rmat":
        from .rmat import generate_rmat_store, parse_rmat_source

        if isinstance(source, (str, os.PathLike)) and str(source).startswith("rmat:"):
            opts.setdefault("scale", parse_rmat_source(str(source)))
        if "scale" not in opts:
            raise IngestError("format rmat needs a scale: source 'rmat:SCALE' or scale=")
        unknown = sorted(set(opts) - RMAT_OPTIONS)
        if unknown:
            raise IngestError(f"option(s) {unknown} do not apply to format 'rmat' (it takes {sorted(RMAT_OPTIONS)})")
        return generate_rmat_store(out_dir, feat_dim=feat_dim, num_classes=num_classes, seed=seed,
                                   symmetrize=True if symmetrize is None else symmetrize,
                                   remove_self_loops=remove_self_loops, dedupe=dedupe,
                                   overwrite=overwrite, progress=progress, **opts)
    # Scratch lives next to the output: same filesystem, and big inputs need disk, not /tmp RAM.
    with WorkDir(out, "scratch") as scratch:
        src = read_source(source, fmt, scratch_dir=scratch.path, progress=progress, **opts)
        _attach_node_times(src, node_times, time_files, time_name)
        if isinstance(src, TypedSource):
            try:
                _check_typed_options(symmetrize, feat_dim, num_classes)
            except IngestError:
                src.close()
                raise
            return _write_typed(src, out, add_reverse, overwrite, progress)
        if add_reverse:
            src.close()
            raise IngestError(f"add_reverse adds reverse relations to a typed graph; {source} has one node and "
                              "edge type: use symmetrize=True (--symmetrize) for both directions")
        src.extra["symmetrize_from"] = _symmetrize_origin(src, symmetrize)
        return write_source(src, out, feat_dim=feat_dim, num_classes=num_classes, symmetrize=symmetrize,
                            remove_self_loops=remove_self_loops, dedupe=dedupe, seed=seed,
                            overwrite=overwrite, progress=progress, scratch_dir=scratch.path)


def _attach_node_times(src, times, files, name: str) -> None:
    """Put the node times read from ``files`` into ``src.ndata[name]`` (one int64 array over global ids),
    closing ``src`` on the IngestError for a wrong length or form (:func:`.node_times.node_time_array`)."""
    if not times:
        return
    from ..schema import check_edge_name
    from .node_times import node_time_array

    try:
        try:
            check_edge_name(name)
        except ValueError as e:
            raise IngestError(f"node_time_name: {e}") from None
        typed = isinstance(src, TypedSource)
        src.ndata = {**src.ndata, name: node_time_array(times, files, src.schema if typed else None,
                                                        None if typed else src.num_nodes)}
    except IngestError:
        src.close()
        raise


def _check_typed_options(symmetrize: bool | None, feat_dim: int, num_classes: int) -> None:
    """Refuse the homogeneous-only options for a typed input, saying what to use instead."""
    if symmetrize:
        raise IngestError("symmetrize applies to graphs with one edge type; a typed graph keeps each relation's "
                          "direction: add reverse relations with add_reverse=True (--add-reverse)")
    if feat_dim or num_classes:
        raise IngestError("feat_dim / num_classes make synthetic data for an untyped graph (or rmat-hetero's papers); "
                          "a typed input brings its own per-type features and labels")


def _write_typed(src, out: Path, add_reverse: bool, overwrite: bool, progress: bool) -> GraphStore:
    from .typed.source import with_reverse, write_typed_source

    return write_typed_source(with_reverse(src) if add_reverse else src, out, overwrite=overwrite, progress=progress)


def _symmetrize_origin(src: GraphSource, symmetrize: bool | None) -> str:
    """Why the store is (or is not) symmetrized: the caller's option, the file's header, or the format."""
    if symmetrize is not None:
        return "option"
    if src.extra.get("header_direction"):
        return "header"
    return "format default"


def _need(scratch_dir: Path | None) -> Path:
    if scratch_dir is None:
        raise IngestError("this format streams its edges and needs scratch_dir=")
    return scratch_dir
