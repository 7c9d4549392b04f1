"""``examples/from_dgl/``: DGL scripts run with ``bgl.dgl``, and (pinned lane) with DGL 2.1 itself.

Each script is written as a DGL user writes it, its only bgl lines the imports
(``import bgl.dgl as dgl`` ...).  The test runs the script's text in this process: as written
(bgl.dgl), and, where DGL imports, with those imports rewritten to ``import dgl`` ... on the same
raw Cora files (the embedded copy written where DGL looks, so DGL loads without downloading).

Accuracies are compared, not copied: in the pinned lane DGL and bgl.dgl train side by side
with the same seed and must agree within ``TOLERANCE`` (1 point for full-graph training, where
the two run the same arithmetic on the same initial weights; DGL's own seed spread for the
minibatch scripts, whose neighbour samples differ), and DGL itself must reach ``FLOOR``; in the
current lane bgl.dgl must reach ``FLOOR``.  ``FLOOR`` and the spreads were measured in the
pinned lane (DGL 2.1, up to five seeds at these epoch counts; listed below and in
``docs/from-dgl.md``, "Whole scripts"): the floor is DGL's lowest accuracy there less its seed spread, and the pinned-lane test re-checks DGL
against it every run, so the numbers cannot rot.
"""
from __future__ import annotations

import importlib.util
import os
import re
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "examples" / "from_dgl"

# script id: (file, arguments at test size, metric)
RUNS = {
    "graphsage": ("node_classification", ["--epochs", "5"], "test_acc"),
    "gcn": ("gcn", ["--epochs", "40"], "test_acc"),
    "gat": ("gat", ["--epochs", "20"], "test_acc"),
    "rgcn_hetero": ("rgcn", ["--model", "hetero", "--epochs", "8"], "test_acc"),
    "rgcn_rel": ("rgcn", ["--model", "rel", "--epochs", "10"], "test_acc"),
    "link_prediction": ("link_prediction", ["--epochs", "1"], "test_auc"),
    "custom_sampler": ("custom_sampler", ["--epochs", "5"], "test_acc"),
}
# Measured in the pinned lane, 2026-12-05 (DGL 2.1, torch 2.2.1, CPU; these epoch counts):
#   graphsage  DGL seeds 0-4: 0.752 0.711 0.708 0.778 0.782 (spread 0.074); bgl.dgl 0.778 0.742 0.782 0.722 0.723
#   gcn        DGL seeds 0-4: 0.712 0.789 0.803 0.778 0.778 (spread 0.091); bgl.dgl: the same five, digit for digit
#   gat        DGL seed 0: 0.826; bgl.dgl 0.826                    (floor: less GCN's spread, 0.09)
#   rgcn_rel   DGL seed 0: 0.338; bgl.dgl 0.338                    (floor: less GCN's spread, 0.09)
#   rgcn_hetero  DGL seeds 0-2: 0.702 0.540 0.581, and seed 0 again in another run 0.450 (DGL's sampling
#                is not reproducible run to run; spread 0.252); bgl.dgl 0.601 (twice)
#   link_prediction  DGL seeds 0-2: AUC 0.806 0.830 0.775 (spread 0.055); bgl.dgl 0.822
#   custom_sampler  (2026-12-06) DGL seeds 0-4: 0.740 0.776 0.732 0.742 0.778 (spread 0.046);
#                   bgl.dgl 0.763 0.771 0.772 0.783 0.775
# FLOOR: DGL's lowest less its spread.  TOLERANCE: 1 point where DGL and bgl.dgl run the same arithmetic
# (full graph: equal above, seed for seed), DGL's seed spread where neighbour samples differ.
FLOOR = {"graphsage": 0.63, "gcn": 0.62, "gat": 0.73, "rgcn_hetero": 0.2, "rgcn_rel": 0.24, "link_prediction": 0.72,
         "custom_sampler": 0.68}
TOLERANCE = {"graphsage": 0.074, "gcn": 0.01, "gat": 0.01, "rgcn_hetero": 0.252, "rgcn_rel": 0.01,
             "link_prediction": 0.055, "custom_sampler": 0.046}

IMPORT = re.compile(r"^import bgl\.dgl(\S*) as (\w+)", re.M)


def script_module(name: str, backend: str) -> types.ModuleType:
    """The script's text as a module: as written (``bgl``), or with its bgl.dgl imports made DGL's."""
    text = (SCRIPTS / f"{name}.py").read_text()
    assert IMPORT.search(text), f"{name}.py imports no bgl.dgl module"
    if backend == "dgl":
        text = IMPORT.sub(r"import dgl\1 as \2", text)
        assert "bgl" not in re.sub(r'""".*?"""', "", text, flags=re.S), f"{name}.py uses bgl beyond its imports"
    module = types.ModuleType(f"from_dgl_{name}_{backend}")
    exec(compile(text, str(SCRIPTS / f"{name}.py"), "exec"), module.__dict__)
    return module


@pytest.fixture(scope="module")
def raw_dir(tmp_path_factory):
    spec = importlib.util.spec_from_file_location(
        "planetoid_files", ROOT / "tests" / "bgl" / "dgl" / "planetoid_files.py")
    files = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(files)
    return str(files.write_cora_raw(tmp_path_factory.mktemp("cora_raw")))


def run(run_id: str, backend: str, raw_dir: str, seed: int = 0) -> float:
    """The script's metric; the process's environment as it was (a training step on the newest torch
    sets ``TORCHINDUCTOR_CACHE_DIR`` for itself, which the suite's process guard would count)."""
    name, args, metric = RUNS[run_id]
    before = dict(os.environ)
    try:
        return script_module(name, backend).main(["--raw-dir", raw_dir, "--seed", str(seed), *args])[metric]
    finally:
        for key in set(os.environ) - set(before):
            del os.environ[key]


@pytest.mark.parametrize("run_id", list(RUNS))
def test_script_trains_as_dgl_does(run_id, raw_dir):
    ours = run(run_id, "bgl", raw_dir)
    assert ours >= FLOOR[run_id], f"{run_id}: bgl.dgl reached {ours:.4f}, below the floor {FLOOR[run_id]}"
    try:
        import dgl  # noqa: F401  (pinned lane: the same script as DGL, side by side)
    except ImportError:
        return
    theirs = run(run_id, "dgl", raw_dir)
    assert theirs >= FLOOR[run_id], f"DGL's {run_id} fell to {theirs:.4f}, below the floor {FLOOR[run_id]}"
    assert abs(ours - theirs) <= TOLERANCE[run_id], f"{run_id}: bgl.dgl {ours:.4f}, DGL {theirs:.4f}"


def test_scripts_import_nothing_of_bgl_but_bgl_dgl():
    for path in SCRIPTS.glob("*.py"):
        code = re.sub(r'""".*?"""', "", path.read_text(), flags=re.S)
        lines = [line for line in code.splitlines() if "bgl" in line]
        assert lines and all(IMPORT.match(line) for line in lines), f"{path.name}: {lines}"
