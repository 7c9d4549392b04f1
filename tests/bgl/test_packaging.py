"""The wheel maps the top-level folders to ``bgl.*`` sub-packages and ships the default dataset.

Builds a real wheel from a copy of the source tree (so the repo gets no
build/ or egg-info), installs it with ``pip --target`` and imports from there
in a fresh interpreter.
"""
from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SUBPACKAGES = ("bgl", "bgl.sampler", "bgl.cache", "bgl.cache.ordering", "bgl.partition", "bgl.launch",
               "bgl.commands", "bgl.sources", "bgl.loader", "bgl.data", "bgl.examples",
               # sub-packages of a mapped folder (sampler/typed/ installs as bgl.sampler.typed)
               "bgl.sampler.typed", "bgl.sampler.temporal", "bgl.sources.readers", "bgl.loader.seeds")
TIMEOUT = 300


@pytest.fixture(scope="module")
def installed(tmp_path_factory, source_tree):
    src = source_tree
    wheels = tmp_path_factory.mktemp("wheels")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                        "-w", str(wheels), str(src)], capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (wheel,) = wheels.glob("bgl-*.whl")
    target = tmp_path_factory.mktemp("site")
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--target",
                        str(target), str(wheel)], capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 0, r.stderr[-3000:]
    return wheel, target


def test_wheel_layout(installed):
    wheel, target = installed
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"bgl"}
    for pkg in SUBPACKAGES:
        assert f"{pkg.replace('.', '/')}/__init__.py" in names, pkg
    assert "bgl/data/cora.npz" in names and "bgl/data/PROVENANCE.md" in names
    assert "bgl/examples/train_sage.py" in names and "bgl/examples/train_link_pred.py" in names  # bgl demo's
    for bare in ("cache", "launch", "sampler", "partition", "data", "examples"):
        assert not (target / bare).exists(), f"bare top-level package {bare!r} installed"


def test_license_is_an_spdx_expression(installed):
    """``project.license`` as a table is deprecated (setuptools warns on every build); the SPDX string
    form reaches the wheel's metadata as ``License-Expression`` (PEP 639)."""
    wheel, _ = installed
    with zipfile.ZipFile(wheel) as z:
        (meta,) = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
        text = z.read(meta).decode()
    assert "License-Expression: Apache-2.0" in text.splitlines()


def test_installed_wheel_imports(installed, tmp_path):
    _, target = installed
    code = (
        "import importlib, sys\n"
        f"mods = {list(SUBPACKAGES)!r}\n"
        "for m in mods:\n"
        "    mod = importlib.import_module(m)\n"
        f"    assert mod.__file__.startswith({str(target)!r}), (m, mod.__file__)\n"
        "import numpy as np\n"
        "from bgl.data import default_dataset_path\n"
        "import bgl.sources.datasets, bgl.sources.rmat, bgl.commands.ingest, bgl.loader.dataloader\n"
        "import bgl.rmat, bgl.cache.ordering.partition_order\n"
        "assert bgl.rmat is bgl.sources.rmat\n"
        "z = np.load(str(default_dataset_path()), allow_pickle=False)\n"
        "print(z['labels'].size, z['adj_indices'].size)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(target), "DGLBACKEND": "pytorch"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=TIMEOUT, env=env, cwd=tmp_path)  # cwd away from the repo checkout
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split() == ["2708", "5429"]  # data/PROVENANCE.md: nodes, stored adjacency entries


def test_every_package_folder_is_listed_in_pyproject():
    """A folder with ``__init__.py`` under a package dir that pyproject does not list would be left
    out of the wheel (setuptools ships only the listed packages): list it, or the wheel breaks."""
    import tomllib

    cfg = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(cfg["packages"])
    dirs = {name: Path(path) for name, path in cfg["package-dir"].items()}
    assert set(SUBPACKAGES) <= listed
    found = set()
    for pkg in ("bgl", "bgl.sampler", "bgl.cache", "bgl.partition", "bgl.launch"):
        root = REPO / dirs[pkg]
        for init in root.rglob("__init__.py"):
            rel = init.parent.relative_to(root)
            found.add(".".join([pkg, *rel.parts]) if rel.parts else pkg)
    assert found <= listed, f"packages missing from pyproject.toml: {sorted(found - listed)}"
    for name in listed:
        assert (REPO / dirs.get(name, Path(*name.split(".")))).is_dir(), name
