"""``bgl ingest`` and ``bgl info`` as a user runs them: real subprocesses, real files."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from bgl.store import GraphStore

TIMEOUT = 120


def bgl(*args, cwd=None):
    env = {**os.environ, "DGLBACKEND": "pytorch"}
    return subprocess.run([sys.executable, "-m", "bgl", *map(str, args)], capture_output=True, text=True,
                          timeout=TIMEOUT, env=env, cwd=cwd)


def test_ingest_then_info(tmp_path):
    from bgl.data import default_dataset_path

    out = tmp_path / "cora"
    r = bgl("ingest", default_dataset_path(), out, "--seed", "3", "--no-progress")
    assert r.returncode == 0, r.stderr
    assert "nodes        2,708" in r.stdout and "edges        10,556" in r.stdout
    s = GraphStore(out)
    assert s.meta.extra["seed"] == 3

    r = bgl("info", out, "--json")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    deg = np.diff(s.indptr)
    assert (info["num_nodes"], info["num_edges"], info["feat_dim"], info["num_classes"]) == (2708, 10556, 1433, 7)
    assert (info["in_degree_min"], info["in_degree_max"]) == (int(deg.min()), int(deg.max()))
    assert info["splits"] == {"train": s.train_idx.size, "val": s.val_idx.size, "test": s.test_idx.size}
    r = bgl("info", out)
    assert "in-degree    min 1" in r.stdout and "splits       train=" in r.stdout

    r = bgl("ingest", default_dataset_path(), out, "--no-progress")  # exists
    assert r.returncode == 1 and "already exists" in r.stderr and "--overwrite" in r.stderr
    r = bgl("ingest", default_dataset_path(), out, "--overwrite", "--seed", "4", "--no-progress")
    assert r.returncode == 0 and GraphStore(out).meta.extra["seed"] == 4
    assert sorted(os.listdir(tmp_path)) == ["cora"]


def test_ingest_edge_list_options_and_bad_line(tmp_path):
    (tmp_path / "g.txt").write_text("# demo\n0 1\n1 1\n0 1\n2 0\n")
    r = bgl("ingest", tmp_path / "g.txt", tmp_path / "s", "--keep-self-loops", "--keep-duplicates",
            "--feat-dim", "3", "--num-classes", "2")
    assert r.returncode == 0, r.stderr
    s = GraphStore(tmp_path / "s")
    assert s.num_edges == 4 and s.feat_dim == 3 and s.num_classes == 2
    r = bgl("ingest", tmp_path / "g.txt", tmp_path / "y", "--symmetrize", "--no-progress")
    assert r.returncode == 0 and GraphStore(tmp_path / "y").num_edges == 4  # {0-1, 0-2} both ways

    (tmp_path / "bad.txt").write_text("0 1\n1 2\n2 oops\n")
    r = bgl("ingest", tmp_path / "bad.txt", tmp_path / "b", "--no-progress")
    assert r.returncode == 1
    assert "bad.txt:3: malformed line" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "b").exists()
    assert sorted(os.listdir(tmp_path)) == ["bad.txt", "g.txt", "s", "y"]


def test_ingest_rmat_and_info_errors(tmp_path):
    r = bgl("ingest", "rmat", tmp_path / "r", "--format", "rmat", "--scale", "8", "--edge-factor", "4",
            "--feat-dim", "2", "--num-classes", "3", "--no-progress")
    assert r.returncode == 0, r.stderr
    s = GraphStore(tmp_path / "r")
    assert s.num_nodes == 256 and s.meta.extra["edge_factor"] == 4 and s.feat_dim == 2

    (tmp_path / "r" / "indices.npy").write_bytes(b"\x93NUMPY broken")
    r = bgl("info", tmp_path / "r")
    assert r.returncode == 1 and "indices.npy" in r.stderr
    r = bgl("info", tmp_path / "nothing")
    assert r.returncode == 1 and "does not exist" in r.stderr


@pytest.mark.parametrize("cmd", [["ingest", "--help"], ["info", "--help"]])
def test_help_shows_defaults(cmd):
    r = bgl(*cmd)
    assert r.returncode == 0 and "default" in r.stdout


def test_default_output_is_for_a_person_and_v_adds_the_log(tmp_path):
    """A one-shot command logs warnings only by default; ``-v`` shows its INFO lines."""
    from bgl.data import default_dataset_path

    quiet = bgl("ingest", default_dataset_path(), tmp_path / "a")
    assert quiet.returncode == 0 and "INFO" not in quiet.stderr, quiet.stderr
    loud = bgl("-v", "ingest", default_dataset_path(), tmp_path / "b")
    assert loud.returncode == 0 and "bgl.sources.graph_source INFO: wrote" in loud.stderr, loud.stderr


def test_log_level_per_command_and_from_the_environment(monkeypatch):
    import logging

    from bgl.cli import log_level

    monkeypatch.delenv("BGL_LOG_LEVEL", raising=False)
    assert log_level(0, "ingest") == logging.WARNING and log_level(0, "serve") == logging.INFO
    assert log_level(1, "ingest") == logging.INFO and log_level(2, "serve") == logging.DEBUG
    monkeypatch.setenv("BGL_LOG_LEVEL", "error")
    assert log_level(0, "serve") == logging.ERROR and log_level(1, "serve") == logging.INFO
    monkeypatch.setenv("BGL_LOG_LEVEL", "chatty")
    with pytest.raises(ValueError, match="'CHATTY' is not a logging level"):
        log_level(0, "ingest")


def test_status_line_shows_info_in_place_and_warnings_whole():
    """On a terminal the quiet default turns bgl's INFO lines into one rewritten status line."""
    import io
    import logging

    from bgl.cli import StatusLine

    out = io.StringIO()
    log = logging.getLogger("bgl.test_status")
    stdout = sys.stdout
    with StatusLine(out):
        log.info("phase one")
        log.info("phase two")
        log.warning("careful")
        log.info("phase three")
        sys.stdout.write("")  # a command's own line erases the status line first
        log.info("phase four")
    assert sys.stdout is stdout
    text = out.getvalue()
    assert text.startswith("\r\x1b[Kphase one\r\x1b[Kphase two\r\x1b[K") and text.endswith("phase four\r\x1b[K")
    assert "WARNING: careful\n\r\x1b[Kphase three\r\x1b[K\r\x1b[Kphase four" in text
    assert "\n" not in text.split("careful")[0]
    assert logging.getLogger("bgl").propagate and not logging.getLogger("bgl").handlers


