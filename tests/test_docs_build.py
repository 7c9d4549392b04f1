"""The documentation site builds with no warning: ``mkdocs build --strict``, as ``make docs`` runs it.

Strict mode turns every warning into a failure: a docstring the API reference (mkdocstrings, NumPy
style) cannot parse, a public name it cannot find, a link between pages or an anchor that leads
nowhere, a page left out of the navigation.  The build must also stay offline (the built-in theme
fetches nothing) and fast, so both lanes run it.  The API-reference hook lays its scratch tree under
``TMPDIR``, which points into ``tmp_path`` here.
"""
from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _build(tmp_path: Path) -> subprocess.CompletedProcess:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = dict(os.environ, TMPDIR=str(scratch))
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
                           "--site-dir", str(tmp_path / "site")], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)


def test_mkdocs_builds_the_site_with_no_warning(tmp_path):
    try:
        import mkdocstrings_handlers.python  # noqa: F401
    except ModuleNotFoundError as e:
        raise AssertionError(f"the docs build needs {e.name}: pip install -e '.[test]' (the test extra pulls the "
                             "docs extra's MkDocs and mkdocstrings)") from e
    r = _build(tmp_path)
    assert r.returncode == 0, f"mkdocs build --strict failed:\n{r.stderr[-6000:]}"
    assert "WARNING" not in r.stderr, r.stderr[-6000:]
    site = tmp_path / "site"
    # The API reference was generated from the docstrings, not left as directives.
    loader = (site / "api" / "loader" / "index.html").read_text(encoding="utf-8")
    assert "bgl.DataLoader" in loader and "graph_sampler" in loader and ":::" not in loader
    cli = (site / "api" / "cli" / "index.html").read_text(encoding="utf-8")
    assert "usage: bgl ingest" in cli and "usage: bgl partition import-distdgl" in cli
    # Sphinx roles in docstrings are shown as code, not as ":class:" text.
    assert ":class:" not in loader and ":mod:" not in loader
    # The hook's scratch tree went with the build.
    assert not list((tmp_path / "tmp").iterdir())


def test_every_page_is_in_the_navigation():
    """A page under docs/ that the nav leaves out is a warning in strict mode; this names it directly."""
    import yaml

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))

    def pages(nav):
        for entry in nav:
            value = next(iter(entry.values())) if isinstance(entry, dict) else entry
            yield from (pages(value) if isinstance(value, list) else [value])

    in_nav = set(pages(config["nav"]))
    on_disk = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    assert on_disk == in_nav, f"not in mkdocs.yml's nav: {sorted(on_disk - in_nav)}; missing: {sorted(in_nav - on_disk)}"


# The public packages whose every exported name the API reference shows: their ``__all__``, or for a
# module without one (``bgl.nn``) the classes it defines.
PUBLIC = ("bgl", "bgl.pyg", "bgl.nn", "bgl.negative_sampler", "bgl.cache", "bgl.cache.ordering", "bgl.partition",
          "bgl.sampler", "bgl.codec")
DIRECTIVE = re.compile(r"^::: ([\w.]+)\n((?:    .*\n)*)", re.M)


def _directives() -> dict[str, set[str] | None]:
    """{identifier: its ``members:`` list, None for all} of every ``:::`` directive under docs/api/."""
    found = {}
    for page in (ROOT / "docs" / "api").glob("*.md"):
        for m in DIRECTIVE.finditer(page.read_text(encoding="utf-8")):
            members = re.search(r"members: \[([^\]]*)\]", m.group(2))
            found[m.group(1)] = None if members is None else {name.strip() for name in members.group(1).split(",")}
    return found


def _shown(identifier: str, name: str, directives: dict) -> bool:
    return identifier in directives and (directives[identifier] is None or name in directives[identifier])


def test_every_public_name_is_in_the_api_reference():
    """A name added to a public package's ``__all__`` needs its ``:::`` line (or its module's) in docs/api/."""
    directives = _directives()
    missing = []
    for package in PUBLIC:
        module = importlib.import_module(package)
        names = getattr(module, "__all__", None)
        if names is None:
            names = [n for n, v in vars(module).items()
                     if isinstance(v, type) and v.__module__ == package and not n.startswith("_")]
        for name in names:
            home = getattr(getattr(module, name), "__module__", None)
            if not (f"{package}.{name}" in directives or _shown(package, name, directives)
                    or (home is not None and _shown(home, name, directives))):
                missing.append(f"{package}.{name}")
    assert not missing, f"public, not in the API reference (docs/api/*.md): {missing}"
