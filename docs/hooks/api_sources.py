"""MkDocs hook: let mkdocstrings (griffe) find bgl's packages where pyproject installs them.

pyproject's ``package-dir`` installs ``sampler/`` as ``bgl.sampler``, ``cache/`` as ``bgl.cache``
and so on.  Python finds them through the editable install's import hook, but griffe reads the
source tree and looks for ``bgl.cache`` in ``bgl/cache/``.  So, before mkdocstrings starts
(a higher event priority than its own ``on_config``), this hook lays out the installed tree as
symbolic links in a scratch directory -- ``bgl/`` holding every entry of the checkout's ``bgl/``
plus ``cache -> ../cache`` and the other mapped folders -- and points the Python handler's
``paths`` at it.  The links read the checkout itself, so the reference is always today's code;
the directory goes when the build ends.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from mkdocs.plugins import event_priority

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the docs extra installs tomli there
    import tomli as tomllib

_scratch: list[Path] = []


def installed_tree(repo: Path, out: Path) -> Path:
    """Link ``repo``'s folders under ``out`` as pyproject's ``package-dir`` installs them; returns ``out``."""
    mapping = tomllib.loads((repo / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-dir"]
    for name in sorted(mapping, key=lambda n: n.count(".")):  # parents before their children
        target = out.joinpath(*name.split("."))
        source = (repo / mapping[name]).resolve()
        if name.count(".") == 0:  # a top-level package: a real folder, so children can be added
            target.mkdir(parents=True)
            for entry in source.iterdir():
                if entry.name != "__pycache__":
                    (target / entry.name).symlink_to(entry)
        elif not target.exists():
            target.symlink_to(source)
        elif target.resolve() != source:
            raise ValueError(f"pyproject maps {name} to {mapping[name]}, but {target} is already {target.resolve()}")
    return out


@event_priority(100)  # before mkdocstrings reads its handler options
def on_config(config):
    repo = Path(config.config_file_path).resolve().parent
    scratch = Path(tempfile.mkdtemp(prefix="bgl-docs-api-"))
    _scratch.append(scratch)
    handler = config.plugins["mkdocstrings"].config.handlers.setdefault("python", {})
    handler["paths"] = [str(installed_tree(repo, scratch))]
    return config


def _remove_scratch(**_) -> None:
    while _scratch:
        shutil.rmtree(_scratch.pop(), ignore_errors=True)


on_post_build = on_build_error = on_shutdown = _remove_scratch
