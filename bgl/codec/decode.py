"""The transfer stage's side of the codecs: decode a batch's encoded rows where the batch now is."""
from __future__ import annotations

from typing import Optional

import torch


def check_feat_dtype(dtype) -> Optional[torch.dtype]:
    """``dtype`` if it is None or a torch floating dtype (``DataLoader(feat_dtype=)``); TypeError naming it."""
    if dtype is not None and not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        raise TypeError(f"feat_dtype must be a torch floating dtype (e.g. torch.float16), got {dtype!r}")
    return dtype


def decode_features(srcdata: dict, keys, codec, dtype: Optional[torch.dtype]) -> dict:
    """``srcdata`` with the rows under ``keys`` decoded (``codec``: a :class:`~bgl.codec.RowCodec`, or a
    typed graph's ``{ntype: RowCodec}`` for its ``{ntype: rows}``, types without one cast) or, without a
    codec, cast into ``dtype`` (float32 by default), in place, on the rows' device; returns it.

    One decode per batch: the rows crossed every stage (and the host-to-device copy) encoded.
    """
    dtype = dtype or torch.float32
    for key in keys:
        rows = srcdata.get(key)
        if isinstance(rows, dict):  # a typed graph's {ntype: rows}: each type's own codec (bgl/codec/typed_rows.py)
            by_type = codec if isinstance(codec, dict) else {}
            srcdata[key] = {t: by_type[t].decode(r, dtype) if t in by_type else r.to(dtype) for t, r in rows.items()}
        elif rows is not None:
            srcdata[key] = codec.decode(rows, dtype) if codec is not None else rows.to(dtype)
    return srcdata
