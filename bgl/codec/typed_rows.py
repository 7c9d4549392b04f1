"""Encoded feature rows of a typed store: one :class:`~bgl.codec.rows.RowCodec` per node type with features.

A typed store keeps one feature array per node type (``feat/<ntype>.npy``, its own width and dtype);
compressed, each encoded type also (or only) has ``feat/<ntype>.<codec>.npy``, encoded by a codec of
its own width and choice (``bgl compress --codec user=int8 --codec item=float16``; one ``--codec NAME``
encodes every type with features; the int8 block is shared).  A type without a codec keeps its float
rows, also when ``feat_float32`` is false (which then says: the encoded types hold only their encoded
rows).  ``meta.json`` says so as ``feat_codec = {"by_type": {ntype: codec entry}}`` in a version 3
store that also has a ``schema``, so a bgl that reads typed stores but not their codecs refuses it (a
version 3 store with a schema is neither of the kinds it knows) instead of serving no or wrong rows.
The loader fetches, caches and moves each type's rows encoded and decodes them per type once per
batch (:func:`bgl.codec.decode.decode_features`; a type without a codec is cast).
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
    type or a codec of another width (a featured type without a codec has its float rows:
    :func:`bgl.schema.open_typed_arrays`)."""
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
    return codecs, rows


def requested_codecs(store, codec) -> dict:
    """``{ntype: codec name}`` that ``bgl compress`` encodes: ``codec`` one name for every node type of
    ``store`` with features, or ``{ntype: name}`` naming some of them; ValueError naming an unknown node
    type (listing the graph's) or one without features."""
    featured = [t.name for t in store.schema.node_types if t.feat_dim > 0]
    if not featured:
        raise ValueError(f"{store.path}: has no features (no node type has any)")
    if not isinstance(codec, Mapping):
        return {nt: codec for nt in featured}
    if not codec:
        raise ValueError(f"{store.path}: no codec given (a name, or {{ntype: name}} for some of {featured})")
    for nt in codec:
        store.schema.ntype_id(nt)  # ValueError: unknown node type 'x'; the graph has [...]
        if nt not in featured:
            raise ValueError(f"{store.path}: node type {nt!r} has no features to encode (those with some: {featured})")
    return dict(codec)


def type_codecs(store) -> dict:
    """``{ntype: RowCodec}`` of a typed store's encoded types (empty: none, or not a typed store)."""
    return dict(getattr(store, "type_feat_codec", None) or {})


def type_feat_rows(store, ntype: str):
    """The rows a typed store serves for ``ntype``: its encoded ones when the type has a codec, else its
    ``feat/<ntype>.npy`` (None: the type has no features)."""
    encoded = getattr(store, "type_feat_encoded", None) or {}
    return encoded[ntype] if ntype in encoded else store.type_feat.get(ntype)
