"""DGL's own example scripts, as they are on DGL 2.1 and on bgl.dgl, side by side -> bench/results/dgl_examples.md.

Each script of ``SCRIPTS`` is read from a DGL checkout (``--dgl-checkout``: a work tree, or a bare git
dir read at ``--rev``, default ``v2.1.0``), copied into a scratch dir and run twice per seed:

* **DGL**: in the pinned venv (``.venv``: DGL 2.1, torch 2.2.1), the script as it is;
* **bgl.dgl**: in the current-stack venv (``.venv-current-3.13``: newest torch, no DGL), the script with
  its ``dgl`` import lines made ``bgl.dgl``'s (:data:`IMPORT_LINES`) and nothing else of its own.

Both runs get the same few documented line rewrites (``Rewrite``; a rewrite that no longer matches
stops the bench, so a changed script is never measured half-rewritten): the epoch loop's count
(``--epochs``) and, where the script downloads OGB or RDF data, the dataset line pointed at a
graph built from Cora's raw Planetoid files (:mod:`example_data`, beside this file).  The Cora
files come from ``$BGL_DATASETS/planetoid`` (default ``../shared/datasets``) into a scratch
``DGL_DOWNLOAD_DIR`` laid out as DGL 2.1 extracts its download, so neither stack downloads.  A
seed is set before the script runs (``random``, NumPy, torch, and the stack's own ``dgl.seed``).

Per run: the metric the script prints last (test accuracy; link prediction: test MRR), the median
time between its consecutive ``Epoch`` lines (stdout read line by line as it is printed; an epoch
includes the script's own per-epoch evaluation), and the peak RSS of the process (its own ``VmHWM``,
printed at exit by the launcher; ``wait4``'s ``ru_maxrss`` only where the script died first).
Results: ``bench/results/dgl_examples.md`` (mean and spread over the seeds).

    python bench/dgl/examples.py --dgl-checkout /path/to/dgl          # full: 3 seeds, the bench's epochs
    python bench/dgl/examples.py --dgl-checkout D --seeds 0 --epochs-scale 0.05 --out /tmp/x.md  # proof it runs
    python bench/dgl/examples.py --dgl-checkout D --stacks dgl bgl.dgl bgl.dgl-pinned   # + bgl.dgl on torch 2.2.1

``--dgl-checkout`` may be the git dir the session's ``fetch github:dmlc/dgl`` gives (read at
``v2.1.0``).  The full run is 7 scripts x 3 seeds x 2 stacks, each run a fresh process (imports
and data load are 5-15 s of each): about 10 minutes on a quiet 2-core box (link prediction: ~8 s a
seed and stack there, 2026-12-05; ~25 minutes for one seed at load 12-20).  Peak RSS includes the interpreter and torch:
the imports alone differ by ~160 MiB between torch 2.2.1 and the newest torch, so the report
gives each stack's imports-only peak too, and ``bgl.dgl-pinned`` runs bgl.dgl on torch 2.2.1.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
DATASETS = Path(os.environ.get("BGL_DATASETS", ROOT.parent / "shared" / "datasets"))
PINNED_PYTHON = ROOT / ".venv" / "bin" / "python"
CURRENT_PYTHON = ROOT / ".venv-current-3.13" / "bin" / "python"
CPU_TORCH_PYTHON = Path(os.environ.get("BGL_CPU_TORCH_PYTHON", ROOT / ".venv-cpu-torch" / "bin" / "python"))
# stack: (venv's python, the module the script's `dgl` is, what it is)
STACKS = {"dgl": (PINNED_PYTHON, "dgl", "DGL 2.1, torch 2.2.1, Python 3.11 (`.venv`)"),
          "bgl.dgl": (CURRENT_PYTHON, "bgl.dgl", "bgl.dgl on the current stack: newest torch, Python 3.13, no DGL "
                                                 "(`.venv-current-3.13`)"),
          "bgl.dgl-pinned": (PINNED_PYTHON, "bgl.dgl", "bgl.dgl on the pinned stack (`.venv`, torch 2.2.1)"),
          # torch's CPU-only wheel: the CUDA builds above map ~160 MiB more at `import torch` on a CPU box
          "bgl.dgl-cpu-torch": (CPU_TORCH_PYTHON, "bgl.dgl", "bgl.dgl on a CPU-only torch build "
                                                             "(`$BGL_CPU_TORCH_PYTHON`, e.g. torch 2.13.0+cpu)")}
CORA_DGL_FOLDER = "cora_v2_d697a464"  # where DGL 2.1 extracts cora_v2.zip (bgl.dgl.data looks there too)


@dataclass(frozen=True)
class Rewrite:
    """Replace the one line matching ``pattern`` (a regex, MULTILINE) by ``replacement``; ``why`` is
    printed in the results.  Exactly ``count`` matches are required."""

    pattern: str
    replacement: str
    why: str
    count: int = 1


@dataclass(frozen=True)
class Script:
    """One DGL example: its path in DGL's repo, its arguments, the rewrites both stacks get, how
    its metric line reads, and the epoch count the bench runs (``epochs``; the script's own loop count is
    ``script_epochs``: cut where the full run would not fit in 10 minutes)."""

    name: str
    path: str
    args: tuple
    rewrites: tuple
    metric: str  # regex with one group: the final metric
    metric_name: str
    epochs: int
    script_epochs: int
    epoch_loop: str = r"^(\s*)for epoch in range\(\d+\):"
    siblings: tuple = ()  # modules of the example's folder the script imports (their dgl imports ported too)


# ``import dgl`` -> ``import bgl.dgl as dgl``; ``import dgl.X as Y`` / ``from dgl.X import`` -> bgl.dgl.X
IMPORT_LINES = (
    (re.compile(r"^([ \t]*)import dgl[ \t]*$", re.M), r"\1import bgl.dgl as dgl"),
    (re.compile(r"^([ \t]*)import dgl(\.[\w.]+) as (\w+)[ \t]*$", re.M), r"\1import bgl.dgl\2 as \3"),
    (re.compile(r"^([ \t]*)from dgl(\.[\w.]+)? import ", re.M), r"\1from bgl.dgl\2 import "),
)
IMPORT_DGL_DOTTED = re.compile(r"^[ \t]*import dgl\.[\w.]+[ \t]*$", re.M)  # `import dgl.nn` would bind `dgl`: no bgl form

EPOCH_LINE = re.compile(r"^Epoch\s+\d+", re.M)

SCRIPTS = (
    Script("GraphSAGE node classification", "examples/pytorch/graphsage/node_classification.py", ("--mode", "cpu"),
           (Rewrite(r"^from ogb\.nodeproppred import DglNodePropPredDataset$", "from dgl.data import CoraGraphDataset",
                    "ogbn-products -> Cora (no download)"),
            Rewrite(r'AsNodePredDataset\(DglNodePropPredDataset\("ogbn-products"\)\)',
                    "AsNodePredDataset(CoraGraphDataset())", "ogbn-products -> Cora (no download)")),
           r"Test Accuracy ([\d.]+)", "test accuracy", epochs=10, script_epochs=10),
    Script("GraphSAGE link prediction", "examples/pytorch/graphsage/link_pred.py", ("--mode", "cpu"),
           (Rewrite(r"^from ogb\.linkproppred import DglLinkPropPredDataset, Evaluator$",
                    "from example_data import CoraLinkSplit, MRREvaluator as Evaluator",
                    "ogbl-citation2 -> Cora's citations split as citation2 is (no download, no ogb)"),
            Rewrite(r'DglLinkPropPredDataset\("ogbl-citation2"\)', "CoraLinkSplit()",
                    "ogbl-citation2 -> Cora's citations split as citation2 is")),
           r"Test MRR ([\d.]+)", "test MRR", epochs=3, script_epochs=10),
    Script("GCN", "examples/pytorch/gcn/train.py", ("--dataset", "cora"), (),
           r"Test accuracy ([\d.]+)", "test accuracy", epochs=200, script_epochs=200),
    Script("GAT", "examples/pytorch/gat/train.py", ("--dataset", "cora"), (),
           r"Test accuracy ([\d.]+)", "test accuracy", epochs=100, script_epochs=200),
    Script("R-GCN (typed, minibatch)", "examples/pytorch/rgcn/entity_sample.py", ("--dataset", "aifb"),
           (Rewrite(r"^from dgl\.data\.rdf import .*$", "from example_data import CoraTermsDataset",
                    "AIFB (RDF download) -> Cora as a typed graph: papers, terms, cites / has-term"),
            Rewrite(r"data = AIFBDataset\(\)", "data = CoraTermsDataset()",
                    "AIFB -> Cora papers + terms")),
           r"Test accuracy ([\d.]+)", "test accuracy", epochs=20, script_epochs=50),
    Script("SGC", "examples/pytorch/sgc/sgc.py", ("--dataset", "cora"), (),
           r"Test Accuracy ([\d.]+)", "test accuracy", epochs=100, script_epochs=100,
           epoch_loop=r"^(\s*)for epoch in range\(args\.n_epochs\):"),
    Script("APPNP", "examples/pytorch/appnp/train.py", ("--dataset", "cora"), (),
           r"Test Accuracy ([\d.]+)", "test accuracy", epochs=200, script_epochs=200,
           epoch_loop=r"^(\s*)for epoch in range\(args\.n_epochs\):", siblings=("examples/pytorch/appnp/appnp.py",)),
)


# ----------------------------------------------------------------------------- the rewrites
def apply_rewrites(text: str, rewrites, epochs: Optional[int] = None, epoch_loop: Optional[str] = None) -> str:
    """``text`` with each of ``rewrites`` applied (ValueError naming the pattern when it does not
    match exactly ``count`` times) and the epoch loop's count set to ``epochs``."""
    for rw in rewrites:
        text, n = re.subn(rw.pattern, rw.replacement, text, flags=re.M)
        if n != rw.count:
            raise ValueError(f"rewrite {rw.pattern!r} matched {n} times, expected {rw.count}: the script changed")
    if epochs is not None:
        text, n = re.subn(epoch_loop, rf"\g<1>for epoch in range({int(epochs)}):", text, flags=re.M)
        if n != 1:
            raise ValueError(f"epoch loop {epoch_loop!r} matched {n} times, expected 1: the script changed")
    return text


