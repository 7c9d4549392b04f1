"""Shared by the bench scripts' tests: a ``bench/`` script loaded as a module (bench/ is not a package)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def load_bench_script(path: Path, name: str):
    """Yield ``path`` executed as module ``name`` (registered in ``sys.modules`` for dataclasses and
    pickling while in use), then unregister it: a module-scoped fixture's body."""
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    yield mod
    sys.modules.pop(name, None)
