"""Compressed feature rows: codecs (:mod:`bgl.codec.rows`) and the store writer (:mod:`bgl.codec.store_codec`)."""
from .rows import CODECS, RowCodec, parse_codec
from .store_codec import compress_store, encode_rows_into

__all__ = ["CODECS", "RowCodec", "parse_codec", "compress_store", "encode_rows_into"]
