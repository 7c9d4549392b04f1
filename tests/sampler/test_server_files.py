"""The graph server's small file writes (token, ready file) are atomic and leave no temp files."""
from __future__ import annotations

import pytest

from bgl.sampler.server import _write_atomic


def test_write_atomic_writes_with_mode(tmp_path):
    target = tmp_path / "token"
    _write_atomic(target, "secret\n", 0o600)
    assert target.read_text() == "secret\n" and (target.stat().st_mode & 0o777) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["token"]


def test_failed_rename_removes_the_temp_file(tmp_path):
    target = tmp_path / "ready.json"
    target.mkdir()
    (target / "keep").write_text("x")  # a non-empty directory cannot be replaced by a file
    with pytest.raises(OSError):
        _write_atomic(target, "{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ready.json"]


def test_ready_file_is_removed_when_the_server_exits(serve, random_store):
    """The ready file says "a server is up at ADDRESS": a stopped server's must not stay behind."""
    server = serve("--store", str(random_store.path))
    assert server.ready.exists()
    server.proc.terminate()
    assert server.proc.wait(timeout=30) == 0
    assert not server.ready.exists()
    assert not list(server.ready.parent.glob(server.ready.name + "*"))  # no temp file either
