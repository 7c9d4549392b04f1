"""Feature-row codecs: every decoded value within the codec's stated bound, for many shapes and ranges."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bgl.codec import CODECS, RowCodec

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def bound(name: str, x: np.ndarray, encoded: np.ndarray, codec: RowCodec) -> np.ndarray:
    """The per-value error bound the codec's docstring states, [n, dim]."""
    ax = np.abs(x.astype(np.float64))
    if name == "float16":
        return np.maximum(ax * 2.0 ** -11, 2.0 ** -25)
    if name == "bfloat16":
        return np.maximum(ax * 2.0 ** -8, 2.0 ** -133)
    n, d = x.shape
    params = np.ascontiguousarray(encoded[:, d:]).view(np.float32).reshape(n, codec.num_blocks, 2)
    b = codec.block or d
    cols = np.arange(d) // b
    scale = params[:, cols, 0].astype(np.float64)
    mag = np.zeros_like(ax)
    for k in range(codec.num_blocks):
        sl = slice(k * b, (k + 1) * b)
        mag[:, sl] = ax[:, sl].max(axis=1, keepdims=True)
    # the stored scale is within a float32 ulp of (max - min) / 255 (checked below)
    return scale / 2 + 2.0 ** -22 * mag


@st.composite
def rows(draw):
    n = draw(st.integers(1, 40))
    d = draw(st.integers(1, 70))
    exp = draw(st.integers(-30, 30))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    rng = np.random.default_rng(seed)
    kind = draw(st.sampled_from(["normal", "uniform", "sparse", "constant", "offset"]))
    if kind == "normal":
        x = rng.standard_normal((n, d)) * 2.0 ** exp
    elif kind == "uniform":
        x = rng.uniform(-1, 1, (n, d)) * rng.uniform(0, 2.0 ** exp, (n, 1))
    elif kind == "sparse":  # bag-of-words-like: mostly zeros
        x = (rng.random((n, d)) < 0.05) * rng.integers(1, 5, (n, d)) * 2.0 ** exp
    elif kind == "constant":
        x = np.full((n, d), rng.standard_normal() * 2.0 ** exp)
    else:  # a large offset with a small spread: the hard case for a shared scale
        x = 2.0 ** exp + rng.standard_normal((n, d)) * 2.0 ** (exp - 10)
    return x.astype(draw(st.sampled_from([np.float32, np.float64])))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(x=rows(), name=st.sampled_from(CODECS), block=st.integers(0, 9))
def test_decode_within_the_stated_bound(x, name, block):
    if name == "float16" and np.abs(x).max() > 65504:
        with pytest.raises(ValueError, match="feature row"):
            RowCodec(name, x.shape[1]).encode(x)
        return
    codec = RowCodec(name, x.shape[1], block if name == "int8" else 0)
    enc = codec.encode(x)
    assert enc.dtype == codec.row_dtype and enc.shape == (x.shape[0], codec.row_width)
    dec = codec.decode(torch.from_numpy(enc)).numpy()
    assert dec.dtype == np.float32 and dec.shape == x.shape
    err = np.abs(dec.astype(np.float64) - x.astype(np.float64))
    lim = bound(name, x, enc, codec)
    assert np.all(err <= lim), (name, float((err - lim).max()))
    if name == "int8":  # the stored scale is (max - min) / 255 up to float32 rounding
        n, d = x.shape
        b = codec.block or d
        params = np.ascontiguousarray(enc[:, d:]).view(np.float32).reshape(n, codec.num_blocks, 2)
        for k in range(codec.num_blocks):
            seg = x[:, k * b:(k + 1) * b].astype(np.float64)
            spread = (seg.max(axis=1) - seg.min(axis=1)) / 255
            slack = 4 * np.spacing(np.abs(seg).max(axis=1).astype(np.float32)).astype(np.float64)
            assert np.all(params[:, k, 0] <= spread + slack)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(x=rows(), name=st.sampled_from(CODECS), block=st.integers(0, 9))
def test_cpu_kernels_decode_exactly_as_the_torch_ops_a_gpu_runs(x, name, block):
    """The numba CPU decode and the torch decode (the GPU's) give the same float32 bits."""
    from bgl.codec.rows import _decode_on_cpu, _decode_torch

    if name == "float16":
        x = np.clip(x, -65504, 65504)
    codec = RowCodec(name, x.shape[1], block if name == "int8" else 0)
    enc = torch.from_numpy(codec.encode(x))
    got, want = _decode_on_cpu(codec, enc), _decode_torch(codec, enc, torch.float32)
    assert got.dtype == want.dtype == torch.float32
    assert torch.equal(got.view(torch.int32), want.view(torch.int32))


