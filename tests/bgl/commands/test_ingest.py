"""``bgl ingest`` refuses what it may not replace and says what is wrong in one line (issue #23)."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from bgl.cli import main
from bgl.store import GraphStore


def ingest(capsys, *args):
    """``bgl ingest ARGS`` in-process: (exit code, stderr lines)."""
    capsys.readouterr()
    rc = main(["ingest", *map(str, args), "--no-progress"])
    return rc, capsys.readouterr().err.splitlines()


def one_error(lines):
    assert len(lines) == 1, lines
    assert lines[0].startswith("bgl ingest: error: ") and "Traceback" not in lines[0]
    return lines[0]


def hidden(path):
    return sorted(p for p in os.listdir(path) if p.startswith("."))


@pytest.fixture
def edges(tmp_path):
    f = tmp_path / "g.txt"
    f.write_text("0 1\n1 2\n2 0\n")
    return f


def test_overwrite_replaces_a_bgl_store(tmp_path, edges, capsys):
    out = tmp_path / "s"
    assert ingest(capsys, edges, out)[0] == 0
    assert ingest(capsys, edges, out, "--overwrite", "--seed", "5")[0] == 0
    assert GraphStore(out).meta.extra["seed"] == 5
    assert sorted(os.listdir(tmp_path)) == ["g.txt", "s"]


def test_overwrite_keeps_a_users_directory(tmp_path, edges, capsys):
    out = tmp_path / "results"
    out.mkdir()
    (out / "paper.tex").write_text("months of work")
    rc, err = ingest(capsys, edges, out, "--overwrite")
    assert rc == 1
    assert f"{out} is a directory that is not a bgl graph store" in one_error(err)
    assert (out / "paper.tex").read_text() == "months of work" and os.listdir(out) == ["paper.tex"]
    assert hidden(tmp_path) == []


def test_overwrite_keeps_a_plain_file_and_renames_nothing(tmp_path, edges, capsys):
    out = tmp_path / "notes.txt"
    out.write_text("mine")
    rc, err = ingest(capsys, edges, out, "--overwrite")
    assert rc == 1 and f"{out} is a file, not a bgl graph store" in one_error(err)
    assert out.read_text() == "mine"
    assert sorted(os.listdir(tmp_path)) == ["g.txt", "notes.txt"]  # no notes.txt.old


def test_overwrite_never_replaces_the_source(tmp_path, edges, capsys):
    rc, err = ingest(capsys, edges, edges, "--overwrite")
    assert rc == 1 and "is the input of this run" in one_error(err)
    assert edges.read_text() == "0 1\n1 2\n2 0\n"
    assert sorted(os.listdir(tmp_path)) == ["g.txt"]


def test_overwrite_refuses_a_partition_dir(tmp_path, edges, capsys):
    from bgl.partition import partition_graph

    assert ingest(capsys, edges, tmp_path / "s")[0] == 0
    partition_graph(tmp_path / "s", "random", 2, tmp_path / "parts", measure_samples=False)
    rc, err = ingest(capsys, edges, tmp_path / "parts", "--overwrite")
    assert rc == 1 and "is a bgl partition directory, not a bgl graph store" in one_error(err)
    rc, err = ingest(capsys, edges, tmp_path / "parts" / "part-1", "--overwrite")
    assert rc == 1 and "part store of the partition" in one_error(err)
    from bgl.partition.format import open_partition

    assert open_partition(tmp_path / "parts").part_store(1).num_nodes >= 0


def test_huge_node_id_is_refused_before_allocating(tmp_path, capsys):
    f = tmp_path / "big.txt"
    f.write_text("0 1\n1 99999999999\n")
    rc, err = ingest(capsys, f, tmp_path / "s")
    line = one_error(err)
    assert rc == 1 and "big.txt: node id 99,999,999,999 implies 100,000,000,000 nodes" in line
    assert "--num-nodes" in line and "relabel" in line and "GiB" in line
    assert sorted(os.listdir(tmp_path)) == ["big.txt"]
    # --num-nodes then names the line of the stray id
    rc, err = ingest(capsys, f, tmp_path / "s", "--num-nodes", "10")
    assert rc == 1 and "big.txt:2: node id 99999999999 >= num_nodes 10" in one_error(err)


def test_unwritable_out_is_one_line_naming_the_path(tmp_path, edges, capsys):
    (tmp_path / "file").write_text("x")
    rc, err = ingest(capsys, edges, tmp_path / "file" / "out")
    assert rc == 1 and f"cannot write {tmp_path / 'file' / 'out'}: {tmp_path / 'file'} is not a directory" in \
        one_error(err)
    rc, err = ingest(capsys, edges, "/sys/bgl-ingest-out")  # refused even to root
    line = one_error(err)
    assert rc == 1 and line.startswith("bgl ingest: error: cannot write /sys/bgl-ingest-out: /sys: ")
    assert line.endswith(("Permission denied", "Operation not permitted", "Read-only file system"))


def test_format_suggestion_lists_only_what_the_cli_accepts(tmp_path, capsys):
    from bgl.commands.ingest import FORMAT_CHOICES
    from bgl.sources.datasets import PATH_FORMATS

    assert set(FORMAT_CHOICES) == set(PATH_FORMATS)
    (tmp_path / "g.dat").write_text("0 1\n")
    rc, err = ingest(capsys, tmp_path / "g.dat", tmp_path / "s")
    line = one_error(err)
    suggested = line.rsplit("one of ", 1)[1].split(", ")
    assert rc == 1 and sorted(suggested) == sorted(FORMAT_CHOICES)
    for fmt in suggested:  # every suggestion is accepted by the parser
        capsys.readouterr()
        rc = main(["ingest", str(tmp_path / "g.dat"), str(tmp_path / f"out-{fmt}"), "--format", fmt,
                   "--no-progress"])
        assert "invalid choice" not in capsys.readouterr().err


@pytest.mark.parametrize("content", [b"hello, I am text\n", b"", b"\x93NUMPY\x01\x00v\x00{'descr': '<i8'"])
def test_a_non_zip_npz_is_named_as_such(tmp_path, capsys, content):
    f = tmp_path / "g.npz"
    f.write_bytes(content)
    rc, err = ingest(capsys, f, tmp_path / "s")
    line = one_error(err)
    assert rc == 1 and "g.npz: not a valid npz file" in line and "zip" in line and "pickle" not in line
    assert sorted(os.listdir(tmp_path)) == ["g.npz"]


def test_usage_errors_are_one_line(tmp_path, capsys):
    capsys.readouterr()
    assert main(["ingest", "rmat:4", str(tmp_path / "s"), "--scale", "many"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == ["bgl ingest: error: argument --scale: not an integer: 'many' (see bgl ingest --help)"]


def test_real_command_line_one_line_and_traceback_behind_debug(tmp_path):
    f = tmp_path / "big.txt"
    f.write_text("5 99999999999\n")
    cmd = [sys.executable, "-m", "bgl", "ingest", str(f), str(tmp_path / "s"), "--no-progress"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.splitlines()[-1].startswith("bgl ingest: error: ") and "99,999,999,999" in r.stderr
    (tmp_path / "notes").write_text("x")
    bad = [sys.executable, "-m", "bgl", "ingest", str(f), str(tmp_path / "notes"), "--overwrite"]
    r = subprocess.run(bad, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "is a file" in r.stderr
    # an unexpected failure: one line by default, the traceback with BGL_DEBUG=1
    unexpected = [sys.executable, "-c", "import sys; from bgl import cli; "
                  "from bgl.commands import info; info.run = lambda a: 1 // 0; sys.exit(cli.main(sys.argv[1:]))",
                  "info", str(tmp_path)]
    r = subprocess.run(unexpected, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and r.stderr.splitlines() == [
        "bgl info: error: ZeroDivisionError: integer division or modulo by zero (run with -v for the traceback)"]
    r = subprocess.run(unexpected, capture_output=True, text=True, timeout=120, env={**os.environ, "BGL_DEBUG": "1"})
    assert r.returncode == 1 and "Traceback" in r.stderr and "ZeroDivisionError" in r.stderr
    assert sorted(os.listdir(tmp_path)) == ["big.txt", "notes"]


def test_python_api_overwrite_follows_the_same_rule(tmp_path, edges):
    import bgl

    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "a.csv").write_text("1,2")
    with pytest.raises(FileExistsError, match="not a bgl graph store"):
        bgl.ingest(edges, tmp_path / "mine", overwrite=True)
    with pytest.raises(FileExistsError, match="not a bgl graph store"):
        bgl.write_store(tmp_path / "mine", np.array([0, 0]), np.zeros(0, np.int64), overwrite=True)
    assert os.listdir(tmp_path / "mine") == ["a.csv"]