def to_bgl_imports(text: str) -> str:
    """``text`` with every ``dgl`` import line made ``bgl.dgl``'s, nothing else changed.

    Raises ValueError for ``import dgl.X`` without ``as`` (it binds the name ``dgl``: no one-line
    bgl form) and when a line still imports ``dgl`` afterwards."""
    if IMPORT_DGL_DOTTED.search(text):
        raise ValueError(f"'{IMPORT_DGL_DOTTED.search(text).group(0).strip()}' has no one-line bgl.dgl form")
    for pattern, replacement in IMPORT_LINES:
        text = pattern.sub(replacement, text)
    left = re.search(r"^[ \t]*(import|from) dgl\b.*$", text, re.M)
    if left:
        raise ValueError(f"import line left unrewritten: {left.group(0).strip()!r}")
    return text


def changed_lines(before: str, after: str) -> list:
    """``(old, new)`` pairs of the lines that differ (line counts are kept by every rewrite)."""
    return [(a, b) for a, b in zip(before.splitlines(), after.splitlines()) if a != b]


# ----------------------------------------------------------------------------- one run
@dataclass
class RunResult:
    rc: int
    metric: Optional[float]
    epoch_seconds: Optional[float]  # median gap between consecutive Epoch lines
    peak_rss_mib: float
    wall_seconds: float
    output_tail: str = field(repr=False, default="")


