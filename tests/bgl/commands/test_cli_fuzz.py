"""Seeded fuzz of the ``bgl`` command line with bad inputs (issue #23).

Every case builds one bad input (missing, empty, binary junk, truncated npz, wrong extension,
a directory where a file goes, an unwritable OUT, a bad number, a damaged partition dir or store,
a bad ``--part``) for ``ingest``, ``partition``, ``serve`` or ``info`` and checks that the command
exits non-zero with exactly one stderr line ``bgl <cmd>: error: ...``, no traceback, and leaves
the directory as it found it (no output, no tmp/scratch dir, nothing removed).  The bulk runs
in-process through ``bgl.cli.main``; a sample goes through real ``python -m bgl`` processes.
"""
from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bgl.cli import main

SEED = 2323
NUM_CASES = 300
NUM_SUBPROCESS_CASES = 4


def snapshot(root: Path) -> dict[str, str]:
    """Every path under ``root`` (hidden ones included) with a digest of its bytes."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            out[os.path.relpath(os.path.join(dirpath, d), root)] = "dir"
        for f in filenames:
            p = os.path.join(dirpath, f)
            out[os.path.relpath(p, root)] = hashlib.sha1(Path(p).read_bytes()).hexdigest()
    return out


# ------------------------------------------------------------------ the inputs
@pytest.fixture(scope="module")
def good(tmp_path_factory):
    """A good store and partition to damage copies of (never handed to a command themselves)."""
    from bgl.partition.format import write_partition
    from bgl.store import write_store

    root = tmp_path_factory.mktemp("good")
    rng = np.random.default_rng(0)
    n = 40
    dst = np.sort(rng.integers(0, n, 200))
    indptr = np.searchsorted(dst, np.arange(n + 1)).astype(np.int64)
    store = write_store(root / "store", indptr, rng.integers(0, n, 200), feat=rng.random((n, 3), np.float32),
                        label=rng.integers(0, 3, n), splits={"train": np.arange(0, 20), "val": np.arange(20, 30)})
    write_partition(store, np.arange(n) % 2, 2, root / "parts", method="random")
    from bgl.data import default_dataset_path

    return {"store": root / "store", "parts": root / "parts", "npz": Path(default_dataset_path())}


def bad_file(rng: random.Random, d: Path, good) -> Path:
    """A file argument that no reader accepts."""
    kind = rng.choice(["missing", "empty_txt", "junk_bin", "truncated_npz", "text_npz", "npy_as_npz",
                       "wrong_ext", "dir_as_file", "junk_gz", "bad_line", "negative_id", "one_column",
                       "huge_id", "empty_npz_zip", "npz_wrong_keys", "missing_planetoid"])
    if kind == "missing":
        return d / f"nope-{rng.randrange(10**6)}.txt"
    if kind == "empty_txt":
        (d / "empty.txt").write_bytes(b"")
        return d / "empty.txt"
    if kind == "junk_bin":
        p = d / rng.choice(["junk.txt", "junk.npz", "junk.csv", "junk.el"])
        p.write_bytes(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400))))
        return p
    if kind == "truncated_npz":
        data = good["npz"].read_bytes()
        p = d / "trunc.npz"
        p.write_bytes(data[: rng.randrange(1, len(data) - 1)])
        return p
    if kind == "text_npz":
        p = d / "text.npz"
        p.write_text("0 1\n1 2\n")
        return p
    if kind == "npy_as_npz":
        p = d / "arr.npz"
        with open(p, "wb") as f:
            np.save(f, np.arange(5))
        return p
    if kind == "wrong_ext":
        p = d / rng.choice(["g.dat", "g.bin", "g", "g.json"])
        p.write_text("0 1\n1 2\n")
        return p
    if kind == "dir_as_file":
        p = d / rng.choice(["adir.npz", "adir.txt", "adir"])
        p.mkdir()
        return p
    if kind == "junk_gz":
        p = d / "g.txt.gz"
        p.write_bytes(b"\x1f\x8b" + bytes(rng.randrange(256) for _ in range(50)))
        return p
    if kind in ("bad_line", "negative_id", "one_column", "huge_id"):
        bad = {"bad_line": "1 two", "negative_id": "-4 1", "one_column": "7",
               "huge_id": f"0 {rng.randrange(10**11, 10**13)}"}[kind]
        p = d / "edges.txt"
        p.write_text("0 1\n1 2\n" + bad + "\n2 0\n")
        return p
    if kind == "empty_npz_zip":
        p = d / "empty.npz"
        np.savez(p)
        return p
    if kind == "npz_wrong_keys":
        p = d / "keys.npz"
        np.savez(p, a=np.arange(3), b=np.zeros(2))
        return p
    return d / "ind.nothing"  # a Planetoid prefix without files


def not_a_bgl_dir(kind: str, d: Path, name: str, other_kind: Path) -> Path | None:
    """The bad directory arguments stores and partitions share, or None for ``kind`` not one of them."""
    if kind == "missing":
        return d / f"no-{name}"
    if kind == "file":
        (d / f"{name}-file").write_text(f"not a {name}")
        return d / f"{name}-file"
    if kind == "empty_dir":
        (d / f"empty-{name}").mkdir()
        return d / f"empty-{name}"
    if kind == "other_kind":
        shutil.copytree(other_kind, d / f"{name}-other-kind")
        return d / f"{name}-other-kind"
    return None


def copy_with_metadata_damage(rng: random.Random, kind: str, src: Path, dst: Path, meta_file: str) -> dict | None:
    """Copy ``src`` to ``dst``; for the metadata kinds both share, damage ``meta_file`` and return
    None, else return the parsed metadata for the caller's own damage."""
    shutil.copytree(src, dst)
    meta = dst / meta_file
    if kind == "no_meta":
        meta.unlink()
    elif kind == "junk_meta":
        meta.write_bytes(bytes(rng.randrange(256) for _ in range(30)))
    elif kind == "meta_list":
        meta.write_text("[1, 2, 3]")
    else:
        return json.loads(meta.read_text())
    return None


