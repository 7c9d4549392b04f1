"""``bgl.output_dir``: what a writer may replace, its locked work dirs, and their cleanup."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from bgl.output_dir import PARTITION, STORE, OutputError, WorkDir, check_output, remove_stale, sigterm_raises
from bgl.store import GraphStore, write_store


def _listing(path):
    return sorted(os.listdir(path))


def _tiny_store(path, **kw):
    return write_store(path, np.array([0, 1, 2]), np.array([1, 0]), **kw)


@pytest.fixture
def tiny_partition(tmp_path):
    from bgl.partition import partition_graph

    store = _tiny_store(tmp_path / "src-store", splits={"train": np.array([0, 1])})
    book = partition_graph(store, "random", 2, tmp_path / "parts", measure_samples=False)
    return book.path


def test_absent_and_empty_outputs_are_writable(tmp_path):
    assert check_output(tmp_path / "new", STORE, overwrite=False) == tmp_path / "new"
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileExistsError, match="already exists.*--overwrite"):
        check_output(tmp_path / "empty", STORE, overwrite=False)
    check_output(tmp_path / "empty", STORE, overwrite=True)  # nothing to lose
    s = _tiny_store(tmp_path / "empty", overwrite=True)
    assert s.num_nodes == 2


@pytest.mark.parametrize("what", ["file", "user_dir", "symlink", "store_with_user_file"])
def test_overwrite_refuses_what_bgl_did_not_write(tmp_path, what):
    out = tmp_path / "out"
    if what == "file":
        out.write_text("my notes")
    elif what == "user_dir":
        out.mkdir()
        (out / "thesis.tex").write_text("years of work")
    elif what == "symlink":
        _tiny_store(tmp_path / "real")
        out.symlink_to(tmp_path / "real")
    else:
        _tiny_store(out)
        (out / "notes.txt").write_text("mine")
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    with pytest.raises(FileExistsError, match=str(out)):
        _tiny_store(out, overwrite=True)
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".")]  # no work dir left


def test_overwrite_replaces_a_store_and_only_with_a_store(tmp_path, tiny_partition):
    out = tmp_path / "s"
    _tiny_store(out)
    s = write_store(out, np.array([0, 0, 0, 0]), np.zeros(0, np.int64), overwrite=True)
    assert s.num_nodes == 3 and GraphStore(out).num_nodes == 3
    with pytest.raises(FileExistsError, match="is a bgl partition directory, not a bgl graph store"):
        _tiny_store(tiny_partition, overwrite=True)
    with pytest.raises(FileExistsError, match="is a bgl graph store, not a bgl partition directory"):
        check_output(out, PARTITION, overwrite=True)
    with pytest.raises(FileExistsError, match="part store of the partition"):
        _tiny_store(tiny_partition / "part-0", overwrite=True)
    assert json.loads((tiny_partition / "partition.json").read_text())["num_parts"] == 2


def test_partition_overwrite_refuses_its_own_input(tmp_path):
    from bgl.partition import partition_graph

    store = _tiny_store(tmp_path / "s")
    with pytest.raises(FileExistsError, match="is the input of this run"):
        partition_graph(store, "random", 2, tmp_path / "s", overwrite=True, measure_samples=False)
    assert GraphStore(tmp_path / "s").num_nodes == 2


def test_unwritable_parent_names_the_path(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(OutputError, match=r"cannot write .*f/out: .*f is not a directory"):
        check_output(tmp_path / "f" / "out", STORE, overwrite=False)
    if os.geteuid() != 0:  # root writes anywhere; /sys refuses even root below
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o555)
        with pytest.raises(OutputError, match="no write permission"):
            check_output(ro / "out", STORE, overwrite=False)
    with pytest.raises(OutputError, match=r"cannot write /sys/bgl-test-out: /sys: "):
        WorkDir("/sys/bgl-test-out", "scratch")


_HOLDER = textwrap.dedent("""
    import sys, time
    from bgl.output_dir import WorkDir
    w = WorkDir(sys.argv[1], sys.argv[2])
    (w.path / "data.bin").write_bytes(b"x" * 1000)
    print(w.path, flush=True)
    time.sleep(600)
