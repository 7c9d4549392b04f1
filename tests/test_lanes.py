"""``.ci/lanes.py``, the runner behind ``make test``'s two lanes: each lane's pytest output and
summary, one closing line in pytest's form that adds the lanes up, and a failure in any lane fails
the run (CI reads the exit code and the closing line)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

LANES = Path(__file__).resolve().parents[1] / ".ci" / "lanes.py"


def run_lanes(cwd: Path, *pytest_args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(LANES), "--lane", f"one={sys.executable}",
                           "--lane", f"two={sys.executable}", "--", "-q", "-p", "no:cacheprovider",
                           *pytest_args], capture_output=True, text=True, timeout=120, cwd=cwd)


def test_both_lanes_summed_into_one_closing_line(tmp_path):
    (tmp_path / "test_inner.py").write_text(
        "import pytest\n"
        "def test_a(): pass\n"
        "def test_b(): pass\n"
        "def test_c(): pytest.skip('not here')\n")
    done = run_lanes(tmp_path, "test_inner.py")
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 0, done.stdout + done.stderr
    assert lines[-3].startswith("lane 1 one (Python ") and "2 passed, 1 skipped in " in lines[-3], lines
    assert lines[-2].startswith("lane 2 two (Python ") and lines[-2].endswith("; ok"), lines
    assert lines[-1].startswith("4 passed, 2 skipped in ") and lines[-1].endswith("s"), lines


def test_a_failure_or_no_test_in_a_lane_fails_the_run(tmp_path):
    (tmp_path / "test_inner.py").write_text("def test_a(): pass\ndef test_b(): assert False\n")
    done = run_lanes(tmp_path, "test_inner.py")
    assert done.returncode == 1, done.stdout
    assert done.stdout.strip().splitlines()[-1].startswith("2 failed, 2 passed in "), done.stdout
    assert "FAILED (pytest exit 1)" in done.stdout
    done = run_lanes(tmp_path, "test_inner.py", "-k", "nothing_matches")
    assert done.returncode == 1 and "FAILED (pytest exit 5)" in done.stdout, done.stdout


def test_why_a_lane_failed_is_repeated_above_the_closing_lines(tmp_path):
    """A CI log shows its tail: the failing tests' names and --strict-suite's problems come again there,
    once each lane's own output has scrolled them away."""
    (tmp_path / "conftest.py").write_text(
        "def pytest_sessionfinish(session, exitstatus):\n"
        "    print('\\n--strict-suite:')\n"
        "    print('left in /tmp: ompi.host.0')\n")
    (tmp_path / "test_inner.py").write_text("def test_a(): pass\ndef test_b(): assert False\n")
    done = run_lanes(tmp_path, "test_inner.py")
    assert done.returncode == 1, done.stdout
    closing = done.stdout.split("=== lanes")[-1].strip().splitlines()
    for lane in (1, 2):
        assert f"lane {lane}: FAILED test_inner.py::test_b - assert False" in closing, closing
        assert f"lane {lane}: --strict-suite:" in closing and f"lane {lane}: left in /tmp: ompi.host.0" in closing
    assert closing[-1].startswith("2 failed, 2 passed in "), closing
