"""What a graph store's ``meta.json`` says: its fields and format versions (:class:`StoreMeta`), its
node and edge types (:class:`GraphSchema`): one global id space, one CSC, rows grouped by relation,
and its named per-edge arrays (``edata``, :func:`edge_spec`, :class:`EdgeArrays`).

A heterogeneous graph is stored as the homogeneous one is (``indptr``/``indices``
over global ids, see :mod:`bgl.store`), with three additions, GraphBolt's
"fused CSC" idea:

* node type ``t`` owns the contiguous global ids ``[offset_t, offset_t + count_t)``,
  so a node's type is one ``searchsorted`` over ``T + 1`` offsets and its
  type-local id (DGL's per-type id) is ``gid - offset_t``;
* edge type ``r`` is a canonical ``(src_type, relation, dst_type)``; each edge's
  relation id is in ``etype.npy`` (uint8, uint16 above 255 relations), and each row
  lists its in-edges grouped by relation id, ascending, so one relation's
  neighbours of a node are one contiguous span found by binary search in the row
  (no scan of the other relations);
* features, labels and splits live per node type (``feat/<type>.npy``,
  ``label/<type>.npy``, ``split/<type>/<name>_idx.npy`` in type-local ids), each
  type with its own width and dtype, or none.

Cost beyond the homogeneous store: 1 byte per edge (2 above 255 relations) for
``etype``; nothing per node (types are ranges); ``O(T + R)`` of metadata.  A
homogeneous store is the one-type case: :meth:`GraphSchema.homogeneous` with
type ``_N`` and relation ``("_N", "_E", "_N")``, and it is written exactly as
before (format version 1, no ``etype``), so old stores open unchanged.

Edge arrays (``edata/<name>.npy``: weights, masks, edge features)
-----------------------------------------------------------------
An edge array is row-aligned with the store's CSC: row ``p`` belongs to the
edge at CSC position ``p`` (``indices[p] -> v`` for the row ``v`` holding
``p``), so a sampler that knows the positions it drew reads the data of the
drawn edges with one gather, and a partition part keeps the rows of its own
in-edges.  ``meta.json``'s ``edata`` lists each array's dtype and shape.

Cost: ``itemsize * width`` bytes per edge per array (4 for a float32 weight,
1 for a bool mask, ``4 * d`` for float32 features of width ``d``),
memory-mapped like every other store array.

The store format version is not raised for them: an older bgl ignores the ``edata``
key of ``meta.json`` and reads every other array as before.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .errors import StoreFormatError
from .output_dir import STORE

FORMAT_NAME = STORE.format  # "bgl-graph-store"
FORMAT_VERSION = 1
# A store with node/edge types (bgl/schema.py) is version 2, so a bgl that knows only
# version 1 refuses it (naming the version) instead of reading it as one untyped graph.
TYPED_FORMAT_VERSION = 2
# A store whose feature rows are encoded (bgl/codec: meta.json ``feat_codec``) is version 3, so a bgl
# that cannot decode them refuses it naming the version, instead of serving no or wrong features.
CODEC_FORMAT_VERSION = 3
SUPPORTED_VERSIONS = (FORMAT_VERSION, TYPED_FORMAT_VERSION, CODEC_FORMAT_VERSION)
META_FILE = "meta.json"

# Full index-range validation streams every edge; beyond this many edges the
# open-time check reads a fixed sample plus both ends instead, so opening a
# billion-edge store stays cheap.  `GraphStore.validate(full=True)` is always there.
FULL_CHECK_MAX_EDGES = 1 << 26
CHECK_CHUNK = 1 << 22


def id_dtype_for(num_nodes: int) -> np.dtype:
    """Smallest id dtype that holds every node id: int32 halves index memory below 2^31 nodes."""
    return np.dtype(np.int32) if num_nodes < 2**31 - 1 else np.dtype(np.int64)


@dataclass(frozen=True)
class StoreMeta:
    """Contents of ``meta.json``.

    ``splits`` maps split name (``train``, ``val``, ``test``) to its size; the
    ids live in ``<name>_idx.npy``; ``edata`` maps edge array names to their dtype and shape
    (:func:`edge_spec`), ``ndata`` node array names (:func:`~bgl.node_arrays.node_spec`).
    ``extra`` carries provenance (source file, ingest options) and is never interpreted by the loader.
    """

    num_nodes: int
    num_edges: int
    id_dtype: str
    node_offset: int = 0
    global_num_nodes: int = -1
    feat_dim: int = 0
    feat_dtype: str | None = None
    num_classes: int = 0
    has_label: bool = False
    splits: dict[str, int] = field(default_factory=dict)
    edata: dict[str, dict[str, Any]] = field(default_factory=dict)
    ndata: dict[str, dict[str, Any]] = field(default_factory=dict)  # named node arrays (bgl/node_arrays.py)
    name: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    schema: dict[str, Any] | None = None  # node/edge types (version 2 only; bgl/schema.py)
    feat_codec: dict[str, Any] | None = None  # encoded feature rows (version 3 only; bgl/codec)
    feat_float32: bool = True  # feat.npy is there (a version 3 store may hold only the encoded rows)
    format: str = FORMAT_NAME
    version: int = FORMAT_VERSION

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict, as written to ``meta.json``."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: Path) -> "StoreMeta":
        """Parse and check ``meta.json``; ``where`` names the file in errors."""
        if d.get("format") != FORMAT_NAME:
            raise StoreFormatError(f"{where}: not a bgl graph store (format={d.get('format')!r})")
        if d.get("version") not in SUPPORTED_VERSIONS:
            raise StoreFormatError(
                f"{where}: unsupported store version {d.get('version')!r}; this bgl reads versions "
                f"{list(SUPPORTED_VERSIONS)}"
            )
        # a version 3 store may be typed: encoded rows per node type (bgl/codec/typed_rows.py)
        if (d.get("version") == TYPED_FORMAT_VERSION and d.get("schema") is None) or (
                d.get("schema") is not None and d.get("version") not in (TYPED_FORMAT_VERSION, CODEC_FORMAT_VERSION)):
            raise StoreFormatError(f"{where}: a version {TYPED_FORMAT_VERSION} store needs a schema, "
                                   f"and only it may have one (version {d.get('version')!r})")
        if (d.get("version") == CODEC_FORMAT_VERSION) != (d.get("feat_codec") is not None):
            raise StoreFormatError(f"{where}: a version {CODEC_FORMAT_VERSION} store needs a feat_codec, "
                                   f"and only it may have one (version {d.get('version')!r})")
        known = set(cls.__dataclass_fields__)
        missing = {"num_nodes", "num_edges", "id_dtype"} - set(d)
        if missing:
            raise StoreFormatError(f"{where}: meta.json lacks {sorted(missing)}")
        try:
            meta = cls(**{k: v for k, v in d.items() if k in known})
        except TypeError as e:
            raise StoreFormatError(f"{where}: bad meta.json: {e}") from None
        for key in ("num_nodes", "num_edges", "node_offset", "feat_dim", "num_classes"):
            value = getattr(meta, key)
            if not isinstance(value, int) or value < 0:
                raise StoreFormatError(f"{where}: meta.json {key} must be an int >= 0, got {value!r}")
        for key, kinds in (("id_dtype", "iu"), ("feat_dtype", "fiu")):
            value = getattr(meta, key)
            if key == "feat_dtype" and value is None:
                continue
            try:
                ok = np.dtype(value).kind in kinds
            except TypeError:
                ok = False
            if not ok:
                raise StoreFormatError(f"{where}: meta.json {key} must name a numeric dtype, got {value!r}")
        if not isinstance(meta.splits, dict) or not all(isinstance(v, int) and v >= 0 for v in meta.splits.values()):
            raise StoreFormatError(f"{where}: meta.json splits must map names to sizes >= 0, got {meta.splits!r}")
        return meta


DEFAULT_NTYPE = "_N"
DEFAULT_ETYPE = "_E"


@dataclass(frozen=True)
class NodeType:
    """One node type: its global id range and what it carries."""

    name: str
    offset: int
    count: int
    feat_dim: int = 0
    feat_dtype: str | None = None
    has_label: bool = False
    num_classes: int = 0
    splits: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class EdgeType:
    """One canonical edge type ``(src, rel, dst)`` and its edge count."""

    src: str
    rel: str
    dst: str
    count: int = 0

    @property
    def canonical(self) -> tuple[str, str, str]:
        return (self.src, self.rel, self.dst)


@dataclass(frozen=True)
class GraphSchema:
    """The node and edge types of a store (see the module docstring).

    Node types are in global-id order (offsets ascending, contiguous, starting at 0);
    edge type ``i`` is relation id ``i`` in ``etype.npy``.
    """

    node_types: tuple[NodeType, ...]
    edge_types: tuple[EdgeType, ...]

    # ------------------------------------------------------------ construction
    @staticmethod
    def homogeneous(num_nodes: int, num_edges: int = 0) -> "GraphSchema":
        """The one-type schema of a homogeneous store."""
        return GraphSchema((NodeType(DEFAULT_NTYPE, 0, int(num_nodes)),),
                           (EdgeType(DEFAULT_NTYPE, DEFAULT_ETYPE, DEFAULT_NTYPE, int(num_edges)),))

    def __post_init__(self):
        if not self.node_types or not self.edge_types:
            raise ValueError("a schema needs at least one node type and one edge type")
        names = [t.name for t in self.node_types]
        if len(set(names)) != len(names):
            raise ValueError(f"node type names must be unique, got {names}")
        expect = 0
        for t in self.node_types:
            if t.offset != expect or t.count < 0:
                raise ValueError(f"node type {t.name!r}: offset {t.offset}, count {t.count}; types must tile "
                                 f"the global ids contiguously (expected offset {expect})")
            expect += t.count
        canon = [e.canonical for e in self.edge_types]
        if len(set(canon)) != len(canon):
            raise ValueError(f"edge types must be unique, got {canon}")
        for e in self.edge_types:
            for end in (e.src, e.dst):
                if end not in names:
                    raise ValueError(f"edge type {e.canonical} names node type {end!r}, not in {names}")

    # ------------------------------------------------------------ lookups
    @property
    def is_homogeneous(self) -> bool:
        """True for the one-node-type, one-edge-type case (today's stores)."""
        return len(self.node_types) == 1 and len(self.edge_types) == 1

    @property
    def num_nodes(self) -> int:
        return sum(t.count for t in self.node_types)

    @property
    def ntypes(self) -> list[str]:
        return [t.name for t in self.node_types]

    @property
    def canonical_etypes(self) -> list[tuple[str, str, str]]:
        return [e.canonical for e in self.edge_types]

    @property
    def offsets(self) -> np.ndarray:
        """int64 [T + 1]: node type ``t`` owns global ids ``[offsets[t], offsets[t + 1])``."""
        return np.array([t.offset for t in self.node_types] + [self.num_nodes], dtype=np.int64)

    def ntype_id(self, name: str) -> int:
        """Index of node type ``name``; ValueError listing the types otherwise."""
        for i, t in enumerate(self.node_types):
            if t.name == name:
                return i
        raise ValueError(f"unknown node type {name!r}; the graph has {self.ntypes}")

    def node_type(self, name: str) -> NodeType:
        return self.node_types[self.ntype_id(name)]

    def etype_id(self, etype) -> int:
        """Relation id of a canonical ``(src, rel, dst)`` or of a relation name that is unique."""
        if isinstance(etype, (tuple, list)) and len(etype) == 3:
            key = tuple(str(x) for x in etype)
            for i, e in enumerate(self.edge_types):
                if e.canonical == key:
                    return i
            raise ValueError(f"unknown edge type {key}; the graph has {self.canonical_etypes}")
        matches = [i for i, e in enumerate(self.edge_types) if e.rel == etype]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise ValueError(f"unknown edge type {etype!r}; the graph has {self.canonical_etypes}")
        raise ValueError(f"edge type name {etype!r} is ambiguous; use one of "
                         f"{[self.edge_types[i].canonical for i in matches]}")

    def type_of(self, gids: np.ndarray) -> np.ndarray:
        """Node type index of each global id (int64, same shape)."""
        return np.searchsorted(self.offsets, np.asarray(gids), side="right") - 1

    def etype_dtype(self) -> np.dtype:
        """dtype of ``etype.npy``: uint8 up to 256 relations, else uint16."""
        return np.dtype(np.uint8) if len(self.edge_types) <= 256 else np.dtype(np.uint16)

    def relation_ends(self) -> tuple[np.ndarray, np.ndarray]:
        """(src type index, dst type index) of every relation, int64 [R] each."""
        src = np.array([self.ntype_id(e.src) for e in self.edge_types], dtype=np.int64)
        dst = np.array([self.ntype_id(e.dst) for e in self.edge_types], dtype=np.int64)
        return src, dst

    # ------------------------------------------------------------ (de)serialisation
    def to_dict(self) -> dict[str, Any]:
        return {"node_types": [asdict(t) for t in self.node_types],
                "edge_types": [asdict(e) for e in self.edge_types]}

    @staticmethod
    def from_dict(d: Mapping[str, Any], where: Any = "meta.json") -> "GraphSchema":
        """Parse ``meta.json``'s ``schema``; StoreFormatError naming ``where`` on any defect."""
        try:
            nts = tuple(NodeType(**t) for t in d["node_types"])
            ets = tuple(EdgeType(**e) for e in d["edge_types"])
            return GraphSchema(nts, ets)
        except (KeyError, TypeError, ValueError) as e:
            raise StoreFormatError(f"{where}: bad schema: {e}") from None

    def with_counts(self, node_counts: Sequence[int] | None = None,
                    edge_counts: Sequence[int] | None = None) -> "GraphSchema":
        """The same types with new node / edge counts (offsets recomputed)."""
        nts, off = [], 0
        for i, t in enumerate(self.node_types):
            c = t.count if node_counts is None else int(node_counts[i])
            nts.append(NodeType(**{**asdict(t), "offset": off, "count": c}))
            off += c
        ets = [EdgeType(e.src, e.rel, e.dst, e.count if edge_counts is None else int(edge_counts[i]))
               for i, e in enumerate(self.edge_types)]
        return GraphSchema(tuple(nts), tuple(ets))


def open_typed_arrays(meta, where, load) -> tuple:
    """(schema, etype, type_feat, type_label, type_splits, type_feat_codec, type_feat_encoded) of a store
    whose meta is ``meta`` (the last two: each encoded type's codec and rows, :mod:`bgl.codec.typed_rows`).

    ``load(relpath, shape, dtype)`` opens one array of the store (memory-mapped, checked);
    an untyped store gets the one-type schema and no typed arrays.
    """
    from .codec.typed_rows import open_type_codecs

    if meta.schema is None:  # (GraphStore reads an untyped store's codec: a per-type entry is refused there)
        return GraphSchema.homogeneous(meta.global_num_nodes, meta.num_edges), None, {}, {}, {}, {}, {}
    schema = GraphSchema.from_dict(meta.schema, where)
    if schema.num_nodes != meta.num_nodes:  # a part store's types count its own nodes (partition/typed_parts.py)
        raise StoreFormatError(f"{where}: node types hold {schema.num_nodes} nodes, num_nodes is "
                               f"{meta.num_nodes}")
    etype = load("etype", (meta.num_edges,), schema.etype_dtype())
    feats, labels, splits = {}, {}, {}
    codecs, encoded = open_type_codecs(meta, schema, where, load)
    for t in schema.node_types:
        # feat_float32 false: the types with a codec hold only their encoded rows, the others their float rows
        if t.feat_dim > 0 and (meta.feat_float32 or t.name not in codecs):
            feats[t.name] = load(f"feat/{t.name}", (t.count, t.feat_dim), np.dtype(t.feat_dtype or "float32"))
        if t.has_label:
            labels[t.name] = load(f"label/{t.name}", (t.count,), np.int64)
        splits[t.name] = {name: load(f"split/{t.name}/{name}_idx", (size,), np.int64)
                          for name, size in t.splits.items()}
    return schema, etype, feats, labels, splits, codecs, encoded


# ------------------------------------------------------------------ edge arrays
EDATA_DIR = "edata"
# Edge array names become file names: letters, digits, ``_``, ``-``, ``.``, not starting with ``.``.
EDGE_NAME = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}$")