STORE_DAMAGE = ["no_meta", "junk_meta", "meta_list", "wrong_format", "bad_version", "negative_nodes",
                "truncated_indices", "junk_indptr", "missing_feat", "bad_dtype"]
PARTITION_DAMAGE = ["no_meta", "junk_meta", "meta_list", "wrong_format", "missing_part", "gap_ranges",
                    "truncated_orig_ids", "wrong_num_parts", "damaged_part"]


def damaged(rng: random.Random, d: Path, good, which: str) -> Path:
    """A ``which`` ("store" or "parts") directory argument that is not a valid one of its kind."""
    own = STORE_DAMAGE if which == "store" else PARTITION_DAMAGE
    kind = rng.choice(["missing", "file", "empty_dir", "other_kind", *own])
    wrong = not_a_bgl_dir(kind, d, which, good["parts" if which == "store" else "store"])
    if wrong is not None:
        return wrong
    path = d / which
    meta = copy_with_metadata_damage(rng, kind, good[which], path, "meta.json" if which == "store" else
                                     "partition.json")
    if meta is not None:
        (damage_store if which == "store" else damage_partition)(rng, kind, path, meta)
    return path


def damage_store(rng: random.Random, kind: str, s: Path, meta: dict) -> None:
    if kind == "truncated_indices":
        data = (s / "indices.npy").read_bytes()
        (s / "indices.npy").write_bytes(data[: rng.randrange(0, len(data) - 1)])
    elif kind == "junk_indptr":
        (s / "indptr.npy").write_bytes(b"\x93NUMPY junk" * rng.randrange(1, 5))
    elif kind == "missing_feat":
        (s / "feat.npy").unlink()
    else:
        change = {"wrong_format": {"format": "dgl"}, "bad_version": {"version": 99},
                  "negative_nodes": {"num_nodes": -5}, "bad_dtype": {"id_dtype": "complex-ish"}}[kind]
        (s / "meta.json").write_text(json.dumps({**meta, **change}))


