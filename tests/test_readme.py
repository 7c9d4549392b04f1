"""README.md's every ``sh`` and ``python`` block runs as written, on the embedded Cora.

A README that promises what fails is found by a user first; this keeps it true.  The blocks are
taken from the README itself (fenced ```` ```sh ```` / ```` ```python ````), so a new block is
tested the day it is written.  A block that cannot run in a test -- it needs ssh hosts, Slurm, a
GPU, data outside the checkout, or minutes -- carries the line ``<!-- not run: REASON -->`` right
above its fence; that marker, and only it, skips the block (listed as a skip with its reason).

``sh`` blocks run in README order in one scratch directory (``data/`` and ``examples/`` linked
in), each under ``bash -e`` in its own session, which is killed afterwards (a ``&`` server does
not outlive it), with this interpreter's ``bgl`` and ``python`` first on ``PATH``.  ``python`` blocks
run in this process with Cora bound to the names they use (see :func:`names`), one fresh namespace
each; the loaders they build are closed afterwards.
"""
from __future__ import annotations

import gc
import os
import re
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MARKER = re.compile(r"<!--\s*not run:(.*?)-->")
FENCE = re.compile(r"^```(\w*)\s*$")
RUN_LANGS = ("sh", "python")


@dataclass(frozen=True)
class Block:
    """One fenced block of the README: where it starts (1-based line of its fence), its language,
    its text, and the reason of its ``not run`` marker (None: it runs)."""

    line: int
    lang: str
    code: str
    skip: str | None


def readme_blocks(text: str) -> list[Block]:
    """The fenced blocks of ``text`` in order."""
    lines = text.splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        end = i + 1
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        marker = MARKER.fullmatch(lines[i - 1].strip()) if i else None
        blocks.append(Block(i + 1, m.group(1), "\n".join(lines[i + 1:end]), marker.group(1).strip() if marker else None))
        i = end + 1
    return blocks


BLOCKS = [b for b in readme_blocks(README.read_text()) if b.lang in RUN_LANGS]


def test_every_not_run_marker_sits_on_a_code_block_and_gives_a_reason():
    lines = README.read_text().splitlines()
    for no, line in enumerate(lines[:-1], 1):
        if "not run" in line and line.strip().startswith("<!--"):
            assert MARKER.fullmatch(line.strip()), f"README.md:{no}: write the marker as <!-- not run: REASON -->"
            assert MARKER.fullmatch(line.strip()).group(1).strip(), f"README.md:{no}: the marker gives no reason"
            assert FENCE.match(lines[no]), f"README.md:{no}: a not-run marker must be the line right above a fence"
    assert sum(b.skip is None for b in BLOCKS) >= 6  # the README keeps runnable examples


@pytest.fixture(scope="module")
def sh_results(tmp_path_factory) -> dict[int, tuple[int, str]]:
    """{fence line: (exit status, output)} of every runnable ``sh`` block, run in README order in
    one scratch directory (later blocks use what earlier ones wrote: ``out/cora``)."""
    work = tmp_path_factory.mktemp("readme")
    for name in ("data", "examples"):
        (work / name).symlink_to(ROOT / name)
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    results = {}
    for block in BLOCKS:
        if block.lang != "sh" or block.skip is not None:
            continue
        proc = subprocess.Popen(["bash", "-e", "-o", "pipefail", "-c", block.code], cwd=work, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            out = "timed out after 300 s"
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # whatever the block left in the background
            except ProcessLookupError:
                pass
            proc.wait()
        results[block.line] = (proc.returncode, out)
    return results


@pytest.fixture(scope="module")
def names(cora_store) -> dict:
    """The objects the README's Python blocks name, all from the one session store of Cora.

    ``graph``, ``g``: Cora as a ``DGLGraph`` (edge ids = the store's CSC positions), ``hg``: its
    paper-word heterograph, ``data``: a PyG ``Data``; ``train_ids`` the training nodes,
    ``train_eids`` 2,048 edge ids, ``reverse_eids`` each edge's reverse, ``train_pairs`` 2,048 edges.
    """
    dgl = pytest.importorskip("dgl")
    pyg_data = pytest.importorskip("torch_geometric.data")
    import bgl
    from bgl.sources.paper_word import paper_word_edges

    st = cora_store
    n = st.num_nodes
    src = torch.from_numpy(np.asarray(st.indices, dtype=np.int64))
    dst = torch.repeat_interleave(torch.arange(n), torch.from_numpy(np.diff(np.asarray(st.indptr))))
    feat, label = torch.from_numpy(np.array(st.feat)), torch.from_numpy(np.array(st.label))
    g = dgl.graph((src, dst), num_nodes=n)
    g.ndata["feat"], g.ndata["label"] = feat, label
    papers, words = (torch.from_numpy(a) for a in paper_word_edges(np.asarray(st.feat)))
    hg = dgl.heterograph({("paper", "cites", "paper"): (src, dst), ("paper", "has", "word"): (papers, words),
                          ("word", "in", "paper"): (words, papers)}, num_nodes_dict={"paper": n, "word": st.feat_dim})
    hg.nodes["paper"].data["feat"], hg.nodes["paper"].data["label"] = feat, label
    edge_index = torch.stack([src, dst])
    return {"bgl": bgl, "dgl": dgl, "torch": torch, "graph": g, "g": g, "hg": hg,
            "data": pyg_data.Data(x=feat, y=label, edge_index=edge_index, num_nodes=n),
            "train_ids": torch.from_numpy(np.array(st.train_idx)), "train_eids": torch.arange(2048),
            "reverse_eids": torch.from_numpy(bgl.reverse_edge_ids(st)), "train_pairs": edge_index[:, :2048]}


def _close_loaders(namespace: dict) -> None:
    from bgl.loader.dataloader import DataLoader
    from bgl.pyg import NeighborLoader

    for value in namespace.values():
        if isinstance(value, (DataLoader, NeighborLoader)):
            value.close()


@pytest.mark.parametrize("block", BLOCKS, ids=[f"{b.lang}-line{b.line}" for b in BLOCKS])
def test_readme_block_runs(block, request):
    if block.skip is not None:
        pytest.skip(f"README.md:{block.line}: not run: {block.skip}")
    if block.lang == "sh":
        status, out = request.getfixturevalue("sh_results")[block.line]
        assert status == 0, f"README.md:{block.line}: exit status {status}\n{block.code}\n--- output ---\n{out[-4000:]}"
        return
    namespace = dict(request.getfixturevalue("names"))
    try:
        exec(compile(block.code, f"README.md:{block.line}", "exec"), namespace)
    finally:
        _close_loaders(namespace)
        namespace.clear()
        gc.collect()
