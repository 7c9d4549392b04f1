"""Every ``sh`` and ``python`` block of README.md and of every docs page runs as written, on the embedded Cora.

Docs that promise what fails are found by a user first; this keeps them true.  The blocks are taken
from the pages themselves (fenced ```` ```sh ```` / ```` ```python ````): README.md and every
``docs/**/*.md`` (the site ``make docs`` builds), so a new block or a new page is tested the day it
is written.  A block that cannot run in a test -- it needs ssh hosts, Slurm, a GPU, data outside the
checkout, or minutes -- carries the line ``<!-- not run: REASON -->`` right above its fence; that
marker, and only it, skips the block (listed as a skip with its reason).

Each page's ``sh`` blocks run in that page's order in a scratch directory of the page's own
(``data/`` and ``examples/`` linked in), so a page's commands work when followed from its top; each
block runs under ``bash -e`` in its own session, which is killed afterwards (a ``&`` server does not
outlive it), with this interpreter's ``bgl`` and ``python`` first on ``PATH``.  ``python`` blocks run
in this process with Cora bound to the names they use (see :func:`names`), one fresh namespace each;
the loaders they build are closed afterwards.

The README stays a front page (at most :data:`README_MAX_LINES` lines), and every relative link of
the README and the pages names a file that exists; a page's links stay inside ``docs/`` (what the
site holds), and an ``#anchor`` into a page names one of its headings.
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
DOCS = ROOT / "docs"
README_MAX_LINES = 250
MARKER = re.compile(r"<!--\s*not run:(.*?)-->")
FENCE = re.compile(r"^```(\w*)\s*$")
RUN_LANGS = ("sh", "python")
PAGES = [README, *sorted(DOCS.rglob("*.md"))]


@dataclass(frozen=True)
class Block:
    """One fenced block of a page: the page (relative to the checkout), where the block starts
    (1-based line of its fence), its language, its text, and the reason of its ``not run`` marker
    (None: it runs)."""

    page: str
    line: int
    lang: str
    code: str
    skip: str | None


def page_blocks(text: str, page: str = "README.md") -> list[Block]:
    """The fenced blocks of ``text`` (the page ``page``) in order."""
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
        blocks.append(Block(page, i + 1, m.group(1), "\n".join(lines[i + 1:end]), marker.group(1).strip() if marker else None))
        i = end + 1
    return blocks


def _name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


BLOCKS = [b for page in PAGES for b in page_blocks(page.read_text(encoding="utf-8"), _name(page))
          if b.lang in RUN_LANGS]


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_not_run_marker_sits_on_a_code_block_and_gives_a_reason(page):
    lines = page.read_text(encoding="utf-8").splitlines()
    where = _name(page)
    for no, line in enumerate(lines[:-1], 1):
        if "not run" in line and line.strip().startswith("<!--"):
            assert MARKER.fullmatch(line.strip()), f"{where}:{no}: write the marker as <!-- not run: REASON -->"
            assert MARKER.fullmatch(line.strip()).group(1).strip(), f"{where}:{no}: the marker gives no reason"
            assert FENCE.match(lines[no]), f"{where}:{no}: a not-run marker must be the line right above a fence"


def test_the_docs_keep_runnable_examples():
    runnable = [b for b in BLOCKS if b.skip is None]
    assert sum(b.page == "README.md" for b in runnable) >= 2  # the DGL and the PyG swap
    assert len(runnable) >= 12, [f"{b.page}:{b.line}" for b in runnable]


def test_readme_is_a_front_page():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; move detail to a page under docs/"
    assert lines[3:7] == ["```sh", "make demo    # creates .venv, then runs the main job on the embedded Cora dataset",
                          "make test    # creates .venv and .venv-current-3.1x, then runs the test suite in each",
                          "```"], "README.md starts with the two set-up commands"


LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _prose(text: str) -> str:
    """``text`` without fenced blocks and code spans (a link shown as code is not a link)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def slug(heading: str) -> str:
    """The anchor of a Markdown heading as MkDocs' ``toc`` and GitHub make it."""
    text = re.sub(r"[^\w\s-]", "", heading.strip().lower())
    return re.sub(r"[\s]+", "-", text).strip("-")


def _anchors(page: Path) -> set[str]:
    """The anchors of ``page``'s headings (a ``#`` line inside a fenced block is not one)."""
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.S | re.M)
    return {slug(m.group(1).replace("`", "")) for m in re.finditer(r"^#+\s+(.*)$", text, re.M)}


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_relative_links_name_files_that_exist(page):
    bad = []
    for m in LINK.finditer(_prose(page.read_text(encoding="utf-8"))):
        target = m.group(1)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            bad.append(f"{target}: no such file")
            continue
        if page.is_relative_to(DOCS) and not file.is_relative_to(DOCS):
            bad.append(f"{target}: outside docs/, so not on the site (name the file as `code` instead)")
        if anchor and file.suffix == ".md" and not file.is_relative_to(DOCS / "api") and anchor not in _anchors(file):
            bad.append(f"{target}: no heading with that anchor")
    assert not bad, f"{_name(page)}: {bad}"


@pytest.fixture(scope="module")
def sh_results(tmp_path_factory) -> dict[tuple[str, int], tuple[int, str]]:
    """{(page, fence line): (exit status, output)} of every runnable ``sh`` block, run in page order
    in one scratch directory per page (later blocks use what earlier ones of the page wrote: ``out/cora``)."""
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    results, work_dirs = {}, {}
    for block in BLOCKS:
        if block.lang != "sh" or block.skip is not None:
            continue
        if block.page not in work_dirs:
            work = work_dirs[block.page] = tmp_path_factory.mktemp(Path(block.page).stem)
            for name in ("data", "examples"):
                (work / name).symlink_to(ROOT / name)
        work = work_dirs[block.page]
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
        results[(block.page, block.line)] = (proc.returncode, out)
    return results


@pytest.fixture(scope="module")
def names(cora_store) -> dict:
    """The objects the pages' Python blocks name, all from the one session store of Cora.

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


@pytest.mark.parametrize("block", BLOCKS, ids=[f"{b.page}:{b.lang}-line{b.line}" for b in BLOCKS])
def test_docs_block_runs(block, request):
    where = f"{block.page}:{block.line}"
    if block.skip is not None:
        pytest.skip(f"{where}: not run: {block.skip}")
    if block.lang == "sh":
        status, out = request.getfixturevalue("sh_results")[(block.page, block.line)]
        assert status == 0, f"{where}: exit status {status}\n{block.code}\n--- output ---\n{out[-4000:]}"
        return
    namespace = dict(request.getfixturevalue("names"))
    # in a scratch directory of its own (data/ and examples/ linked in, as for sh blocks): a block that
    # writes a relative path (docs/resume-and-first-run.md's "resume-demo-store") left it in the checkout
    work = request.getfixturevalue("tmp_path")
    for name in ("data", "examples"):
        (work / name).symlink_to(ROOT / name)
    request.getfixturevalue("monkeypatch").chdir(work)
    try:
        exec(compile(block.code, where, "exec"), namespace)
    finally:
        _close_loaders(namespace)
        namespace.clear()
        gc.collect()
