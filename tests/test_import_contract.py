"""The import contract in pyproject.toml (``[tool.importlinter]``) holds, and it catches a core module that
imports a frontend: directly, relatively or lazily inside a function.

``lint-imports`` reads the *installed* layout, where ``bgl.sampler`` is ``sampler/``, ``bgl.cache`` is
``cache/`` and so on (pyproject's ``package-dir``); an editable install maps those only at import time,
which import-linter's graph builder does not see.  So each test lays the installed tree out under
``tmp_path`` as links to the repository's files, and runs ``lint-imports`` on it in a subprocess whose
``bgl`` is that tree.  The failing case adds one real file to the tree (never to the repository).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CONTRACT_NAMES = ("The core imports no frontend", "Layers:")


def installed_tree(dest: Path) -> Path:
    """``dest`` holding package ``bgl`` as pyproject installs it: every ``.py`` file of every mapped folder,
    linked at its installed path (``sampler/local.py`` at ``bgl/sampler/local.py``); folders are real."""
    mapping = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    for package, folder in sorted(mapping["package-dir"].items()):
        base = dest.joinpath(*package.split("."))
        for source in (REPO / folder).rglob("*.py"):
            link = base / source.relative_to(REPO / folder)
            if not link.exists():
                link.parent.mkdir(parents=True, exist_ok=True)
                link.symlink_to(source)
    return dest


def lint_imports(tree: Path) -> subprocess.CompletedProcess:
    """``lint-imports`` with the repository's contracts over ``tree``'s ``bgl`` (no cache left behind)."""
    code = ("import sys\n"
            "from importlinter.cli import lint_imports_command\n"
            "sys.exit(lint_imports_command())\n")
    env = {**os.environ, "PYTHONPATH": str(tree), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-c", code, str(REPO / "pyproject.toml"), "--no-cache"],
                          capture_output=True, text=True, timeout=300, cwd=tree, env=env)


def test_the_contract_holds(tmp_path):
    tree = installed_tree(tmp_path / "site")
    done = lint_imports(tree)
    log = done.stdout[-6000:] + done.stderr[-3000:]
    assert done.returncode == 0, log
    assert "0 broken" in done.stdout, log
    for name in CONTRACT_NAMES:
        assert name in done.stdout, log
    # the installed layout was read: the layers name bgl.sampler, bgl.cache, bgl.launch (a missing one is an error)
    assert "Analyzed" in done.stdout, log


@pytest.mark.parametrize("module, source", [
    ("loader/_probe_lazy.py", "def probe():\n    from ..dgl import frontend_choice\n    return frontend_choice\n"),
    ("sampler/_probe_relative.py", "from ..pyg import loader\n"),
    ("cache/_probe_absolute.py", "def probe():\n    import bgl.dgl.real_dgl.blocks\n"),
    ("sources/_probe_dgl.py", "def probe():\n    import dgl\n    return dgl\n"),
    ("store.py", "def probe():\n    import torch_geometric\n    return torch_geometric\n"),
], ids=["lazy-relative-bgl.dgl", "relative-bgl.pyg", "lazy-absolute-bgl.dgl", "lazy-dgl", "lazy-torch_geometric"])
def test_a_core_module_importing_a_frontend_breaks_it(tmp_path, module, source):
    tree = installed_tree(tmp_path / "site")
    path = tree / "bgl" / module
    if path.is_symlink():  # an existing core module: a copy of it with the frontend import appended
        text = path.read_text(encoding="utf-8")
        path.unlink()
        source = text + "\n\n" + source
    path.write_text(source, encoding="utf-8")
    done = lint_imports(tree)
    log = done.stdout[-6000:] + done.stderr[-3000:]
    assert done.returncode != 0, log
    assert "The core imports no frontend" in done.stdout and "BROKEN" in done.stdout, log
    offender = "bgl." + module.removesuffix(".py").replace("/", ".")
    assert re.search(rf"^-\s+{re.escape(offender)} -> ", done.stdout, flags=re.M), log  # the chain starts there