# Seeds every generator a script draws from, then runs it as __main__ (argv as the script sees it); at
# exit prints the process's own peak RSS (VmHWM): wait4's ru_maxrss of a child is at least its parent's
# peak (the address space it was started from, bench/common/own_rss.py), so a large parent (a test
# process) would be reported instead of the script.
PEAK_MARK = "bgl-bench-own-peak-kib"
PEAK_LINE = re.compile(rf"^{PEAK_MARK} (\d+)$", re.M)
LAUNCHER = f"""
import atexit, importlib, os, random, runpy, sys
import numpy, torch
def _own_peak():
    with open("/proc/self/status") as f:
        kib = next((line.split()[1] for line in f if line.startswith("VmHWM:")), None)
    if kib is not None:
        os.write(1, ("\\n%s %s\\n" % ({PEAK_MARK!r}, kib)).encode())
atexit.register(_own_peak)
seed, stack, script = int(sys.argv[1]), sys.argv[2], sys.argv[3]
random.seed(seed); numpy.random.seed(seed); torch.manual_seed(seed)
importlib.import_module(stack).seed(seed)
sys.argv = sys.argv[3:]
runpy.run_path(script, run_name="__main__")
"""


def run_script(python, script: Path, args, seed: int, stack: str, env: dict, metric: Optional[str],
               timeout: float = 600.0) -> RunResult:
    """Run ``script`` under ``python`` in its own folder; stdout read line by line as printed (epoch
    times), peak RSS its own ``VmHWM`` (``LAUNCHER``).  ``stack``: ``"dgl"`` or ``"bgl.dgl"`` (whose ``seed``
    is called)."""
    cmd = [str(python), "-u", "-c", LAUNCHER, str(seed), stack, str(script), *map(str, args)]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=script.parent, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, bufsize=1)
    lines, stamps = [], []
    try:
        for line in proc.stdout:
            if EPOCH_LINE.match(line):
                stamps.append(time.perf_counter())
            lines.append(line)
            if time.perf_counter() - start > timeout:
                proc.kill()
                break
    finally:
        proc.stdout.close()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    out = "".join(lines)
    found = re.findall(metric, out) if metric else []
    gaps = [b - a for a, b in zip(stamps, stamps[1:])]
    own_peak = PEAK_LINE.findall(out)  # the script's own VmHWM; wait4's where it died before printing it
    return RunResult(rc=proc.returncode, metric=float(found[-1]) if found else None,
                     epoch_seconds=statistics.median(gaps) if gaps else None,
                     peak_rss_mib=int(own_peak[-1]) / 1024.0 if own_peak else usage.ru_maxrss / 1024.0,
                     wall_seconds=wall, output_tail=out[-3000:])


