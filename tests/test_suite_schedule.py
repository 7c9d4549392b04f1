"""How make test spreads a lane's files over its xdist workers (tests/suite_schedule.py)."""
from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace

_spec = importlib.util.spec_from_file_location("suite_schedule_under_test", Path(__file__).with_name("suite_schedule.py"))
schedule = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(schedule)


def test_files_sharing_a_resource_are_one_unit_and_their_seconds_add_up(tmp_path):
    netns = sorted(f for f, what in schedule.SHARED.items() if what == "network namespaces")
    assert len(netns) >= 2
    listed = tmp_path / "durations.txt"
    listed.write_text(f"# header\n5.0 {netns[0]}::ignored\n7.5 {netns[1]}\n2.0 tests/a.py\n\n")
    assert {schedule.unit_of(f"{f}::test_x") for f in netns} == {"network namespaces"}
    assert schedule.unit_of("tests/a.py::test_y[1-2]") == "tests/a.py"
    assert schedule.weights(listed) == {"network namespaces": 12.5, "tests/a.py": 2.0}
    assert schedule.weights(tmp_path / "missing.txt") == {}


def test_heaviest_unit_first_and_a_units_tests_keep_their_order(monkeypatch):
    monkeypatch.setattr(schedule, "weights", lambda: {"tests/slow.py": 30.0, "tests/mid.py": 3.0})
    names = ["tests/new.py::a", "tests/mid.py::b", "tests/slow.py::c", "tests/mid.py::d", "tests/slow.py::e",
             "tests/new2.py::f"]
    items = [SimpleNamespace(nodeid=n) for n in names]
    schedule.heaviest_first(items)
    # unknown files count one second each, in the order collected
    assert [i.nodeid for i in items] == ["tests/slow.py::c", "tests/slow.py::e", "tests/mid.py::b",
                                         "tests/mid.py::d", "tests/new.py::a", "tests/new2.py::f"]


def test_the_recorded_list_names_files_that_exist():
    """A renamed or deleted file would only cost balance, but the list should be refreshed then
    (.ci/record_durations.py): this keeps it honest."""
    root = Path(__file__).resolve().parent.parent
    listed = [line.split(maxsplit=1)[1] for line in schedule.WEIGHTS.read_text().splitlines()
              if line.strip() and not line.startswith("#")]
    assert listed and all((root / name).is_file() for name in listed), [n for n in listed if not (root / n).is_file()]


def test_record_durations_sums_a_files_phases_heaviest_first(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location(
        "record_durations", Path(__file__).resolve().parent.parent / ".ci" / "record_durations.py")
    record = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(record)
    log = tmp_path / "run.log"
    log.write_text("============ slowest durations ============\n"
                   "3.50s call     tests/b.py::test_one[x-1]\n"
                   "0.25s setup    tests/b.py::test_one[x-1]\n"
                   "9.00s call     tests/a.py::Class::test_two\n"
                   "(12 durations < 0.005s hidden.  Use -vv to show these durations.)\n")
    out = tmp_path / "durations.txt"
    assert record.main([str(log), "--out", str(out)]) == 0
    body = [line for line in out.read_text().splitlines() if not line.startswith("#")]
    assert body == ["9.0 tests/a.py", "3.8 tests/b.py"]
    assert record.main([str(tmp_path / "run.log"), "--out", str(tmp_path / "x.txt")]) == 0
    (tmp_path / "empty.log").write_text("3 passed in 1.00s\n")
    assert record.main([str(tmp_path / "empty.log"), "--out", str(tmp_path / "y.txt")]) == 1
    assert "no duration lines" in capsys.readouterr().err and not (tmp_path / "y.txt").exists()
