"""bgl as a user gets it: ``python -m build``, ``pip install dist/bgl-*.whl`` into a clean venv with
no DGL, no editable install and no checkout on the path, then ``bgl demo`` and the PyG loaders.

The venv's stack is the running lane's (in ``make test``'s current-stack lane: the newest torch,
numpy 2, PyG): creating a venv of its own would download ~3 GB of torch, so the clean venv sees the
lane's installed packages through a folder of links to them that leaves out bgl and DGL, and pip
installs the wheel with ``--no-index`` (its dependencies must already be there).
"""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

# The pinned lane has DGL; this wheel check is the current stack's (the pinned lane's wheel is
# tests/bgl/test_packaging.py's), and its build and install stay out of the pinned lane's share of CI.
pytestmark = pytest.mark.skipif(importlib.util.find_spec("dgl") is not None,
                                reason="the wheel runs without DGL in the current-stack lane; this stack has DGL")

# bgl itself (the editable install and its finder) and DGL stay out of the clean venv.
LEFT_OUT = re.compile(r"^(bgl\b|bgl-|__editable__|_?dgl\b|dgl-|.*\.pth$)", re.IGNORECASE)
TIMEOUT = 300


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory, source_tree):
    """(venv python, its bin dir) with the freshly built wheel installed and nothing of the checkout."""
    dist = tmp_path_factory.mktemp("dist")
    build = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(dist),
                            str(source_tree)], capture_output=True, text=True, timeout=TIMEOUT)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    (wheel,) = dist.glob("bgl-*.whl")
    root = tmp_path_factory.mktemp("venv")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=TIMEOUT)
    stack = root / "stack"
    stack.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if not LEFT_OUT.match(entry.name):
            (stack / entry.name).symlink_to(entry)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "current-stack.pth").write_text(f"{stack}\n")
    install = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-index",
                              str(wheel)], capture_output=True, text=True, timeout=TIMEOUT)
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    return python, venv / "bin"


def run_in(python_or_bin, args, cwd, timeout=TIMEOUT):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{Path(python_or_bin).parent}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run([str(python_or_bin), *args], capture_output=True, text=True, timeout=timeout,
                          cwd=cwd, env=env)
    log = f"exit {done.returncode}\n--- stdout\n{done.stdout[-5000:]}\n--- stderr\n{done.stderr[-3000:]}"
    return done, log


def test_the_wheel_imports_from_the_clean_venv_without_dgl(wheel_venv, tmp_path):
    python, _ = wheel_venv
    done, log = run_in(python, ["-c", "import importlib.util, bgl, bgl.examples, bgl.nn\n"
                                      "from bgl.commands.demo import TRAIN_SCRIPTS\n"
                                      "print(importlib.util.find_spec('dgl'), bgl.__file__,\n"
                                      "      all(p.is_file() for p in TRAIN_SCRIPTS.values()))"], tmp_path)
    assert done.returncode == 0, log
    found, path, scripts = done.stdout.split()
    assert found == "None", log  # DGL is not there: bgl's own blocks and bgl.nn train
    assert Path(path).is_relative_to(python.parent.parent), log  # the wheel's bgl, not the checkout's
    assert scripts == "True", log  # the training scripts bgl demo launches came with the wheel


# ~70 s on the loaded 2-core box, most of it numba compiling every kernel afresh for the new
# install's servers and trainers; make test keeps the short form (imports, demo scripts present,
# the PyG loaders from the wheel), and tests/launch/test_demo.py runs the demo itself.
@pytest.mark.extended
def test_bgl_demo_trains_from_the_wheel(wheel_venv, tmp_path, orphans):
    _, bin_dir = wheel_venv
    done, log = run_in(bin_dir / "bgl", ["demo", "--workdir", str(tmp_path / "demo")], tmp_path)
    assert done.returncode == 0, log
    assert "Warning" not in done.stdout + done.stderr, log
    acc = re.search(r"\[127\.0\.0\.1:trainer:0\] test accuracy ([\d.]+) \((\d+)/540 test nodes\)", done.stdout)
    assert acc and float(acc.group(1)) > 0.6, log  # 7 classes, ~30 % majority: it learned
    assert orphans() == []


PYG_LOADERS = """
import numpy as np, torch
from bgl.data import default_dataset_path
from bgl.pyg import LinkNeighborLoader, NeighborLoader
from bgl.sources.datasets import ingest
store = ingest(str(default_dataset_path()), "cora")
src = np.asarray(store.indices).astype(np.int64)
dst = np.repeat(np.arange(store.num_nodes), np.diff(store.indptr))
from torch_geometric.data import Data
data = Data(x=torch.from_numpy(np.array(store.feat)), y=torch.from_numpy(np.array(store.label)),
            edge_index=torch.from_numpy(np.stack([src, dst])), num_nodes=store.num_nodes)
edge_index = data.edge_index
seeds = torch.from_numpy(np.array(store.train_idx))
n = 0
for batch in NeighborLoader(data, num_neighbors=[5, 5], batch_size=64, input_nodes=seeds):
    assert torch.equal(batch.x, data.x[batch.n_id]) and type(batch).__name__ == "Data"
    n += batch.batch_size
pairs = 0
for batch in LinkNeighborLoader(data, num_neighbors=[5], batch_size=256, edge_label_index=edge_index[:, :1024],
                                neg_sampling_ratio=1.0):
    pairs += batch.edge_label.numel()
print(n == seeds.numel(), pairs)
"""


@pytest.mark.skipif(importlib.util.find_spec("torch_geometric") is None,
                    reason="the PyG loaders' batches are torch_geometric Data: needs PyG")
def test_the_pyg_loaders_run_from_the_wheel(wheel_venv, tmp_path):
    python, _ = wheel_venv
    done, log = run_in(python, ["-c", PYG_LOADERS], tmp_path)
    assert done.returncode == 0, log
    assert done.stdout.split()[-2:] == ["True", "2048"], log  # every training node once; 1024 pairs + 1024 negatives


@pytest.mark.extended  # ~30 s more, as the node-classification demo above (make test runs it from the checkout: tests/launch/test_demo.py)
def test_bgl_demo_link_prediction_from_the_wheel(wheel_venv, tmp_path, orphans):
    _, bin_dir = wheel_venv
    done, log = run_in(bin_dir / "bgl", ["demo", "--task", "link", "--epochs", "2", "--workdir",
                                         str(tmp_path / "demo")], tmp_path)
    assert done.returncode == 0, log
    assert "Warning" not in done.stdout + done.stderr, log
    mrr = re.search(r"\[127\.0\.0\.1:trainer:0\] test MRR ([\d.]+)", done.stdout)
    assert mrr and float(mrr.group(1)) > 0.12, log  # a random scorer gets ~0.05
    assert orphans() == []
