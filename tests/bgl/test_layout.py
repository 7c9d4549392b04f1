"""bgl/ keeps its shape: a small core at the top, ingestion in bgl/sources, the loader in bgl/loader.

Guards the layout docs/ARCHITECTURE.md describes: at most a dozen modules at
bgl/'s top level, no readers or loader modules drifting back there, and no
module of any installed package (bgl/, sampler/, cache/, partition/, launch/, data/, examples/
and their sub-packages) over ~450 lines outside ``_kernels`` files (split by
responsibility instead), no folder of them holding more than 25 modules (a family of files
becomes a sub-package instead), and that the installed modules import each other without cycles and
without reaching up a layer (cache/ and sampler/ never import the loader or the commands).  bench/ obeys
the same folder limit: its scripts live in one folder per area of results (bench/loader/, bench/cache/, ...),
named without their folder's prefix, with only the runner at its top.
"""
from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BGL = REPO / "bgl"
BENCH = REPO / "bench"
BENCH_TOP = ("run_all.py",)  # the runner of every area's quick benchmark
# every folder pyproject installs as a bgl package (bgl, bgl.sampler, bgl.cache, ...)
PACKAGES = ("bgl", "sampler", "cache", "partition", "launch", "data", "examples")
MAX_TOP_LEVEL_MODULES = 12
MAX_MODULE_LINES = 450
MAX_FOLDER_MODULES = 25
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


def test_no_folder_over_the_module_limit():
    crowded = _crowded_folders({p.parent for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py")})
    assert not crowded, f"group these folders' families into sub-packages: {crowded}"


def _crowded_folders(folders) -> list[str]:
    """The folders of ``folders`` holding more than MAX_FOLDER_MODULES modules, with their counts."""
    crowded = []
    for folder in sorted(folders):
        modules = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
        if len(modules) > MAX_FOLDER_MODULES:
            crowded.append(f"{folder.relative_to(REPO)}: {len(modules)}")
    return crowded


def test_bench_is_grouped_by_area():
    """bench/'s scripts sit in area folders (the runner alone at the top), none over the module limit,
    none repeating its folder's name as a prefix (bench/loader/loader_start.py reads bench/loader/start.py)."""
    strays = sorted(p.name for p in BENCH.glob("*.py") if p.name not in BENCH_TOP)
    assert not strays, f"move into a bench/<area>/ folder: {strays}"
    scripts = [p for p in BENCH.rglob("*.py") if p.parent != BENCH]
    crowded = _crowded_folders({p.parent for p in scripts})
    assert not crowded, f"split these bench folders by area: {crowded}"
    prefixed = sorted(str(p.relative_to(REPO)) for p in scripts if p.stem.startswith(p.parent.name + "_"))
    assert not prefixed, f"drop the folder's prefix from these names: {prefixed}"


def _module_names() -> dict[str, Path]:
    """{dotted installed name: file} for every module of every installed package."""
    names = {}
    for pkg in PACKAGES:
        prefix = ["bgl"] if pkg == "bgl" else ["bgl", pkg]
        for path in (REPO / pkg).rglob("*.py"):
            parts = [p for p in path.relative_to(REPO / pkg).with_suffix("").parts if p != "__init__"]
            names[".".join(prefix + parts)] = path
    return names


def _imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The project modules ``name`` imports anywhere in its file (type-checking and lazy imports too)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in known)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")[: len(name.split(".")) - node.level + (path.name == "__init__.py")]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            subs = {f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in known}
            # `from pkg import module` depends on the module; `from pkg import name` on the package
            out.update(subs if len(subs) == len(node.names) else subs | ({target} & known.keys()))
    out.discard(name)
    return out


def _import_graph() -> dict[str, set[str]]:
    known = _module_names()
    return {name: _imports(name, path, known) for name, path in known.items()}


def test_no_import_cycles():
    graph = _import_graph()
    cycles = []
    done: set[str] = set()

    def visit(name, trail):
        if name in trail:
            cycles.append(trail[trail.index(name):] + [name])
            return
        if name in done:
            return
        for dep in sorted(graph[name]):
            visit(dep, trail + [name])
        done.add(name)

    for name in sorted(graph):
        visit(name, [])
    assert not cycles, f"import cycles: {cycles}"


def test_lower_layers_do_not_import_upper_ones():
    upward = {"bgl.cache": ("bgl.loader", "bgl.commands"), "bgl.sampler": ("bgl.loader", "bgl.commands")}
    bad = [f"{name} imports {dep}" for name, deps in _import_graph().items() for low, high in upward.items()
           if name.startswith(low + ".") for dep in deps if dep.startswith(high)]
    assert not bad, bad
