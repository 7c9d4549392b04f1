"""Feature-row codecs: how a float feature row is stored, cached and sent in fewer bytes.

An *encoded row* is one fixed-width row of a plain dtype, so every part of bgl that moves
rows (the store's memmap, ``np.take``, the cache's slots, a FEATURES frame, a co-located
read, a stage queue) moves encoded rows exactly as it moves float32 ones, and only the
transfer stage, once per batch, turns them back into floats (:meth:`RowCodec.decode`, torch
ops, on the batch's device).

=========  ==================  =======================  =============================================
codec      row dtype           bytes per row (dim d)    guaranteed error ``|x - x'|`` per value
=========  ==================  =======================  =============================================
float16    float16 [d]         2 d                      ``<= max(|x| * 2**-11, 2**-25)`` (round to nearest);
                                                        ``|x| > 65504`` is refused at encode
bfloat16   int16 [d]           2 d                      ``<= max(|x| * 2**-8, 2**-133)`` (round to nearest even);
           (bfloat16 bits)                              values that round past 3.3895e38 are refused
int8       uint8 [d + 8 b]     d + 8 b                  ``<= scale / 2 + 2**-22 * max(|min|, |max|)``, where
           (codes, then b x    (b = column blocks:      ``scale ~= (max - min) / 255`` of the value's row (or
           float32 scale,      1 per row by default)    column block): the first term is the rounding to one
           float32 offset)                              of 256 levels, the second float32 rounding of the decode
=========  ==================  =======================  =============================================

bfloat16 bits are kept as int16 because NumPy has no bfloat16 and torch 2.2 no uint16; int8
codes are unsigned bytes ``x' = offset + scale * code``, ``offset`` the row's minimum (rounded
down to float32) and ``scale`` the smallest float32 with ``offset + 255 * scale >= max``.
Per-column-block int8 (``block=B``) keeps one scale and offset per ``B`` columns, for rows
whose columns live on different scales (8 bytes per block).

Encoding refuses NaN and infinite values (naming the row), non-floating input and unknown
codec names (listing the known ones).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Mapping

import numpy as np

# torch and the numba kernels (1.5 s of imports) load where rows are encoded or decoded, not
# here: opening a compressed store (``bgl info``, a graph server's INFO) only reads the codec's
# description, and took 1.9 s instead of 0.2 s when this module imported them.

CODECS = ("float16", "bfloat16", "int8")
FLOAT16_MAX = float(np.finfo(np.float16).max)


@dataclass(frozen=True)
class RowCodec:
    """One codec for rows of ``dim`` values (``block``: int8 columns per scale/offset; 0 = the whole row).

    Parameters
    ----------
    name : one of :data:`CODECS`
    dim : feature columns of a decoded row (>= 1)
    block : int8 only: columns sharing one scale and offset, 0 (default) for one per row
    """

    name: str
    dim: int
    block: int = 0

    def __post_init__(self):
        if self.name not in CODECS:
            raise ValueError(f"unknown feature codec {self.name!r}; known codecs: {list(CODECS)}")
        if isinstance(self.dim, bool) or not isinstance(self.dim, int) or self.dim < 1:
            raise ValueError(f"codec dim must be an int >= 1, got {self.dim!r}")
        if isinstance(self.block, bool) or not isinstance(self.block, int) or self.block < 0:
            raise ValueError(f"codec block must be an int >= 0 (0 = one scale per row), got {self.block!r}")
        if self.block and self.name != "int8":
            raise ValueError(f"only the int8 codec takes a column block, got block={self.block} for {self.name!r}")

    # ------------------------------------------------------------ layout
    @property
    def num_blocks(self) -> int:
        """int8: scale/offset pairs per row (1 without a column block); 0 for the float codecs."""
        if self.name != "int8":
            return 0
        b = self.block or self.dim
        return -(-self.dim // b)

    @property
    def row_dtype(self) -> np.dtype:
        """dtype of an encoded row (what the store, the cache and the wire hold)."""
        return np.dtype({"float16": np.float16, "bfloat16": np.int16, "int8": np.uint8}[self.name])

    @property
    def row_width(self) -> int:
        """Columns of an encoded row: ``dim``, plus 8 bytes per block for int8."""
        return self.dim + 8 * self.num_blocks

    @property
    def row_bytes(self) -> int:
        """Bytes of one encoded row."""
        return self.row_width * self.row_dtype.itemsize

    @property
    def torch_row_dtype(self) -> torch.dtype:
        import torch

        return torch.from_numpy(np.empty(0, self.row_dtype)).dtype

    def to_dict(self) -> dict[str, Any]:
        """The ``meta.json`` / INFO entry."""
        return asdict(self)

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> "RowCodec":
        """Parse a ``to_dict()`` entry; ValueError naming a bad one."""
        if not isinstance(d, Mapping) or set(d) - {"name", "dim", "block"} or "name" not in d or "dim" not in d:
            raise ValueError(f"a feature codec entry needs name, dim (and block), got {d!r}")
        return RowCodec(d["name"], d["dim"], d.get("block", 0))

    # ------------------------------------------------------------ encode
    def encode(self, x: np.ndarray, first_row: int = 0) -> np.ndarray:
        """Encoded rows [n, row_width] of float ``x`` [n, dim] (an in-memory chunk).

        ``first_row`` is the chunk's first row in the whole array, for the error message.
        Raises TypeError for non-floating ``x``, ValueError for a wrong width or a value the
        codec cannot hold (NaN, infinite, out of range), naming the row.
        """
        x = np.asarray(x)
        if x.dtype.kind != "f":
            raise TypeError(f"feature codec {self.name!r} encodes floating-point features, got dtype {x.dtype}")
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise ValueError(f"codec for {self.dim} columns got rows of shape {x.shape}")
        from . import _kernels as K

        out = np.empty((x.shape[0], self.row_width), self.row_dtype)
        if self.name == "float16":
            bad = ~np.isfinite(x).all(axis=1) | (np.abs(x) > FLOAT16_MAX).any(axis=1)
            row = int(np.argmax(bad)) if bad.any() else -1
            if row < 0:
                out[:] = x.astype(np.float16)
        elif self.name == "bfloat16":
            row = K.bf16_encode(np.ascontiguousarray(x, dtype=np.float32), out)
        else:  # numba has no float16 arithmetic: narrower floats are widened (exactly) to float32 first
            wide = x.dtype if x.dtype.itemsize >= 4 else np.float32
            row = K.int8_encode(np.ascontiguousarray(x, dtype=wide), self.block or self.dim, out)
        if row >= 0:
            values = x[row]
            bad = values[~np.isfinite(values)]
            # float(): a numpy scalar's repr names its type under numpy 2 ("np.float32(nan)")
            what = (f"value {float(bad[0])}" if bad.size else
                    f"values up to {float(np.abs(values).max())}, outside what {self.name} holds")
            raise ValueError(f"feature row {first_row + row} has {what}; the {self.name} codec encodes "
                             f"finite values only")
        return out

    # ------------------------------------------------------------ decode
    def decode(self, rows: torch.Tensor, dtype: torch.dtype | None = None) -> torch.Tensor:
        """Float rows [n, dim] (``dtype``, default float32) of encoded ``rows`` [n, row_width], on
        ``rows``' device (torch ops on a GPU, numba kernels on the CPU: :func:`_decode_on_cpu`).

        Raises ValueError when ``rows`` is not a batch of this codec's encoded rows.
        """
        import torch

        dtype = torch.float32 if dtype is None else dtype
        if rows.dtype != self.torch_row_dtype or rows.dim() != 2 or rows.shape[1] != self.row_width:
            raise ValueError(f"{self.name} rows must be {self.torch_row_dtype} [n, {self.row_width}], got "
                             f"{rows.dtype} {list(rows.shape)}")
        if rows.device.type == "cpu":
            return _decode_on_cpu(self, rows).to(dtype)
        return _decode_torch(self, rows, dtype)


def _decode_torch(codec: RowCodec, rows: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """:meth:`RowCodec.decode` by torch ops, on any device (what a GPU batch takes)."""
    import torch

    if codec.name == "float16":
        return rows.to(dtype)
    if codec.name == "bfloat16":
        return rows.view(torch.bfloat16).to(dtype)
    n, d = rows.shape[0], codec.dim
    # a fresh copy: the scales sit at byte offset d, which a float32 view needs aligned
    tail = rows[:, d:].clone(memory_format=torch.contiguous_format)
    params = tail.view(torch.float32).view(n, codec.num_blocks, 2)
    scale, offset = params[:, :, 0], params[:, :, 1]
    if codec.num_blocks > 1:
        cols = torch.arange(d, device=rows.device) // codec.block
        scale, offset = scale[:, cols], offset[:, cols]
    out = rows[:, :d].to(torch.float32)  # the one allocation; scale and add in place
    return out.mul_(scale).add_(offset).to(dtype)


_F16_TABLE: list = []  # float32 [65536]: the value of every float16 bit pattern (256 KiB, built once)


def _decode_on_cpu(codec: RowCodec, rows: torch.Tensor) -> torch.Tensor:
    """float32 [n, dim] of encoded CPU ``rows`` by the numba kernels: the same values as the torch
    ops (exact for float16/bfloat16; int8's multiply then add in float32), 5-8x faster on CPU."""
    import torch

    from . import _kernels as K

    src = np.ascontiguousarray(rows.numpy())
    out = np.empty((src.shape[0], codec.dim), np.float32)
    if codec.name == "float16":
        if not _F16_TABLE:
            _F16_TABLE.append(torch.arange(65536, dtype=torch.int32).to(torch.int16).view(torch.float16)
                              .to(torch.float32).numpy())
        K.f16_decode(src.view(np.uint16), _F16_TABLE[0], out)
    elif codec.name == "bfloat16":
        K.bf16_decode(src, out)
    else:  # the scales and offsets, copied out of the rows' unaligned tails (8 B per block and row)
        params = np.ascontiguousarray(src[:, codec.dim:]).view(np.float32).reshape(src.shape[0], codec.num_blocks, 2)
        if codec.num_blocks == 1:
            K.int8_decode_rows(src, codec.dim, params, out)
        else:
            K.int8_decode_blocks(src, codec.dim, codec.block, params, out)
    return torch.from_numpy(out)


def parse_codec(name: str, dim: int, block: int = 0) -> RowCodec:
    """:class:`RowCodec` from a user's codec name (``--feat-codec``); ValueError listing the known ones."""
    return RowCodec(str(name), int(dim), int(block))
