"""What a graph server's INFO says of its encoded rows, and the buffer a client gathers them into.

A server of a store with a feature codec sends its rows encoded (FEATURES replies carry
``row_dtype [n, row_width]`` frames, int8's scales and offsets inside each row, checked for
size like every frame, never pickled) and names the codec in INFO's ``feat_codec``.
"""
from __future__ import annotations

import numpy as np

from ..errors import ProtocolError
from .rows import RowCodec


def codec_of_info(address: str, info: dict):
    """The :class:`RowCodec` an INFO reply names (a typed part's ``{ntype: RowCodec}``; None: float rows);
    ProtocolError for one this bgl cannot decode (an unknown codec name, a bad entry)."""
    entry = info.get("feat_codec")
    if entry is None:
        return None
    from .typed_rows import entry_codecs, is_by_type

    try:
        if is_by_type(entry):  # a typed part's {ntype: RowCodec} (bgl/codec/typed_rows.py)
            return entry_codecs(entry, info.get("schema"))
        codec = RowCodec.from_dict(entry)
    except (TypeError, ValueError) as e:
        raise ProtocolError(f"server {address} sends feature rows this bgl cannot decode: {e}") from None
    if codec.dim != info.get("feat_dim"):
        raise ProtocolError(f"server {address}: feat_codec is for {codec.dim} columns, feat_dim is "
                            f"{info.get('feat_dim')}")
    return codec


def row_buffer(n: int, dim: int, dtype, codec, addresses) -> np.ndarray:
    """An empty [n, dim] ``dtype`` array for float rows, or [n, row_width] ``row_dtype`` for encoded ones;
    ValueError naming the servers at ``addresses`` when they have no features (``dim`` 0)."""
    if dim == 0:
        raise ValueError(f"the servers {addresses} have no features")
    if codec is None:
        return np.empty((n, dim), np.dtype(dtype))
    return np.empty((n, codec.row_width), codec.row_dtype)
