"""Encode a store's feature rows: ``bgl compress STORE`` and ``bgl ingest --feat-codec``.

The encoded rows go to ``feat.<codec>.npy`` (:attr:`RowCodec.row_dtype` [num_nodes,
row_width]; int8's scales and offsets ride at the end of each row, so one gather reads a
whole row).  ``bgl compress`` writes them *beside* ``feat.npy`` by default (``--drop-float32``
removes it); ``bgl ingest --feat-codec`` writes them *instead of* it.  Either way the new
store is built in a locked work dir next to OUT (every other file hard-linked: the arrays are
never written in place, so the old and the new store may share them) and swapped in
atomically (:mod:`bgl.output_dir`); ``meta.json`` gets ``version`` 3, ``feat_codec`` and
``feat_float32``.

Cost: one pass over ``feat.npy`` in chunks of ``chunk_rows`` rows (``chunk_rows * dim *
(4 + 4 + row bytes)`` of RAM at most), never the whole array in memory; disk: the encoded
rows (``row_bytes`` per node), plus nothing for the linked files.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path
from typing import Mapping

import numpy as np

from ..output_dir import STORE, WorkDir, check_output, remove_stale, replace_output
from ..schema import CODEC_FORMAT_VERSION
from .rows import RowCodec

log = logging.getLogger(__name__)
CHUNK_ROWS = 1 << 16


def encode_rows_into(feat: np.ndarray, codec: RowCodec, out: np.ndarray, chunk_rows: int = CHUNK_ROWS) -> None:
    """``out[i] = codec.encode(feat[i])`` chunk by chunk (``feat`` may be a memmap larger than RAM).

    Raises the codec's TypeError / ValueError (naming the global row) on bad input.
    """
    if chunk_rows < 1:
        raise ValueError(f"chunk_rows must be >= 1, got {chunk_rows}")
    for start in range(0, feat.shape[0], chunk_rows):
        out[start:start + chunk_rows] = codec.encode(np.asarray(feat[start:start + chunk_rows]), first_row=start)


def _link_or_copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def compress_store(path, codec, *, block: int = 0, out=None, keep_float32: bool = True,
                   overwrite: bool = False, chunk_rows: int = CHUNK_ROWS):
    """Add encoded feature rows to the store at ``path`` (in place, or as a new store at ``out``).

    Parameters
    ----------
    codec : ``"float16"``, ``"bfloat16"`` or ``"int8"`` (:data:`bgl.codec.CODECS`); on a typed store also
        ``{ntype: name}``, a codec for each named node type
    block : int8 columns per scale/offset (0: one per row)
    out : write the result here instead of replacing ``path`` (``overwrite`` as for any store)
    keep_float32 : keep ``feat.npy`` beside the encoded rows (False: the store holds only them)

    Returns
    -------
    GraphStore
        the store, opened.

    Raises
    ------
    ValueError
        an unknown codec name (listing the known ones), a store without features or with
        features only in encoded form, NaN/inf in a row (naming it)
    TypeError
        the store's features are not floating point

    Notes
    -----
    A typed store gets one codec per node type (:mod:`bgl.codec.typed_rows`), each of its type's width:
    ``codec`` for every type with features, or ``{ntype: name}`` for the named ones (the others keep
    the codecs they had, or their float rows); ``block`` is shared.
    """
    from ..store import GraphStore

    store = GraphStore(path, validate="none")
    float32 = bool(keep_float32)
    if store.is_typed:
        jobs, skip, entry, float32 = _typed_jobs(store, codec, block, keep_float32)
    else:
        if isinstance(codec, Mapping):
            raise ValueError(f"{store.path}: a codec per node type ({dict(codec)}) needs a store with node types; "
                             "this one has none: give one codec name")
        if store.feat is None:
            why = ("holds only encoded rows (no feat.npy) to encode from" if store.feat_codec is not None
                   else "has no features")
            raise ValueError(f"{store.path}: {why}")
        if store.feat.dtype.kind != "f":
            raise TypeError(f"{store.path}: features are {store.feat.dtype}; a feature codec encodes floating point")
        rc = RowCodec(codec, store.feat_dim, block)
        jobs, entry = [(store.feat, f"feat.{rc.name}.npy", rc)], rc.to_dict()
        skip = {"feat.npy"} if not keep_float32 else set()
        if store.feat_codec is not None:
            skip.add(f"feat.{store.feat_codec.name}.npy")
    in_place = out is None
    target = check_output(store.path if in_place else out, STORE, True if in_place else overwrite,
                          inputs=() if in_place else (store.path,))
    remove_stale(target.absolute().parent)
    work = WorkDir(target, "tmp")
    try:
        skip.add("meta.json")
        for f in sorted(store.path.rglob("*")):
            rel = f.relative_to(store.path)
            if f.is_file() and str(rel) not in skip:
                _link_or_copy(f, work.path / rel)
        for feat, name, rc in jobs:
            (work.path / name).parent.mkdir(parents=True, exist_ok=True)  # feat/ of a typed store dropping float32
            enc = np.lib.format.open_memmap(work.path / name, mode="w+", dtype=rc.row_dtype,
                                            shape=(feat.shape[0], rc.row_width))
            encode_rows_into(feat, rc, enc, chunk_rows)
            enc.flush()
            del enc
        meta = {**store.meta.to_dict(), "feat_codec": entry, "feat_float32": float32,
                "version": CODEC_FORMAT_VERSION}
        (work.path / "meta.json").write_text(json.dumps(meta, indent=2))
        GraphStore(work.path)  # never swap in an inconsistent store
        replace_output(work, target, STORE, True if in_place else overwrite)
    except BaseException:
        work.remove()
        raise
    for feat, name, rc in jobs:
        log.info("%s: %s rows encoded as %s (%d B/row, was %d B/row)", target, name, rc.name, rc.row_bytes,
                 rc.dim * feat.dtype.itemsize)
    return GraphStore(target, validate="none")


def _typed_jobs(store, codec, block: int, keep_float32: bool) -> tuple[list, set, dict, bool]:
    """``(jobs, files to leave out, meta entry, feat_float32)`` of a typed store: one ``(rows, file, RowCodec)``
    job per node type ``codec`` names (:func:`~bgl.codec.typed_rows.requested_codecs`), the store's other
    codecs kept; ValueError / TypeError naming the store and the type.  ``feat_float32`` stays true only
    while every encoded type keeps its float rows (a store that had dropped them keeps that)."""
    from .typed_rows import by_type_entry, requested_codecs, type_codecs

    names = requested_codecs(store, codec)
    old, codecs, jobs, skip = type_codecs(store), {}, [], set()
    for nt, name in names.items():
        feat = store.type_feat.get(nt)
        if feat is None:
            raise ValueError(f"{store.path}: node type {nt!r} holds only encoded rows (no feat/{nt}.npy) to encode from")
        if feat.dtype.kind != "f":
            raise TypeError(f"{store.path}: features of node type {nt!r} are {feat.dtype}; a feature codec "
                            "encodes floating point")
        codecs[nt] = RowCodec(name, store.schema.node_type(nt).feat_dim, block)
        jobs.append((feat, f"feat/{nt}.{codecs[nt].name}.npy", codecs[nt]))
        if nt in old:
            skip.add(f"feat/{nt}.{old[nt].name}.npy")
    codecs = {t.name: codecs.get(t.name, old.get(t.name)) for t in store.schema.node_types
              if t.name in codecs or t.name in old}
    float32 = bool(keep_float32) and (store.meta.feat_float32 or set(old) <= set(names))
    if not float32:
        skip |= {f"feat/{nt}.npy" for nt in codecs}
    return jobs, skip, by_type_entry(codecs), float32


def write_encoded(out, codec, write, *, block: int = 0, overwrite: bool = False):
    """A store at ``out`` whose feature rows are only the encoded ones (``bgl ingest --feat-codec``; a
    typed store's ``{ntype: name}`` encodes the named types, the others keep their float rows).

    ``write(path)`` writes the float32 store (e.g. :func:`bgl.ingest`) into a locked scratch dir next to
    ``out``; its rows are then encoded into ``out`` by :func:`compress_store` (float32 dropped) and the
    scratch removed, so ``out`` never holds a half-done or float32 store.  The codec names and block are
    checked before anything is written.
    """
    for name in (codec.values() if isinstance(codec, Mapping) else [codec]):
        RowCodec(name, 1, block)  # an unknown name or a bad block fails before the ingest runs
    target = check_output(out, STORE, overwrite)
    remove_stale(target.absolute().parent)
    with WorkDir(target, "scratch") as scratch:
        plain = write(scratch.path / "store")
        from ..store import GraphStore

        written = GraphStore(scratch.path / "store", validate="none")
        if written.feat is None and not written.type_feat:
            raise ValueError(f"{target}: a feature codec ({codec}) needs features and the source has none "
                             f"(give --feat-dim N for synthetic ones)")
        return compress_store(getattr(plain, "path", scratch.path / "store"), codec, block=block, out=target,
                              keep_float32=False, overwrite=overwrite)
