"""Encoded feature rows of a typed store: one :class:`~bgl.codec.rows.RowCodec` per node type with features.

A typed store keeps one feature array per node type (``feat/<ntype>.npy``, its own width and dtype);
compressed, each such type also (or only) has ``feat/<ntype>.<codec>.npy``, encoded by a codec of its
own width with the options every type shares (codec name, int8 block).  ``meta.json`` says so as
``feat_codec = {"by_type": {ntype: codec entry}}`` in a version 3 store that also has a ``schema``,
so a bgl that reads typed stores but not their codecs refuses it (a version 3 store with a schema is
neither of the kinds it knows) instead of serving no or wrong rows.  The loader fetches, caches and
moves each type's rows encoded and decodes them per type once per batch
(:func:`bgl.codec.decode.decode_features`).
"""
from __future__ import annotations

from typing import Any, Mapping

from ..errors import StoreFormatError
from .rows import RowCodec


def is_by_type(feat_codec: Any) -> bool:
    """True for a typed store's ``meta.json`` ``feat_codec`` (``{"by_type": {...}}``)."""
    return isinstance(feat_codec, Mapping) and "by_type" in feat_codec


def by_type_entry(codecs: Mapping[str, RowCodec]) -> dict:
    """The ``meta.json`` ``feat_codec`` of a typed store whose node types ``codecs`` names are encoded."""
    return {"by_type": {nt: c.to_dict() for nt, c in codecs.items()}}


class TypeCodecs(dict):
    """``{ntype: RowCodec}`` as :meth:`bgl.store.StoreWriter.set_feat_codec` takes a codec: ``to_dict()`` the
    ``meta.json`` entry, ``dim`` 0 (a typed store's top-level ``feat_dim``)."""

    dim = 0

    def to_dict(self) -> dict:
        return by_type_entry(self)


def entry_codecs(entry, schema) -> dict:
    """``{ntype: RowCodec}`` of a by-type ``feat_codec`` entry (a graph server's INFO), each checked to be
    of its type's width in ``schema`` (a dict, ``GraphSchema.to_dict()``); ValueError naming the problem."""
    if not isinstance(entry.get("by_type"), Mapping):
        raise ValueError(f"a typed feat_codec must be {{\"by_type\": {{ntype: codec}}}}, got {entry!r}")
    dims = {t["name"]: t.get("feat_dim", 0) for t in (schema or {}).get("node_types", [])}
    codecs = {nt: RowCodec.from_dict(d) for nt, d in entry["by_type"].items()}
    for nt, c in codecs.items():
        if dims.get(nt) != c.dim:
            raise ValueError(f"feat_codec of node type {nt!r} is for {c.dim} columns, its feat_dim is {dims.get(nt)}")
    return codecs


def open_type_codecs(meta, schema, where, load) -> tuple[dict, dict]:
    """``({ntype: RowCodec}, {ntype: encoded rows memmap})`` of a typed store (empty without codecs);
    StoreFormatError naming ``where`` for an entry of the wrong kind, an unknown or featureless node
    type, a codec of another width, or (``feat_float32`` false) a featured type without encoded rows."""
    entry = meta.feat_codec
    if meta.schema is None or entry is None:
        return {}, {}
    if not is_by_type(entry) or not isinstance(entry["by_type"], Mapping):
        raise StoreFormatError(f"{where}: a typed store's feat_codec must be {{\"by_type\": {{ntype: codec}}}}, "
                               f"got {entry!r}")
    codecs, rows = {}, {}
    for nt, d in entry["by_type"].items():
        try:
            t = schema.node_type(nt)
            codec = RowCodec.from_dict(d)
        except (TypeError, ValueError) as e:
            raise StoreFormatError(f"{where}: feat_codec of node type {nt!r}: {e}") from None
        if codec.dim != t.feat_dim:
            raise StoreFormatError(f"{where}: feat_codec of node type {nt!r} is for {codec.dim} columns, its "
                                   f"feat_dim is {t.feat_dim}")
        codecs[nt] = codec
        rows[nt] = load(f"feat/{nt}.{codec.name}", (t.count, codec.row_width), codec.row_dtype)
    if not meta.feat_float32:
        bare = [t.name for t in schema.node_types if t.feat_dim > 0 and t.name not in codecs]
        if bare:
            raise StoreFormatError(f"{where}: node type {bare[0]!r} has features but neither feat/{bare[0]}.npy "
                                   "(feat_float32 is false) nor a codec")
    return codecs, rows


def type_codecs(store) -> dict:
    """``{ntype: RowCodec}`` of a typed store's encoded types (empty: none, or not a typed store)."""
    return dict(getattr(store, "type_feat_codec", None) or {})


def type_feat_rows(store, ntype: str):
    """The rows a typed store serves for ``ntype``: its encoded ones when the type has a codec, else its
    ``feat/<ntype>.npy`` (None: the type has no features)."""
    encoded = getattr(store, "type_feat_encoded", None) or {}
    return encoded[ntype] if ntype in encoded else store.type_feat.get(ntype)
