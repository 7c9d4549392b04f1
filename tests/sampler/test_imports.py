"""sampler/ runs without DGL, and the server process does not even load torch."""
from __future__ import annotations

import subprocess
import sys


def run(code: str) -> str:
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_sampler_does_not_import_dgl():
    out = run("import sys; import bgl.sampler.local, bgl.sampler.client, bgl.sampler.server, bgl.blocks; "
              "print('dgl' in sys.modules)")
    assert out == "False"


def test_server_does_not_import_torch():
    assert run("import sys; import bgl.sampler.server; print('torch' in sys.modules)") == "False"
