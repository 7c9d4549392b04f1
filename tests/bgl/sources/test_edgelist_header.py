"""SNAP edge-list headers decide symmetrization unless --symmetrize / --no-symmetrize is given."""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys

import pytest

from bgl.sources.datasets import ingest
from bgl.errors import IngestError
from bgl.sources.readers.edgelist import header_direction, header_row
from bgl.store import GraphStore

EDGES = "0\t1\n1\t2\n2\t0\n"  # 3 edges, one direction each


def write(path, header):
    path.write_text(header + EDGES)
    return path


@pytest.mark.parametrize("header,expected_edges,origin,direction", [
    ("# Undirected graph (each unordered pair of nodes is saved once): ca-GrQc.txt\n# Nodes: 3\n", 6,
     "header", "undirected"),
    ("# Directed graph (each unordered pair of nodes is saved once): wiki-Vote.txt\n", 3, "header", "directed"),
    ("# FromNodeId\tToNodeId\n", 3, "format default", None),
    ("", 3, "format default", None),
])
def test_header_decides_by_default(tmp_path, header, expected_edges, origin, direction):
    s = ingest(write(tmp_path / "g.txt", header), tmp_path / "s")
    assert s.num_edges == expected_edges
    assert s.meta.extra["symmetrize"] is (expected_edges == 6)
    assert s.meta.extra["symmetrize_from"] == origin
    assert s.meta.extra["header_direction"] == direction


def test_explicit_flag_overrides_header(tmp_path):
    und = write(tmp_path / "u.txt", "# Undirected graph\n")
    assert ingest(und, tmp_path / "a", symmetrize=False).num_edges == 3
    assert GraphStore(tmp_path / "a").meta.extra["symmetrize_from"] == "option"
    d = write(tmp_path / "d.txt", "# Directed graph\n")
    assert ingest(d, tmp_path / "b", symmetrize=True).num_edges == 6


def test_header_only_read_before_first_edge_and_gzip(tmp_path):
    (tmp_path / "late.txt").write_text("0 1\n# Undirected graph\n")
    assert header_direction(tmp_path / "late.txt") is None
    with gzip.open(tmp_path / "g.txt.gz", "wt") as f:
        f.write("% comment\n# Undirected graph\n" + EDGES)
    assert header_direction(tmp_path / "g.txt.gz") == "undirected"


def test_shared_slashdot_header_is_directed():
    path = "/work/shared/datasets/soc-Slashdot0902.txt.gz"
    if not os.path.exists(path):
        pytest.skip("shared dataset not present")
    assert header_direction(__import__("pathlib").Path(path)) == "directed"


def test_cli_ingest_and_info_say_what_was_done(tmp_path):
    und = write(tmp_path / "u.txt", "# Undirected graph\n")
    env = {**os.environ, "DGLBACKEND": "pytorch"}
    run = lambda *a: subprocess.run([sys.executable, "-m", "bgl", *map(str, a)], capture_output=True,
                                    text=True, timeout=120, env=env)
    r = run("ingest", und, tmp_path / "s", "--no-progress")
    assert r.returncode == 0, r.stderr
    assert "symmetrized" in r.stdout and "header says undirected" in r.stdout
    r = run("ingest", und, tmp_path / "n", "--no-symmetrize", "--no-progress")
    assert r.returncode == 0, r.stderr
    r = run("info", tmp_path / "n")
    assert "as given" in r.stdout and "--no-symmetrize, overriding the header (undirected)" in r.stdout
    info = json.loads(run("info", tmp_path / "s", "--json").stdout)
    assert info["symmetrized"] is True and info["symmetrize_from"] == "header" and info["num_edges"] == 6


def test_column_name_row_is_skipped_and_line_numbers_stay_the_files(tmp_path):
    # CollegeMsg's layout: a `src dst time` row, then edges with unix-second times, gzipped
    with gzip.open(tmp_path / "msg.txt.gz", "wt") as f:
        f.write("src dst time\n1 2 1082040961\n3 4 1082155839\n2 1 1082414391\n")
    s = ingest(tmp_path / "msg.txt.gz", tmp_path / "s", edge_time_column=2, remove_self_loops=False)
    assert s.num_edges == 3 and sorted(s.edge_array("timestamp").tolist()) == [1082040961, 1082155839, 1082414391]
    # after comments, comma-separated, with a bad row later: the error names the file's own line 5
    (tmp_path / "c.csv").write_text("# exported\n\nFromNodeId,ToNodeId\n0,1\n1,x\n")
    with pytest.raises(IngestError, match=r"c.csv:5: malformed line.*'1,x'"):
        ingest(tmp_path / "c.csv", tmp_path / "c")
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize("first", ["src 2", "1 dst", "- 1"])
def test_a_row_with_a_number_is_data_not_a_header(tmp_path, first):
    (tmp_path / "g.txt").write_text(f"{first}\n0 1\n")
    with pytest.raises(IngestError, match=r"g.txt:1: malformed line"):
        ingest(tmp_path / "g.txt", tmp_path / "s")


def test_only_the_first_data_row_can_be_a_header(tmp_path):
    (tmp_path / "g.txt").write_text("src dst\n0 1\nsrc dst\n")
    with pytest.raises(IngestError, match=r"g.txt:3: malformed line"):
        ingest(tmp_path / "g.txt", tmp_path / "s")
    assert header_row(b"% c\n  a\tb\n0 1\n") == (6, "a\tb") and header_row(b"0 1\n") is None
