"""``.ci/warm_kernels.py``, ``make test``'s warm-up: the suite's kernel variants listed in
``.ci/suite-kernels.txt`` are compiled into numba's cache before a lane runs, so the lane loads them.

Checked: every listed line names a kernel that exists and types the parser reads (a renamed kernel
fails here, not silently in CI's warm-up); numba's own text of a signature parses back to the same
types; a warmed cache lets a new process load the variant instead of compiling it; ``--record``
keeps bgl's variants from a compile log and leaves out what it cannot type."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

WARM = Path(__file__).resolve().parents[1] / ".ci" / "warm_kernels.py"


@pytest.fixture(scope="module")
def warm():
    spec = importlib.util.spec_from_file_location("warm_kernels", WARM)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_listed_variant_names_a_kernel_and_parses(warm):
    rows = warm.read_list()
    assert len(rows) > 100
    for kernel, signature in rows:
        assert callable(getattr(warm.kernel_of(kernel), "compile", None)), kernel
        assert len(warm.parse_signature(signature)) == len(warm.split_types(signature)) > 0, (kernel, signature)


def test_numbas_text_of_a_signature_parses_back_to_its_types(warm):
    from numba.core import types

    sig = (types.Array(types.int64, 1, "C", readonly=True), types.Array(types.float32, 2, "A"),
           types.Array(types.uint8, 3, "F", aligned=False), types.int32, types.boolean, types.float64)
    assert warm.parse_signature(str(sig)) == sig
    assert warm.parse_signature(str((types.uint16,))) == (types.uint16,)
    with pytest.raises(ValueError, match="UniTuple"):
        warm.parse_signature(str((types.UniTuple(types.int64, 2),)))
    with pytest.raises(ValueError, match="parenthesised"):
        warm.parse_signature("int64, int64")


def test_a_warmed_cache_is_loaded_by_the_next_process(tmp_path):
    listed = tmp_path / "kernels.txt"
    listed.write_text("# one small kernel\n"
                      "bgl.cache._kernels.first_bad_id\t(Array(int64, 1, 'C', False, aligned=True), int64)\n")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, str(WARM), "--list", str(listed), "--jobs", "2"], env=env,
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "compiled 1 kernel variants" in done.stdout and "1 processes" in done.stdout, done.stdout
    log = tmp_path / "compiles.jsonl"
    call = ("import numpy as np\nfrom bgl.cache._kernels import first_bad_id\n"
            "print(first_bad_id(np.array([3, -2, 9], dtype=np.int64), 5))\n")
    done = subprocess.run([sys.executable, "-c", call], env={**env, "BGL_COMPILE_LOG": str(log)},
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "(True, -2)"
    outcomes = [json.loads(line)["outcome"] for line in log.read_text().splitlines()]
    assert outcomes == ["loaded"], outcomes


def test_record_keeps_bgls_typed_variants_from_compile_logs(warm, tmp_path):
    def line(kernel, signature):
        return json.dumps({"pid": 1, "process": "pytest", "kernel": kernel, "signature": signature,
                           "outcome": "compiled", "wait_s": 0.0, "own_s": 0.1})
    log = tmp_path / "compiles.jsonl"
    log.write_text("\n".join([
        line("bgl.cache._kernels.first_bad_id", "(Array(int64, 1, 'C', False, aligned=True), int64)"),
        line("bgl.cache._kernels.first_bad_id", "(Array(int64, 1, 'C', False, aligned=True), int64)"),
        line("bgl.sampler._kernels.sample_positions_par", "(Literal[int](0), int64)"),
        line("someone_else.kernel", "(int64,)")]) + "\n")
    listed = tmp_path / "kernels.txt"
    assert warm.record([log], listed) == 0
    assert warm.read_list(listed) == [("bgl.cache._kernels.first_bad_id",
                                       "(Array(int64, 1, 'C', False, aligned=True), int64)")]
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".tmp"] == []