def check_edge_name(name) -> str:
    """``name`` if it can name an edge array (it becomes ``edata/<name>.npy``); ValueError naming it."""
    if not isinstance(name, str) or not EDGE_NAME.match(name):
        raise ValueError(f"edge data name must be 1-128 letters, digits, '_', '-' or '.' (not starting "
                         f"with '.'), got {name!r}")
    return name


def edge_spec(name: str, shape, dtype, num_edges: int, kind: str = "edge") -> dict[str, Any]:
    """The ``meta.json`` entry of an edge array (``kind="node"``: of a node array, ``num_edges`` then
    the node count); ValueError for a bad name, row count or dtype."""
    check_edge_name(name)
    shape = tuple(int(x) for x in shape)
    if not shape or shape[0] != num_edges:
        raise ValueError(f"{kind} array {name!r} must have num_{kind}s={num_edges} rows, got shape {shape}")
    dtype = np.dtype(dtype)
    if dtype.kind not in "biuf":
        raise ValueError(f"{kind} array {name!r} must be bool, integer or float, got dtype {dtype}")
    return {"dtype": dtype.name, "shape": list(shape)}


def load_edge_arrays(meta_path: Path, edata: Any, num_edges: int,
                     load: Callable[[str, tuple, np.dtype], np.ndarray]) -> dict[str, np.ndarray]:
    """The memmaps of every edge array ``meta.json`` lists; StoreFormatError naming a bad entry.

    ``load(file stem, shape, dtype)`` is the store's checked ``.npy`` loader.
    """
    if not isinstance(edata, dict):
        raise StoreFormatError(f"{meta_path}: edata must be an object, got {type(edata).__name__}")
    arrays = {}
    for name, spec in edata.items():
        if not isinstance(spec, dict) or "dtype" not in spec or not isinstance(spec.get("shape"), list):
            raise StoreFormatError(f"{meta_path}: edata[{name!r}] must be {{'dtype': ..., 'shape': [...]}}, "
                                   f"got {spec!r}")
        try:
            spec = edge_spec(name, spec["shape"], spec["dtype"], num_edges)
        except (TypeError, ValueError) as e:
            raise StoreFormatError(f"{meta_path}: edata: {e}") from None
        arrays[name] = load(f"{EDATA_DIR}/{name}", tuple(spec["shape"]), np.dtype(spec["dtype"]))
    return arrays


