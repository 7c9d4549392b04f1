"""Stores with encoded feature rows: ``bgl compress``, ``bgl ingest --feat-codec``, format version 3, bad input."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from bgl.cli import main
from bgl.codec import compress_store
from bgl.errors import StoreFormatError
from bgl.store import GraphStore, write_store


def tiny_store(path, feat):
    n = feat.shape[0]
    return write_store(path, np.arange(n + 1), np.arange(n) % n, feat=feat, label=np.arange(n) % 3,
                       splits={"train": np.arange(n)})


CORA = Path(__file__).resolve().parents[3] / "data" / "cora.npz"


@pytest.mark.parametrize("codec, block, row", [("float16", 0, (np.float16, 10)), ("bfloat16", 0, (np.int16, 10)),
                                               ("int8", 0, (np.uint8, 18)), ("int8", 4, (np.uint8, 34))])
def test_compress_adds_the_encoded_rows_beside_float32_in_chunks(tmp_path, codec, block, row):
    feat = np.random.default_rng(0).standard_normal((70, 10)).astype(np.float32)
    tiny_store(tmp_path / "s", feat)
    store = compress_store(tmp_path / "s", codec, block=block, chunk_rows=16)  # 5 chunks, the last short
    assert store.meta.version == 3 and store.meta.feat_codec == {"name": codec, "dim": 10, "block": block}
    assert np.array_equal(store.feat, feat)  # kept beside
    assert store.feat_rows.dtype == row[0] and store.feat_rows.shape == (70, row[1])
    assert np.array_equal(store.feat_rows, store.feat_codec.encode(feat))  # chunking changes nothing
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s"]  # no work dir left behind


def test_drop_float32_and_recompress_refused(tmp_path):
    tiny_store(tmp_path / "s", np.ones((4, 3), np.float32))
    store = compress_store(tmp_path / "s", "float16", keep_float32=False)
    assert store.feat is None and not (tmp_path / "s" / "feat.npy").exists()
    assert store.feat_dtype_name == "float32" and store.feat_rows.dtype == np.float16
    with pytest.raises(ValueError, match="holds only encoded rows"):
        compress_store(tmp_path / "s", "int8")


def test_bad_inputs_are_refused_before_anything_is_written(tmp_path):
    bad = np.ones((40, 3), np.float32)
    bad[27, 2] = np.nan
    tiny_store(tmp_path / "nan", bad)
    with pytest.raises(ValueError, match="feature row 27 has value nan"):
        compress_store(tmp_path / "nan", "int8", chunk_rows=8)
    assert GraphStore(tmp_path / "nan").meta.version == 1  # the store is as it was
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nan"]
    tiny_store(tmp_path / "ints", np.ones((4, 3), np.int64))
    with pytest.raises(TypeError, match="features are int64; a feature codec encodes floating point"):
        compress_store(tmp_path / "ints", "int8")
    with pytest.raises(ValueError, match=r"unknown feature codec 'fp8'; known codecs: \['float16', 'bfloat16', 'int8'\]"):
        compress_store(tmp_path / "nan", "fp8")


def _edit_meta(path, **changes):
    meta = json.loads((path / "meta.json").read_text())
    meta.update(changes)
    (path / "meta.json").write_text(json.dumps(meta))


@pytest.mark.parametrize("changes, match", [
    ({"version": 4}, r"unsupported store version 4; this bgl reads versions \[1, 2, 3\]"),
    ({"feat_codec": {"name": "int4", "dim": 3, "block": 0}}, "feat_codec: unknown feature codec 'int4'"),
    ({"feat_codec": {"name": "int8", "dim": 5, "block": 0}}, "feat_codec is for 5 columns, feat_dim is 3"),
    ({"version": 1}, "a version 3 store needs a feat_codec, and only it may have one"),
    ({"feat_codec": None}, "a version 3 store needs a feat_codec"),
])
def test_a_store_whose_codec_this_bgl_cannot_read_is_refused(tmp_path, changes, match):
    """Also the path by which a bgl that reads only versions 1 and 2 refuses every codec store."""
    tiny_store(tmp_path / "s", np.ones((4, 3), np.float32))
    compress_store(tmp_path / "s", "int8")
    _edit_meta(tmp_path / "s", **changes)
    with pytest.raises(StoreFormatError, match=match):
        GraphStore(tmp_path / "s")


def test_cli_compress_and_ingest_with_a_feature_codec(tmp_path, cora_store, capsys):
    assert main(["compress", str(cora_store.path), "--codec", "int8", "--out", str(tmp_path / "c"),
                 "--drop-float32"]) == 0
    assert main(["ingest", str(CORA), str(tmp_path / "i"), "--feat-codec", "int8", "--no-progress"]) == 0
    a, b = GraphStore(tmp_path / "c"), GraphStore(tmp_path / "i")
    assert a.feat is None and b.feat is None and b.feat_codec.name == "int8"
    assert np.array_equal(a.feat_rows, b.feat_rows)
    x = torch.from_numpy(np.array(cora_store.feat))
    assert torch.allclose(b.feat_codec.decode(torch.from_numpy(np.array(b.feat_rows))), x, atol=1 / 255)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c", "i"]  # ingest's scratch store is gone
    capsys.readouterr()
    assert main(["compress", str(tmp_path / "i"), "--codec", "int4"]) == 2
    assert "invalid choice: 'int4'" in capsys.readouterr().err
    assert main(["compress", str(tmp_path / "i"), "--codec", "int8"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bgl compress: error:" in err and "holds only encoded rows" in err


def test_ingest_with_a_codec_refuses_a_source_without_features(tmp_path, capsys):
    edges = tmp_path / "g.txt"
    edges.write_text("0 1\n1 2\n2 0\n")
    assert main(["ingest", str(edges), str(tmp_path / "out"), "--feat-codec", "int8", "--no-progress"]) == 1
    assert "needs features and the source has none (give --feat-dim N" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.txt"]  # no store, no scratch left


def test_opening_a_compressed_store_imports_neither_torch_nor_numba(tmp_path):
    """``bgl info`` on a compressed store took 1.9 s against 0.2 s on a plain one (issue #44): reading
    the codec's description imported torch and the numba kernels.  Opening it (and summarising it, as
    ``bgl info`` does) now loads only what a plain store loads; the rows still decode."""
    import subprocess
    import sys

    rng = np.random.default_rng(0)
    tiny_store(tmp_path / "s", rng.random((20, 8), np.float32))
    compress_store(tmp_path / "s", "int8", out=tmp_path / "c")
    code = ("import sys\n"
            "from bgl.commands.info import store_summary\n"
            "from bgl.store import GraphStore\n"
            f"s = GraphStore({str(tmp_path / 'c')!r})\n"
            "assert store_summary(s)['feat_codec']['name'] == 'int8'\n"
            "print(sorted(m for m in ('torch', 'numba') if m in sys.modules))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "[]", r.stdout + r.stderr
    store = GraphStore(tmp_path / "c")
    rows = store.feat_codec.decode(torch.from_numpy(np.array(store.feat_encoded)))
    assert rows.dtype == torch.float32 and rows.shape == (20, 8)
