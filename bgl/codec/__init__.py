"""Compressed feature rows: codecs (:mod:`bgl.codec.rows`) and the store writer (:mod:`bgl.codec.store_codec`).

Module by module:

| file | role |
|---|---|
| `bgl/codec/rows.py` | `RowCodec(name, dim, block)`: layout (`row_dtype`, `row_width`, `row_bytes`), `encode` (a chunk, NumPy / numba), `decode` (torch ops on a GPU; numba kernels on the CPU, the same float32 bits) |
| `bgl/codec/_kernels.py` | numba kernels: bfloat16 rounding, int8 per-row/per-block scale, offset and codes |
| `bgl/codec/store_codec.py` | `compress_store` (`bgl compress`, `bgl/commands/compress.py`) and `write_encoded` (`bgl ingest --feat-codec`): one chunked pass over `feat.npy` (64 Ki rows a chunk), never the whole array in RAM |
| `bgl/codec/wire.py` | the client's side: the codec an INFO reply names (refusing one it cannot decode) and the buffer encoded rows are gathered into |
| `bgl/codec/decode.py` | the transfer stage's side: decode a batch's rows into `feat_dtype` (float32 by default), a typed batch's per node type |
| `bgl/codec/typed_rows.py` | a typed store's codecs, one per featured node type: the `meta.json` entry, opening `feat/<ntype>.<codec>.npy`, the rows a type serves |
"""
from .rows import CODECS, RowCodec, parse_codec
from .store_codec import compress_store, encode_rows_into

__all__ = ["CODECS", "RowCodec", "parse_codec", "compress_store", "encode_rows_into"]
