"""bench/run_all.py: flag discovery and RESULTS.md rendering on captured sample output."""
from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import load_bench_script

RUN_ALL = Path(__file__).resolve().parents[2] / "bench" / "run_all.py"


@pytest.fixture(scope="module")
def run_all():
    yield from load_bench_script(RUN_ALL, "bench_run_all")


def test_every_listed_benchmark_exists(run_all):
    """A script moved or renamed without its entry here fails now, not as a "does not exist" row of
    `make bench`."""
    missing = [script for _, script, _, _ in run_all.BENCHMARKS if not (run_all.BENCH_DIR / script).is_file()]
    assert not missing, missing


HELP = """usage: sampling.py [-h] [--quick] [--scale SCALE] [--fanouts FANOUTS]

options:
  -h, --help         show this help message and exit
  --quick            small graph (default: False)
  --scale SCALE      R-MAT scale (default: 18)
"""

SAMPLING_OUT = """graph: rmat scale 14, 16384 nodes, 262144 edges
bgl sampler: 412345 seeds/s
dgl sample_neighbors: 101234 seeds/s
ratio bgl/dgl: 4.07x
"""


def test_flag_discovery(run_all):
    flags = run_all.help_flags(HELP)
    assert {"--quick", "--scale", "--fanouts", "--help"} <= flags
    assert run_all.choose_args(flags, ["--scale", "12"]) == ["--quick"]
    assert run_all.choose_args({"--scale"}, ["--scale", "12"]) == ["--scale", "12"]


def test_render_results_has_sections_numbers_and_failures(run_all, tmp_path):
    ok = run_all.RunResult("sampling", ["python", "bench/sampling/throughput.py", "--quick"], 0, 12.34, SAMPLING_OUT)
    ok.highlights = run_all.highlights(ok.stdout)
    bad = run_all.RunResult("partition", ["python", "bench/partition/methods.py"], 2, 1.5, "",
                            stderr="Traceback ...\nValueError: parts must be >= 1, got 0\n")
    slow = run_all.RunResult("scaling", ["python", "bench/scaling/rmat_growth.py", "--quick"], None, 330.0,
                             "scale 16: 1048576 edges\n", note="timed out after 330 s")
    missing = run_all.RunResult("ingest", ["bench/ingest/store_build.py"], None, 0.0, "",
                                note="store_build.py does not exist yet")
    machine = {"cpu": "Test CPU, 2 cores (x86_64)", "memory": "24 GiB"}
    text = run_all.render_results([ok, bad, slow, missing], machine, "python bench/run_all.py",
                                  "2026-11-30 06:00 UTC", "abc1234")

    assert text.startswith("# bgl benchmark results")
    assert "2026-11-30 06:00 UTC" in text and "abc1234" in text and "Test CPU, 2 cores" in text
    for name in ("sampling", "partition", "scaling", "ingest"):
        assert f"\n## {name}\n" in text
    # the numbers printed by the benchmark appear verbatim, and the ratio line is lifted out
    assert "412345 seeds/s" in text
    assert "- ratio bgl/dgl: 4.07x" in text
    assert "| sampling | ok | 12.3 |" in text
    assert "| partition | failed (exit 2) |" in text and "parts must be >= 1, got 0" in text
    assert "| scaling | timed out |" in text and "1048576 edges" in text
    assert "| ingest | not run |" in text and "store_build.py does not exist yet" in text

    out = tmp_path / "RESULTS.md"
    out.write_text("old contents\n")
    run_all.write_atomic(out, text)
    assert out.read_text() == text
    assert not (tmp_path / "RESULTS.md.tmp").exists()


def test_highlights_ignore_lines_without_numbers(run_all):
    assert run_all.highlights("ratio: n/a\nspeedup 2.5x over dgl\nplain 3 lines\n") == ["speedup 2.5x over dgl"]


def test_long_output_is_trimmed_and_fences_stay_closed(run_all):
    fenced = run_all._fence("\n".join(f"line {i}" for i in range(500)) + "\n```\n", max_lines=20)
    assert fenced.count("```") == 2 and "lines omitted" in fenced and "line 499" in fenced


def test_missing_script_is_reported_not_run(run_all, tmp_path):
    r = run_all.run_benchmark("nope", tmp_path / "nope.py", [], timeout=5)
    assert r.returncode is None and "does not exist" in r.note


def test_sandbox_keeps_repo_artifacts_untouched(run_all, tmp_path):
    """A benchmark writing next to itself writes into the sandbox copy, not the repo."""
    repo = tmp_path / "repo"
    (repo / "bench" / "results").mkdir(parents=True)
    (repo / "bench" / "out").mkdir()
    (repo / "bench" / "out" / "big.bin").write_bytes(b"x")
    (repo / "data").mkdir()
    (repo / "bench" / "results" / "area.md").write_text("full-size numbers\n")
    (repo / "bench" / "plot.png").write_bytes(b"full run")
    (repo / "bench" / "area.py").write_text(
        "import argparse, pathlib\n"
        "p = argparse.ArgumentParser(); p.add_argument('--quick', action='store_true'); a = p.parse_args()\n"
        "here = pathlib.Path(__file__).resolve().parent\n"
        "(here / 'plot.png').write_bytes(b'quick run')\n"
        "(here / 'results' / 'area.md').write_text('quick numbers\\n')\n"
        "print('speedup 3.0x quick', a.quick)\n")
    root = run_all.make_sandbox(repo)
    try:
        assert (root / "data").is_symlink() and not (root / "bench").is_symlink()
        assert not (root / "bench" / "out").exists()  # large scratch outputs are not copied
        r = run_all.run_benchmark("area", Path("bench/area.py"), [], timeout=60, root=root)
        assert r.ok, r.stderr
        assert r.command == ["python", "bench/area.py", "--quick"] and "speedup 3.0x quick True" in r.stdout
        assert (root / "bench" / "plot.png").read_bytes() == b"quick run"
    finally:
        import shutil

        shutil.rmtree(root)
    assert (repo / "bench" / "plot.png").read_bytes() == b"full run"
    assert (repo / "bench" / "results" / "area.md").read_text() == "full-size numbers\n"
    assert (repo / "data").is_dir()  # removing the sandbox did not follow its symlinks