def damage_partition(rng: random.Random, kind: str, p: Path, meta: dict) -> None:
    if kind == "wrong_format":
        (p / "partition.json").write_text(json.dumps({**meta, "format": "distdgl"}))
    elif kind == "missing_part":
        shutil.rmtree(p / "part-1")
    elif kind == "gap_ranges":
        meta["parts"][1]["node_start"] += 1
        (p / "partition.json").write_text(json.dumps(meta))
    elif kind == "truncated_orig_ids":
        data = (p / "orig_ids.npy").read_bytes()
        (p / "orig_ids.npy").write_bytes(data[: len(data) // 2])
    elif kind == "wrong_num_parts":
        (p / "partition.json").write_text(json.dumps({**meta, "num_parts": 3}))
    else:
        (p / "part-0" / "meta.json").write_text("{}")


def bad_out(rng: random.Random, d: Path, kind: str) -> tuple[Path, list[str]]:
    """An OUT argument that may not be written or replaced, with the flags that go with it."""
    choice = rng.choice(["under_file", "sys", "user_dir", "user_file", "user_dir_no_overwrite"])
    if choice == "under_file":
        (d / "plain").write_text("x")
        return d / "plain" / "out", []
    if choice == "sys":
        return Path("/sys/bgl-fuzz-out"), []
    if choice in ("user_dir", "user_dir_no_overwrite"):
        (d / "mine").mkdir()
        (d / "mine" / "data.csv").write_text("1,2,3")
        return d / "mine", ["--overwrite"] if choice == "user_dir" else []
    (d / "notes.md").write_text("# mine")
    return d / "notes.md", ["--overwrite"]


BAD_NUMBERS_INGEST = [["--feat-dim", "-3"], ["--num-classes", "-1"], ["--num-nodes", "0"], ["--num-nodes", "x"],
                      ["--seed", "-1"], ["--seed", "1.5"], ["--edge-factor", "0"], ["--scale", "abc"],
                      ["--format", "dgl"], ["--format", "parquet"]]
BAD_NUMBERS_PARTITION = [["--parts", "0"], ["--parts", "-2"], ["--parts", "x"], ["--parts", "100000"],
                         ["--num-batches", "-1"], ["--memory-budget", "lots"], ["--memory-budget", "0"],
                         ["--seed", "-7"], ["--method", "spectral"]]


# ------------------------------------------------------------------- the cases
def make_case(rng: random.Random, d: Path, good) -> list[str]:
    """One bad command line (argv without ``bgl``); its inputs are created under ``d``."""
    cmd = rng.choice(["ingest", "ingest", "partition", "serve", "info"])
    if cmd == "ingest":
        what = rng.choice(["file", "out", "number", "rmat"])
        if what == "file":
            return ["ingest", str(bad_file(rng, d, good)), str(d / "out"), "--no-progress"]
        if what == "out":
            src = d / "ok.txt"
            src.write_text("0 1\n1 2\n")
            out, flags = bad_out(rng, d, "store")
            return ["ingest", str(src), str(out), "--no-progress", *flags]
        if what == "number":
            src = d / "ok.txt"
            src.write_text("0 1\n1 2\n")
            return ["ingest", str(src), str(d / "out"), "--no-progress", *rng.choice(BAD_NUMBERS_INGEST)]
        return ["ingest", rng.choice(["rmat:0", "rmat:41", "rmat:x", "rmat:", "rmat:-3"]), str(d / "out"),
                "--no-progress"]
    if cmd == "partition":
        what = rng.choice(["store", "out", "number"])
        if what == "store":
            return ["partition", str(damaged(rng, d, good, "store")), str(d / "out"), "--parts", "2",
                    "--method", "random", "--num-batches", "0"]
        store = d / "store"
        shutil.copytree(good["store"], store)
        if what == "out":
            out, flags = bad_out(rng, d, "partition")
            if rng.random() < 0.3:
                out, flags = store, ["--overwrite"]  # its own input
            return ["partition", str(store), str(out), "--parts", "2", "--method", "random", "--num-batches", "0",
                    *flags]
        extra = rng.choice(BAD_NUMBERS_PARTITION)
        argv = ["partition", str(store), str(d / "out"), "--method", "random", "--num-batches", "0"]
        if "--parts" not in extra:
            argv += ["--parts", "2"]
        if extra[0] == "--method":
            argv.remove("--method"), argv.remove("random")
        return argv + extra
    if cmd == "serve":
        what = rng.choice(["store", "partition", "part", "args"])
        if what == "store":
            return ["serve", "--store", str(damaged(rng, d, good, "store"))]
        if what == "partition":
            return ["serve", "--partition", str(damaged(rng, d, good, "parts")), "--part", "0"]
        parts = d / "parts"
        shutil.copytree(good["parts"], parts)
        if what == "part":
            return ["serve", "--partition", str(parts), *rng.choice([["--part", "-1"], ["--part", "2"],
                                                                     ["--part", "x"], []])]
        return ["serve", *rng.choice([[], ["--store", str(parts / "part-0"), "--partition", str(parts)],
                                      ["--store", str(parts / "part-0"), "--part", "0"],
                                      ["--store", str(parts / "part-0"), "--threads", "0"],
                                      ["--store", str(parts / "part-0"), "--bind", "tcp://10.1.2.3:9"]])]
    if rng.random() < 0.15:
        return ["info", str(d), "--validate", rng.choice(["fast", "all"])]
    return ["info", str(damaged(rng, d, good, "store")), *rng.choice([[], ["--json"], ["--validate", "full"]])]


def cases(root: Path, good, count: int, seed: int):
    rng = random.Random(seed)
    for i in range(count):
        d = root / f"case-{i:03d}"
        d.mkdir()
        yield d, make_case(rng, d, good)


def check_failure(argv, rc, err: str, before, after) -> None:
    lines = err.splitlines()
    where = f"bgl {' '.join(argv)}"
    assert rc not in (0, None), f"{where}: exited 0"
    assert len(lines) == 1, f"{where}: stderr is not one line: {err!r}"
    assert lines[0].startswith(f"bgl {argv[0]}") and ": error: " in lines[0], f"{where}: {lines[0]!r}"
    assert "Traceback" not in err and "(run with -v" not in err, f"{where}: unexpected failure: {lines[0]!r}"
    assert after == before, f"{where}: left {sorted(set(after) - set(before))}, lost {sorted(set(before) - set(after))}"


def test_bad_inputs_in_process(tmp_path, good, capsys):
    for d, argv in cases(tmp_path, good, NUM_CASES, SEED):
        before = snapshot(tmp_path)
        capsys.readouterr()
        rc = main(argv)
        check_failure(argv, rc, capsys.readouterr().err, before, snapshot(tmp_path))
        shutil.rmtree(d)


def test_bad_inputs_through_python_m_bgl(tmp_path, good):
    rng = random.Random(SEED + 1)
    picked = sorted(rng.sample(range(NUM_CASES), NUM_SUBPROCESS_CASES))
    for i, (d, argv) in enumerate(cases(tmp_path, good, NUM_CASES, SEED + 1)):
        if i not in picked:
            shutil.rmtree(d)
            continue
        before = snapshot(tmp_path)
        r = subprocess.run([sys.executable, "-m", "bgl", *argv], capture_output=True, text=True, timeout=120)
        check_failure(argv, r.returncode, r.stderr, before, snapshot(tmp_path))
        shutil.rmtree(d)