def missing_edge_array(where, name, have) -> KeyError:
    """The KeyError for an edge array ``name`` that ``where`` (a store, a graph) lacks."""
    return KeyError(f"{where} has no edge data {name!r}; it has {sorted(have) or 'none'}")


class EdgeArrays:
    """Read side, shared by :class:`~bgl.store.GraphStore` and in-memory graphs: ``self.edata``
    maps names to ``[num_edges, ...]`` arrays in CSC order; ``self.path`` names the graph."""

    edata: dict[str, np.ndarray]

    def edge_array(self, name: str) -> np.ndarray:
        """The edge array ``name`` ([num_edges, ...], CSC order); KeyError listing the names there are."""
        if name not in self.edata:
            raise missing_edge_array(f"graph {self.path}", name, self.edata)
        return self.edata[name]


class EdgeArrayWriter:
    """Write side, mixed into :class:`~bgl.store.StoreWriter` (uses its ``tmp`` dir and ``_meta``)."""

    tmp: Path
    _meta: dict[str, Any]

    def _edge_file(self, name: str, shape, dtype) -> Path:
        self._meta.setdefault("edata", {})[name] = edge_spec(name, shape, dtype, self._meta["num_edges"])
        (self.tmp / EDATA_DIR).mkdir(exist_ok=True)
        return self.tmp / EDATA_DIR / f"{name}.npy"

    def create_edge_array(self, name: str, shape: tuple[int, ...], dtype) -> np.memmap:
        """A writable ``edata/<name>.npy`` memmap ([num_edges, ...], CSC edge order), filled in chunks."""
        file = self._edge_file(name, shape, dtype)
        return np.lib.format.open_memmap(file, mode="w+", dtype=dtype, shape=tuple(shape))

    def save_edge_array(self, name: str, array) -> None:
        """Write a whole in-memory edge array ``[num_edges, ...]`` (row ``p`` = the edge at CSC position ``p``)."""
        array = np.ascontiguousarray(array)
        np.save(self._edge_file(name, array.shape, array.dtype), array, allow_pickle=False)
