"""bench/scaling/rmat_growth.py: least-squares fits, projections, report rendering, and one tiny real run."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

SCALING = Path(__file__).resolve().parents[2] / "bench" / "scaling" / "rmat_growth.py"


@pytest.fixture(scope="module")
def scaling():
    spec = importlib.util.spec_from_file_location("bench_scaling", SCALING)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up by name
    spec.loader.exec_module(mod)
    return mod


def test_fit_linear_recovers_a_line_and_reports_r2(scaling):
    x = [1e5, 2e5, 4e5, 8e5]
    f = scaling.fit_linear(x, [3.0 + 2e-6 * v for v in x])
    assert f.intercept == pytest.approx(3.0) and f.slope == pytest.approx(2e-6) and f.r2 == pytest.approx(1.0)
    rng = np.random.default_rng(0)
    noisy = scaling.fit_linear(x, [3.0 + 2e-6 * v + rng.normal(0, 0.3) for v in x])
    assert noisy.r2 < 1.0
    assert scaling.fit_linear([1e5], [1.0]) is None
    assert scaling.fit_linear([1e5, 1e5], [1.0, 2.0]) is None
    assert scaling.fit_linear([1e5, 2e5, 3e5], [1.0, None, 3.0]).n == 2  # missing values are skipped


def test_projections_machines_and_memory(scaling):
    gib = 2**30
    fits = {"server_hot_total": scaling.LinearFit(0.0, 100.0, 1.0, 4),   # 100 B/edge
            "part_s": scaling.LinearFit(1.0, 1e-6, 1.0, 4),
            "part_rss": scaling.LinearFit(0.0, -5.0, 1.0, 4),               # shrinking: not a model
            "ingest_s": None}
    rows = scaling.projections(fits, [1e9, 1e10], machine_mem=256 * gib, usable=0.75)
    one, ten = rows
    assert one["server_mem_total"] == pytest.approx(1e11)
    assert one["machines"] == 1 and ten["machines"] == int(np.ceil(1e12 / (0.75 * 256 * gib)))
    assert ten["mem_per_server"] == pytest.approx(1e12 / ten["machines"])
    assert ten["mem_per_server"] <= 0.75 * 256 * gib
    assert one["part_s"] == pytest.approx(1001.0)
    assert one["part_rss"] is None and one["ingest_s"] is None


def test_render_marks_measured_and_projected(scaling):
    args = scaling.parse_args(["--scales", "16", "17"])
    results = []
    for i, scale in enumerate((16, 17, 18)):
        e = 1_000_000 * 2**i
        r = scaling.SizeResult(scale, nodes=2**scale, edges=e, ingest_s=1 + 2e-6 * e, ingest_rss=int(1e8 + 50 * e),
                               part_s=0.5 + 1e-6 * e, part_rss=int(2e8 + 80 * e), edge_cut=0.1,
                               server_rss_idle=[10**8] * 2, server_rss_workload=[2 * 10**8] * 2,
                               server_rss_hot=[int(1.5e8 + 20 * e)] * 2, part_store_bytes=[int(20 * e)] * 2,
                               remote_seeds_s=9000.0, local_seeds_s=20000.0, dgl_seeds_s=10000.0,
                               cache_hit_rate=0.25, seconds=10.0)
        results.append(r)
    results[-1].errors.append("servers: RuntimeError: boom 42")
    text = scaling.render(results, args, "python bench/scaling/rmat_growth.py --quick", "2026-11-30 06:00 UTC")
    assert "2026-11-30 06:00 UTC" in text and "2-core x86_64 VM" in text
    assert text.count("| measured |") == 3
    assert "| 1,000,000,000 | *projected* |" in text and "| 10,000,000,000 | *projected* |" in text
    assert "| 2.00x |" in text  # local vs DGL sampling ratio
    assert "boom 42" in text
    # the fit of server memory: 2 parts x 20 B/edge
    assert "| server RSS, hot, all parts | 40.000 B/edge |" in text
    assert "| partition time | 1.000 µs/edge |" in text
    assert "LocalSampler / DGL sample_neighbors (same seeds and threads): 2.00x (2^16)" in text
    assert "- projected for 1e+09 edges: 1 machine(s)" in text


@pytest.mark.slow
@pytest.mark.extended
def test_tiny_real_run(scaling, tmp_path):
    """A tiny size through real ingest, partition, `bgl serve` processes and the client."""
    rc = scaling.main(["--scales", "9", "--warmup-scale", "0", "--batches", "2", "--batch-size", "32",
                       "--feat-dim", "8", "--workdir", str(tmp_path / "w"), "--json", str(tmp_path / "r.json")])
    import json

    rows = json.loads((tmp_path / "r.json").read_text())
    assert [r["scale"] for r in rows] == [9]
    for r in rows:
        assert r["errors"] == [], r["errors"]
        assert r["edges"] > 0 and r["ingest_s"] > 0 and r["part_s"] > 0
        assert len(r["server_rss_hot"]) == 2 and min(r["server_rss_hot"]) > 0
        assert r["remote_seeds_s"] > 0 and 0.0 <= r["cache_hit_rate"] <= 1.0
    assert rc == 0
    assert not (tmp_path / "w" / "rmat-9").exists()  # stores are removed unless --keep


def test_write_results_keeps_the_hand_run_rows_below_the_marker(scaling, tmp_path):
    """--write-results regenerates the fitted report but must not drop the billion-edge rows."""
    out = tmp_path / "scaling.md"
    assert scaling.kept_tail(out) == ""
    out.write_text("# old generated part\n\n" + scaling.KEEP_MARKER + "\n\n## R-MAT 25 row\n")
    tail = scaling.kept_tail(out)
    assert tail.lstrip().startswith(scaling.KEEP_MARKER) and tail.endswith("## R-MAT 25 row\n")
    assert "old generated part" not in tail
    out.write_text("# no marker\n")
    assert scaling.kept_tail(out) == ""
