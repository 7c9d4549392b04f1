"""``meta.json`` of a graph store: its fields, format versions and validation (see :mod:`bgl.store`)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from .errors import StoreFormatError
from .output_dir import STORE

FORMAT_NAME = STORE.format  # "bgl-graph-store"
FORMAT_VERSION = 1
# A store with node/edge types (bgl/schema.py) is version 2, so a bgl that knows only
# version 1 refuses it (naming the version) instead of reading it as one untyped graph.
TYPED_FORMAT_VERSION = 2
SUPPORTED_VERSIONS = (FORMAT_VERSION, TYPED_FORMAT_VERSION)
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
    ids live in ``<name>_idx.npy``.  ``extra`` carries provenance (source
    file, ingest options) and is never interpreted by the loader.
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
    name: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    schema: dict[str, Any] | None = None  # node/edge types (version 2 only; bgl/schema.py)
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
        if (d.get("version") == TYPED_FORMAT_VERSION) != (d.get("schema") is not None):
            raise StoreFormatError(f"{where}: a version {TYPED_FORMAT_VERSION} store needs a schema, "
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