# ----------------------------------------------------------------------------- inputs
def read_dgl_script(checkout: Path, rev: str, path: str) -> str:
    """``path``'s text from a DGL work tree (``checkout/path``), or from a git dir at ``rev``."""
    if (checkout / path).is_file():
        return (checkout / path).read_text()
    return subprocess.run(["git", "--git-dir", str(checkout), "show", f"{rev}:{path}"], check=True,
                          capture_output=True, text=True).stdout


def lay_out_cora(download_dir: Path) -> None:
    """Cora's raw Planetoid files where DGL 2.1 finds its extracted download (no download then)."""
    src = DATASETS / "planetoid"
    folder = download_dir / CORA_DGL_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    for part in ("x", "y", "tx", "ty", "allx", "ally", "graph", "test.index"):
        raw = src / f"ind.cora.{part}"
        if not raw.is_file():
            raise FileNotFoundError(f"{raw} missing: put Planetoid's ind.cora.* files in {src} (or set BGL_DATASETS)")
        shutil.copyfile(raw, folder / f"ind.cora_v2.{part}")


def stack_env(scratch: Path, stack: str) -> dict:
    """The child's environment: HOME and DGL's download dir inside ``scratch`` (nothing written
    elsewhere), no progress bars, one stack named for :mod:`example_data`."""
    env = dict(os.environ)
    env.update(HOME=str(scratch / "home"), DGL_DOWNLOAD_DIR=str(scratch / "dgl_data"), TQDM_DISABLE="1",
               BGL_EXAMPLES_DGL=stack, DGLBACKEND="pytorch", PYTHONPATH=str(HERE), TMPDIR=str(scratch / "tmp"),
               PYTHONDONTWRITEBYTECODE="1")
    for sub in ("home", "tmp"):
        (scratch / sub).mkdir(parents=True, exist_ok=True)
    return env


# ----------------------------------------------------------------------------- the report
def summary(values) -> str:
    vals = [v for v in values if v is not None]
    if not vals:
        return "n/a"
    if len(vals) == 1:
        return f"{vals[0]:.3f}"
    return f"{statistics.mean(vals):.3f} ({min(vals):.3f}-{max(vals):.3f})"


def ratio(num, den) -> str:
    """Median of ``num`` over median of ``den`` (failed runs left out)."""
    num, den = [v for v in num if v], [v for v in den if v]
    return f"{statistics.median(num) / statistics.median(den):.2f}x" if num and den else "n/a"


