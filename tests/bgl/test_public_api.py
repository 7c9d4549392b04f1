"""Every name the README and the docs pages (docs/**/*.md, ARCHITECTURE.md among them) document
resolves, every CLI flag they show exists, and every repository path they name is there.

The names are read from the documents themselves, so moving a module or renaming a flag without
updating the docs (or the other way round) fails here.
"""
from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ARCHITECTURE = REPO / "docs" / "ARCHITECTURE.md"
DOCS = (REPO / "README.md", ARCHITECTURE, *sorted(set((REPO / "docs").rglob("*.md")) - {ARCHITECTURE}))
# Names bgl promises at the top level (docs/dgl.md "Use it from DGL", docs/ingest.md "Ingest a dataset").
TOP_LEVEL = ("DataLoader", "NeighborSampler", "MultiLayerNeighborSampler", "MultiLayerFullNeighborSampler", "ingest", "rmat", "GraphStore", "open_store", "write_store",
             "Block", "BglError", "IngestError", "PartitionFormatError", "PipelineError", "ServerError",
             "ServerUnavailable", "StoreFormatError")
DOTTED = re.compile(r"(?<![\w/.-])bgl(?:\.[A-Za-z_]\w*)+")
PATH = re.compile(r"`((?:bgl|sampler|cache|partition|launch|bench|examples|tests|data|docs)/[\w./-]*)`")


def _text(doc: Path) -> str:
    return doc.read_text(encoding="utf-8") if doc.is_file() else ""  # a missing doc fails test_docs_exist


def _resolve(dotted: str):
    """Import the longest importable module prefix of ``dotted``, then walk the attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError as e:
            if e.name is not None and ".".join(parts[:cut]).startswith(e.name) and e.name.startswith("bgl"):
                continue
            raise
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(dotted)


def documented_names() -> list[str]:
    names = set()
    for doc in DOCS:
        for m in DOTTED.finditer(_text(doc)):
            names.add(m.group(0).rstrip("."))
    return sorted(names)


def test_docs_exist():
    for doc in DOCS:
        assert doc.is_file(), doc
    assert not (REPO / "docs" / "DEVIATIONS.md").exists(), "DEVIATIONS.md was folded into docs/ARCHITECTURE.md"


def test_top_level_names():
    import bgl

    for name in TOP_LEVEL:
        assert getattr(bgl, name) is not None, name
    assert bgl.rmat.generate_rmat_store is not None
    from bgl.cache.ordering import proximity_order, random_order  # README's feature-cache example

    assert callable(proximity_order) and callable(random_order)


def test_top_level_names_without_importing_submodules_first():
    """``import bgl`` alone gives ``bgl.rmat`` and the lazy names (a fresh interpreter)."""
    code = ("import bgl, sys\n"
            "assert 'bgl.sources.rmat' not in sys.modules\n"
            "assert bgl.rmat.generate_rmat_store.__module__ == 'bgl.sources.rmat'\n"
            "import bgl.rmat\n"
            "from bgl.rmat import generate_rmat_store\n"
            "assert bgl.rmat is sys.modules['bgl.sources.rmat']\n"
            "assert bgl.ingest.__module__ == 'bgl.sources.datasets'\n"
            "print(bgl.DataLoader.__name__, bgl.NeighborSampler.__name__)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["DataLoader", "NeighborSampler"]


@pytest.mark.parametrize("name", documented_names())
def test_documented_name_resolves(name):
    _resolve(name)


def test_documented_paths_exist():
    missing = []
    for doc in DOCS:
        for m in PATH.finditer(_text(doc)):
            path = m.group(1).split("::")[0]
            if "*" in path or "<" in path:
                continue
            if not (REPO / path).exists():
                missing.append(f"{doc.name}: {path}")
    assert not missing, missing


def test_layout_table_and_architecture_name_the_same_package_folders():
    """Each folder of the API reference's layout table (docs/api/index.md) is a folder pyproject
    installs, and ARCHITECTURE.md names it; every installed folder is in the table."""
    import tomllib

    layout = _text(REPO / "docs" / "api" / "index.md").split("## Layout", 1)[1]
    arch = _text(ARCHITECTURE)
    folders = re.findall(r"^\| `([\w/]+/)` \| `([\w.]+)` \|", layout, flags=re.M)
    package_dir = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-dir"]
    installed = {f"{path.split('/')[0]}/" for path in package_dir.values()}  # every top-level folder
    assert {"bgl/", "bgl/sources/", "bgl/loader/", "sampler/", "cache/", "partition/", "launch/"} <= {f for f, _ in folders}
    for folder, name in folders:
        assert (REPO / folder).is_dir(), folder
        assert package_dir.get(name, "").rstrip("/") + "/" == folder, f"pyproject installs {name} from {package_dir.get(name)}"
        assert f"`{folder}" in arch, f"docs/ARCHITECTURE.md does not name {folder}"
    assert set(installed) <= {f for f, _ in folders}, f"installed, not in the layout table: {set(installed) - {f for f, _ in folders}}"


DRAWN_PATH = re.compile(r"(?<![\w./<-])((?:bgl|sampler|cache|partition|launch|examples|data)/(?:[\w./-]*[\w/])?)")


def test_the_architecture_drawings_name_files_that_exist():
    """ARCHITECTURE.md's drawings (its fenced blocks: the data flow, the layout at run time, the formats)
    name files and folders that exist, so the layout they draw is the code's."""
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", _text(ARCHITECTURE), flags=re.S | re.M)
    named = {m.group(1) for block in blocks for m in DRAWN_PATH.finditer(block)}
    assert len(named) >= 10, named
    missing = sorted(path for path in named if not (REPO / path).exists())
    assert not missing, f"docs/ARCHITECTURE.md draws paths that do not exist: {missing}"


