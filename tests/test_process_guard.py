"""The suite's own guard: a test that leaks process state must fail, naming the leak.

An inner pytest run (a subprocess, so nothing it does can reach this process) uses a
copy of the real tests/conftest.py, guard included, on deliberately leaking tests.
"""
from __future__ import annotations

from pathlib import Path

import pytest

CONFTEST = Path(__file__).with_name("conftest.py")
SCHEDULE = Path(__file__).with_name("suite_schedule.py")  # the conftest loads it from beside itself


def _copy_conftest(pytester) -> None:
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makepyfile(suite_schedule=SCHEDULE.read_text())

LEAKY_TESTS = '''
import os

import torch


def test_leaks_an_environment_variable():
    os.environ["BGL_GUARD_PROBE"] = "leaked"


def test_leaks_torch_threads():
    torch.set_num_threads(torch.get_num_threads() + 1)


def test_leaks_the_working_directory(tmp_path):
    os.chdir(tmp_path)


def test_cleans_up_after_itself(monkeypatch, tmp_path):
    monkeypatch.setenv("BGL_GUARD_PROBE", "scoped")
    monkeypatch.chdir(tmp_path)
    torch.set_num_threads(torch.get_num_threads())


def test_sees_a_clean_state_after_the_leaks():
    assert "BGL_GUARD_PROBE" not in os.environ
'''


def test_guard_fails_each_leaking_test_and_restores_the_state(pytester):
    _copy_conftest(pytester)
    pytester.makepyfile(test_leaky=LEAKY_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=5, errors=3)
    out = result.stdout.str()
    assert "test_leaks_an_environment_variable left the process changed: os.environ['BGL_GUARD_PROBE']" in out
    assert "test_leaks_torch_threads left the process changed: torch threads" in out
    assert "test_leaks_the_working_directory left the process changed: cwd" in out
    assert "test_cleans_up_after_itself left" not in out


@pytest.mark.extended  # an inner suite run three times (11 s); the guard test above stays in make test
def test_shuffle_option_reorders_modules_and_tests_reproducibly(pytester):
    _copy_conftest(pytester)
    for m in "abc":
        pytester.makepyfile(**{f"test_{m}": "\n".join(f"def test_{m}{i}(): pass" for i in range(6))})

    def order(*args):
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--collect-only", "-q", *args)
        return [line for line in result.outlines if "::" in line]

    fixed, s1, s1_again, s2 = order(), order("--shuffle", "1"), order("--shuffle", "1"), order("--shuffle", "2")
    assert fixed == sorted(fixed, key=lambda n: (n.split("::")[0], int(n.split("::")[1][6:])))
    assert sorted(s1) == sorted(fixed) and s1 != fixed and s1 == s1_again and s1 != s2
    files = [n.split("::")[0] for n in s1]
    assert sum(a != b for a, b in zip(files, files[1:])) == 2  # each module's tests stay together


STRICT_TESTS = '''
import os
import tempfile

import pytest


def test_skips_for_a_missing_tool():
    pytest.skip("openssh-server is not installed")


def test_skips_without_a_gpu():
    pytest.skip("needs a CUDA device")


def test_temp_files_go_under_pytests_basetemp(tmp_path_factory):
    assert tempfile.gettempdir() == os.environ["TMPDIR"] == str(tmp_path_factory.getbasetemp() / "tmp")


def test_leaves_a_dir_in_the_system_temp_dir():  # as a hard-coded /tmp path would
    os.mkdir(os.path.join(os.environ["BGL_PROBE_TEMP"], "bgl-strict-probe"))
'''


def test_strict_suite_fails_on_a_skip_outside_the_allowed_reasons_and_on_temp_leftovers(pytester, monkeypatch):
    """Issue #56: a fresh machine skipped tests CI therefore never ran, and the suite left directories
    in /tmp.  ``--strict-suite`` (``make test``) fails the run on both, naming them."""
    _copy_conftest(pytester)
    pytester.makepyfile(test_strict=STRICT_TESTS,
                        test_collection_skip="import pytest\npytest.importorskip('bgl_no_such_module')\n")
    temp = pytester.mkdir("temp")
    monkeypatch.setenv("TMPDIR", str(temp))  # the inner run's system temp dir, not /tmp
    monkeypatch.setenv("BGL_PROBE_TEMP", str(temp))
    lenient = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert lenient.ret == 0, lenient.stdout.str()
    (temp / "bgl-strict-probe").rmdir()
    strict = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--strict-suite")
    assert strict.ret == 1
    out = strict.stdout.str()
    assert "skipped outside the allowed reasons: test_strict.py::test_skips_for_a_missing_tool: openssh-server" in out
    assert "test_collection_skip.py: could not import 'bgl_no_such_module'" in out
    assert "test_skips_without_a_gpu" not in out.split("--strict-suite:")[-1]
    assert f"left in {temp}: bgl-strict-probe" in out