""")


def _holder(out, role="scratch"):
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER, str(out), role], stdout=subprocess.PIPE, text=True)
    return proc, proc.stdout.readline().strip()


def test_stale_work_dirs_of_dead_runs_go_live_ones_stay(tmp_path):
    dead, dead_dir = _holder(tmp_path / "a")
    live, live_dir = _holder(tmp_path / "b")
    try:
        dead.send_signal(signal.SIGKILL)
        dead.wait()
        assert os.path.isdir(dead_dir) and os.path.exists(dead_dir + ".lock")
        cleaned = remove_stale(tmp_path)
        assert [str(p) for p in cleaned] == [dead_dir]
        assert not os.path.exists(dead_dir) and not os.path.exists(dead_dir + ".lock")
        assert os.path.isdir(live_dir) and os.path.exists(live_dir + ".lock")  # its owner holds the lock
    finally:
        live.kill()
        live.wait()
    remove_stale(tmp_path)
    assert _listing(tmp_path) == []


def test_a_cleaner_between_a_lock_files_creation_and_its_flock_costs_a_retry_not_the_run(tmp_path, monkeypatch):
    """remove_stale can take a writer's pending ``.lock.new`` (made, not yet locked) for a dead run's:
    the writer makes it again instead of failing."""
    import bgl.output_dir as od

    real_flock, cleaned = od.fcntl.flock, []

    def flock_after_a_cleaner(fd, op):
        if op == od.fcntl.LOCK_EX and not cleaned:  # the writer's blocking flock, the first time
            cleaned.append(sorted(os.listdir(tmp_path)))
            remove_stale(tmp_path)  # the real cleaner, at the worst moment
        return real_flock(fd, op)

    monkeypatch.setattr(od.fcntl, "flock", flock_after_a_cleaner)
    with WorkDir(tmp_path / "out", "tmp") as work:
        assert work.path.is_dir() and work.lock_path.exists()
    assert cleaned and any(n.endswith(".lock.new") for n in cleaned[0])
    assert _listing(tmp_path) == []


def test_killed_mid_swap_restores_the_old_output(tmp_path):
    # A run killed between "old output aside" and "new output in" leaves OUT missing and the old
    # store in its `replaced` work dir: the next writer renames it back.
    _tiny_store(tmp_path / "s")
    proc, aside = _holder(tmp_path / "s", role="replaced")
    os.remove(os.path.join(aside, "data.bin"))
    os.rmdir(aside)
    os.rename(tmp_path / "s", aside)
    proc.kill()
    proc.wait()
    remove_stale(tmp_path)
    assert _listing(tmp_path) == ["s"] and GraphStore(tmp_path / "s").num_nodes == 2


def test_sigterm_raises_restores_the_handler():
    from bgl.output_dir import Terminated

    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Terminated):
        with sigterm_raises():
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(10**6):  # the handler runs between bytecodes
                pass
    assert signal.getsignal(signal.SIGTERM) is before


def _raw_object_cache_getbuffer(seen: list) -> None:
    """Named as llvmlite's ctypes callback, so the handler treats a SIGTERM in here as one in a callback."""
    os.kill(os.getpid(), signal.SIGTERM)
    for _ in range(10**6):  # the handler runs between these bytecodes: it must not raise here
        pass
    seen.append("callback returned")


def test_sigterm_inside_a_foreign_callback_is_raised_after_it_returns():
    from bgl.output_dir import Terminated

    seen = []
    with pytest.raises(Terminated):
        with sigterm_raises():
            _raw_object_cache_getbuffer(seen)
            seen.append("after")
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:  # the signal comes again REDELIVER_S later
                time.sleep(0.001)
    assert seen == ["callback returned", "after"]


def test_an_output_that_appears_during_the_run_is_not_replaced(tmp_path):
    from bgl.store import StoreWriter

    out = tmp_path / "s"
    with pytest.raises(FileExistsError, match="already exists"):
        with StoreWriter(out, num_nodes=2, num_edges=0) as w:
            w.save_array("indptr", np.zeros(3, np.int64))
            w.save_array("indices", np.zeros(0, np.int64))
            _tiny_store(out)  # another run finished first
    assert GraphStore(out).num_edges == 2 and _listing(tmp_path) == ["s"]


def test_an_interrupted_single_file_write_leaves_the_old_file_and_no_temporary(tmp_path):
    from bgl.output_dir import write_file_atomically, write_npz_atomically

    target = tmp_path / "arrays.npz"
    write_npz_atomically(target, {"a": np.arange(3)}, durable=True)

    class Interrupted(Exception):
        pass

    def half_then_stop(f):
        f.write(b"PK\x03\x04 half an archive")
        raise Interrupted("stopped mid-write")

    with pytest.raises(Interrupted):
        write_file_atomically(target, half_then_stop)
    with np.load(target, allow_pickle=False) as kept:
        assert list(kept) == ["a"] and kept["a"].tolist() == [0, 1, 2]
    assert _listing(tmp_path) == ["arrays.npz"]