def _cli_flags_in_readme() -> dict[str, set[str]]:
    """{command: flags} for every ``bgl COMMAND ...`` line in the README and the docs pages
    (continuations joined), and the flags docs/ingest.md lists after "Options:"."""
    from bgl.cli import COMMAND_MODULES

    commands = ["partition import-distdgl"] + [m.replace("_", "-") for m in COMMAND_MODULES]
    found: dict[str, set[str]] = {}
    for doc in DOCS:
        if doc.parent.name == "api":
            continue  # the CLI reference page is generated from the parsers themselves
        for line in _text(doc).replace("\\\n", " ").splitlines():
            for m in re.finditer(r"\bbgl (%s)\b([^`|#&;]*)" % "|".join(map(re.escape, commands)), line):
                args = m.group(2).split(" -- ")[0]  # after " -- " come the trainer's own arguments
                found.setdefault(m.group(1), set()).update(re.findall(r"(?<![\w-])--[a-z][\w-]*", args))
    ingest = _text(REPO / "docs" / "ingest.md")
    options = ingest.split("Options:", 1)[1].split("**", 1)[0]
    found.setdefault("ingest", set()).update(re.findall(r"--[a-z][\w-]*", options))
    return found


def test_readme_cli_commands_and_flags_exist():
    from bgl.cli import build_parser

    parser = build_parser()
    (sub,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    documented = _cli_flags_in_readme()
    assert {"ingest", "info", "partition", "serve", "launch", "bench-cache", "demo"} <= set(sub.choices)
    assert {"ingest", "partition", "serve", "launch", "bench-cache"} <= set(documented)
    from bgl.commands.import_distdgl import build_parser as import_parser

    for command, flags in documented.items():
        if command == "partition import-distdgl":  # a sub-command of partition with its own parser
            known = set(import_parser("bgl partition")._option_string_actions)
            assert flags <= known, f"bgl {command}: the docs show {sorted(flags - known)}, not accepted"
            continue
        assert command in sub.choices, command
        known = set(sub.choices[command]._option_string_actions)
        assert flags <= known, f"bgl {command}: the docs show {sorted(flags - known)}, not accepted"


# Every public name of bgl's faces as of the frontend move (issue #53): each still resolves where users
# import it from, whatever module now holds it.
PUBLIC_NAMES = {
    "bgl": ("BglError", "IngestError", "PartitionFormatError", "PipelineError", "ServerError", "ServerUnavailable",
            "StoreFormatError", "GraphStore", "open_store", "write_store", "DataLoader", "NeighborSampler",
            "MultiLayerFullNeighborSampler", "MultiLayerNeighborSampler", "LaborSampler", "TemporalNeighborSampler",
            "Block", "as_edge_prediction_sampler", "EdgePredictionSampler", "reverse_edge_ids", "dcp_state",
            "load_dcp_state", "ingest", "rmat", "negative_sampler"),
    "bgl.pyg": ("NeighborLoader", "LinkNeighborLoader", "PygBatch", "blocks_to_pyg"),
    "bgl.nn": ("AGGREGATORS", "edge_dst_index", "in_degrees", "aggregate", "SAGEConv", "SAGE", "HeteroGraphConv"),
    "bgl.negative_sampler": ("PerSourceUniform", "Uniform", "GlobalUniform"),
    "bgl.dgl_adapter": ("ALL_FORMATS", "require_dgl", "to_dgl_block", "to_dgl_blocks", "to_dgl_hetero_block",
                        "to_dgl_pair_graph", "dglgraph_csc_tensors", "dglgraph_to_csc", "csc_to_dglgraph", "find_edges",
                        "graph_type_names", "int64_index", "with_index_and_frames"),
}
CLI_COMMANDS = ("ingest", "compress", "info", "partition", "serve", "launch", "bench-cache", "demo")


@pytest.mark.parametrize("module", sorted(PUBLIC_NAMES))
def test_public_names_resolve(module):
    """In a fresh interpreter (no test has imported the modules that now hold the names)."""
    code = (f"import importlib\nm = importlib.import_module({module!r})\n"
            f"missing = [n for n in {PUBLIC_NAMES[module]!r} if getattr(m, n, None) is None]\n"
            "assert not missing, missing\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert r.returncode == 0, r.stderr[-2000:]


def test_bgl_dataloader_is_the_loader_class_and_import_bgl_loads_no_frontend():
    """``bgl.DataLoader`` is the loader class itself (isinstance checks keep working); ``import bgl`` and the
    loader module load neither face (they load on the first loader that needs one)."""
    code = ("import sys, bgl, bgl.loader.dataloader as d\n"
            "assert bgl.DataLoader is d.DataLoader\n"
            "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('dgl', 'torch_geometric') "
            "or m.startswith(('bgl.dgl', 'bgl.pyg')))\n"
            "assert not loaded, loaded\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert r.returncode == 0, r.stderr[-2000:]


def test_cli_commands_exist():
    from bgl.cli import build_parser

    (sub,) = [a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction"]
    assert set(CLI_COMMANDS) <= set(sub.choices), sorted(set(CLI_COMMANDS) - set(sub.choices))