def test_version():
    from bgl import __version__

    r = bgl("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"bgl {__version__}", r.stdout + r.stderr


def test_writers_refuse_a_missing_parent_directory(tmp_path):
    """``bgl ingest SRC /nonexistent/dir/out`` used to create the missing directories; every writer
    now refuses with one line naming the missing one, and writes nothing (issue #44)."""
    from bgl.data import default_dataset_path

    store = tmp_path / "store"
    assert bgl("ingest", default_dataset_path(), store, "--no-progress").returncode == 0
    before = sorted(p.name for p in tmp_path.iterdir())
    missing = tmp_path / "no" / "such"
    for cmd in (["ingest", default_dataset_path(), missing / "out"],
                ["partition", store, missing / "out", "--parts", "2", "--method", "random"],
                ["compress", store, "--codec", "float16", "--out", missing / "out"],
                ["partition", "import-distdgl", tmp_path / "nothing.json", missing / "out"]):
        r = bgl(*cmd)
        assert r.returncode == 1, (cmd, r.stderr)
        assert r.stderr.splitlines() == [f"bgl {cmd[0]}: error: cannot write {missing / 'out'}: directory "
                                         f"{missing} does not exist (create it first; bgl does not create "
                                         "parent directories)"], (cmd, r.stderr)
        assert sorted(p.name for p in tmp_path.iterdir()) == before, cmd


def test_no_progress_bars_when_stderr_is_not_a_terminal(tmp_path):
    """Captured stderr (a pipe, a log file) gets no tqdm bars: a good run writes nothing there, a
    failing one exactly its one error line (issue #44: the bars used to precede it)."""
    (tmp_path / "g.txt").write_text("0 1\n1 2\n2 0\n" * 50)
    r = bgl("ingest", tmp_path / "g.txt", tmp_path / "s")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    (tmp_path / "bad.txt").write_text("0 1\n1 2\n" * 50 + "2 oops\n")
    r = bgl("ingest", tmp_path / "bad.txt", tmp_path / "b")
    assert r.returncode == 1 and len(r.stderr.splitlines()) == 1, r.stderr
    assert r.stderr.startswith("bgl ingest: error: ") and "bad.txt:101: malformed line" in r.stderr


def test_ingest_reports_the_edges_it_dropped_or_kept(tmp_path):
    """``bgl ingest`` used to drop self-loops and repeated edges without a word (issue #44); its summary
    now counts them (and ``bgl info`` shows the same line), typed graphs saying what they kept."""
    (tmp_path / "g.txt").write_text("0 1\n1 1\n0 1\n2 0\n2 2\n3 3\n")
    r = bgl("ingest", tmp_path / "g.txt", tmp_path / "s")
    assert r.returncode == 0, r.stderr
    assert "dropped      3 self-loops, 1 duplicate edge\n" in r.stdout
    assert GraphStore(tmp_path / "s").meta.extra["dropped"] == {"self_loops": 3, "duplicates": 1}
    assert "dropped      3 self-loops, 1 duplicate edge\n" in bgl("info", tmp_path / "s").stdout
    r = bgl("ingest", tmp_path / "g.txt", tmp_path / "k", "--keep-self-loops", "--keep-duplicates")
    assert r.returncode == 0 and "dropped      0 self-loops, 0 duplicate edges\n" in r.stdout, r.stdout
    r = bgl("ingest", tmp_path / "g.txt", tmp_path / "y", "--symmetrize")  # 0-1 twice and 2-0, both ways
    assert "dropped      3 self-loops, 2 duplicate edges  [duplicates counted per stored direction]" in r.stdout

    r = bgl("ingest", "rmat-hetero:6", tmp_path / "h")
    assert r.returncode == 0, r.stderr
    kept = GraphStore(tmp_path / "h").meta.extra["kept"]
    assert kept["self_loops"] > 0 and kept["duplicates"] > 0  # R-MAT draws both
    assert (f"kept         {kept['self_loops']:,} self-loops, {kept['duplicates']:,} duplicate edges  "
            "[a typed graph keeps every edge as given]") in r.stdout


def _on_a_terminal(*args) -> tuple[int, list[str]]:
    """Run ``bgl ARGS`` with a 100-column pseudo-terminal as stdin/stdout/stderr; return its exit code and
    the lines a terminal would show at the end (each line's text after its last carriage return, ANSI
    escapes removed, blank lines dropped)."""
    import fcntl
    import pty
    import re
    import struct
    import termios

    main_fd, child_fd = pty.openpty()
    fcntl.ioctl(child_fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # tqdm needs a width
    env = {**os.environ, "DGLBACKEND": "pytorch"}
    proc = subprocess.Popen([sys.executable, "-m", "bgl", *map(str, args)], stdin=child_fd, stdout=child_fd,
                            stderr=child_fd, env=env, close_fds=True)
    os.close(child_fd)
    out = b""
    try:
        while True:
            try:
                chunk = os.read(main_fd, 65536)
            except OSError:  # EIO: the child side closed
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(main_fd)
        code = proc.wait(timeout=TIMEOUT)
    shown = [re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", line.split("\r")[-1]).rstrip()
             for line in out.decode(errors="replace").replace("\r\n", "\n").split("\n")]
    return code, [line for line in shown if line]


def test_on_a_terminal_progress_bars_leave_no_line_behind(tmp_path):
    """On a terminal the bars are drawn while a pass runs and erased when it ends, like the status line:
    a failure shows its one error line with no bar above it (issue #44)."""
    (tmp_path / "bad.txt").write_text("0 1\n1 2\n" * 20000 + "2 oops\n")
    code, shown = _on_a_terminal("ingest", tmp_path / "bad.txt", tmp_path / "b")
    assert code == 1 and len(shown) == 1 and shown[0].startswith("bgl ingest: error: "), shown
    assert "bad.txt:40001: malformed line" in shown[0]