def write_report(out: Path, rows: list, args, rewrites_shown: dict, note: str, baselines: dict) -> None:
    """One table per measure (metric, epoch time, peak RSS): a column per stack, ratios to DGL's."""
    stacks = list(args.stacks)
    others = [st for st in stacks if st != "dgl"] if "dgl" in stacks else []
    lines = ["# DGL's example scripts: DGL 2.1 (pinned stack) vs bgl.dgl", "",
             f"Command: `python bench/dgl/examples.py {' '.join(sys.argv[1:])}`  ",
             f"DGL examples at `{args.rev}`; seeds {list(args.seeds)}; CPU. {note}", "",
             "Stacks: " + "; ".join(f"`{st}`: {STACKS[st][2]}" for st in stacks) + ".", ""]
    measures = (("metric (mean, min-max over seeds)", lambda x: x.metric, False),
                ("epoch time, s (median gap between `Epoch` lines)", lambda x: x.epoch_seconds, True),
                ("peak RSS, MiB (`ru_maxrss`)", lambda x: x.peak_rss_mib, True))
    for title, get, with_ratio in measures:
        head = ["script", "epochs (script's)", *stacks] + ([f"{st} / dgl" for st in others] if with_ratio else [])
        lines += [f"**{title}**", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in rows:
            cells = [r["name"] + ("" if with_ratio else f" ({r['metric_name']})"), f"{r['epochs']} ({r['script_epochs']})"]
            cells += [summary([get(x) for x in r[st]]) for st in stacks]
            if with_ratio:
                cells += [ratio([get(x) for x in r[st]], [get(x) for x in r["dgl"]]) for st in others]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    if baselines:
        lines += ["Imports alone (the launcher's `import torch` and the stack, no script): peak RSS MiB "
                  + "; ".join(f"{st} {baselines[st]:.0f}" for st in stacks if st in baselines)
                  + ". The difference between two stacks' baselines is there before a script runs.", ""]
    lines += ["## Lines changed", "", "The same for every stack but the import lines (which only the bgl.dgl "
              "stacks get):", ""]
    for name, changes in rewrites_shown.items():
        lines += [f"**{name}**", "", "```diff"]
        for old, new in changes:
            lines += [f"-{old}", f"+{new}"]
        lines += ["```", ""]
    failures = [(r["name"], st, x) for r in rows for st in stacks for x in r[st] if x.rc != 0]
    if failures:
        lines += ["## Failed runs", ""]
        for name, st, x in failures:
            lines += [f"**{name}** on {st} (rc {x.rc}):", "", "```", x.output_tail[-1500:].rstrip(), "```", ""]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dgl-checkout", type=Path, required=True, help="DGL work tree or git dir")
    p.add_argument("--rev", default="v2.1.0", help="revision read from a git dir")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--epochs-scale", type=float, default=1.0, help="multiply each script's epoch count (min 2)")
    p.add_argument("--only", nargs="*", help="script names (substring match)")
    p.add_argument("--stacks", nargs="+", default=["dgl", "bgl.dgl"], choices=list(STACKS),
                   help="bgl.dgl-pinned: bgl.dgl on the pinned venv (tells torch's share from bgl's)")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "dgl_examples.md")
    p.add_argument("--note", default="", help="said under the command line (e.g. 'loaded box')")
    args = p.parse_args(argv)
    scripts = [s for s in SCRIPTS if not args.only or any(o.lower() in s.name.lower() for o in args.only)]
    rows, shown, baselines = [], {}, {}
    with tempfile.TemporaryDirectory(prefix="bgl-dgl-examples-") as tmp:
        scratch = Path(tmp)
        lay_out_cora(scratch / "dgl_data")
        empty = scratch / "imports_only.py"
        empty.write_text("")
        for stack in args.stacks:
            python, module, _ = STACKS[stack]
            baselines[stack] = run_script(python, empty, [], 0, module, stack_env(scratch, module), None).peak_rss_mib
        for s in scripts:
            epochs = max(2, round(s.epochs * args.epochs_scale))
            original = read_dgl_script(args.dgl_checkout, args.rev, s.path)
            both = apply_rewrites(original, s.rewrites, epochs, s.epoch_loop)
            ported = to_bgl_imports(both)
            shown[s.name] = changed_lines(original, ported)
            row = {"name": s.name, "epochs": epochs, "script_epochs": s.script_epochs, "metric_name": s.metric_name}
            for stack in args.stacks:
                python, module, _ = STACKS[stack]
                folder = scratch / stack / Path(s.path).parent.name
                folder.mkdir(parents=True, exist_ok=True)
                path = folder / Path(s.path).name
                path.write_text(both if module == "dgl" else ported)
                for sibling in s.siblings:
                    text = read_dgl_script(args.dgl_checkout, args.rev, sibling)
                    (folder / Path(sibling).name).write_text(text if module == "dgl" else to_bgl_imports(text))
                row[stack] = []
                for seed in args.seeds:
                    r = run_script(python, path, s.args, seed, module, stack_env(scratch, module), s.metric)
                    print(json.dumps({"script": s.name, "stack": stack, "seed": seed, "rc": r.rc, "metric": r.metric,
                                      "epoch_s": r.epoch_seconds, "rss_mib": round(r.peak_rss_mib, 1),
                                      "wall_s": round(r.wall_seconds, 1)}), flush=True)
                    if r.rc != 0:
                        print(r.output_tail[-2000:], file=sys.stderr)
                    row[stack].append(r)
            rows.append(row)
    write_report(args.out, rows, args, shown, args.note, baselines)
    print(f"wrote {args.out}")
    return 0 if all(x.rc == 0 for r in rows for st in args.stacks for x in r[st]) else 1


if __name__ == "__main__":
    sys.exit(main())
