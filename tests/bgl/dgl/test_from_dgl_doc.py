"""docs/from-dgl.md's ``python`` blocks run as written (each in a fresh namespace)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

try:  # importing PyG's layers writes TORCHINDUCTOR_CACHE_DIR into os.environ (torch's inductor cache): done
    import torch_geometric.nn  # noqa: F401  here, at collection as the suite's PyG tests do, so the page's
except ImportError:  # PyG example leaves the process as it found it when this file runs alone
    pass

DOC = Path(__file__).resolve().parents[3] / "docs" / "from-dgl.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```", DOC.read_text(encoding="utf-8"), flags=re.S | re.M)


def test_the_page_has_examples():
    assert len(BLOCKS) >= 3


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_example_runs(index, capsys):
    exec(compile(BLOCKS[index], f"{DOC.name} block {index}", "exec"), {"__name__": "__doc_example__"})
    assert capsys.readouterr().out.strip()
