"""Every example that wraps its model in ``DistributedDataParallel`` drops the wrapper before the
process group ends (``bgl.examples.data_parallel``): a wrapper alive at interpreter exit takes
gloo's threads down during finalization, which aborts a finished run on torch 2.14 / Python 3.13.
The abort is a race (a few runs in twenty), too rare for a timed test to catch; the launch tests
run these scripts for real, and this test keeps each script's ending in the safe order.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SCRIPTS = sorted(p for p in EXAMPLES.rglob("*.py") if "DistributedDataParallel(" in p.read_text())


def _calls(tree: ast.AST, name: str) -> list[ast.Call]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call)
            and (getattr(n.func, "id", None) == name or getattr(n.func, "attr", None) == name)]


def _wrapper_names(tree: ast.AST) -> set[str]:
    """Names assigned an expression that builds a DistributedDataParallel (possibly inside an ``if``)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _calls(node.value, "DistributedDataParallel"):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def test_there_are_data_parallel_examples():
    assert len(SCRIPTS) >= 4, [p.name for p in SCRIPTS]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_the_wrapper_is_deleted_before_the_group_ends(script):
    tree = ast.parse(script.read_text())
    assert not _calls(tree, "destroy_process_group"), \
        f"{script.name} destroys the group itself; call end_data_parallel() after deleting the DDP wrapper"
    ends = _calls(tree, "end_data_parallel")
    assert ends, f"{script.name} wraps a model in DDP but never calls end_data_parallel()"
    wrappers = _wrapper_names(tree)
    assert wrappers, f"{script.name}: no name holds the DDP wrapper"
    for func in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
        for block in (n for n in ast.walk(func) if hasattr(n, "body") and isinstance(n.body, list)):
            deleted: set[str] = set()
            for stmt in block.body:
                if isinstance(stmt, ast.Delete):
                    deleted.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
                if isinstance(stmt, ast.Expr) and _calls(stmt, "end_data_parallel"):
                    assert wrappers <= deleted, \
                        f"{script.name}:{stmt.lineno}: end_data_parallel() with {sorted(wrappers - deleted)} alive"