def test_every_float16_pattern_decodes_to_its_value():
    from bgl.codec.rows import _decode_on_cpu

    bits = torch.arange(65536, dtype=torch.int32).to(torch.int16).view(torch.float16).reshape(256, 256)
    got, want = _decode_on_cpu(RowCodec("float16", 256), bits), bits.to(torch.float32)
    nan = torch.isnan(want)
    assert torch.equal(torch.isnan(got), nan) and torch.equal(got[~nan], want[~nan])


def test_int8_keeps_a_rows_extremes_and_constant_rows_exactly():
    x = np.array([[0.0, 1.0, 0.5, -3.0], [7.25, 7.25, 7.25, 7.25]], np.float32)
    codec = RowCodec("int8", 4)
    dec = codec.decode(torch.from_numpy(codec.encode(x))).numpy()
    assert dec[1].tolist() == [7.25] * 4
    assert abs(dec[0, 3] - -3.0) < 1e-6 and abs(dec[0, 1] - 1.0) <= 4 / 255 / 2 + 1e-6


def test_row_bytes_are_a_half_and_about_a_quarter():
    assert RowCodec("float16", 128).row_bytes == RowCodec("bfloat16", 128).row_bytes == 256
    assert RowCodec("int8", 128).row_bytes == 136  # 128 codes + scale + offset
    assert RowCodec("int8", 128, block=32).row_bytes == 128 + 4 * 8


@pytest.mark.parametrize("name", CODECS)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_values_are_refused_naming_the_row(name, bad):
    x = np.ones((5, 3), np.float32)
    x[3, 1] = bad
    with pytest.raises(ValueError, match=r"feature row 13 has value"):
        RowCodec(name, 3).encode(x, first_row=10)


def test_values_the_format_cannot_hold_are_refused():
    with pytest.raises(ValueError, match="feature row 0"):
        RowCodec("float16", 2).encode(np.array([[1.0, 70000.0]], np.float32))
    with pytest.raises(ValueError, match="feature row 1"):
        RowCodec("bfloat16", 1).encode(np.array([[1.0], [3.4e38]], np.float32))


def test_bad_names_inputs_and_rows_are_refused():
    with pytest.raises(ValueError, match=r"unknown feature codec 'int4'; known codecs: \['float16', 'bfloat16', 'int8'\]"):
        RowCodec("int4", 3)
    with pytest.raises(TypeError, match="floating-point features, got dtype int64"):
        RowCodec("int8", 3).encode(np.ones((2, 3), np.int64))
    with pytest.raises(ValueError, match="only the int8 codec takes a column block"):
        RowCodec("float16", 3, block=2)
    with pytest.raises(ValueError, match="dim must be an int >= 1, got 0"):
        RowCodec("int8", 0)
    with pytest.raises(ValueError, match=r"int8 rows must be torch.uint8 \[n, 11\]"):
        RowCodec("int8", 3).decode(torch.zeros(2, 3))
    with pytest.raises(ValueError, match="needs name, dim"):
        RowCodec.from_dict({"name": "int8"})


@pytest.mark.parametrize("name", CODECS)
def test_decode_into_a_requested_dtype(name):
    x = np.random.default_rng(1).standard_normal((6, 5)).astype(np.float32)
    codec = RowCodec(name, 5)
    enc = torch.from_numpy(codec.encode(x))
    assert codec.decode(enc, torch.float16).dtype == torch.float16
    assert torch.equal(codec.decode(enc, torch.float64), codec.decode(enc).double())


@pytest.mark.parametrize("name", CODECS)
def test_float16_features_encode_as_their_float32_values(name):
    """A store's features may be float16 (a DGLGraph's ``.half()`` ndata): every codec takes them, and
    encodes them as it encodes the same values in float32 (numba kernels have no float16 arithmetic)."""
    x = np.random.default_rng(3).normal(size=(9, 12)).astype(np.float16)
    codec = RowCodec(name, 12, block=4 if name == "int8" else 0)
    assert np.array_equal(codec.encode(x), codec.encode(x.astype(np.float32)))
