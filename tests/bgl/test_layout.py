"""bgl/ keeps its shape: a small core at the top, ingestion in bgl/sources, the loader in bgl/loader.

Guards the layout docs/ARCHITECTURE.md describes: at most a dozen modules at
bgl/'s top level, no readers or loader modules drifting back there, and no
module of any installed package (bgl/, sampler/, cache/, partition/, launch/, data/
and their sub-packages) over ~450 lines outside ``_kernels`` files (split by
responsibility instead).
"""
from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BGL = REPO / "bgl"
# every folder pyproject installs as a bgl package (bgl, bgl.sampler, bgl.cache, ...)
PACKAGES = ("bgl", "sampler", "cache", "partition", "launch", "data")
MAX_TOP_LEVEL_MODULES = 12
MAX_MODULE_LINES = 450
SOURCES = ("datasets", "npz_formats", "planetoid", "ogb", "edgelist", "dgl_source", "graph_source",
           "csc_build", "_csc_kernels", "_parse_kernels", "_rmat_kernels", "splits", "synthetic")
LOADER = ("dataloader", "stages", "pipeline", "resources", "gpu_gather", "partition_order")


def test_top_level_holds_only_the_core():
    modules = sorted(p.stem for p in BGL.glob("*.py") if p.stem not in ("__init__", "__main__"))
    assert len(modules) <= MAX_TOP_LEVEL_MODULES, modules
    strays = sorted(set(modules) & set(SOURCES + LOADER))
    assert not strays, f"belong in bgl/sources/ or bgl/loader/: {strays}"
    assert not (BGL / "ingest").exists(), "a bgl/ingest package would shadow the bgl.ingest() function"
    for pkg in ("sources", "loader", "commands"):
        assert (BGL / pkg / "__init__.py").is_file(), pkg


def test_the_size_limit_covers_every_installed_package():
    """A package added to pyproject's package-dir without being added to PACKAGES fails here."""
    import tomllib

    dirs = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-dir"]
    top = {d.split("/")[0] for d in dirs.values() if d}
    assert top <= set(PACKAGES), sorted(top - set(PACKAGES))


def test_no_module_over_the_size_limit():
    long = []
    for path in sorted(p for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py")):
        if path.name.endswith("_kernels.py"):
            continue  # numba kernels stay together, apart from their callers
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_MODULE_LINES:
            long.append(f"{path.relative_to(REPO)}: {lines}")
    assert not long, f"split these by responsibility: {long}"
